// reader/jpeg_decoder: full decodes against TurboJPEG, region and scaled
// decodes against the full decode, real-world color spaces and damage.
#include "codec/jpeg_decoder.h"

#include <cmath>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "codec/color.h"
#include "codec/jpeg_restart.h"
#include "codec/resize.h"
#include "datasets/demo.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/jpeg_fixtures.h"
#include "tests/testing/status_matchers.h"

namespace shardpack::codec {
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

// The whole of a JPEG at scale n/8 as libjpeg's raw planes
// (jpeg_read_raw_data): what the IDCT makes of each component, before
// upsampling and color conversion.
struct RawPlanes {
  std::vector<uint8_t> data[3];
  size_t stride[3] = {};
  uint32_t width[3] = {}, height[3] = {};  // the valid samples
};

RawPlanes RawDecode(const std::vector<uint8_t>& jpeg, int n) {
  RawPlanes raw;
  testing::LibjpegDecompressor decompressor(jpeg);
  jpeg_decompress_struct& c = decompressor.d;
  c.raw_data_out = TRUE;
  c.scale_num = static_cast<unsigned int>(n);
  c.scale_denom = 8;
  jpeg_start_decompress(&c);
  const int imcu_rows = c.max_v_samp_factor * c.min_DCT_scaled_size;
  int rows[3];
  for (int k = 0; k < 3; ++k) {
    const jpeg_component_info& comp = c.comp_info[k];
    rows[k] = comp.v_samp_factor * comp.DCT_scaled_size;
    raw.stride[k] = size_t{comp.width_in_blocks} * comp.DCT_scaled_size;
    raw.width[k] = comp.downsampled_width;
    raw.height[k] = comp.downsampled_height;
    raw.data[k].resize(raw.stride[k] * rows[k] * c.total_iMCU_rows);
  }
  std::vector<JSAMPROW> ptrs[3];
  for (JDIMENSION imcu = 0; c.output_scanline < c.output_height; ++imcu) {
    JSAMPARRAY planes[3];
    for (int k = 0; k < 3; ++k) {
      ptrs[k].resize(size_t(rows[k]));
      for (int i = 0; i < rows[k]; ++i) {
        ptrs[k][size_t(i)] = raw.data[k].data() + (size_t{imcu} * rows[k] + i) * raw.stride[k];
      }
      planes[k] = ptrs[k].data();
    }
    jpeg_read_raw_data(&c, planes, JDIMENSION(imcu_rows));
  }
  jpeg_finish_decompress(&c);
  return raw;
}

// Asked for planes, a YCbCr JPEG's region comes back as that window of
// libjpeg's raw planes, at every scale, for every sampling the planes take,
// progressive and restart-marker files (cut or not) included, at offsets on
// and off iMCU boundaries and at the image's edges; grayscale stays RGB.
TEST(JpegDecoderTest, PlanarRegionIsThatWindowOfTheRawPlanes) {
  const int w = 500, h = 375;
  JpegRestartRecoder recoder;
  std::vector<uint8_t> recoded;
  ASSERT_TRUE(*recoder.Recode(TjSceneJpeg(w, h, TJSAMP_420), &recoded));
  const std::vector<std::pair<const char*, std::vector<uint8_t>>> files = {
      {"420", TjSceneJpeg(w, h, TJSAMP_420)},
      {"422", TjSceneJpeg(w, h, TJSAMP_422)},
      {"444", TjSceneJpeg(w, h, TJSAMP_444)},
      {"440", TjSceneJpeg(w, h, TJSAMP_440)},
      {"420 progressive", TjSceneJpeg(w, h, TJSAMP_420, TJFLAG_PROGRESSIVE)},
      {"420 restart every MCU row", testing::RestartJpeg(w, h, 1)},
      {"420 re-coded with restart markers", recoded}};
  const JpegRect rects[] = {{0, 0, 100, 80},   {17, 33, 211, 190}, {64, 32, 128, 96},
                            {399, 300, 101, 75}, {250, 1, 7, 373}, {0, 0, 500, 375}};
  JpegDecoder decoder;
  int cuts = 0;
  for (const auto& [name, jpeg] : files) {
    for (int n : {8, 4, 2, 1}) {
      const RawPlanes raw = RawDecode(jpeg, n);
      for (const JpegRect& r : rects) {
        SCOPED_TRACE(::testing::Message() << name << " scale " << n << "/8 rect " << r.x << ","
                                          << r.y << " " << r.width << "x" << r.height);
        SP_ASSERT_OK(decoder.Start(jpeg).status());
        const uint32_t min_w = (r.width * uint32_t(n) + 7) / 8;
        const uint32_t min_h = (r.height * uint32_t(n) + 7) / 8;
        SP_ASSERT_OK_AND_ASSIGN(
            DecodedRegion d,
            decoder.DecodeRegion(r, min_w, min_h, 0, RegionPixels::kYccPlanesWhenPossible));
        ASSERT_EQ(d.scale_num, n);
        ASSERT_TRUE(d.planar);
        cuts += d.cut;
        // Where the region starts in the image at scale n/8.
        const double x = r.x * n / 8.0 - d.box.x0, y = r.y * n / 8.0 - d.box.y0;
        ASSERT_EQ(x, std::floor(x));
        ASSERT_EQ(y, std::floor(y));
        ASSERT_EQ(d.planes[0].pixels.width, d.pixels.width);
        ASSERT_EQ(d.planes[0].pixels.height, d.pixels.height);
        for (int k = 0; k < 3; ++k) {
          const SubsampledPlane& p = d.planes[k];
          SCOPED_TRACE(::testing::Message() << "plane " << k);
          const int fx = int(std::lround(double(raw.width[0]) / raw.width[k]));
          const int fy = int(std::lround(double(raw.height[0]) / raw.height[k]));
          ASSERT_EQ(p.factor_x, fx);
          ASSERT_EQ(p.factor_y, fy);
          ASSERT_EQ(p.pixels.channels, 1);
          ASSERT_EQ(p.pixels.width, (d.pixels.width + uint32_t(fx) - 1) / uint32_t(fx));
          ASSERT_EQ(p.pixels.height, (d.pixels.height + uint32_t(fy) - 1) / uint32_t(fy));
          const auto x0 = uint32_t(x) / uint32_t(fx), y0 = uint32_t(y) / uint32_t(fy);
          ASSERT_EQ(x0 * uint32_t(fx), uint32_t(x));
          ASSERT_EQ(y0 * uint32_t(fy), uint32_t(y));
          ASSERT_LE(x0 + p.pixels.width, raw.width[k]);
          ASSERT_LE(y0 + p.pixels.height, raw.height[k]);
          for (uint32_t i = 0; i < p.pixels.height; ++i) {
            ASSERT_EQ(std::memcmp(p.pixels.data + size_t{i} * p.pixels.stride(),
                                  raw.data[k].data() + (y0 + i) * raw.stride[k] + x0,
                                  p.pixels.width),
                      0)
                << "row " << i;
          }
        }
      }
    }
  }
  EXPECT_GT(cuts, 0);  // the restart-marker files were cut
  // Grayscale has no planes to give: RGB, as without asking.
  const std::vector<uint8_t> gray = TjSceneJpeg(w, h, TJSAMP_GRAY);
  SP_ASSERT_OK(decoder.Start(gray).status());
  SP_ASSERT_OK_AND_ASSIGN(DecodedRegion g, decoder.DecodeRegion({10, 10, 100, 100}, 100, 100, 0,
                                                                RegionPixels::kYccPlanesWhenPossible));
  EXPECT_FALSE(g.planar);
  EXPECT_EQ(g.pixels.channels, 3);
}

// Powers of two only: 5/8 would give 313x235, but 3/8..7/8 run plain C
// IDCTs (jpeg_decoder.h).
TEST(JpegDecoderTest, SmallestPowerOfTwoScaleThatKeepsTheRegionAsLargeAsTheOutput) {
  EXPECT_EQ(ChooseDctScale(500, 375, 224, 224), 8);  // 4/8 is 250x188
  EXPECT_EQ(ChooseDctScale(600, 460, 224, 224), 4);  // 300x230
  EXPECT_EQ(ChooseDctScale(500, 375, 500, 375), 8);
  EXPECT_EQ(ChooseDctScale(2000, 1800, 224, 224), 1);
  EXPECT_EQ(ChooseDctScale(1000, 900, 224, 224), 2);  // 250x225
  EXPECT_EQ(ChooseDctScale(100, 100, 224, 224), 8);  // upscaling: full size
  EXPECT_EQ(ChooseDctScale(448, 448, 224, 224), 4);
  EXPECT_EQ(ChooseDctScale(446, 448, 224, 224), 8);  // 4/8 is 223 wide
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

// The transform's paths (scaled region decode + resize of the box; the
// reader's takes the YCbCr planes, resizes them and converts after) against
// a reference: full decode, integer crop, antialiased resize. At scale 8/8
// the RGB path is the reference exactly (checked below); the planar one
// differs where chroma upsampling and the resize's filter differ, and most
// where the conversion clips colors out of RGB's range (the reference clips
// before it averages, the planes after): measured here, mean 0.5-1.4, 99.5th
// percentile 3-9, max 5-23 (on photographs, jpeg_bench: mean 0.36, 95% of
// samples within 1 level, 99.9% within 8). At smaller scales the DCT's own
// low-pass (a sharp cut of the high coefficients) replaces part of the
// triangle filter's blur, so the output is a little sharper than the
// reference: mean absolute difference under 4 levels and 99.5% of samples
// within 24 levels (measured on these textured scenes: mean 0.6-3.5, the
// worst when the scale leaves little downscaling for the filter, e.g. a
// 150x201 crop decoded at 4/8 to 75x100 and resized to 64x64).
// Measured (mean / 99.5th percentile / max): 4:2:0 scaled 1.0-3.5 / 5-17 /
// 12-23; 4:2:2 scaled 1.2-4.0 / 6-19 / 12-27. The mean bound is close for
// 4:2:2's 150x201 crop (3.96), the case the paragraph above names.
void CheckScaledRegionResize(const std::vector<uint8_t>& jpeg, int w, int out);

TEST(JpegDecoderTest, ScaledRegionResizeIsWithinToleranceOfReferenceResize) {
  const int w = 500, h = 375, out = 64;
  for (int subsamp : {TJSAMP_420, TJSAMP_422}) {
    SCOPED_TRACE(::testing::Message() << "subsamp " << subsamp);
    CheckScaledRegionResize(TjSceneJpeg(w, h, subsamp), w, out);
  }
}

void CheckScaledRegionResize(const std::vector<uint8_t>& jpeg, int w, int out) {
  JpegDecoder decoder;
  SP_ASSERT_OK_AND_ASSIGN(PixelView full_view, decoder.Decode(jpeg));
  std::vector<uint8_t> full = ToVector(full_view);
  const JpegRect rects[] = {{0, 0, 500, 375}, {40, 20, 300, 250}, {123, 77, 150, 201},
                            {301, 100, 199, 199}, {10, 200, 260, 175}, {10, 300, 90, 75}};
  ResizeScratch scratch;
  for (const JpegRect& r : rects) {
    SCOPED_TRACE(::testing::Message() << r.x << "," << r.y << " " << r.width << "x" << r.height);
    const bool scaled = ChooseDctScale(r.width, r.height, uint32_t(out), uint32_t(out)) < 8;
    std::vector<uint8_t> crop(size_t(r.width) * r.height * 3), want(size_t(out) * out * 3),
        got(want.size());
    for (uint32_t y = 0; y < r.height; ++y) {
      std::memcpy(&crop[size_t(y) * r.width * 3], &full[(size_t(r.y + y) * w + r.x) * 3],
                  size_t(r.width) * 3);
    }
    ResizeBilinearAA(PixelView{crop.data(), r.width, r.height, 3}, out, out, want.data(), &scratch);
    SP_ASSERT_OK(decoder.Start(jpeg).status());
    SP_ASSERT_OK_AND_ASSIGN(DecodedRegion d, decoder.DecodeRegion(r, out, out));
    EXPECT_EQ(d.scale_num < 8, scaled);
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
    if (!scaled) {
      EXPECT_TRUE(got == want);
    }
    // Forced to full scale, the exact path is the reference exactly.
    SP_ASSERT_OK(decoder.Start(jpeg).status());
    SP_ASSERT_OK_AND_ASSIGN(DecodedRegion d8, decoder.DecodeRegion(r, r.width, r.height));
    ResizeBoxAA(d8.pixels, d8.box, out, out, ResizeOptions{}, got.data(), &scratch);
    EXPECT_TRUE(got == want);
    // The reader's path: the planes resized, then converted.
    for (bool full_scale : {false, true}) {
      SCOPED_TRACE(full_scale ? "planes at full scale" : "planes");
      SP_ASSERT_OK(decoder.Start(jpeg).status());
      SP_ASSERT_OK_AND_ASSIGN(
          DecodedRegion p,
          decoder.DecodeRegion(r, full_scale ? r.width : uint32_t(out),
                               full_scale ? r.height : uint32_t(out), 0,
                               RegionPixels::kYccPlanesWhenPossible));
      ASSERT_TRUE(p.planar);
      ResizeYccToRgb(p.planes, p.box, out, out, ResizeOptions{}, got.data(), &scratch);
      std::vector<int> pd;
      double psum = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        pd.push_back(std::abs(int(got[i]) - int(want[i])));
        psum += pd.back();
      }
      std::sort(pd.begin(), pd.end());
      if (p.scale_num < 8) {
        EXPECT_LT(psum / got.size(), 4.0);
        EXPECT_LE(pd[pd.size() * 995 / 1000], 24);
      } else {
        EXPECT_LT(psum / got.size(), 2.0);
        EXPECT_LE(pd[pd.size() * 995 / 1000], 12);
      }
    }
  }
}

// The antialiased triangle filter in double precision, transcribed from
// Pillow's precompute_coeffs (with a box, taps clamped to it), applied in
// both directions without intermediate rounding: the reference for the
// fixed-point resize.
std::vector<double> ReferenceTaps(uint32_t in, double in0, double in1, uint32_t out,
                                  std::vector<int>* first) {
  const double scale = (in1 - in0) / out, fs = std::max(scale, 1.0);
  const int lo = std::max(int(std::floor(in0)), 0), hi = std::min(int(std::ceil(in1)), int(in));
  std::vector<double> w(size_t(out) * in, 0.0);
  first->assign(out, 0);
  for (uint32_t i = 0; i < out; ++i) {
    const double center = in0 + (i + 0.5) * scale;
    const int f = std::min(std::max(int(center - fs + 0.5), lo), hi - 1);
    const int l = std::min(int(center + fs + 0.5), hi);
    double sum = 0;
    for (int x = f; x < std::max(l, f + 1); ++x) {
      const double t = std::max(0.0, 1.0 - std::fabs((x - center + 0.5) / fs));
      w[size_t(i) * in + x] = t;
      sum += t;
    }
    for (uint32_t x = 0; x < in; ++x) w[size_t(i) * in + x] /= sum;
    (*first)[i] = f;
  }
  return w;
}

// The fixed-point resize (14-bit taps, 8-bit intermediate rows, either pass
// first, SIMD or not) is within one level of the exact filter everywhere.
TEST(ResizeTest, WithinOneLevelOfTheDoublePrecisionFilter) {
  const uint32_t sw = 131, sh = 97;
  std::vector<uint8_t> src = Scene(int(sw), int(sh));
  ResizeScratch scratch;
  struct Case {
    ResizeBox box;
    uint32_t w, h;
    bool mirror;
  };
  const Case cases[] = {{{0, 0, 131, 97}, 64, 48, false},    {{3.5, 2.25, 120.5, 90}, 50, 71, true},
                        {{10, 5, 40, 30}, 77, 66, false},     {{0, 0, 131, 97}, 131, 40, false},
                        {{1.3, 0.7, 130.9, 96.2}, 24, 97, true}, {{0, 0, 131, 97}, 200, 150, true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.w << "x" << c.h << " mirror " << c.mirror);
    std::vector<uint8_t> got(size_t(c.w) * c.h * 3);
    ResizeBoxAA(PixelView{src.data(), sw, sh, 3}, c.box, c.w, c.h, ResizeOptions{true, c.mirror},
                got.data(), &scratch);
    std::vector<int> fx, fy;
    const std::vector<double> wx = ReferenceTaps(sw, c.box.x0, c.box.x1, c.w, &fx);
    const std::vector<double> wy = ReferenceTaps(sh, c.box.y0, c.box.y1, c.h, &fy);
    int worst = 0;
    for (uint32_t y = 0; y < c.h; ++y) {
      for (uint32_t x = 0; x < c.w; ++x) {
        for (int ch = 0; ch < 3; ++ch) {
          double v = 0;
          for (uint32_t sy = 0; sy < sh; ++sy) {
            const double wyv = wy[size_t(y) * sh + sy];
            if (wyv == 0) continue;
            for (uint32_t sx = 0; sx < sw; ++sx) {
              v += wyv * wx[size_t(x) * sw + sx] * src[(size_t(sy) * sw + sx) * 3 + ch];
            }
          }
          const uint32_t ox = c.mirror ? c.w - 1 - x : x;
          const int want = int(std::lround(std::clamp(v, 0.0, 255.0)));
          worst = std::max(worst, std::abs(int(got[(size_t(y) * c.w + ox) * 3 + ch]) - want));
        }
      }
    }
    EXPECT_LE(worst, 1);
  }
}

// The planar resize (each plane by the fixed-point filter, chroma from its
// own resolution, then the 14-bit conversion) is within three levels of the
// same filter in double precision on each plane followed by the exact JFIF
// conversion: one level from each plane's resize, times 1.772 at most for
// chroma, plus the rounding.
TEST(ResizeTest, YccToRgbWithinThreeLevelsOfTheDoublePrecisionPath) {
  const uint32_t sw = 131, sh = 97;
  const std::vector<uint8_t> scene = Scene(int(sw), int(sh));
  ResizeScratch scratch;
  for (auto [fx, fy] : {std::pair{2, 2}, std::pair{2, 1}, std::pair{1, 1}, std::pair{1, 2}}) {
    // Y from the scene's green, Cb and Cr from its red and blue at the
    // chroma sample's top-left pixel.
    std::vector<uint8_t> planes[3];
    uint32_t pw[3], ph[3];
    for (int k = 0; k < 3; ++k) {
      const uint32_t f_x = k == 0 ? 1 : uint32_t(fx), f_y = k == 0 ? 1 : uint32_t(fy);
      pw[k] = (sw + f_x - 1) / f_x;
      ph[k] = (sh + f_y - 1) / f_y;
      const int channel = k == 0 ? 1 : k == 1 ? 0 : 2;
      for (uint32_t y = 0; y < ph[k]; ++y)
        for (uint32_t x = 0; x < pw[k]; ++x)
          planes[k].push_back(scene[(size_t(y * f_y) * sw + x * f_x) * 3 + size_t(channel)]);
    }
    const SubsampledPlane views[3] = {
        {PixelView{planes[0].data(), pw[0], ph[0], 1}, 1, 1},
        {PixelView{planes[1].data(), pw[1], ph[1], 1}, fx, fy},
        {PixelView{planes[2].data(), pw[2], ph[2], 1}, fx, fy}};
    struct Case {
      ResizeBox box;
      uint32_t w, h;
      bool mirror;
    };
    const Case cases[] = {{{0, 0, 131, 97}, 64, 48, false}, {{3.5, 2.25, 120.5, 90}, 50, 71, true},
                          {{10, 5, 40, 30}, 77, 66, false}, {{1.3, 0.7, 130.9, 96.2}, 24, 97, true}};
    for (const Case& c : cases) {
      SCOPED_TRACE(::testing::Message() << "factors " << fx << "x" << fy << ", " << c.w << "x"
                                        << c.h << " mirror " << c.mirror);
      std::vector<uint8_t> got(size_t(c.w) * c.h * 3);
      ResizeYccToRgb(views, c.box, c.w, c.h, ResizeOptions{true, c.mirror}, got.data(), &scratch);
      // Each plane in double precision.
      std::vector<double> exact[3];
      for (int k = 0; k < 3; ++k) {
        const double f_x = views[k].factor_x, f_y = views[k].factor_y;
        std::vector<int> first_x, first_y;
        const std::vector<double> wx =
            ReferenceTaps(pw[k], c.box.x0 / f_x, c.box.x1 / f_x, c.w, &first_x);
        const std::vector<double> wy =
            ReferenceTaps(ph[k], c.box.y0 / f_y, c.box.y1 / f_y, c.h, &first_y);
        for (uint32_t y = 0; y < c.h; ++y) {
          for (uint32_t x = 0; x < c.w; ++x) {
            double v = 0;
            for (uint32_t sy = 0; sy < ph[k]; ++sy) {
              const double wyv = wy[size_t(y) * ph[k] + sy];
              if (wyv == 0) continue;
              for (uint32_t sx = 0; sx < pw[k]; ++sx)
                v += wyv * wx[size_t(x) * pw[k] + sx] * planes[k][size_t(sy) * pw[k] + sx];
            }
            exact[k].push_back(v);
          }
        }
      }
      int worst = 0;
      for (uint32_t y = 0; y < c.h; ++y) {
        for (uint32_t x = 0; x < c.w; ++x) {
          const size_t i = size_t(y) * c.w + x;
          const double l = exact[0][i], b = exact[1][i] - 128, r = exact[2][i] - 128;
          const double rgb[3] = {l + 1.402 * r, l - 0.344136 * b - 0.714136 * r, l + 1.772 * b};
          const uint32_t ox = c.mirror ? c.w - 1 - x : x;
          for (int ch = 0; ch < 3; ++ch) {
            const int want = int(std::lround(std::clamp(rgb[ch], 0.0, 255.0)));
            worst = std::max(worst, std::abs(int(got[(size_t(y) * c.w + ox) * 3 + size_t(ch)]) - want));
          }
        }
      }
      EXPECT_LE(worst, 3);
    }
  }
}

// The resize computes the same integers wherever in an image it is (the
// ends of rows and the last rows take other loads, stores and loops;
// tests/reader/image_ops_test.cc compares each path with the portable
// one): an image of equal rows resizes to equal rows, one of equal columns
// to equal columns.
TEST(ResizeTest, SimdAndPortablePathsAgree) {
  const uint32_t sw = 203, sh = 61;
  std::vector<uint8_t> rows(size_t(sw) * sh * 3), cols(rows.size());
  std::vector<uint8_t> scene = Scene(int(sw), int(sh));
  for (uint32_t y = 0; y < sh; ++y) {
    std::memcpy(&rows[size_t(y) * sw * 3], scene.data() + size_t(sh / 2) * sw * 3, size_t(sw) * 3);
    for (uint32_t x = 0; x < sw; ++x) {
      std::memcpy(&cols[(size_t(y) * sw + x) * 3], &scene[(size_t(y) * sw + sw / 2) * 3], 3);
    }
  }
  ResizeScratch scratch;
  for (auto [w, h] : {std::pair{100u, 30u}, std::pair{190u, 60u}, std::pair{250u, 90u},
                      std::pair{37u, 61u}, std::pair{203u, 20u}}) {
    for (bool mirror : {false, true}) {
      SCOPED_TRACE(::testing::Message() << w << "x" << h << " mirror " << mirror);
      std::vector<uint8_t> out(size_t(w) * h * 3);
      const ResizeBox box{0.5, 0.25, sw - 0.5, sh - 0.75};
      ResizeBoxAA(PixelView{rows.data(), sw, sh, 3}, box, w, h, ResizeOptions{true, mirror},
                  out.data(), &scratch);
      for (uint32_t y = 1; y < h; ++y) {
        ASSERT_EQ(std::memcmp(&out[size_t(y) * w * 3], out.data(), size_t(w) * 3), 0) << y;
      }
      ResizeBoxAA(PixelView{cols.data(), sw, sh, 3}, box, w, h, ResizeOptions{true, mirror},
                  out.data(), &scratch);
      for (uint32_t y = 0; y < h; ++y) {
        for (uint32_t x = 1; x < w; ++x) {
          ASSERT_EQ(std::memcmp(&out[(size_t(y) * w + x) * 3], &out[size_t(y) * w * 3], 3), 0)
              << x << "," << y;
        }
      }
    }
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
    JpegCmykToRgbInPlace(want.data(), size_t(w) * h);  // every kind: PIL's rule
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
}  // namespace shardpack::codec

namespace shardpack::codec {
namespace {

// `jpeg` without its segments of marker `marker` (0xC4 DHT, 0xDB DQT).
std::vector<uint8_t> WithoutSegments(const std::vector<uint8_t>& jpeg, uint8_t marker) {
  std::vector<uint8_t> out(jpeg.begin(), jpeg.begin() + 2);
  size_t i = 2;
  while (i + 4 <= jpeg.size() && jpeg[i] == 0xFF && jpeg[i + 1] != 0xDA) {
    const size_t length = size_t{jpeg[i + 2]} << 8 | jpeg[i + 3];
    if (jpeg[i + 1] != marker) out.insert(out.end(), jpeg.begin() + i, jpeg.begin() + i + 2 + length);
    i += 2 + length;
  }
  out.insert(out.end(), jpeg.begin() + i, jpeg.end());
  return out;
}

// libjpeg keeps a file's tables for the next file on the same decompressor;
// the decoder does not: a file that leaves its Huffman tables out decodes
// with the standard ones (as Motion-JPEG frames expect) whatever was
// decoded before on that decoder, and one that leaves its quantization
// tables out is an error, as on a fresh decoder.
TEST(JpegDecoderTest, AFileDecodesAlikeWhateverTheDecoderDecodedBefore) {
  const std::vector<uint8_t> standard = TjSceneJpeg(64, 48, TJSAMP_420);  // standard tables
  const std::vector<uint8_t> no_dht = WithoutSegments(standard, 0xC4);
  const std::vector<uint8_t> no_dqt = WithoutSegments(standard, 0xDB);
  ASSERT_LT(no_dht.size(), standard.size());
  ASSERT_LT(no_dqt.size(), standard.size());
  // Files with other tables: optimized Huffman tables, other quality.
  JpegRestartRecoder recoder;
  std::vector<uint8_t> optimized;
  SP_ASSERT_OK_AND_ASSIGN(bool done, recoder.Recode(TjSceneJpeg(64, 48, TJSAMP_444), &optimized));
  ASSERT_TRUE(done);
  const std::vector<uint8_t> other_quality =
      testing::EncodeJpeg(Scene(64, 48, 2), 64, 48, TJPF_RGB, TJSAMP_420, 30);

  JpegDecoder fresh;
  SP_ASSERT_OK_AND_ASSIGN(PixelView want_view, fresh.Decode(no_dht));
  const std::vector<uint8_t> want = ToVector(want_view);
  EXPECT_TRUE(want == TjDecode(standard, 64, 48, TJPF_RGB));
  JpegDecoder fresh2;
  EXPECT_THAT(fresh2.Decode(no_dqt).status(), StatusIs(absl::StatusCode::kDataLoss,
                                                        HasSubstr("was not defined")));

  JpegDecoder reused;
  for (const std::vector<uint8_t>* before :
       {&std::as_const(optimized), &other_quality, &standard}) {
    SP_ASSERT_OK(reused.Decode(*before).status());
    SP_ASSERT_OK_AND_ASSIGN(PixelView got, reused.Decode(no_dht));
    EXPECT_TRUE(ToVector(got) == want);
    SP_ASSERT_OK(reused.Decode(*before).status());
    EXPECT_THAT(reused.Decode(no_dqt).status(), StatusIs(absl::StatusCode::kDataLoss,
                                                          HasSubstr("was not defined")));
    // And the files before decode as before: nothing was lost from them.
    SP_ASSERT_OK(reused.Decode(*before).status());
  }
}

}  // namespace
}  // namespace shardpack::codec
