// libFuzzer target for the reader's JPEG decoder (codec/jpeg_decoder.h) and
// its Huffman decoder (codec/jpeg_entropy.h), differentially: any bytes are
// decoded whole and in a region drawn from the input, once with the
// reader's Huffman decoder and once with libjpeg's own. Invariants: no
// crash, leak or sanitizer report; the two agree as
// tests/testing/jpeg_outcome.h says (the same pixels, or an error wherever
// libjpeg has one; inputs with fill bytes, where libjpeg-turbo's pixels are
// no reference, are only decoded); a failed Start of one is a failed Start
// of the other. And the reader's planar path (the region's YCbCr planes,
// resized and converted) on the same bytes: it fails where the RGB decode
// fails, and reads and writes only what it owns (the sanitizers' part).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "codec/jpeg_decoder.h"
#include "codec/resize.h"
#include "tests/testing/jpeg_outcome.h"

namespace {

void Expect(bool ok, std::string_view what, const std::string& ours = {},
            const std::string& theirs = {}) {
  if (ok) return;
  std::fprintf(stderr, "jpeg_fuzzer: invariant broken: %.*s (ours: %s; libjpeg's: %s)\n",
               static_cast<int>(what.size()), what.data(), ours.c_str(), theirs.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardpack;
  // Fresh decoders for each input: libjpeg keeps a file's tables for the
  // next file on the same decompressor (a file that leaves out a table uses
  // the one before), and its own decoder's output was seen to depend on the
  // previous file's headers besides; the reader's decoder is held to
  // libjpeg's output on the file alone. (The Huffman table cache across
  // files is JpegEntropyDecoderTest's.) The multi-symbol lookups are built
  // at once: a fuzzer's inputs are too small to reach them otherwise. The
  // wide skip lookups (built at the region's decode, a table's second scan)
  // only for one input in four, drawn from its bytes: building them took 55%
  // of the fuzzer's time, for a function of the tables alone.
  constexpr uint64_t kMaxPixels = uint64_t{1} << 20;  // bounds a run's memory and time
  const bool wide = size >= 5 && (data[size - 4] & 3) == 0;
  codec::JpegDecoder ours(codec::JpegDecoderOptions{
      .max_pixels = kMaxPixels, .eager_huffman_lookups = true, .eager_wide_lookups = wide});
  codec::JpegDecoder theirs(
      codec::JpegDecoderOptions{.max_pixels = kMaxPixels, .libjpeg_entropy = true});
  const ByteSpan jpeg(data, size);
  const absl::StatusOr<codec::JpegHeader> h = theirs.Start(jpeg);
  Expect(h.ok() == ours.Start(jpeg).ok(), "Start disagrees");
  if (!h.ok()) return 0;
  // The whole image at full size, and a region (with its scale) drawn from
  // the last bytes.
  const uint32_t draw = size >= 4 ? uint32_t{data[size - 1]} | uint32_t{data[size - 2]} << 8 |
                                        uint32_t{data[size - 3]} << 16
                                  : 0;
  const codec::JpegRect whole{0, 0, h->width, h->height};
  const codec::JpegRect region{draw % h->width, (draw >> 8) % h->height,
                                  1 + (draw >> 4) % h->width, 1 + (draw >> 12) % h->height};
  const uint32_t min_size = 1 + (draw >> 16) % 64;
  for (const auto& [rect, min] : {std::pair{whole, h->width}, std::pair{region, min_size}}) {
    const testing::JpegOutcome want = testing::DecodeJpegRegion(theirs, jpeg, rect, min);
    const testing::JpegOutcome got = testing::DecodeJpegRegion(ours, jpeg, rect, min);
    if (testing::HasJpegFillBytes(jpeg, 2)) continue;  // libjpeg's pixels are no reference
    Expect(testing::SameJpegOutcome(got, want), "outcomes differ",
           got.ok ? "ok" : got.message, want.ok ? "ok" : want.message);
  }
  // The reader's path (planes, or RGB for files without them), resized to
  // an output size, mirror and filter reach drawn from the bytes; then the
  // same region as RGB on the same decoder.
  Expect(ours.Start(jpeg).ok(), "a second Start fails");
  const absl::StatusOr<codec::DecodedRegion> planes = ours.DecodeRegion(
      region, min_size, min_size, 0, codec::RegionPixels::kYccPlanesWhenPossible);
  if (planes.ok()) {
    const uint32_t out = 1 + (draw >> 18) % 48;
    std::vector<uint8_t> rgb(size_t{out} * out * 3);
    codec::ResizeScratch scratch;
    const codec::ResizeOptions options{(draw & 1) == 0, (draw & 2) != 0};
    codec::ResizeRegion(*planes, planes->box, out, out, options, rgb.data(), &scratch);
  }
  const testing::JpegOutcome rgb = testing::DecodeJpegRegion(ours, jpeg, region, min_size);
  Expect(planes.ok() == rgb.ok, "the planar and RGB decodes disagree",
         planes.ok() ? "ok" : std::string(planes.status().message()),
         rgb.ok ? "ok" : rgb.message);
  return 0;
}
