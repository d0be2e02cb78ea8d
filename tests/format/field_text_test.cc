// A field's type as text (FieldTypeText / ParseFieldTypeText): the form the
// tools print and writers take, rendered and parsed back for every type.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/fields.h"
#include "shardpack/manifest.h"
#include "tests/testing/status_matchers.h"

namespace shardpack {
namespace {

using ::testing::HasSubstr;
using testing::StatusIs;

Field Typed(FieldType type) {
  Field f;
  f.type = type;
  return f;
}

Field Image(Encoding e, Layout l, uint32_t h, uint32_t w, uint8_t c) {
  Field f = Typed(FieldType::kImage);
  f.image = {e, l, h, w, c};
  return f;
}

Field Array(ArrayDType dtype, std::vector<uint64_t> shape) {
  Field f = Typed(FieldType::kArray);
  f.dtype = dtype;
  f.shape = std::move(shape);
  return f;
}

TEST(FieldTextTest, EveryTypeRendersAndParsesBack) {
  const std::vector<std::pair<Field, std::string>> cases = {
      {Image(Encoding::kJpeg, Layout::kHWC, 0, 0, 0), "jpeg"},
      {Image(Encoding::kRaw, Layout::kHWC, 0, 0, 0), "raw"},
      {Image(Encoding::kRaw, Layout::kHWC, 32, 32, 3), "raw:32x32x3"},
      {Image(Encoding::kRaw, Layout::kCHW, 32, 24, 3), "raw/chw:32x24x3"},
      {Image(Encoding::kRaw, Layout::kHWC, 0, 0, 1), "raw:gray"},
      {Image(Encoding::kRaw, Layout::kHWC, 0, 0, 3), "raw:rgb"},
      {Image(Encoding::kRaw, Layout::kCHW, 0, 0, 3), "raw/chw:rgb"},
      {Image(Encoding::kRaw, Layout::kHWC, 0, 0, 4), "raw:0x0x4"},
      {Image(Encoding::kRaw, Layout::kHWC, 0, 32, 3), "raw:0x32x3"},
      {Image(Encoding::kJpeg, Layout::kHWC, 0, 0, 5), "jpeg:0x0x5"},
      {Typed(FieldType::kLabel), "label"},
      {Typed(FieldType::kString), "string"},
      {Typed(FieldType::kBytes), "bytes"},
      {Typed(FieldType::kJson), "json"},
      {Array(ArrayDType::kF32, {0, 4}), "f32[n,4]"},
      {Array(ArrayDType::kI32, {0}), "i32[n]"},
      {Array(ArrayDType::kF16, {768}), "f16[768]"},
      {Array(ArrayDType::kU8, {2, 3, 4, 5, 6, 7, 8, 9}), "u8[2,3,4,5,6,7,8,9]"},
      {Array(ArrayDType::kI64, {1}), "i64[1]"},
      {Array(ArrayDType::kF64, {0, 1}), "f64[n,1]"},
  };
  for (auto [field, text] : cases) {
    for (bool optional : {false, true}) {
      field.optional = optional;
      const std::string want = text + (optional ? "?" : "");
      EXPECT_EQ(FieldTypeText(field), want);
      SP_ASSERT_OK_AND_ASSIGN(Field back, ParseFieldTypeText(want));
      EXPECT_EQ(back, field) << want;
    }
  }
}

// Spaces around an array's dimensions are taken (as a person writes them),
// never rendered.
TEST(FieldTextTest, SpacesAroundArrayDimensionsAreTaken) {
  SP_ASSERT_OK_AND_ASSIGN(Field f, ParseFieldTypeText("f32[n, 4]?"));
  EXPECT_EQ(f, [] {
    Field want = Array(ArrayDType::kF32, {0, 4});
    want.optional = true;
    return want;
  }());
  EXPECT_EQ(FieldTypeText(f), "f32[n,4]?");
}

// The class names of a label field are not part of its text: a label field
// with classes renders as "label", and parses back without them.
TEST(FieldTextTest, LabelClassesAndNamesAreNotPartOfTheText) {
  Field f = Typed(FieldType::kLabel);
  f.name = "category";
  f.classes = {"cat", "dog"};
  EXPECT_EQ(FieldTypeText(f), "label");
  SP_ASSERT_OK_AND_ASSIGN(Field back, ParseFieldTypeText("label"));
  EXPECT_TRUE(back.name.empty());
  EXPECT_TRUE(back.classes.empty());
}

TEST(FieldTextTest, TextThatIsNoTypeIsRefusedSayingWhy) {
  auto refused = [](std::string_view text, std::string_view why) {
    EXPECT_THAT(ParseFieldTypeText(text),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(absl::StrCat("field type '", std::string(text), "': ",
                                                std::string(why)))))
        << text;
  };
  refused("", "not a type");
  refused("?", "not a type");
  refused("text", "not a type");
  refused("Label", "not a type");
  refused("string??", "not a type");
  refused("png", "not a type");
  refused("raw:32x32", "an image shape is gray, rgb or HxWxC");
  refused("raw:grey", "an image shape is gray, rgb or HxWxC");
  refused("raw:32x32x256", "an image shape is gray, rgb or HxWxC (0 where it varies; C at most");
  refused("raw:32x32x-3", "an image shape is");
  refused("raw:032x32x3", "an image shape is");
  refused("raw:4294967296x1x1", "an image shape is");
  refused("raw/hwc", "an image is jpeg or raw");
  refused("raw/chw/chw", "an image is jpeg or raw");
  refused("jpegx", "not a type");
  refused("f128[4]", "unknown dtype");
  refused("f32[]", "an array has 1 to 8 dimensions");
  refused("f32[1,2,3,4,5,6,7,8,9]", "an array has 1 to 8 dimensions");
  refused("f32[4,n]", "dimension 1 'n' is not a number");
  refused("f32[0]", "dimension 0 '0' is not a number from 1 to 2^32-1 or n");
  refused("f32[n,,4]", "dimension 1 '' is not a number");
  refused("f32[4294967296]", "dimension 0");
  refused("f32[n,4", "not a type");
}

// What parses is a declaration MakeSchema takes (its checks still apply:
// an array too large for a record is refused there).
TEST(FieldTextTest, ParsedFieldsMakeASchema) {
  std::vector<Field> fields;
  for (std::string_view text : {"jpeg", "string", "f32[n,4]", "label", "raw:gray?", "json?"}) {
    SP_ASSERT_OK_AND_ASSIGN(Field f, ParseFieldTypeText(text));
    f.name = absl::StrCat("f", fields.size());
    fields.push_back(std::move(f));
  }
  SP_ASSERT_OK_AND_ASSIGN(Schema schema, MakeSchema(fields));
  EXPECT_EQ(schema.fields.size(), 6u);
  SP_ASSERT_OK_AND_ASSIGN(Field huge, ParseFieldTypeText("u8[65536,65536,2]"));
  huge.name = "huge";
  EXPECT_THAT(MakeSchema({huge}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("4 GiB")));
}

}  // namespace
}  // namespace shardpack
