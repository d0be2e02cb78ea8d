// A faster Huffman decoder for libjpeg-turbo's decompressor, for sequential
// JPEGs.
//
// libjpeg-turbo 2.1 decodes each Huffman symbol through an 8-bit lookahead
// table and then reads the coefficient's extra bits separately; a file with
// restart markers takes its slower path for every MCU (jdhuff.c decode_mcu:
// any restart interval turns the fast path off). Entropy decoding is half of
// a full decode of an ImageNet-sized photograph, and most of what a region
// decode cannot skip. JpegEntropyDecoder takes over the decompressor's
// decode_mcu method (the entropy module interface of jpegint.h, which
// libjpeg-turbo's -dev package ships): symbol and extra bits come from one
// 10-bit table lookup when they fit (most AC coefficients), restart markers
// cost nothing per MCU, and MCUs outside jpeg_crop_scanline's columns are
// decoded without storing coefficients. The coefficients are libjpeg's, bit
// for bit; libjpeg does everything else (IDCT, upsampling, color, markers).
//
// Damaged data is reported as libjpeg reports it, through the decompressor's
// error manager: the same warnings (data hitting a marker, premature end of
// file), and restart markers out of order go to libjpeg's own marker reader
// (resync and its warnings included). Two kinds of damage are always
// reported, where libjpeg-turbo may pass them: a code that matches no symbol
// (its fast path decodes a zero) and data bytes left over before a marker
// (its bit reader drops those it has read ahead). docs/reader.md,
// tests/testing/jpeg_outcome.h.
//
// Only sequential, Huffman-coded, 8-bit, single-scan images are taken over
// (every other kind keeps libjpeg's decoder); Install says which.
#ifndef SHARDPACK_CODEC_JPEG_ENTROPY_H_
#define SHARDPACK_CODEC_JPEG_ENTROPY_H_

// jpeglib.h needs size_t and FILE declared first.
#include <stddef.h>
#include <stdio.h>

#include <jpeglib.h>

#include <array>
#include <cstdint>
#include <memory>

namespace shardpack::codec {

// One per decompressor (and thread), long-lived: its derived tables are
// kept between images (keyed by the tables' contents) so that a run of
// images with the same tables builds them once.
class JpegEntropyDecoder {
 public:
  // `eager`: build the multi-symbol lookups of every table at once, not
  // when a table has served enough blocks to repay them (for tests and
  // fuzzing, whose images are too few and small to reach them otherwise):
  // the narrow ones at a table's first scan, and with `eager_wide` the wide
  // skip lookups at its second (the fuzzer leaves those out of most inputs:
  // under coverage instrumentation, building them is most of an input's time).
  explicit JpegEntropyDecoder(bool eager = false, bool eager_wide = true);
  ~JpegEntropyDecoder();
  JpegEntropyDecoder(const JpegEntropyDecoder&) = delete;
  JpegEntropyDecoder& operator=(const JpegEntropyDecoder&) = delete;

  // Call right after jpeg_start_decompress (and jpeg_crop_scanline, if
  // any), before the first scanline is read or skipped: takes over the
  // entropy decoding of `cinfo`'s scan when it is one this decoder handles,
  // and says whether it did. Uses cinfo->client_data until the next
  // Install. Kept free of C++ objects with destructors and of libjpeg
  // calls that can fail: safe inside a setjmp frame.
  bool Install(j_decompress_ptr cinfo);

  // Symbols and extra bits that fit in this many bits come from one lookup.
  static constexpr int kLookupBits = 10;

  struct Table;  // a derived Huffman table (jpeg_entropy.cc)
  struct Scan;   // the state of the scan being decoded

 private:
  static boolean DecodeMcu(j_decompress_ptr cinfo, JBLOCKROW* mcu_data);
  static boolean DecodeMcuBmi2(j_decompress_ptr cinfo, JBLOCKROW* mcu_data);
  Table* TableFor(const JHUFF_TBL& huff, bool dc);

  // A scan uses up to 4 DC and 4 AC tables; a table is never evicted by the
  // scan that uses it (Table::scan_stamp).
  static constexpr int kCachedTables = 12;
  std::array<std::unique_ptr<Table>, kCachedTables> tables_;
  int next_evict_ = 0;
  uint64_t scan_stamp_ = 0;  // counts Install calls
  bool eager_ = false;
  bool eager_wide_ = true;
  std::unique_ptr<Scan> scan_;
};

}  // namespace shardpack::codec

#endif  // SHARDPACK_CODEC_JPEG_ENTROPY_H_
