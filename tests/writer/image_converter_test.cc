// ImageConverter (shardpack/writer.h): image files and pixels into values of
// an image field, in the field's encoding; the checks that name the field.
#include <turbojpeg.h>

#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/writer.h"
#include "tests/testing/jpeg_fixtures.h"
#include "tests/testing/png_fixtures.h"
#include "tests/testing/status_matchers.h"

namespace shardpack {
namespace {

using ::testing::HasSubstr;
using testing::StatusIs;

using testing::EncodePng;

// Distinct values, as a segmentation mask's class ids are.
std::vector<uint8_t> Ramp(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 7) % 23);
  return v;
}

Field FieldOf(const char* name, const char* text) {
  absl::StatusOr<Field> f = ParseFieldText(name, text);
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

std::vector<uint8_t> Bytes(ByteSpan s) { return {s.begin(), s.end()}; }

class ImageConverterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<ImageConverter>> made = ImageConverter::Create();
    ASSERT_TRUE(made.ok()) << made.status();
    images_ = *std::move(made);
  }
  std::unique_ptr<ImageConverter> images_;
  std::vector<uint8_t> storage_;
};

TEST_F(ImageConverterTest, AJpegIntoAJpegFieldIsStoredAsItIs) {
  const std::vector<uint8_t> jpeg = testing::TjSceneJpeg(40, 24, TJSAMP_420);
  SP_ASSERT_OK_AND_ASSIGN(FieldValue v,
                          images_->FromFile(FieldOf("photo", "jpeg"), jpeg, &storage_));
  EXPECT_TRUE(v.present);
  EXPECT_EQ(v.image, (ImageInfo{Encoding::kJpeg, Layout::kHWC, 24, 40, 3}));
  EXPECT_EQ(v.bytes.data(), jpeg.data());  // a view, not a copy
  EXPECT_EQ(v.bytes.size(), jpeg.size());
  const std::vector<uint8_t> gray = testing::TjSceneJpeg(8, 8, TJSAMP_GRAY);
  SP_ASSERT_OK_AND_ASSIGN(v, images_->FromFile(FieldOf("photo", "jpeg"), gray, &storage_));
  EXPECT_EQ(v.image.channels, 1);
}

// Passthrough's conversion: the same size, full chroma, quality 100.
TEST_F(ImageConverterTest, APngIntoAJpegFieldBecomesAJpegOfItsSize) {
  const std::vector<uint8_t> rgb = testing::Scene(30, 20);
  SP_ASSERT_OK_AND_ASSIGN(FieldValue v,
                          images_->FromFile(FieldOf("photo", "jpeg"), EncodePng(rgb, 30, 20, 3),
                                            &storage_));
  EXPECT_EQ(v.image, (ImageInfo{Encoding::kJpeg, Layout::kHWC, 20, 30, 3}));
  ASSERT_GE(v.bytes.size(), 2u);
  EXPECT_EQ(v.bytes[0], 0xFF);
  EXPECT_EQ(v.bytes[1], 0xD8);
  const std::vector<uint8_t> back =
      testing::TjDecode(Bytes(v.bytes), 30, 20, TJPF_RGB);
  ASSERT_EQ(back.size(), rgb.size());
  int worst = 0;
  for (size_t i = 0; i < rgb.size(); ++i) worst = std::max(worst, std::abs(back[i] - rgb[i]));
  EXPECT_LE(worst, 8);  // 4:4:4 at quality 100
}

// A mask stays exact: its class ids are the stored bytes.
TEST_F(ImageConverterTest, AGrayPngIntoAGrayRawFieldIsExact) {
  const std::vector<uint8_t> mask = Ramp(12 * 9);
  SP_ASSERT_OK_AND_ASSIGN(FieldValue v, images_->FromFile(FieldOf("mask", "raw:gray"),
                                                          EncodePng(mask, 12, 9, 1), &storage_));
  EXPECT_EQ(v.image, (ImageInfo{Encoding::kRaw, Layout::kHWC, 9, 12, 1}));
  EXPECT_EQ(Bytes(v.bytes), mask);
  SP_ASSERT_OK_AND_ASSIGN(v, images_->FromFile(FieldOf("mask", "raw:9x12x1"),
                                               EncodePng(mask, 12, 9, 1), &storage_));
  EXPECT_EQ(Bytes(v.bytes), mask);
}

TEST_F(ImageConverterTest, RawFieldsTakeTheFilesChannelsAsTheFieldSays) {
  const std::vector<uint8_t> rgb = Ramp(6 * 4 * 3);
  const std::vector<uint8_t> gray = Ramp(6 * 4);
  // Any channels: what the file holds.
  SP_ASSERT_OK_AND_ASSIGN(
      FieldValue v, images_->FromFile(FieldOf("x", "raw"), EncodePng(gray, 6, 4, 1), &storage_));
  EXPECT_EQ(v.image.channels, 1);
  SP_ASSERT_OK_AND_ASSIGN(
      v, images_->FromFile(FieldOf("x", "raw"), EncodePng(rgb, 6, 4, 3), &storage_));
  EXPECT_EQ(v.image.channels, 3);
  EXPECT_EQ(Bytes(v.bytes), rgb);
  // RGB: gray made RGB; RGBA: alpha dropped.
  SP_ASSERT_OK_AND_ASSIGN(v, images_->FromFile(FieldOf("x", "raw:rgb"), EncodePng(gray, 6, 4, 1),
                                               &storage_));
  EXPECT_EQ(v.image.channels, 3);
  EXPECT_EQ(v.bytes[3 * 5], gray[5]);
  EXPECT_EQ(v.bytes[3 * 5 + 2], gray[5]);
  std::vector<uint8_t> rgba(6 * 4 * 4, 200);
  SP_ASSERT_OK_AND_ASSIGN(v, images_->FromFile(FieldOf("x", "raw:rgb"), EncodePng(rgba, 6, 4, 4),
                                               &storage_));
  EXPECT_EQ(v.bytes.size(), 6u * 4 * 3);
  // A JPEG decoded, as TurboJPEG decodes it.
  const std::vector<uint8_t> jpeg = testing::TjSceneJpeg(16, 8, TJSAMP_444);
  SP_ASSERT_OK_AND_ASSIGN(v, images_->FromFile(FieldOf("x", "raw:rgb"), jpeg, &storage_));
  EXPECT_EQ(v.image, (ImageInfo{Encoding::kRaw, Layout::kHWC, 8, 16, 3}));
  EXPECT_EQ(Bytes(v.bytes), testing::TjDecode(jpeg, 16, 8, TJPF_RGB));
}

TEST_F(ImageConverterTest, AColorImageForAGrayMaskIsRefusedNamingTheField) {
  EXPECT_THAT(images_->FromFile(FieldOf("mask", "raw:gray"), EncodePng(Ramp(4 * 4 * 3), 4, 4, 3),
                                &storage_),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("field 'mask': a 3-channel (RGB) PNG image, the field holds "
                                 "1-channel (gray) images")));
  EXPECT_THAT(images_->FromFile(FieldOf("x", "raw:4x4x4"), EncodePng(Ramp(16), 4, 4, 1), &storage_),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("field 'x': a 1-channel (gray) PNG image, the field holds "
                                 "4-channel images")));
}

TEST_F(ImageConverterTest, AnotherShapeThanTheFieldsIsRefusedNotResized) {
  EXPECT_THAT(images_->FromFile(FieldOf("mask", "raw:8x8x1"), EncodePng(Ramp(12 * 9), 12, 9, 1),
                                &storage_),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("field 'mask': a PNG image of 9x12 (HxW), the field holds 8x8: "
                                 "images are not resized")));
  EXPECT_THAT(images_->FromPixels(FieldOf("x", "raw:2x2x3"), Ramp(12), 1, 4, 3, &storage_),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("field 'x': an image of 1x4 (HxW), the field holds 2x2")));
}

TEST_F(ImageConverterTest, DamagedAndForeignFilesNameTheField) {
  std::vector<uint8_t> png = EncodePng(Ramp(64), 8, 8, 1);
  png.resize(png.size() / 2);
  EXPECT_THAT(images_->FromFile(FieldOf("mask", "raw:gray"), png, &storage_),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("field 'mask' @")));
  const std::vector<uint8_t> gif = {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0, 0, 0};
  EXPECT_THAT(images_->FromFile(FieldOf("photo", "jpeg"), gif, &storage_),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("field 'photo': GIF")));
  std::vector<uint8_t> jpeg = testing::TjSceneJpeg(16, 16, TJSAMP_420);
  jpeg.resize(jpeg.size() - 10);
  EXPECT_THAT(images_->FromFile(FieldOf("photo", "jpeg"), jpeg, &storage_),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("field 'photo'")));
  EXPECT_THAT(images_->FromFile(FieldOf("caption", "string"), jpeg, &storage_),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("field 'caption': a string field, not an image field")));
}

TEST_F(ImageConverterTest, PixelsIntoRawFieldsAreViewedOrTransposed) {
  const std::vector<uint8_t> hwc = Ramp(2 * 3 * 3);
  SP_ASSERT_OK_AND_ASSIGN(FieldValue v,
                          images_->FromPixels(FieldOf("x", "raw:rgb"), hwc, 2, 3, 3, &storage_));
  EXPECT_EQ(v.bytes.data(), hwc.data());
  EXPECT_EQ(v.image, (ImageInfo{Encoding::kRaw, Layout::kHWC, 2, 3, 3}));
  Field chw = FieldOf("x", "raw:2x3x3");
  chw.image.layout = Layout::kCHW;
  SP_ASSERT_OK_AND_ASSIGN(v, images_->FromPixels(chw, hwc, 2, 3, 3, &storage_));
  EXPECT_EQ(v.image.layout, Layout::kCHW);
  for (int c = 0; c < 3; ++c) {
    for (int p = 0; p < 6; ++p) EXPECT_EQ(v.bytes[c * 6 + p], hwc[p * 3 + c]);
  }
  EXPECT_THAT(images_->FromPixels(FieldOf("x", "raw"), hwc, 2, 3, 2, &storage_),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("field 'x': 18 bytes of pixels for 2x3x2")));
}

TEST_F(ImageConverterTest, PixelsIntoAJpegFieldAreEncoded) {
  const std::vector<uint8_t> rgb = testing::Scene(16, 16);
  SP_ASSERT_OK_AND_ASSIGN(FieldValue v,
                          images_->FromPixels(FieldOf("photo", "jpeg"), rgb, 16, 16, 3, &storage_));
  EXPECT_EQ(v.image, (ImageInfo{Encoding::kJpeg, Layout::kHWC, 16, 16, 3}));
  EXPECT_EQ(testing::TjDecode(Bytes(v.bytes), 16, 16, TJPF_RGB).size(), rgb.size());
  EXPECT_THAT(images_->FromPixels(FieldOf("photo", "jpeg"), std::vector<uint8_t>(64), 4, 4, 4,
                                  &storage_),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("field 'photo': a JPEG holds 1 (gray) or 3 (RGB) channels, "
                                 "not 4")));
}

TEST(ImageConverterOptionsTest, QualityOutOfRangeIsRefused) {
  EXPECT_THAT(ImageConverter::Create({.jpeg_quality = 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("jpeg_quality 0")));
}

}  // namespace
}  // namespace shardpack
