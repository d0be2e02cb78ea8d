// Restart markers as random access into baseline JPEGs.
//
// The entropy-coded data of a baseline JPEG is one Huffman bit stream with
// running DC predictions: to decode a block, every block before it must be
// Huffman-decoded, so a region decode (jpeg_crop_scanline +
// jpeg_skip_scanlines) still pays for the entropy decoding of every block
// above the region and beside it. A restart marker (RST0..RST7, every
// `restart_interval` MCUs) resets the predictions and starts on a byte, so
// with a marker after every MCU each MCU's bytes can be found by a scan for
// markers and cut out on their own.
//
// Two halves:
// - Packing (`shardpack images --restart-markers`): JpegRestartRecoder
//   re-codes a JPEG losslessly, as `jpegtran -restart 1 -optimize -copy all`
//   would: the same DCT coefficients (so the same pixels, bit for bit), new
//   optimized Huffman tables, and a restart marker after every MCU.
// - Reading: for a JPEG whose layout allows it (JpegSeekLayout), CutJpegWindow
//   writes a JPEG of its own holding only a rectangle of MCUs: the original
//   headers with the frame's size changed, then the rectangle's MCUs with
//   their restart markers renumbered. libjpeg decodes it as it decodes any
//   JPEG; its pixels are those of the rectangle in the original, except
//   where chroma upsampling reads across the rectangle's cut edges (the
//   caller keeps a margin: JpegDecoder::DecodeRegion).
#ifndef SHARDPACK_CODEC_JPEG_RESTART_H_
#define SHARDPACK_CODEC_JPEG_RESTART_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "shardpack/record.h"

struct jpeg_decompress_struct;

namespace shardpack::codec {

// Re-codes JPEGs with a restart marker after every MCU. Holds one libjpeg
// decompressor and compressor for life; not thread-safe: one per thread.
class JpegRestartRecoder {
 public:
  JpegRestartRecoder();
  ~JpegRestartRecoder();
  JpegRestartRecoder(const JpegRestartRecoder&) = delete;
  JpegRestartRecoder& operator=(const JpegRestartRecoder&) = delete;

  // Writes the re-coded `jpeg` to `out` (resized to it; its capacity is
  // reused) and returns true. Sequential files (baseline or extended,
  // Huffman or arithmetic, one scan or several) become one interleaved
  // Huffman scan. Every marker before the first scan (APPn, COM) is copied
  // in order; libjpeg adds no JFIF or Adobe marker of its own, so the
  // color interpretation is the original's.
  // Returns false for a progressive file (`out` then holds nothing of
  // use): its decode may smooth blocks whose coefficients were never sent
  // (libjpeg's block smoothing), so a sequential copy could differ; the
  // caller keeps it as it is.
  // DataLossError "corrupt JPEG data: <libjpeg's message>" when the
  // entropy-coded data is damaged (it is all decoded here).
  absl::StatusOr<bool> Recode(ByteSpan jpeg, std::vector<uint8_t>* out);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// What a cut needs to know of a JPEG whose header libjpeg has read.
struct JpegSeekLayout {
  uint32_t width = 0, height = 0;          // the image, in pixels
  uint32_t mcu_width = 0, mcu_height = 0;  // in pixels
  uint32_t mcus_per_row = 0, mcu_rows = 0;
  uint32_t interval = 0;      // MCUs per restart interval; divides mcus_per_row
  size_t sof_size_at = 0;     // offset of the frame header's height field
  size_t entropy_start = 0;   // offset of the first scan's entropy-coded data
};

// The layout of `jpeg` (whose header `cinfo` has read through
// jpeg_mem_src), or nothing when MCUs cannot be cut out: no restart
// markers, an interval that does not divide a row of MCUs, a progressive or
// arithmetic-coded file, or a first scan without every component.
std::optional<JpegSeekLayout> SeekLayoutOf(const jpeg_decompress_struct& cinfo, ByteSpan jpeg);

// A rectangle of MCUs: columns [col0, col1), rows [row0, row1).
struct McuRect {
  uint32_t col0 = 0, col1 = 0, row0 = 0, row1 = 0;
};

// Writes to `out` (capacity reused) a JPEG of the MCUs of `rect`, with col0
// and col1 first rounded out to whole restart intervals (the rectangle cut
// is returned). Its frame is the rectangle's pixels: whole MCUs, except at
// the image's right and bottom edges, which stay the image's. `ends` is
// work memory (capacity reused). Returns nothing when the markers are not
// where the layout says (damaged or truncated data, or a marker other than
// the expected RSTn): the caller decodes the original, which reports it.
// The data is scanned from the first scan's start down to the rectangle's
// last MCU only.
std::optional<McuRect> CutJpegWindow(ByteSpan jpeg, const JpegSeekLayout& layout, McuRect rect,
                                     std::vector<uint8_t>* out, std::vector<uint32_t>* ends);

}  // namespace shardpack::codec

#endif  // SHARDPACK_CODEC_JPEG_RESTART_H_
