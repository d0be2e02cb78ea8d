// reader/jpeg_decoder: full decodes against TurboJPEG, region and scaled
// decodes against the full decode, real-world color spaces and damage.
#include "reader/jpeg_decoder.h"

#include <cmath>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "reader/image_ops.h"
#include "tests/reader/jpeg_fixtures.h"
#include "tests/testing/status_matchers.h"

namespace shardpack::internal {
namespace {

using ::shardpack::testing::Scene;
using ::shardpack::testing::StatusIs;
using ::shardpack::testing::TjDecode;
using ::shardpack::testing::TjSceneJpeg;
using ::testing::HasSubstr;

std::vector<uint8_t> ToVector(const PixelView& v) { return {v.data, v.data + v.bytes()}; }

// Full decodes of every kind equal tjDecompress2 (TJPF_RGB, no flags).
TEST(JpegDecoderTest, FullDecodeEqualsTjDecompress2PixelForPixel) {
  struct Case {
    const char* name;
    std::vector<uint8_t> jpeg;
  };
  const int w = 501, h = 377;  // not a multiple of any MCU
  std::vector<Case> cases = {
      {"420", TjSceneJpeg(w, h, TJSAMP_420)},
      {"422", TjSceneJpeg(w, h, TJSAMP_422)},
      {"444", TjSceneJpeg(w, h, TJSAMP_444)},
      {"gray", TjSceneJpeg(w, h, TJSAMP_GRAY)},
      {"progressive", TjSceneJpeg(w, h, TJSAMP_420, TJFLAG_PROGRESSIVE)},
      {"restart", testing::RestartJpeg(w, h, 1)},
  };
  JpegDecoder decoder;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_FALSE(c.jpeg.empty());
    SP_ASSERT_OK_AND_ASSIGN(PixelView v, decoder.Decode(c.jpeg));
    ASSERT_EQ(v.width, uint32_t(w));
    ASSERT_EQ(v.height, uint32_t(h));
    ASSERT_EQ(v.channels, 3);
    EXPECT_TRUE(ToVector(v) == TjDecode(c.jpeg, w, h, TJPF_RGB));
  }
}

TEST(JpegDecoderTest, GrayBecomesThreeEqualChannels) {
  std::vector<uint8_t> jpeg = TjSceneJpeg(64, 48, TJSAMP_GRAY);
  JpegDecoder decoder;
  SP_ASSERT_OK_AND_ASSIGN(PixelView v, decoder.Decode(jpeg));
  std::vector<uint8_t> gray = TjDecode(jpeg, 64, 48, TJPF_GRAY);
  for (size_t i = 0; i < gray.size(); ++i) {
    ASSERT_EQ(v.data[3 * i], gray[i]);
    ASSERT_EQ(v.data[3 * i + 1], gray[i]);
    ASSERT_EQ(v.data[3 * i + 2], gray[i]);
  }
}

// A region at scale 1 equals that region of the full decode, for every
// sampling and for progressive and restart-marker files, at offsets that
// are and are not on iMCU boundaries.
TEST(JpegDecoderTest, RegionAtScaleOneEqualsThatRegionOfTheFullDecode) {
  const int w = 500, h = 375;
  std::vector<std::vector<uint8_t>> files = {
      TjSceneJpeg(w, h, TJSAMP_420), TjSceneJpeg(w, h, TJSAMP_444),
      TjSceneJpeg(w, h, TJSAMP_GRAY), TjSceneJpeg(w, h, TJSAMP_420, TJFLAG_PROGRESSIVE),
      testing::RestartJpeg(w, h, 2)};
  const JpegRect rects[] = {{0, 0, 100, 80},   {17, 33, 211, 190}, {64, 32, 128, 96},
                            {399, 300, 101, 75}, {250, 1, 7, 373}, {0, 0, 500, 375}};
  JpegDecoder decoder;
  for (size_t f = 0; f < files.size(); ++f) {
    SP_ASSERT_OK_AND_ASSIGN(PixelView full_view, decoder.Decode(files[f]));
    std::vector<uint8_t> full = ToVector(full_view);
    for (const JpegRect& r : rects) {
      SCOPED_TRACE(::testing::Message() << "file " << f << " rect " << r.x << "," << r.y << " "
                                        << r.width << "x" << r.height);
      SP_ASSERT_OK(decoder.Start(files[f]).status());
      SP_ASSERT_OK_AND_ASSIGN(DecodedRegion d, decoder.DecodeRegion(r, r.width, r.height));
      ASSERT_EQ(d.scale_num, 8);
      // The box is the rect, in whole pixels of the decoded region.
      const auto bx = uint32_t(d.box.x0), by = uint32_t(d.box.y0);
      ASSERT_EQ(d.box.x0, double(bx));
      ASSERT_EQ(d.box.x1 - d.box.x0, double(r.width));
      ASSERT_EQ(d.box.y1 - d.box.y0, double(r.height));
      for (uint32_t y = 0; y < r.height; ++y) {
        const uint8_t* got = d.pixels.data + (size_t(by) + y) * d.pixels.stride() + bx * 3;
        const uint8_t* want = full.data() + (size_t(r.y) + y) * w * 3 + size_t(r.x) * 3;
        ASSERT_EQ(std::memcmp(got, want, size_t(r.width) * 3), 0) << "row " << y;
      }
    }
  }
}

TEST(JpegDecoderTest, SmallestScaleThatKeepsTheRegionAsLargeAsTheOutput) {
  EXPECT_EQ(ChooseDctScale(500, 375, 224, 224), 5);  // 313x235
  EXPECT_EQ(ChooseDctScale(500, 375, 500, 375), 8);
  EXPECT_EQ(ChooseDctScale(2000, 1800, 224, 224), 1);
  EXPECT_EQ(ChooseDctScale(100, 100, 224, 224), 8);  // upscaling: full size
  EXPECT_EQ(ChooseDctScale(448, 448, 224, 224), 4);
  // A whole image at 1/2 equals TurboJPEG's 1/2 scaled decode.
  std::vector<uint8_t> jpeg = TjSceneJpeg(500, 375, TJSAMP_420);
  JpegDecoder decoder;
  SP_ASSERT_OK(decoder.Start(jpeg).status());
  SP_ASSERT_OK_AND_ASSIGN(DecodedRegion d, decoder.DecodeRegion({0, 0, 500, 375}, 250, 188));
  ASSERT_EQ(d.scale_num, 4);
  ASSERT_EQ(d.pixels.width, 250u);
  ASSERT_EQ(d.pixels.height, 188u);
  EXPECT_TRUE(ToVector(d.pixels) == TjDecode(jpeg, 250, 188, TJPF_RGB));
}

// The transform's path (scaled region decode + resize of the box) against
// a reference: full decode, integer crop, antialiased resize. At scale 8/8
// the two are identical (checked below); at smaller scales the DCT's own
// low-pass (a sharp cut of the high coefficients) replaces part of the
// triangle filter's blur, so the output is a little sharper than the
// reference: mean absolute difference under 4 levels and 99.5% of samples
// within 24 levels (measured on these textured scenes: mean 0.6-3.5, the
// worst when the scale leaves little downscaling for the filter, e.g. a
// 150x201 crop decoded at 4/8 to 75x100 and resized to 64x64).
TEST(JpegDecoderTest, ScaledRegionResizeIsWithinToleranceOfReferenceResize) {
  const int w = 500, h = 375, out = 64;
  std::vector<uint8_t> jpeg = TjSceneJpeg(w, h, TJSAMP_420);
  JpegDecoder decoder;
  SP_ASSERT_OK_AND_ASSIGN(PixelView full_view, decoder.Decode(jpeg));
  std::vector<uint8_t> full = ToVector(full_view);
  const JpegRect rects[] = {{0, 0, 500, 375}, {40, 20, 300, 250}, {123, 77, 150, 201},
                            {301, 100, 199, 199}, {10, 300, 90, 75}};
  ResizeScratch scratch;
  for (const JpegRect& r : rects) {
    SCOPED_TRACE(::testing::Message() << r.x << "," << r.y << " " << r.width << "x" << r.height);
    std::vector<uint8_t> crop(size_t(r.width) * r.height * 3), want(size_t(out) * out * 3),
        got(want.size());
    for (uint32_t y = 0; y < r.height; ++y) {
      std::memcpy(&crop[size_t(y) * r.width * 3], &full[(size_t(r.y + y) * w + r.x) * 3],
                  size_t(r.width) * 3);
    }
    ResizeBilinearAA(PixelView{crop.data(), r.width, r.height, 3}, out, out, want.data(), &scratch);
    SP_ASSERT_OK(decoder.Start(jpeg).status());
    SP_ASSERT_OK_AND_ASSIGN(DecodedRegion d, decoder.DecodeRegion(r, out, out));
    EXPECT_LT(d.scale_num, 8);
    ResizeBoxAA(d.pixels, d.box, out, out, ResizeOptions{}, got.data(), &scratch);
    double sum = 0;
    std::vector<int> diffs;
    for (size_t i = 0; i < got.size(); ++i) {
      diffs.push_back(std::abs(int(got[i]) - int(want[i])));
      sum += diffs.back();
    }
    std::sort(diffs.begin(), diffs.end());
    EXPECT_LT(sum / got.size(), 4.0);
    EXPECT_LE(diffs[diffs.size() * 995 / 1000], 24);
    // Forced to full scale, the path is the reference exactly.
    SP_ASSERT_OK(decoder.Start(jpeg).status());
    SP_ASSERT_OK_AND_ASSIGN(DecodedRegion d8, decoder.DecodeRegion(r, r.width, r.height));
    ResizeBoxAA(d8.pixels, d8.box, out, out, ResizeOptions{}, got.data(), &scratch);
    EXPECT_TRUE(got == want);
  }
}

TEST(JpegDecoderTest, CmykAndYcckBecomeRgbAsTheConventionSays) {
  const int w = 48, h = 40;
  std::vector<uint8_t> cmyk(size_t(w) * h * 4);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 4; ++c) cmyk[(size_t(y) * w + x) * 4 + c] = uint8_t(40 + 3 * x + 4 * y + 30 * c);
  const datasets::CmykJpegKind kinds[] = {datasets::CmykJpegKind::kAdobeCmyk,
                                          datasets::CmykJpegKind::kAdobeYcck,
                                          datasets::CmykJpegKind::kPlainCmyk};
  JpegDecoder decoder;
  for (datasets::CmykJpegKind kind : kinds) {
    SCOPED_TRACE(int(kind));
    SP_ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> jpeg,
                            datasets::EncodeCmykJpeg(cmyk.data(), w, h, 95, kind));
    std::vector<uint8_t> want = TjDecode(jpeg, w, h, TJPF_CMYK);
    ASSERT_FALSE(want.empty());
    CmykToRgbInPlace(want.data(), size_t(w) * h, kind != datasets::CmykJpegKind::kPlainCmyk);
    want.resize(size_t(w) * h * 3);
    SP_ASSERT_OK_AND_ASSIGN(PixelView v, decoder.Decode(jpeg));
    EXPECT_TRUE(ToVector(v) == want);
    // A region of a CMYK file, too.
    SP_ASSERT_OK(decoder.Start(jpeg).status());
    SP_ASSERT_OK_AND_ASSIGN(DecodedRegion d, decoder.DecodeRegion({8, 8, 16, 16}, 16, 16));
    const auto bx = uint32_t(d.box.x0), by = uint32_t(d.box.y0);
    EXPECT_EQ(std::memcmp(d.pixels.data + size_t(by) * d.pixels.stride() + bx * 3,
                          want.data() + (size_t(8) * w + 8) * 3, 16 * 3),
              0);
  }
}

// Damage never crashes and never aborts: DataLossError, and the decoder
// goes on working.
TEST(JpegDecoderTest, CorruptAndTruncatedJpegsAreDataLoss) {
  std::vector<uint8_t> good = TjSceneJpeg(160, 120, TJSAMP_420);
  JpegDecoder decoder;
  EXPECT_THAT(decoder.Decode({}), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("not a JPEG")));
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', 13, 10, 26, 10};
  EXPECT_THAT(decoder.Decode(png), StatusIs(absl::StatusCode::kDataLoss, ::testing::_));
  std::vector<uint8_t> truncated(good.begin(), good.begin() + long(good.size() / 2));
  EXPECT_THAT(decoder.Decode(truncated),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("corrupt JPEG data")));
  std::vector<uint8_t> header_only(good.begin(), good.begin() + 40);
  EXPECT_THAT(decoder.Decode(header_only), StatusIs(absl::StatusCode::kDataLoss, ::testing::_));
  int errors = 0;
  for (int i = 0; i < 200; ++i) {  // flipped bytes all over the file
    std::vector<uint8_t> bad = good;
    size_t at = 2 + (size_t(i) * 7919) % (bad.size() - 4);
    bad[at] ^= uint8_t(0x5A + i);
    bad[at + 1] ^= 0xFF;
    absl::StatusOr<PixelView> v = decoder.Decode(bad);
    if (!v.ok()) {
      EXPECT_EQ(v.status().code(), absl::StatusCode::kDataLoss) << v.status();
      ++errors;
    }
  }
  // Most flips in entropy-coded data decode to wrong pixels without any
  // sign (JPEG has no checksum; the shard's CRC is what catches those); the
  // ones libjpeg notices must be DataLoss.
  EXPECT_GT(errors, 0);
  std::vector<uint8_t> bad_marker = good;  // an RST marker where none can be
  bad_marker[bad_marker.size() / 2] = 0xFF;
  bad_marker[bad_marker.size() / 2 + 1] = 0xD3;
  EXPECT_THAT(decoder.Decode(bad_marker), StatusIs(absl::StatusCode::kDataLoss, ::testing::_));
  SP_ASSERT_OK_AND_ASSIGN(PixelView v, decoder.Decode(good));
  EXPECT_TRUE(ToVector(v) == TjDecode(good, 160, 120, TJPF_RGB));
}

TEST(JpegDecoderTest, TrailingBytesBeforeEoiAreAccepted) {
  std::vector<uint8_t> jpeg = TjSceneJpeg(64, 48, TJSAMP_420);
  // Garbage between the entropy data and EOI: libjpeg's benign
  // "extraneous bytes before marker 0xd9".
  jpeg.insert(jpeg.end() - 2, {0x12, 0x34, 0x56});
  JpegDecoder decoder;
  SP_EXPECT_OK(decoder.Decode(jpeg).status());
}

}  // namespace
}  // namespace shardpack::internal
