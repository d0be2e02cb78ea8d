// Reads a JPEG's header from memory without decoding it.
//
// ProbeJpeg walks the marker segments from SOI up to the first SOS and reports
// the frame's size, component count and color space, then checks that the
// data ends with the end-of-image marker. It parses untrusted bytes: every
// read is bounds-checked, and nothing is allocated.
#ifndef SHARDPACK_CODEC_JPEG_PROBE_H_
#define SHARDPACK_CODEC_JPEG_PROBE_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "shardpack/record.h"

namespace shardpack::codec {

// How the components of a JPEG are to be read, decided as libjpeg decides it
// (jdapimin.c, default_decompress_parms).
enum class JpegColorSpace : uint8_t {
  kGray,   // 1 component
  kYCbCr,  // 3 components, the usual case (JFIF, or Adobe transform 1 or any but 0)
  kRGB,    // 3 components stored as RGB (Adobe transform 0, or ids 'R','G','B')
  kCMYK,   // 4 components, no transform (Adobe transform 0 or no Adobe marker)
  kYCCK,   // 4 components, Adobe transform 2 (or any but 0, as libjpeg assumes)
};

// "gray", "ycbcr", "rgb", "cmyk", "ycck".
std::string_view JpegColorSpaceName(JpegColorSpace c);

// What the header says.
struct JpegInfo {
  uint32_t width = 0;
  uint32_t height = 0;
  int components = 0;  // 1, 3 or 4
  JpegColorSpace color_space = JpegColorSpace::kYCbCr;
  uint8_t sof_marker = 0;    // 0xC0 baseline, 0xC1 extended, 0xC2 progressive, ...
  bool progressive = false;  // SOF2 or SOF10
  bool arithmetic = false;   // SOF9 or SOF10
  bool jfif = false;         // an APP0 "JFIF" segment came before the first scan
  bool adobe = false;        // an APP14 "Adobe" segment came before the first scan
  int adobe_transform = -1;  // its transform flag (0, 1, 2); -1 without one
  // Offset of the first SOS marker: the header is data[0, sos_offset).
  uint64_t sos_offset = 0;
};

struct JpegProbeOptions {
  // Frames with more pixels are rejected (InvalidArgumentError). Default 2^28.
  uint64_t max_pixels = uint64_t{1} << 28;
  // Require an end-of-image marker (FFD9) after the scan data; bytes after
  // it (camera trailers, padding) are allowed, as libjpeg allows them.
  // Without EOI the file is taken as truncated. Default true.
  bool require_eoi = true;
};

// The largest side libjpeg-turbo decodes (JPEG_MAX_DIMENSION).
inline constexpr uint32_t kMaxJpegSide = 65500;

// Parses the header of `data`. `name` (usually the path) starts every error
// message. Errors:
// - InvalidArgumentError "<name>: not a JPEG: PNG image" (codec's
//   ImageContentName: "WebP image", "unknown content", ...) when the data
//   does not start with SOI;
// - DataLossError "<name> @<offset>: ..." for a truncated header, a bad
//   marker or segment, a frame with zero width or height, no frame before
//   SOS, or no EOI after the scan data ("truncated JPEG: no end-of-image
//   marker");
// - InvalidArgumentError "<name>: ..." for sizes over max_pixels or
//   kMaxJpegSide, and for frames libjpeg-turbo does not decode (lossless,
//   hierarchical, 12-bit, 2 components).
// Thread-safe; `data` is only read during the call.
absl::StatusOr<JpegInfo> ProbeJpeg(ByteSpan data, std::string_view name,
                                   const JpegProbeOptions& options = {});

}  // namespace shardpack::codec

#endif  // SHARDPACK_CODEC_JPEG_PROBE_H_
