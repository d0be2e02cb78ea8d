// A stored record's image as pixels: raw payloads interleaved (CHW planes to
// HWC), JPEG payloads decoded. Shared by `sharddump extract` (raw files) and
// `sharddump show` (contact sheets).
#ifndef SHARDPACK_TOOLS_DUMP_RECORD_PIXELS_H_
#define SHARDPACK_TOOLS_DUMP_RECORD_PIXELS_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "codec/jpeg_decoder.h"
#include "codec/pixels.h"
#include "shardpack/record.h"

namespace shardpack::dump {

// Raw pixels in HWC order: the payload itself, or its CHW planes
// interleaved into `buffer`.
std::span<const uint8_t> Interleaved(const Record& r, std::vector<uint8_t>* buffer);

// The record's image as 1 (gray raw) or 3 channel pixels: a JPEG decoded in
// full to RGB (gray and CMYK/YCCK JPEGs too: codec/jpeg_decoder.h), a raw
// image of 1 or 3 channels interleaved. Valid until the next call with the
// same decoder and buffer. DataLossError for a JPEG that does not decode or
// a raw payload whose size disagrees with its shape; InvalidArgumentError
// for a raw image of another channel count.
absl::StatusOr<codec::PixelView> RecordPixels(const Record& r, codec::JpegDecoder* decoder,
                                                 std::vector<uint8_t>* buffer);

}  // namespace shardpack::dump

#endif  // SHARDPACK_TOOLS_DUMP_RECORD_PIXELS_H_
