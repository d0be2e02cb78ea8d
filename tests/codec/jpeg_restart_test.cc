// reader/jpeg_restart: the lossless re-code with a restart marker after
// every MCU, and region decodes that cut out just the MCUs they need: the
// same pixels as the original file's, bit for bit.
#include "codec/jpeg_restart.h"

#include <setjmp.h>
#include <stdio.h>

#include <jpeglib.h>

#include <algorithm>
#include <optional>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codec/jpeg_decoder.h"
#include "codec/jpeg_probe.h"
#include "datasets/demo.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/jpeg_fixtures.h"
#include "tests/testing/status_matchers.h"

namespace shardpack::codec {
namespace {

using ::shardpack::testing::Scene;
using ::shardpack::testing::StatusIs;
using ::shardpack::testing::TjSceneJpeg;

std::vector<uint8_t> ToVector(const PixelView& v) { return {v.data, v.data + v.bytes()}; }

struct Case {
  std::string name;
  std::vector<uint8_t> jpeg;
};

// Sequential JPEGs of every layout the reader meets, at sizes that are and
// are not whole MCUs.
std::vector<Case> SequentialCases() {
  std::vector<Case> cases;
  const int sizes[][2] = {{501, 377}, {64, 48}, {17, 33}, {1, 1}};
  const std::pair<const char*, int> samps[] = {{"420", TJSAMP_420}, {"422", TJSAMP_422},
                                               {"444", TJSAMP_444}, {"440", TJSAMP_440},
                                               {"411", TJSAMP_411}, {"gray", TJSAMP_GRAY}};
  for (const auto& size : sizes) {
    for (const auto& [name, samp] : samps) {
      cases.push_back({absl::StrCat(name, " ", size[0], "x", size[1]),
                       TjSceneJpeg(size[0], size[1], samp)});
    }
  }
  cases.push_back({"restart rows", testing::RestartJpeg(501, 377, 2)});
  cases.push_back({"arithmetic", testing::LibjpegSceneJpeg(203, 150, {.arithmetic = true})});
  cases.push_back({"non-interleaved scans", testing::LibjpegSceneJpeg(203, 150, {.scans = 3})});
  std::vector<uint8_t> cmyk(size_t(99) * 70 * 4);
  for (size_t i = 0; i < cmyk.size(); ++i) cmyk[i] = uint8_t(i * 7 + i / 396);
  for (auto kind : {datasets::CmykJpegKind::kAdobeCmyk, datasets::CmykJpegKind::kAdobeYcck,
                    datasets::CmykJpegKind::kPlainCmyk}) {
    absl::StatusOr<std::vector<uint8_t>> jpeg = datasets::EncodeCmykJpeg(cmyk.data(), 99, 70, 92, kind);
    if (jpeg.ok()) cases.push_back({absl::StrCat("cmyk kind ", int(kind)), *jpeg});
  }
  return cases;
}

// A 4:2:0 scene, re-coded (empty if the re-code failed).
std::vector<uint8_t> RecodedScene(int w, int h) {
  JpegRestartRecoder recoder;
  std::vector<uint8_t> jpeg;
  absl::StatusOr<bool> done = recoder.Recode(TjSceneJpeg(w, h, TJSAMP_420), &jpeg);
  if (!done.ok() || !*done) jpeg.clear();
  return jpeg;
}

// The re-code keeps every pixel (our decode and TurboJPEG's, which also
// sees CMYK as stored), puts a restart marker after every MCU, keeps the
// APPn and COM markers, and never grows a file by more than its markers.
TEST(JpegRestartRecoderTest, RecodeIsLosslessWithAMarkerAfterEveryMcu) {
  JpegRestartRecoder recoder;
  JpegDecoder original_decoder, recoded_decoder;
  std::vector<uint8_t> out;
  for (const Case& c : SequentialCases()) {
    SCOPED_TRACE(c.name);
    ASSERT_FALSE(c.jpeg.empty());
    SP_ASSERT_OK_AND_ASSIGN(bool recoded, recoder.Recode(c.jpeg, &out));
    ASSERT_TRUE(recoded);
    SP_ASSERT_OK_AND_ASSIGN(JpegHeader header, recoded_decoder.Start(out));
    EXPECT_FALSE(header.progressive);
    SP_ASSERT_OK_AND_ASSIGN(PixelView want, original_decoder.Decode(c.jpeg));
    SP_ASSERT_OK_AND_ASSIGN(PixelView got, recoded_decoder.Decode(out));
    EXPECT_TRUE(ToVector(got) == ToVector(want));
    const int pf = header.components == 4 ? TJPF_CMYK : TJPF_RGB;
    EXPECT_TRUE(testing::TjDecode(out, int(header.width), int(header.height), pf) ==
                testing::TjDecode(c.jpeg, int(header.width), int(header.height), pf));
    // DRI: length 4, interval 1.
    const uint8_t dri[] = {0xFF, 0xDD, 0x00, 0x04, 0x00, 0x01};
    EXPECT_NE(std::search(out.begin(), out.end(), std::begin(dri), std::end(dri)), out.end());
    // The markers before the scan, APPn and COM, in order (TurboJPEG's files
    // have JFIF; EncodeCmykJpeg's Adobe ones APP14).
    for (uint8_t app : {0xE0, 0xEE, 0xFE}) {
      const uint8_t m[] = {0xFF, app};
      const bool in_original =
          std::search(c.jpeg.begin(), c.jpeg.end(), std::begin(m), std::end(m)) != c.jpeg.end();
      const bool in_recoded = std::search(out.begin(), out.end(), std::begin(m), std::end(m)) != out.end();
      EXPECT_EQ(in_original, in_recoded) << "marker " << int(app);
    }
  }
}

TEST(JpegRestartRecoderTest, CommentsAndExifAreKept) {
  std::vector<uint8_t> jpeg = testing::LibjpegSceneJpeg(64, 64, {.comment = "shot on a test"});
  JpegRestartRecoder recoder;
  std::vector<uint8_t> out;
  SP_ASSERT_OK_AND_ASSIGN(bool recoded, recoder.Recode(jpeg, &out));
  ASSERT_TRUE(recoded);
  const std::string text = "shot on a test";
  EXPECT_NE(std::search(out.begin(), out.end(), text.begin(), text.end()), out.end());
}

TEST(JpegRestartRecoderTest, ProgressiveIsLeftAlone) {
  JpegRestartRecoder recoder;
  std::vector<uint8_t> out;
  SP_ASSERT_OK_AND_ASSIGN(bool recoded,
                          recoder.Recode(TjSceneJpeg(96, 64, TJSAMP_420, TJFLAG_PROGRESSIVE), &out));
  EXPECT_FALSE(recoded);
}

TEST(JpegRestartRecoderTest, DamageIsDataLossAndTheRecoderGoesOn) {
  std::vector<uint8_t> good = TjSceneJpeg(160, 120, TJSAMP_420);
  JpegRestartRecoder recoder;
  std::vector<uint8_t> out;
  std::vector<uint8_t> truncated(good.begin(), good.begin() + long(good.size() / 2));
  EXPECT_THAT(recoder.Recode(truncated, &out),
              StatusIs(absl::StatusCode::kDataLoss, ::testing::HasSubstr("corrupt JPEG data")));
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', 13, 10, 26, 10};
  EXPECT_THAT(recoder.Recode(png, &out), StatusIs(absl::StatusCode::kDataLoss, ::testing::_));
  SP_ASSERT_OK_AND_ASSIGN(bool recoded, recoder.Recode(good, &out));
  EXPECT_TRUE(recoded);
}

// Region decodes of a re-coded file cut out their MCUs, and give exactly
// the pixels (and box) of the same region decode of the original file, at
// every scale, near every edge, with and without extra margin.
TEST(JpegRestartCutTest, RegionsOfCutsEqualRegionsOfTheOriginal) {
  JpegRestartRecoder recoder;
  JpegDecoder original_decoder, recoded_decoder;
  std::vector<uint8_t> recoded;
  std::mt19937 rng(12345);
  int cuts = 0, regions = 0;
  for (const Case& c : SequentialCases()) {
    SCOPED_TRACE(c.name);
    SP_ASSERT_OK_AND_ASSIGN(bool ok, recoder.Recode(c.jpeg, &recoded));
    ASSERT_TRUE(ok);
    SP_ASSERT_OK_AND_ASSIGN(JpegHeader h, original_decoder.Start(c.jpeg));
    for (int i = 0; i < 60; ++i) {
      std::uniform_int_distribution<uint32_t> px(0, h.width - 1), py(0, h.height - 1);
      JpegRect rect;
      rect.x = px(rng);
      rect.y = py(rng);
      rect.width = std::uniform_int_distribution<uint32_t>(1, h.width - rect.x)(rng);
      rect.height = std::uniform_int_distribution<uint32_t>(1, h.height - rect.y)(rng);
      const uint32_t out = std::uniform_int_distribution<uint32_t>(1, 96)(rng);
      const uint32_t grow = i % 3;
      SCOPED_TRACE(absl::StrCat(rect.x, ",", rect.y, " ", rect.width, "x", rect.height, " -> ", out,
                                " grow ", grow));
      SP_ASSERT_OK(original_decoder.Start(c.jpeg).status());
      SP_ASSERT_OK_AND_ASSIGN(DecodedRegion want, original_decoder.DecodeRegion(rect, out, out, grow));
      const std::vector<uint8_t> want_pixels = ToVector(want.pixels);
      SP_ASSERT_OK(recoded_decoder.Start(recoded).status());
      SP_ASSERT_OK_AND_ASSIGN(DecodedRegion got, recoded_decoder.DecodeRegion(rect, out, out, grow));
      EXPECT_FALSE(want.cut);
      cuts += got.cut;
      ++regions;
      ASSERT_EQ(got.scale_num, want.scale_num);
      ASSERT_EQ(got.pixels.width, want.pixels.width);
      ASSERT_EQ(got.pixels.height, want.pixels.height);
      EXPECT_EQ(got.box.x0, want.box.x0);
      EXPECT_EQ(got.box.y0, want.box.y0);
      EXPECT_EQ(got.box.x1, want.box.x1);
      EXPECT_EQ(got.box.y1, want.box.y1);
      ASSERT_TRUE(ToVector(got.pixels) == want_pixels);
    }
  }
  // Most random regions leave out enough of a large image to be cut.
  EXPECT_GT(cuts, regions / 4);
}

// A cut scans the markers down to its last MCU: a marker out of sequence
// or data that ends too soon is refused, and the decoder falls back to the
// whole JPEG (which then reports the damage, or decodes what it can).
TEST(JpegRestartCutTest, MarkersOutOfPlaceAreRefused) {
  const std::vector<uint8_t> jpeg = RecodedScene(160, 128);
  ASSERT_FALSE(jpeg.empty());
  JpegDecoder decoder;
  SP_ASSERT_OK(decoder.Start(jpeg).status());
  SP_ASSERT_OK_AND_ASSIGN(DecodedRegion whole_cut, decoder.DecodeRegion({64, 64, 32, 32}, 32, 32));
  EXPECT_TRUE(whole_cut.cut);
  // Renumber the 20th marker: a cut that reaches it is refused.
  int seen = 0;
  std::vector<uint8_t> bad = jpeg;
  for (size_t i = 0; i + 1 < bad.size(); ++i) {
    if (bad[i] == 0xFF && bad[i + 1] >= 0xD0 && bad[i + 1] <= 0xD7 && ++seen == 20) {
      bad[i + 1] = uint8_t(0xD0 + ((bad[i + 1] + 1) & 7));
      break;
    }
  }
  ASSERT_EQ(seen, 20);
  SP_ASSERT_OK(decoder.Start(bad).status());
  absl::StatusOr<DecodedRegion> r = decoder.DecodeRegion({64, 64, 32, 32}, 32, 32);
  // The whole JPEG's decode meets the bad marker on the way: libjpeg
  // resyncs with a warning, which is damage.
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kDataLoss, ::testing::_));
  // Truncated before the region's rows: no cut, and the whole decode fails.
  std::vector<uint8_t> truncated(jpeg.begin(), jpeg.begin() + long(jpeg.size() / 3));
  SP_ASSERT_OK(decoder.Start(truncated).status());
  EXPECT_THAT(decoder.DecodeRegion({64, 96, 32, 32}, 32, 32),
              StatusIs(absl::StatusCode::kDataLoss, ::testing::_));
  // The decoder goes on working.
  SP_ASSERT_OK(decoder.Start(jpeg).status());
  SP_ASSERT_OK_AND_ASSIGN(DecodedRegion again, decoder.DecodeRegion({64, 64, 32, 32}, 32, 32));
  EXPECT_TRUE(again.cut);
  EXPECT_TRUE(ToVector(again.pixels) == ToVector(whole_cut.pixels));
}

// Damaged re-coded files (bytes flipped anywhere, markers among them, or
// cut short) never crash the cut path or the decoder: every region decode
// is OK or a DataLossError. (Run under ASan by `scripts/test --sanitize`.)
TEST(JpegRestartCutTest, DamagedFilesAreDataLossNeverACrash) {
  const std::vector<uint8_t> jpeg = RecodedScene(203, 150);
  ASSERT_FALSE(jpeg.empty());
  JpegDecoder decoder;
  std::mt19937 rng(99);
  int decoded = 0, refused = 0;
  for (int i = 0; i < 400; ++i) {
    std::vector<uint8_t> bad = jpeg;
    const int flips = 1 + i % 4;
    for (int f = 0; f < flips; ++f) {
      const size_t at = std::uniform_int_distribution<size_t>(2, bad.size() - 1)(rng);
      // Half the time a marker-like byte pair, half a random byte.
      if (i % 2 == 0 && at + 1 < bad.size()) {
        bad[at] = 0xFF;
        bad[at + 1] = uint8_t(0xD0 + std::uniform_int_distribution<int>(0, 9)(rng));
      } else {
        bad[at] = uint8_t(rng());
      }
    }
    if (i % 5 == 0) bad.resize(std::uniform_int_distribution<size_t>(4, bad.size())(rng));
    absl::StatusOr<JpegHeader> h = decoder.Start(bad);
    if (!h.ok()) {
      EXPECT_EQ(h.status().code(), absl::StatusCode::kDataLoss) << h.status();
      ++refused;
      continue;
    }
    const uint32_t x = std::uniform_int_distribution<uint32_t>(0, h->width - 1)(rng);
    const uint32_t y = std::uniform_int_distribution<uint32_t>(0, h->height - 1)(rng);
    absl::StatusOr<DecodedRegion> r = decoder.DecodeRegion({x, y, 48, 40}, 32, 32);
    if (r.ok()) {
      ++decoded;
    } else {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
      ++refused;
    }
  }
  EXPECT_GT(decoded, 0);
  EXPECT_GT(refused, 0);
}

// The layout libjpeg's header read gives `jpeg` (a valid fixture).
std::optional<JpegSeekLayout> LayoutOf(const std::vector<uint8_t>& jpeg) {
  testing::LibjpegDecompressor decompressor(jpeg);
  return SeekLayoutOf(decompressor.d, jpeg);
}

// CutJpegWindow on its own: the cut is a JPEG of the rectangle (rounded to
// whole intervals), whose pixels are the image's away from the cut edges
// (chroma upsampling reads across those), and rectangles outside the image
// are refused.
TEST(JpegRestartCutTest, CutIsAJpegOfTheRectangle) {
  const std::vector<uint8_t> jpeg = RecodedScene(100, 70);
  ASSERT_FALSE(jpeg.empty());
  EXPECT_FALSE(LayoutOf(TjSceneJpeg(100, 70, TJSAMP_420)).has_value());  // no markers
  EXPECT_TRUE(LayoutOf(testing::RestartJpeg(100, 70, 1)).has_value());  // a row per interval
  std::optional<JpegSeekLayout> l = LayoutOf(jpeg);
  ASSERT_TRUE(l.has_value());
  // 100 x 70 at 16 x 16: 7 x 5 MCUs, the last column 4 pixels and the last
  // row 6 pixels wide.
  EXPECT_EQ(l->mcu_width, 16u);
  EXPECT_EQ(l->mcus_per_row, 7u);
  EXPECT_EQ(l->mcu_rows, 5u);
  EXPECT_EQ(l->interval, 1u);
  const std::vector<uint8_t> full = testing::TjDecode(jpeg, 100, 70, TJPF_RGB);
  std::vector<uint8_t> cut;
  std::vector<uint32_t> ends;
  const McuRect rects[] = {{5, 7, 3, 5}, {1, 3, 1, 2}, {0, 7, 0, 5}, {2, 9, 4, 8}};
  for (McuRect rect : rects) {
    SCOPED_TRACE(absl::StrCat(rect.col0, "..", rect.col1, " x ", rect.row0, "..", rect.row1));
    std::optional<McuRect> done = CutJpegWindow(jpeg, *l, rect, &cut, &ends);
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ(done->col1, std::min(rect.col1, 7u));
    EXPECT_EQ(done->row1, std::min(rect.row1, 5u));
    const uint32_t x0 = rect.col0 * 16, y0 = rect.row0 * 16;
    const uint32_t w = std::min(done->col1 * 16, 100u) - x0, h = std::min(done->row1 * 16, 70u) - y0;
    SP_ASSERT_OK_AND_ASSIGN(codec::JpegInfo info, codec::ProbeJpeg(cut, "cut", {}));
    ASSERT_EQ(info.width, w);
    ASSERT_EQ(info.height, h);
    const std::vector<uint8_t> pixels = testing::TjDecode(cut, int(w), int(h), TJPF_RGB);
    ASSERT_FALSE(pixels.empty());
    int compared = 0;
    for (uint32_t y = rect.row0 > 0 ? 2 : 0; y < h; ++y) {
      for (uint32_t x = rect.col0 > 0 ? 2 : 0; x < w; ++x) {
        const bool inner_right = done->col1 < 7 && x + 2 >= w, inner_bottom = done->row1 < 5 && y + 2 >= h;
        if (inner_right || inner_bottom) continue;
        ASSERT_EQ(std::memcmp(&pixels[(size_t(y) * w + x) * 3], &full[(size_t(y0 + y) * 100 + x0 + x) * 3], 3), 0)
            << x << "," << y;
        ++compared;
      }
    }
    EXPECT_GT(compared, 0);
  }
  EXPECT_FALSE(CutJpegWindow(jpeg, *l, {7, 9, 0, 1}, &cut, &ends).has_value());
  EXPECT_FALSE(CutJpegWindow(jpeg, *l, {0, 1, 5, 6}, &cut, &ends).has_value());
}

}  // namespace
}  // namespace shardpack::codec
