// codec/jpeg_entropy: the decoder that takes over libjpeg's Huffman decoding
// gives libjpeg's pixels, and libjpeg's verdict on damaged data, for every
// kind of sequential JPEG and every way the reader decodes one (whole,
// region with jpeg_crop_scanline and jpeg_skip_scanlines, DCT-scaled,
// restart-marker cuts).
#include "codec/jpeg_entropy.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/jpeg_decoder.h"
#include "codec/jpeg_restart.h"
#include "datasets/demo.h"
#include "gtest/gtest.h"
#include "tests/testing/jpeg_fixtures.h"
#include "tests/testing/jpeg_outcome.h"
#include "tests/testing/status_matchers.h"

namespace shardpack::codec {
namespace {

using ::shardpack::testing::DecodeJpegRegion;
using ::shardpack::testing::HasJpegFillBytes;
using ::shardpack::testing::JpegOutcome;
using ::shardpack::testing::SameJpegOutcome;
using ::shardpack::testing::Scene;
using ::shardpack::testing::TjSceneJpeg;

struct Case {
  std::string name;
  std::vector<uint8_t> jpeg;
};

// A w x h scene's pixels with fine noise: large coefficients, long codes and
// extra bits that do not fit one lookup.
std::vector<uint8_t> NoisyScene(int w, int h) {
  std::vector<uint8_t> px = Scene(w, h, 5, 11);
  uint32_t x = 12345;
  for (uint8_t& p : px) {
    x = x * 1103515245u + 12345u;
    p = static_cast<uint8_t>(p ^ ((x >> 16) & 0x3F));
  }
  return px;
}

// What the reader meets: every chroma sampling, gray, CMYK and YCCK, sizes
// that are and are not whole MCUs, qualities from coarse to 100 (codes
// longer than the lookup), restart markers every row, every few MCUs and
// every MCU (the packer's re-code, with optimized tables), and one file per
// kind of table so that the table cache is exercised in one decoder.
std::vector<Case> Cases() {
  std::vector<Case> cases;
  const std::pair<const char*, int> samps[] = {{"420", TJSAMP_420}, {"422", TJSAMP_422},
                                               {"444", TJSAMP_444}, {"440", TJSAMP_440},
                                               {"411", TJSAMP_411}, {"gray", TJSAMP_GRAY}};
  for (const auto& [name, samp] : samps) {
    cases.push_back({absl::StrCat(name, " 501x377"), TjSceneJpeg(501, 377, samp)});
    cases.push_back({absl::StrCat(name, " 17x33"), TjSceneJpeg(17, 33, samp)});
  }
  cases.push_back({"1x1", TjSceneJpeg(1, 1, TJSAMP_420)});
  for (int quality : {5, 50, 100}) {
    cases.push_back({absl::StrCat("noisy q", quality),
                     testing::EncodeJpeg(NoisyScene(203, 150), 203, 150, TJPF_RGB, TJSAMP_420,
                                         quality)});
  }
  cases.push_back({"restart every 2 rows", testing::RestartJpeg(501, 377, 2)});
  cases.push_back({"restart every row", testing::RestartJpeg(64, 64, 1)});
  JpegRestartRecoder recoder;
  std::vector<uint8_t> recoded;
  for (const auto& [name, samp] : samps) {
    absl::StatusOr<bool> done = recoder.Recode(TjSceneJpeg(203, 150, samp), &recoded);
    if (done.ok() && *done) cases.push_back({absl::StrCat(name, " marker every MCU"), recoded});
  }
  std::vector<uint8_t> cmyk(size_t(99) * 70 * 4);
  for (size_t i = 0; i < cmyk.size(); ++i) cmyk[i] = uint8_t(i * 7 + i / 396);
  for (auto kind : {datasets::CmykJpegKind::kAdobeCmyk, datasets::CmykJpegKind::kAdobeYcck}) {
    absl::StatusOr<std::vector<uint8_t>> jpeg =
        datasets::EncodeCmykJpeg(cmyk.data(), 99, 70, 92, kind);
    if (jpeg.ok()) cases.push_back({absl::StrCat("cmyk kind ", int(kind)), *jpeg});
  }
  return cases;
}

// The rectangles the reader asks for: whole, corners, a middle strip (rows
// skipped above, columns cropped), and with an output size that makes the
// DCT scale 1/8, 1/4 and 1/2.
std::vector<std::pair<JpegRect, uint32_t>> Regions(uint32_t w, uint32_t h) {
  return {{{0, 0, w, h}, w},
          {{0, 0, w, h}, 1},
          {{0, 0, w, h}, (w + 3) / 4},
          {{w / 3, h / 3, w / 2 + 1, h / 2 + 1}, 8},
          {{w / 2, h / 4, w - w / 2, h / 2}, (w - w / 2) / 2},
          {{1, h - h / 5, w / 4 + 1, h / 5}, 2},
          {{w - 1, h - 1, 1, 1}, 1}};
}

TEST(JpegEntropyDecoderTest, SamePixelsAsLibjpegsDecoderForEveryKindAndRegion) {
  JpegDecoder ours;  // one decoder for every case: tables are cached across images
  JpegDecoder eager(JpegDecoderOptions{.eager_huffman_lookups = true});  // multi-symbol lookups
  JpegDecoder theirs(JpegDecoderOptions{.libjpeg_entropy = true});
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    ASSERT_FALSE(c.jpeg.empty());
    SP_ASSERT_OK_AND_ASSIGN(JpegHeader h, theirs.Start(c.jpeg));
    for (const auto& [rect, min_size] : Regions(h.width, h.height)) {
      SCOPED_TRACE(::testing::Message() << rect.x << "," << rect.y << " " << rect.width << "x"
                                        << rect.height << " for " << min_size);
      const JpegOutcome want = DecodeJpegRegion(theirs, c.jpeg, rect, min_size);
      ASSERT_TRUE(want.ok) << want.message;
      for (JpegDecoder* decoder : {&ours, &eager}) {
        const JpegOutcome got = DecodeJpegRegion(*decoder, c.jpeg, rect, min_size);
        ASSERT_TRUE(got.ok) << got.message;
        EXPECT_EQ(got.scale, want.scale);
        EXPECT_TRUE(got.pixels == want.pixels) << (decoder == &eager ? "eager" : "lazy");
      }
    }
  }
}

// Damage anywhere in the data (one byte changed, or the file cut short)
// gives libjpeg's outcome: the same pixels, or an error wherever libjpeg
// has one. That covers data that runs into a marker or the end of the
// file, lost or wrong restart markers and marker-like bytes. The one
// difference, a code that matches no symbol, and the variants left out
// (fill bytes) are in tests/testing/jpeg_outcome.h.
TEST(JpegEntropyDecoderTest, DamagedDataGivesLibjpegsOutcome) {
  std::vector<Case> bases = {
      {"420", TjSceneJpeg(96, 64, TJSAMP_420)},
      {"noisy q100", testing::EncodeJpeg(NoisyScene(48, 40), 48, 40, TJPF_RGB, TJSAMP_444, 100)},
      {"restart every row", testing::RestartJpeg(96, 64, 1)}};
  JpegRestartRecoder recoder;
  std::vector<uint8_t> recoded;
  SP_ASSERT_OK_AND_ASSIGN(bool done, recoder.Recode(TjSceneJpeg(96, 64, TJSAMP_420), &recoded));
  ASSERT_TRUE(done);
  bases.push_back({"marker every MCU", recoded});
  JpegDecoder ours;
  JpegDecoder eager(JpegDecoderOptions{.eager_huffman_lookups = true});
  JpegDecoder theirs(JpegDecoderOptions{.libjpeg_entropy = true});
  int errors = 0, damaged = 0, identical = 0;
  for (const Case& base : bases) {
    SCOPED_TRACE(base.name);
    SP_ASSERT_OK_AND_ASSIGN(JpegHeader h, theirs.Start(base.jpeg));
    const std::vector<std::pair<JpegRect, uint32_t>> regions = {
        {{0, 0, h.width, h.height}, h.width}, {{h.width / 2, h.height / 2, 20, 10}, 20}};
    const size_t n = base.jpeg.size();
    std::vector<std::vector<uint8_t>> variants;
    for (size_t i = n / 3; i + 2 < n; i += 7) {  // entropy-coded data, mostly
      for (uint8_t v : {uint8_t(base.jpeg[i] ^ 0x10), uint8_t(0xFF), uint8_t(0xD3)}) {
        variants.push_back(base.jpeg);
        variants.back()[i] = v;
      }
    }
    for (size_t len = n / 2; len < n; len += 13) {
      variants.emplace_back(base.jpeg.begin(), base.jpeg.begin() + static_cast<long>(len));
    }
    for (size_t v = 0; v < variants.size(); ++v) {
      if (HasJpegFillBytes(variants[v], n / 4)) continue;  // jpeg_outcome.h
      for (const auto& [rect, min_size] : regions) {
        const JpegOutcome want = DecodeJpegRegion(theirs, variants[v], rect, min_size);
        const JpegOutcome lazy = DecodeJpegRegion(ours, variants[v], rect, min_size);
        const JpegOutcome got = DecodeJpegRegion(eager, variants[v], rect, min_size);
        ASSERT_TRUE(got == lazy) << "variant " << v << ": the multi-symbol lookups differ";
        ASSERT_TRUE(SameJpegOutcome(got, want)) << "variant " << v << ": ours "
                                 << (got.ok ? "ok" : got.message) << ", libjpeg's "
                                 << (want.ok ? "ok" : want.message);
        errors += want.ok ? 0 : 1;
        damaged += 1;
        identical += got == want ? 1 : 0;
      }
    }
  }
  // The variants are damaged enough to matter (many decodes fail), and the
  // bad-code difference is the exception.
  EXPECT_GT(errors, damaged / 4);
  EXPECT_GT(identical, damaged * 9 / 10);
}

// `jpeg` with its coefficients replaced: in most 8x8 blocks a lone 1 at the
// last zigzag place (three runs of 16 zeros before it, no end of block),
// else a few small ones; rewritten with optimized Huffman tables, so that
// the run of 16 zeros gets a 1-bit code. Empty on failure.
std::vector<uint8_t> LongZeroRunsJpeg(const std::vector<uint8_t>& jpeg) {
  jpeg_decompress_struct in;
  jpeg_compress_struct out;
  jpeg_error_mgr in_err, out_err;
  in.err = jpeg_std_error(&in_err);
  out.err = jpeg_std_error(&out_err);
  jpeg_create_decompress(&in);
  jpeg_create_compress(&out);
  jpeg_mem_src(&in, jpeg.data(), static_cast<unsigned long>(jpeg.size()));
  jpeg_read_header(&in, TRUE);
  jvirt_barray_ptr* coefficients = jpeg_read_coefficients(&in);
  for (int ci = 0; ci < in.num_components; ++ci) {
    const jpeg_component_info& comp = in.comp_info[ci];
    for (JDIMENSION row = 0; row < comp.height_in_blocks; ++row) {
      JBLOCKARRAY blocks = (*in.mem->access_virt_barray)(
          reinterpret_cast<j_common_ptr>(&in), coefficients[ci], row, 1, TRUE);
      for (JDIMENSION col = 0; col < comp.width_in_blocks; ++col) {
        JCOEF* b = blocks[0][col];
        std::fill(b + 1, b + DCTSIZE2, JCOEF{0});
        if ((row * 7 + col) % 5 != 0) {
          b[63] = 1;  // zigzag 63 is natural 63
        } else {
          b[1] = static_cast<JCOEF>(col % 3 + 1);
          b[8] = -2;
        }
      }
    }
  }
  unsigned char* bytes = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&out, &bytes, &size);
  jpeg_copy_critical_parameters(&in, &out);
  out.optimize_coding = TRUE;
  jpeg_write_coefficients(&out, coefficients);
  jpeg_finish_compress(&out);
  jpeg_finish_decompress(&in);
  std::vector<uint8_t> result(bytes, bytes + size);
  jpeg_destroy_compress(&out);
  jpeg_destroy_decompress(&in);
  std::free(bytes);
  return result;
}

// Skipping several symbols a lookup stops at the block's end even where the
// codes are shortest: a 1-bit run of 16 zeros, blocks that end at the last
// zigzag place without an end-of-block symbol, in rows skipped above a
// region and columns beside it.
TEST(JpegEntropyDecoderTest, ShortCodesForRunsOfZerosSkipAsLibjpegDecodes) {
  const std::vector<uint8_t> jpeg = LongZeroRunsJpeg(TjSceneJpeg(256, 256, TJSAMP_GRAY));
  ASSERT_FALSE(jpeg.empty());
  JpegDecoder ours;
  JpegDecoder theirs(JpegDecoderOptions{.libjpeg_entropy = true});
  for (int repeat = 0; repeat < 3; ++repeat) {  // the skip lookups exist from the 2nd on
    for (const auto& [rect, min_size] : Regions(256, 256)) {
      SCOPED_TRACE(::testing::Message() << rect.x << "," << rect.y << " " << rect.width << "x"
                                        << rect.height << " for " << min_size);
      const JpegOutcome want = DecodeJpegRegion(theirs, jpeg, rect, min_size);
      ASSERT_TRUE(want.ok) << want.message;
      const JpegOutcome got = DecodeJpegRegion(ours, jpeg, rect, min_size);
      ASSERT_TRUE(got.ok) << got.message;
      EXPECT_TRUE(got.pixels == want.pixels);
    }
  }
}

// Only what it decodes exactly as libjpeg does is taken over.
TEST(JpegEntropyDecoderTest, ProgressiveArithmeticAndMultiScanFilesKeepLibjpegsDecoder) {
  const std::vector<Case> cases = {
      {"progressive", TjSceneJpeg(96, 64, TJSAMP_420, TJFLAG_PROGRESSIVE)},
      {"arithmetic", testing::LibjpegSceneJpeg(96, 64, {.arithmetic = true})},
      {"three scans", testing::LibjpegSceneJpeg(96, 64, {.scans = 3})},
      {"baseline", TjSceneJpeg(96, 64, TJSAMP_420)}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    testing::LibjpegDecompressor decompressor(c.jpeg);
    jpeg_decompress_struct& cinfo = decompressor.d;
    ASSERT_EQ(decompressor.header, JPEG_HEADER_OK);
    cinfo.out_color_space = JCS_RGB;
    ASSERT_TRUE(jpeg_start_decompress(&cinfo));
    JpegEntropyDecoder entropy;
    EXPECT_EQ(entropy.Install(&cinfo), c.name == "baseline");
    std::vector<uint8_t> row(size_t{cinfo.output_width} * 3);
    JSAMPROW rows[] = {row.data()};
    while (cinfo.output_scanline < cinfo.output_height) jpeg_read_scanlines(&cinfo, rows, 1);
    jpeg_finish_decompress(&cinfo);
    EXPECT_EQ(decompressor.err.num_warnings, 0);
  }
}

}  // namespace
}  // namespace shardpack::codec
