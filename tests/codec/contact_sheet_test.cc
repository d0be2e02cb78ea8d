// codec/contact_sheet: layout, captions, the batch conversion (float
// normalization undone) and the PNG / JPEG encoders.
#include "codec/contact_sheet.h"

#include <string>
#include <vector>

#include "codec/decode.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shardpack::codec {
namespace {

using ::testing::HasSubstr;

std::vector<uint8_t> Pattern(size_t n) {
  std::vector<uint8_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i * 37 + 11);
  return p;
}

TEST(ContactSheetTest, FitKeepsTheAspectAndScalesUp) {
  uint32_t w, h;
  FitInTile(32, 16, 96, &w, &h);
  EXPECT_EQ(w, 96u);
  EXPECT_EQ(h, 48u);
  FitInTile(1000, 3, 64, &w, &h);
  EXPECT_EQ(w, 64u);
  EXPECT_EQ(h, 1u);  // never 0
}

TEST(ContactSheetTest, LayoutIsAboutSquareAndCaptionsSitBelowTheTile) {
  auto s = ContactSheet::Create(10, {32, 0});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->columns(), 4u);
  EXPECT_EQ(s->rows(), 3u);
  EXPECT_EQ(s->view().width, kSheetGap + 4 * (32 + kSheetGap));
  EXPECT_EQ(s->view().height, kSheetGap + 3 * (32 + kCaptionHeight + kSheetGap));
  const SheetRect img = s->ImageRect(5, 8, 8), cap = s->CaptionRect(5);
  EXPECT_EQ(img.x, kSheetGap + 1 * (32 + kSheetGap));
  EXPECT_EQ(cap.y, img.y + img.height);
  // Columns never exceed the tiles.
  auto one = ContactSheet::Create(2, {32, 50});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->columns(), 2u);
}

TEST(ContactSheetTest, TextInksTheStripAndDiffersByText) {
  auto s = ContactSheet::Create(3, {64, 3});
  ASSERT_TRUE(s.ok());
  std::vector<uint8_t> px(8 * 8 * 3, 100);
  const std::string_view a[] = {"#1 2", "bird"}, b[] = {"#1 3", "bird"};
  ASSERT_TRUE(s->Draw(0, {px.data(), 8, 8, 3}, a).ok());
  ASSERT_TRUE(s->Draw(1, {px.data(), 8, 8, 3}, b).ok());
  ASSERT_TRUE(s->Draw(2, {px.data(), 8, 8, 3}, {}).ok());
  auto strip = [&](size_t i) {
    const SheetRect r = s->CaptionRect(i);
    std::string out;
    for (uint32_t y = r.y; y < r.y + r.height; ++y) {
      out.append(
          reinterpret_cast<const char*>(s->view().data) + (size_t{y} * s->view().width + r.x) * 3,
          size_t{r.width} * 3);
    }
    return out;
  };
  const std::string s0 = strip(0), s1 = strip(1), s2 = strip(2);
  EXPECT_GT(std::count(s0.begin(), s0.end(), static_cast<char>(kCaptionInk)), 30);
  EXPECT_NE(s0, s1);
  EXPECT_EQ(std::count(s2.begin(), s2.end(), static_cast<char>(kCaptionInk)), 0);
  // A long caption stops at the tile's edge: the gap to the next tile stays
  // background.
  const std::string_view long_text[] = {std::string_view("WWWWWWWWWWWWWWWWWWWWWWWWWWWWWW")};
  ASSERT_TRUE(s->Draw(0, {px.data(), 8, 8, 3}, long_text).ok());
  const SheetRect r = s->CaptionRect(0);
  for (uint32_t y = r.y; y < r.y + r.height; ++y) {
    for (uint32_t x = r.x + r.width; x < r.x + r.width + kSheetGap; ++x) {
      EXPECT_EQ(s->view().data[(size_t{y} * s->view().width + x) * 3], kSheetBackground);
    }
  }
}

TEST(ContactSheetTest, BadSheetsAndImagesAreRefused) {
  EXPECT_FALSE(ContactSheet::Create(0, {}).ok());
  EXPECT_THAT(ContactSheet::Create(1, {8, 0}).status().message(), HasSubstr("tile size 8"));
  EXPECT_THAT(ContactSheet::Create(1, {2000, 0}).status().message(), HasSubstr("16..1024"));
  auto huge = ContactSheet::Create(100000, {96, 0});
  EXPECT_THAT(huge.status().message(), HasSubstr("over the limit"));
  EXPECT_THAT(huge.status().message(), HasSubstr("fit"));
  auto wide = ContactSheet::Create(1000, {96, 1000});  // 100k pixels wide
  EXPECT_THAT(wide.status().message(), HasSubstr("per side"));
  auto s = ContactSheet::Create(1, {});
  ASSERT_TRUE(s.ok());
  std::vector<uint8_t> px(4 * 4 * 4);
  EXPECT_THAT(s->Draw(0, {px.data(), 4, 4, 4}, {}).message(), HasSubstr("4 channels"));
  EXPECT_FALSE(s->Draw(1, {px.data(), 4, 4, 3}, {}).ok());
}

TEST(ContactSheetTest, FloatBatchesAreDenormalized) {
  // Two NCHW 1x2 RGB samples, normalized with mean/std as the reader does.
  const std::array<float, 3> mean = {0.5f, 0.4f, 0.3f}, std = {0.2f, 0.25f, 0.5f};
  const std::vector<uint8_t> pixels = {0, 255, 10, 20, 128, 129, 1, 2, 3, 4, 5, 6};  // CHW x 2
  std::vector<float> f(pixels.size());
  for (size_t i = 0; i < pixels.size(); ++i) {
    const size_t ch = (i % 6) / 2;
    f[i] = (pixels[i] / 255.f - mean[ch]) / std[ch];
  }
  BatchImages b{f.data(), true, true, 2, 1, 2, 3, mean, std};
  std::vector<uint8_t> out;
  auto v = BatchSample(b, 1, &out);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 3, 5, 2, 4, 6}));  // HWC
  f[0] = 1e9f;                                               // far out of range: clamped
  ASSERT_TRUE(BatchSample(b, 0, &out).ok());
  EXPECT_EQ(out[0], 255);
  b.c = 2;
  EXPECT_FALSE(BatchSample(b, 0, &out).ok());
}

TEST(ContactSheetTest, PngRoundTripsAndJpegIsAJpeg) {
  for (int c : {1, 3}) {
    std::vector<uint8_t> px = Pattern(size_t{17} * 9 * c);
    const PixelView v{px.data(), 17, 9, c};
    auto png = EncodePng(v);
    ASSERT_TRUE(png.ok()) << png.status();
    DecodeBuffers buffers;
    auto back = DecodePng(*png, "sheet.png", {.keep_gray = true}, &buffers);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->channels, c);
    EXPECT_EQ(std::vector<uint8_t>(back->data, back->data + back->bytes()), px);
  }
  std::vector<uint8_t> px = Pattern(size_t{16} * 16 * 3);
  auto jpeg = EncodeForPath({px.data(), 16, 16, 3}, "x/sheet.JPEG");
  ASSERT_TRUE(jpeg.ok()) << jpeg.status();
  EXPECT_EQ((*jpeg)[0], 0xFF);
  EXPECT_EQ((*jpeg)[1], 0xD8);
  EXPECT_THAT(EncodeForPath({px.data(), 16, 16, 3}, "sheet.gif").status().message(),
              HasSubstr("sheet.gif"));
  EXPECT_FALSE(CheckSheetPath("a.png/b").ok());
  EXPECT_TRUE(CheckSheetPath("A.PNG").ok());
}

}  // namespace
}  // namespace shardpack::codec
