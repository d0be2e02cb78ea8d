// A field's type as text (shardpack/writer.h, ParseFieldText and FieldText):
// each form, its field, the way back, and the error of a form it is not.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/writer.h"
#include "tests/testing/status_matchers.h"

namespace shardpack {
namespace {

using ::testing::HasSubstr;
using testing::StatusIs;

TEST(WriterFieldTextTest, EachFormGivesItsField) {
  SP_ASSERT_OK_AND_ASSIGN(Field jpeg, ParseFieldText("photo", "jpeg"));
  EXPECT_EQ(jpeg.name, "photo");
  EXPECT_EQ(jpeg.type, FieldType::kImage);
  EXPECT_EQ(jpeg.image, (ImageInfo{Encoding::kJpeg, Layout::kHWC, 0, 0, 0}));
  EXPECT_FALSE(jpeg.optional);

  SP_ASSERT_OK_AND_ASSIGN(Field raw, ParseFieldText("x", "raw"));
  EXPECT_EQ(raw.image, (ImageInfo{Encoding::kRaw, Layout::kHWC, 0, 0, 0}));
  SP_ASSERT_OK_AND_ASSIGN(Field fixed, ParseFieldText("x", "raw:32x64x3"));
  EXPECT_EQ(fixed.image, (ImageInfo{Encoding::kRaw, Layout::kHWC, 32, 64, 3}));
  SP_ASSERT_OK_AND_ASSIGN(Field gray, ParseFieldText("mask", "raw:gray?"));
  EXPECT_EQ(gray.image.channels, 1);
  EXPECT_TRUE(gray.optional);
  SP_ASSERT_OK_AND_ASSIGN(Field rgb, ParseFieldText("x", "raw:rgb"));
  EXPECT_EQ(rgb.image.channels, 3);

  for (auto [text, type] : std::vector<std::pair<std::string, FieldType>>{
           {"label", FieldType::kLabel},
           {"string", FieldType::kString},
           {"bytes", FieldType::kBytes},
           {"json", FieldType::kJson}}) {
    SP_ASSERT_OK_AND_ASSIGN(Field f, ParseFieldText("x", text));
    EXPECT_EQ(f.type, type) << text;
  }

  SP_ASSERT_OK_AND_ASSIGN(Field boxes, ParseFieldText("boxes", "f32[n, 4]"));
  EXPECT_EQ(boxes.type, FieldType::kArray);
  EXPECT_EQ(boxes.dtype, ArrayDType::kF32);
  EXPECT_EQ(boxes.shape, (std::vector<uint64_t>{0, 4}));
  SP_ASSERT_OK_AND_ASSIGN(Field ids, ParseFieldText("ids", "i32[n]?"));
  EXPECT_EQ(ids.shape, (std::vector<uint64_t>{0}));
  EXPECT_TRUE(ids.optional);
  SP_ASSERT_OK_AND_ASSIGN(Field emb, ParseFieldText("emb", "f16[768]"));
  EXPECT_EQ(emb.dtype, ArrayDType::kF16);
  EXPECT_EQ(emb.shape, (std::vector<uint64_t>{768}));
  SP_ASSERT_OK_AND_ASSIGN(Field grid, ParseFieldText("g", "u8[2,3]"));
  EXPECT_EQ(grid.shape, (std::vector<uint64_t>{2, 3}));
}

TEST(WriterFieldTextTest, TextRoundTrips) {
  for (const char* text : {"jpeg", "raw", "raw:gray", "raw:rgb?", "raw:32x32x3", "label",
                           "string?", "bytes", "json", "f32[n,4]", "i32[n]?", "f16[768]",
                           "u8[2,3]", "i64[n,2,2]", "f64[1]"}) {
    SP_ASSERT_OK_AND_ASSIGN(Field f, ParseFieldText("x", text));
    EXPECT_EQ(FieldText(f), text);
  }
  Field chw;
  chw.name = "x";
  chw.type = FieldType::kImage;
  chw.image = {Encoding::kRaw, Layout::kCHW, 32, 32, 3};
  EXPECT_EQ(FieldText(chw), "raw/chw:32x32x3");
  chw.image = {Encoding::kRaw, Layout::kHWC, 0, 0, 4};
  EXPECT_EQ(FieldText(chw), "raw:0x0x4");
}

TEST(WriterFieldTextTest, AnotherFormIsRefusedNamingTheFieldAndTheForms) {
  for (const char* text : {"", "png", "raw:", "raw:32x32", "raw:32x32x256",
                           "raw:grey", "f32", "f32[]", "f32[n", "f32[4,n]", "f32[-1]",
                           "f128[4]", "i32[n,]", "label??", "?", "Label", "f32[0x10]"}) {
    EXPECT_THAT(ParseFieldText("boxes", text),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("field 'boxes': type '" + std::string(text) +
                                   "' is not one of jpeg, raw, raw:HxWxC, raw:gray")))
        << text;
  }
}

// What the text says, MakeSchema still checks: a dimension of 0 past the
// first, a value over 4 GiB.
TEST(WriterFieldTextTest, ShapesAreCheckedByTheSchema) {
  SP_ASSERT_OK_AND_ASSIGN(Field f, ParseFieldText("big", "f64[1000000000]"));
  EXPECT_THAT(MakeSchema({f}), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("field 'big': a value of over 4 GiB")));
}

}  // namespace
}  // namespace shardpack
