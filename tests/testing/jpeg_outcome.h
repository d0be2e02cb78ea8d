// One JPEG decode's outcome (the pixels, or the error), and what "the same
// as libjpeg's" means for the reader's Huffman decoder (codec/jpeg_entropy.h):
// shared by its test and its fuzzer. Header-only, no GoogleTest.
#ifndef SHARDPACK_TESTS_TESTING_JPEG_OUTCOME_H_
#define SHARDPACK_TESTS_TESTING_JPEG_OUTCOME_H_

#include <cstdint>
#include <string>
#include <vector>

#include "codec/jpeg_decoder.h"

namespace shardpack::testing {

struct JpegOutcome {
  bool ok = false;
  std::string message;
  std::vector<uint8_t> pixels;
  int scale = 0;
  bool operator==(const JpegOutcome&) const = default;
};

// Start + DecodeRegion(rect, min_size, min_size) with `decoder`.
inline JpegOutcome DecodeJpegRegion(codec::JpegDecoder& decoder, ByteSpan jpeg,
                                    const codec::JpegRect& rect, uint32_t min_size) {
  absl::StatusOr<codec::JpegHeader> header = decoder.Start(jpeg);
  if (!header.ok()) return {false, std::string(header.status().message()), {}, 0};
  absl::StatusOr<codec::DecodedRegion> region = decoder.DecodeRegion(rect, min_size, min_size);
  if (!region.ok()) return {false, std::string(region.status().message()), {}, 0};
  const codec::PixelView& v = region->pixels;
  return {true, "", std::vector<uint8_t>(v.data, v.data + v.bytes()), region->scale_num};
}

// Whether `jpeg` has 0xFF 0xFF (a fill byte, then a byte or a marker) at or
// after `from`. The standard allows fill bytes only before markers, and on
// FF FF 00 libjpeg-turbo's fast path leaves coefficients of the MCU it
// abandons for its slow path (jdhuff.c: "Pre-execute case of FF/00") in the
// blocks, so its pixels are no reference there.
inline bool HasJpegFillBytes(ByteSpan jpeg, size_t from) {
  for (size_t i = from; i + 1 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xFF) return true;
  }
  return false;
}

// Whether `o` failed on a warning that depends on how far the decoder's bit
// reader reads ahead of the bits it needs: data bytes left over before a
// marker ("extraneous bytes before marker 0x.."; libjpeg drops those its
// bit reader has read ahead without a word, and reports the ones before a
// restart marker it has run into only at EOI, where that is harmless) and
// a file that ends without EOI within a read-ahead of the region's last
// bits ("Premature end of JPEG file").
inline bool FailedOnReadAhead(const JpegOutcome& o) {
  return !o.ok && (o.message.find("extraneous bytes before marker") != std::string::npos ||
                   o.message.find("Premature end of JPEG file") != std::string::npos);
}

// Our decoder's outcome `got` against libjpeg's `want`: the same pixels, or
// an error wherever libjpeg has one. The messages of two errors may differ
// (which warning comes first on damaged data depends on read-ahead too).
// Where they disagree on whether the file decodes, the one that failed
// failed on read-ahead (FailedOnReadAhead), or ours found a code that
// matches no symbol ("bad Huffman code": libjpeg-turbo warns so only on its
// slow path; its fast path, HUFF_DECODE_FAST, decodes a zero and goes on).
inline bool SameJpegOutcome(const JpegOutcome& got, const JpegOutcome& want) {
  if (got.ok && want.ok) return got == want;
  if (!got.ok && !want.ok) return true;
  if (FailedOnReadAhead(got) || FailedOnReadAhead(want)) return true;
  return !got.ok && got.message.find("bad Huffman code") != std::string::npos;
}

}  // namespace shardpack::testing

#endif  // SHARDPACK_TESTS_TESTING_JPEG_OUTCOME_H_
