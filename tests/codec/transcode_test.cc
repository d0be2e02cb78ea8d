#include "codec/transcode.h"

#include <turbojpeg.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "codec/color.h"
#include "codec/jpeg_probe.h"
#include "datasets/demo.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/jpeg_fixtures.h"
#include "tests/testing/status_matchers.h"

namespace shardpack::codec {
namespace {

using ::shardpack::datasets::CmykJpegKind;
using ::shardpack::datasets::EncodeCmykJpeg;
using ::shardpack::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kName[] = "dir/photo.jpg";

// A flat RGB JPEG of one color.
std::vector<uint8_t> FlatRgbJpeg(int width, int height, uint8_t r, uint8_t g, uint8_t b,
                                 int flags = 0) {
  std::vector<uint8_t> pixels(static_cast<size_t>(width) * height * 3);
  for (size_t i = 0; i < pixels.size(); i += 3) {
    pixels[i] = r;
    pixels[i + 1] = g;
    pixels[i + 2] = b;
  }
  return testing::EncodeJpeg(pixels, width, height, TJPF_RGB, TJSAMP_420, 95, flags);
}

std::vector<uint8_t> FlatCmyk(int width, int height, uint8_t c, uint8_t m, uint8_t y, uint8_t k) {
  std::vector<uint8_t> pixels(static_cast<size_t>(width) * height * 4);
  for (size_t i = 0; i < pixels.size(); i += 4) {
    pixels[i] = c;
    pixels[i + 1] = m;
    pixels[i + 2] = y;
    pixels[i + 3] = k;
  }
  return pixels;
}

// Every pixel of `view` is within `tolerance` of `expected` (per channel).
void ExpectFlat(const uint8_t* data, size_t pixels, const std::vector<int>& expected,
                int tolerance) {
  const size_t channels = expected.size();
  int worst = 0;
  for (size_t p = 0; p < pixels; ++p) {
    for (size_t c = 0; c < channels; ++c) {
      worst = std::max(worst, std::abs(int{data[p * channels + c]} - expected[c]));
    }
  }
  EXPECT_LE(worst, tolerance);
}

std::unique_ptr<Transcoder> NewTranscoder() {
  absl::StatusOr<std::unique_ptr<Transcoder>> t = Transcoder::Create();
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : nullptr;
}

TEST(TranscodeTest, DecodesRgbAtFullSize) {
  auto t = NewTranscoder();
  const std::vector<uint8_t> jpeg = FlatRgbJpeg(64, 48, 200, 100, 50);
  JpegInfo info;
  SP_ASSERT_OK_AND_ASSIGN(PixelView v, t->Decode(jpeg, kName, {}, &info));
  EXPECT_EQ(v.width, 64u);
  EXPECT_EQ(v.height, 48u);
  EXPECT_EQ(v.channels, 3);
  EXPECT_EQ(info.components, 3);
  ExpectFlat(v.data, 64 * 48, {200, 100, 50}, 3);
}

TEST(TranscodeTest, GrayscaleBecomesRgbUnlessKept) {
  auto t = NewTranscoder();
  std::vector<uint8_t> gray(40 * 30, 77);
  const std::vector<uint8_t> jpeg = testing::EncodeJpeg(gray, 40, 30, TJPF_GRAY, TJSAMP_GRAY, 95);
  SP_ASSERT_OK_AND_ASSIGN(PixelView rgb, t->Decode(jpeg, kName, {}));
  EXPECT_EQ(rgb.channels, 3);
  ExpectFlat(rgb.data, 40 * 30, {77, 77, 77}, 1);
  DecodeOptions keep;
  keep.keep_gray = true;
  SP_ASSERT_OK_AND_ASSIGN(PixelView g, t->Decode(jpeg, kName, keep));
  EXPECT_EQ(g.channels, 1);
  ExpectFlat(g.data, 40 * 30, {77}, 1);
}

TEST(TranscodeTest, ProgressiveDecodes) {
  auto t = NewTranscoder();
  const std::vector<uint8_t> jpeg = FlatRgbJpeg(50, 20, 10, 220, 130, TJFLAG_PROGRESSIVE);
  SP_ASSERT_OK_AND_ASSIGN(PixelView v, t->Decode(jpeg, kName, {}));
  ExpectFlat(v.data, 50 * 20, {10, 220, 130}, 3);
}

TEST(TranscodeTest, DecodesAtTheSmallestDctScaleNotBelowTheTarget) {
  auto t = NewTranscoder();
  const std::vector<uint8_t> jpeg = FlatRgbJpeg(400, 300, 90, 90, 180);
  DecodeOptions options;
  options.min_width = 100;
  options.min_height = 75;
  SP_ASSERT_OK_AND_ASSIGN(PixelView v, t->Decode(jpeg, kName, options));
  EXPECT_EQ(v.width, 100u);  // 1/4
  EXPECT_EQ(v.height, 75u);
  ExpectFlat(v.data, v.width * v.height, {90, 90, 180}, 3);
  options.min_width = 120;  // 1/4 is too small; 3/8 gives 150 x 112.5 -> 113
  SP_ASSERT_OK_AND_ASSIGN(v, t->Decode(jpeg, kName, options));
  EXPECT_EQ(v.width, 150u);
  EXPECT_EQ(v.height, 113u);
  options.min_width = 1000;  // never above full size
  SP_ASSERT_OK_AND_ASSIGN(v, t->Decode(jpeg, kName, options));
  EXPECT_EQ(v.width, 400u);
}

// libjpeg-turbo's CMYK convention (transcode.h): the TJPF_CMYK samples of
// an Adobe file are inverted, so white paper is 255 and R = C * K / 255.
TEST(TranscodeTest, TurboJpegReturnsCmykSamplesAsGiven) {
  const std::vector<uint8_t> cmyk = FlatCmyk(32, 32, 200, 100, 50, 180);
  const std::vector<uint8_t> jpeg = testing::EncodeJpeg(cmyk, 32, 32, TJPF_CMYK, TJSAMP_444, 95);
  tjhandle h = tjInitDecompress();
  std::vector<uint8_t> back(cmyk.size());
  ASSERT_EQ(tjDecompress2(h, jpeg.data(), jpeg.size(), back.data(), 32, 0, 32, TJPF_CMYK, 0), 0);
  tjDestroy(h);
  ExpectFlat(back.data(), 32 * 32, {200, 100, 50, 180}, 2);
}

TEST(TranscodeTest, CmykToRgbConventions) {
  uint8_t px[8] = {200, 100, 50, 180, 255, 255, 255, 255};
  codec::CmykToRgbInPlace(px, 2, codec::CmykInk::kInverted);
  EXPECT_EQ(std::vector<int>(px, px + 6), (std::vector<int>{141, 71, 35, 255, 255, 255}));
  uint8_t plain[8] = {200, 100, 50, 180, 0, 0, 0, 0};
  codec::CmykToRgbInPlace(plain, 2, codec::CmykInk::kPlain);
  EXPECT_EQ(std::vector<int>(plain, plain + 6), (std::vector<int>{16, 46, 60, 255, 255, 255}));
}

// Pillow's cmyk2rgb (Convert.c): nk = 255 - K; R = nk - MULDIV255(C, nk),
// MULDIV255(a, b) = ((a*b + 128) + ((a*b + 128) >> 8)) >> 8; on the samples
// inverted first ("CMYK;I") for a JPEG. Every C and K, to the integer.
TEST(TranscodeTest, CmykToRgbIsPillowsCmyk2RgbToTheInteger) {
  const auto pillow = [](int c, int k) {
    const int nk = 255 - k, t = c * nk + 128;
    return nk - (((t >> 8) + t) >> 8);
  };
  for (int c = 0; c < 256; ++c) {
    for (int k = 0; k < 256; ++k) {
      uint8_t px[4] = {uint8_t(c), uint8_t(c), uint8_t(c), uint8_t(k)};
      codec::CmykToRgbInPlace(px, 1, codec::CmykInk::kPlain);
      ASSERT_EQ(px[0], pillow(c, k)) << c << " " << k;
      uint8_t jpeg[4] = {uint8_t(c), uint8_t(c), uint8_t(c), uint8_t(k)};
      JpegCmykToRgbInPlace(jpeg, 1);
      ASSERT_EQ(jpeg[0], pillow(255 - c, 255 - k)) << c << " " << k;
    }
  }
}

TEST(TranscodeTest, YcckFromTurboJpegDecodesToRgb) {
  auto t = NewTranscoder();
  const std::vector<uint8_t> jpeg =
      testing::EncodeJpeg(FlatCmyk(48, 32, 200, 100, 50, 180), 48, 32, TJPF_CMYK, TJSAMP_444, 95);
  JpegInfo info;
  SP_ASSERT_OK_AND_ASSIGN(PixelView v, t->Decode(jpeg, kName, {}, &info));
  EXPECT_EQ(info.color_space, JpegColorSpace::kYCCK);
  EXPECT_EQ(v.channels, 3);
  ExpectFlat(v.data, 48 * 32, {141, 71, 35}, 3);  // C*K/255, M*K/255, Y*K/255
}

TEST(TranscodeTest, AdobeCmykDecodesToRgb) {
  auto t = NewTranscoder();
  const std::vector<uint8_t> cmyk = FlatCmyk(40, 24, 200, 100, 50, 180);
  SP_ASSERT_OK_AND_ASSIGN(auto jpeg,
                          EncodeCmykJpeg(cmyk.data(), 40, 24, 95, CmykJpegKind::kAdobeCmyk));
  SP_ASSERT_OK_AND_ASSIGN(PixelView v, t->Decode(jpeg, kName, {}));
  ExpectFlat(v.data, 40 * 24, {141, 71, 35}, 3);
  SP_ASSERT_OK_AND_ASSIGN(jpeg, EncodeCmykJpeg(cmyk.data(), 40, 24, 95, CmykJpegKind::kAdobeYcck));
  SP_ASSERT_OK_AND_ASSIGN(v, t->Decode(jpeg, kName, {}));
  ExpectFlat(v.data, 40 * 24, {141, 71, 35}, 3);
}

// Regression: a CMYK JPEG without an Adobe marker came out inverted
// relative to PIL, which reads every CMYK JPEG with Adobe's polarity.
TEST(TranscodeTest, CmykWithoutAdobeMarkerIsInvertedAsPilReadsIt) {
  auto t = NewTranscoder();
  const std::vector<uint8_t> cmyk = FlatCmyk(40, 24, 200, 100, 50, 180);
  SP_ASSERT_OK_AND_ASSIGN(auto jpeg,
                          EncodeCmykJpeg(cmyk.data(), 40, 24, 95, CmykJpegKind::kPlainCmyk));
  SP_ASSERT_OK_AND_ASSIGN(PixelView v, t->Decode(jpeg, kName, {}));
  ExpectFlat(v.data, 40 * 24, {141, 71, 35}, 3);  // C*K/255, as with the marker
}

TEST(TranscodeTest, ResizeKeepsFlatImagesExactlyFlat) {
  ResizeScratch scratch;
  std::vector<uint8_t> src(37 * 23 * 3);
  for (size_t i = 0; i < src.size(); i += 3) {
    src[i] = 12;
    src[i + 1] = 200;
    src[i + 2] = 255;
  }
  const PixelView view{src.data(), 37, 23, 3};
  for (auto [w, h] : {std::pair{10u, 7u}, std::pair{37u, 5u}, std::pair{80u, 23u},
                      std::pair{1u, 1u}, std::pair{101u, 67u}}) {
    std::vector<uint8_t> dst(size_t{w} * h * 3);
    ResizeBilinearAA(view, w, h, dst.data(), &scratch);
    ExpectFlat(dst.data(), size_t{w} * h, {12, 200, 255}, 0);
  }
}

TEST(TranscodeTest, ResizeAveragesWhenShrinking) {
  ResizeScratch scratch;
  // A 1-pixel checkerboard shrunk 4x must come out mid-gray (antialiased),
  // not black or white (nearest).
  std::vector<uint8_t> src(64 * 64);
  for (int y = 0; y < 64; ++y) {
    for (int x = 0; x < 64; ++x) src[y * 64 + x] = ((x + y) & 1) ? 255 : 0;
  }
  std::vector<uint8_t> dst(16 * 16);
  ResizeBilinearAA(PixelView{src.data(), 64, 64, 1}, 16, 16, dst.data(), &scratch);
  ExpectFlat(dst.data(), 16 * 16, {128}, 2);
  // A horizontal ramp stays a ramp.
  for (int y = 0; y < 64; ++y) {
    for (int x = 0; x < 64; ++x) src[y * 64 + x] = static_cast<uint8_t>(x * 4);
  }
  ResizeBilinearAA(PixelView{src.data(), 64, 64, 1}, 16, 16, dst.data(), &scratch);
  for (int x = 1; x < 16; ++x) EXPECT_GT(dst[x], dst[x - 1]);
  EXPECT_NEAR(dst[8], 8 * 16 + 6, 2);  // center of source columns 32..35
}

TEST(TranscodeTest, FitLongerSide) {
  uint32_t w = 0, h = 0;
  FitLongerSide(500, 375, 256, &w, &h);
  EXPECT_EQ(w, 256u);
  EXPECT_EQ(h, 192u);
  FitLongerSide(375, 500, 256, &w, &h);
  EXPECT_EQ(w, 192u);
  EXPECT_EQ(h, 256u);
  FitLongerSide(100, 50, 256, &w, &h);  // already fits
  EXPECT_EQ(w, 100u);
  FitLongerSide(5000, 2, 100, &w, &h);  // never below 1
  EXPECT_EQ(w, 100u);
  EXPECT_EQ(h, 1u);
  FitLongerSide(640, 480, 0, &w, &h);  // 0 keeps the size
  EXPECT_EQ(w, 640u);
}

TEST(TranscodeTest, ReencodeDownscalesAndKeepsColor) {
  auto t = NewTranscoder();
  const std::vector<uint8_t> jpeg = FlatRgbJpeg(640, 480, 30, 160, 220, TJFLAG_PROGRESSIVE);
  std::vector<uint8_t> out;
  SP_ASSERT_OK_AND_ASSIGN(ImageInfo image, t->Reencode(jpeg, kName, {.max_side = 200, .quality = 90}, {}, &out));
  EXPECT_EQ(image, (ImageInfo{Encoding::kJpeg, Layout::kHWC, 150, 200, 3}));
  SP_ASSERT_OK_AND_ASSIGN(JpegInfo info, ProbeJpeg(out, "out"));
  EXPECT_EQ(info.width, 200u);
  EXPECT_EQ(info.height, 150u);
  EXPECT_FALSE(info.progressive);  // baseline
  SP_ASSERT_OK_AND_ASSIGN(PixelView v, t->Decode(out, "out", {}));
  ExpectFlat(v.data, 200 * 150, {30, 160, 220}, 4);
}

TEST(TranscodeTest, ReencodeKeepsGrayAndConvertsCmyk) {
  auto t = NewTranscoder();
  std::vector<uint8_t> out;
  const std::vector<uint8_t> gray = testing::EncodeJpeg(std::vector<uint8_t>(300 * 100, 99), 300,
                                                        100, TJPF_GRAY, TJSAMP_GRAY, 95);
  SP_ASSERT_OK_AND_ASSIGN(ImageInfo image, t->Reencode(gray, kName, {.max_side = 0, .quality = 90}, {}, &out));
  EXPECT_EQ(image, (ImageInfo{Encoding::kJpeg, Layout::kHWC, 100, 300, 1}));
  SP_ASSERT_OK_AND_ASSIGN(JpegInfo info, ProbeJpeg(out, "out"));
  EXPECT_EQ(info.components, 1);

  const std::vector<uint8_t> cmyk =
      testing::EncodeJpeg(FlatCmyk(64, 64, 200, 100, 50, 180), 64, 64, TJPF_CMYK, TJSAMP_444, 95);
  SP_ASSERT_OK_AND_ASSIGN(image, t->Reencode(cmyk, kName, {.max_side = 32, .quality = 95}, {}, &out));
  EXPECT_EQ(image, (ImageInfo{Encoding::kJpeg, Layout::kHWC, 32, 32, 3}));
  SP_ASSERT_OK_AND_ASSIGN(PixelView v, t->Decode(out, "out", {}));
  ExpectFlat(v.data, 32 * 32, {141, 71, 35}, 4);
}

TEST(TranscodeTest, DecodeToRawResizesToTheExactSize) {
  auto t = NewTranscoder();
  std::vector<uint8_t> out;
  const std::vector<uint8_t> jpeg = FlatRgbJpeg(640, 480, 250, 20, 90);
  SP_ASSERT_OK_AND_ASSIGN(ImageInfo image, t->DecodeToRaw(jpeg, kName, 64, 40, {}, &out));
  EXPECT_EQ(image, (ImageInfo{Encoding::kRaw, Layout::kHWC, 40, 64, 3}));
  ASSERT_EQ(out.size(), 64u * 40 * 3);
  ExpectFlat(out.data(), 64 * 40, {250, 20, 90}, 3);
  // Upscaling a small gray image.
  const std::vector<uint8_t> gray =
      testing::EncodeJpeg(std::vector<uint8_t>(8 * 8, 60), 8, 8, TJPF_GRAY, TJSAMP_GRAY, 95);
  SP_ASSERT_OK_AND_ASSIGN(image, t->DecodeToRaw(gray, kName, 33, 17, {}, &out));
  EXPECT_EQ(image.channels, 3);
  ASSERT_EQ(out.size(), 33u * 17 * 3);
  ExpectFlat(out.data(), 33 * 17, {60, 60, 60}, 1);
}

// Keeps the headers and the first `keep` bytes of entropy-coded data, then
// ends the file properly, so only the decoder can tell it is damaged.
std::vector<uint8_t> CutScan(const std::vector<uint8_t>& jpeg, size_t keep) {
  absl::StatusOr<JpegInfo> info = ProbeJpeg(jpeg, "cut");
  EXPECT_TRUE(info.ok());
  std::vector<uint8_t> cut(
      jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(info->sos_offset + 14 + keep));
  cut.push_back(0xFF);
  cut.push_back(0xD9);
  return cut;
}

std::vector<uint8_t> NoisyJpeg(int width, int height) {
  std::vector<uint8_t> pixels(static_cast<size_t>(width) * height * 3);
  uint32_t x = 12345;
  for (uint8_t& p : pixels) p = static_cast<uint8_t>((x = x * 1103515245 + 12345) >> 24);
  return testing::EncodeJpeg(pixels, width, height, TJPF_RGB, TJSAMP_420, 90);
}

TEST(TranscodeTest, TruncatedEntropyDataIsCorrupt) {
  auto t = NewTranscoder();
  const std::vector<uint8_t> cut = CutScan(NoisyJpeg(128, 96), 500);
  SP_ASSERT_OK(ProbeJpeg(cut, kName).status());  // the header cannot tell
  EXPECT_THAT(t->Decode(cut, kName, {}), StatusIs(absl::StatusCode::kDataLoss,
                                                  HasSubstr("dir/photo.jpg: corrupt JPEG data: ")));
  EXPECT_THAT(t->Validate(cut, kName, {}),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("dir/photo.jpg: corrupt JPEG data")));
  std::vector<uint8_t> out;
  EXPECT_THAT(t->Reencode(cut, kName, {.max_side = 64, .quality = 90}, {}, &out),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("corrupt JPEG data")));
  EXPECT_THAT(t->DecodeToRaw(cut, kName, 32, 32, {}, &out),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("corrupt JPEG data")));
  // The transcoder is still fine afterwards.
  SP_EXPECT_OK(t->Validate(NoisyJpeg(64, 64), kName, {}));
}

TEST(TranscodeTest, ExtraneousBytesBeforeEndOfImageAreHarmless) {
  auto t = NewTranscoder();
  std::vector<uint8_t> jpeg = FlatRgbJpeg(32, 32, 1, 2, 3);
  jpeg.insert(jpeg.end() - 2, {0x12, 0x34, 0x56});
  SP_EXPECT_OK(t->Decode(jpeg, kName, {}).status());
}

TEST(TranscodeTest, DamagedBytesNeverCrash) {
  // Flipped bytes anywhere: an error or a (possibly wrong) image, never a
  // crash or an abort. ASan builds check the memory accesses.
  auto t = NewTranscoder();
  const std::vector<uint8_t> jpeg = NoisyJpeg(48, 40);
  int failures = 0;
  for (size_t i = 2; i < jpeg.size() - 2; i += 7) {
    std::vector<uint8_t> damaged = jpeg;
    damaged[i] ^= 0x5A;
    absl::StatusOr<PixelView> v = t->Decode(damaged, kName, {});
    if (!v.ok()) {
      ++failures;
      EXPECT_THAT(std::string(v.status().message()), HasSubstr(kName));
    }
  }
  EXPECT_GT(failures, 0);
}

TEST(TranscodeTest, ProbeErrorsComeFirst) {
  auto t = NewTranscoder();
  std::vector<uint8_t> jpeg = FlatRgbJpeg(32, 32, 1, 2, 3);
  JpegProbeOptions probe;
  probe.max_pixels = 100;
  std::vector<uint8_t> out;
  EXPECT_THAT(t->DecodeToRaw(jpeg, kName, 8, 8, probe, &out),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("image too large")));
  jpeg.erase(jpeg.end() - 10, jpeg.end());
  EXPECT_THAT(t->Reencode(jpeg, kName, {.max_side = 8, .quality = 90}, {}, &out),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("no end-of-image marker")));
}

TEST(TranscodeTest, BuffersAreReusedAcrossSizes) {
  auto t = NewTranscoder();
  std::vector<uint8_t> out;
  for (int round = 0; round < 3; ++round) {
    for (auto [w, h, v] :
         {std::tuple{320, 240, 40}, std::tuple{16, 16, 120}, std::tuple{200, 50, 230}}) {
      const std::vector<uint8_t> jpeg = FlatRgbJpeg(
          w, h, static_cast<uint8_t>(v), static_cast<uint8_t>(v), static_cast<uint8_t>(v));
      SP_ASSERT_OK_AND_ASSIGN(ImageInfo image, t->DecodeToRaw(jpeg, kName, 24, 24, {}, &out));
      EXPECT_EQ(image.width, 24u);
      ExpectFlat(out.data(), 24 * 24, {v, v, v}, 2);
    }
  }
}

}  // namespace
}  // namespace shardpack::codec
