// JPEG checks for `sharddump verify --decode`, with the reader's decoder
// (codec/jpeg_decoder.h), so verify accepts and rejects exactly what the
// reader does.
#ifndef SHARDPACK_TOOLS_DUMP_JPEG_CHECK_H_
#define SHARDPACK_TOOLS_DUMP_JPEG_CHECK_H_

#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/status.h"
#include "shardpack/record.h"

namespace shardpack::codec {
class JpegDecoder;
}  // namespace shardpack::codec

namespace shardpack::dump {

// Keep one per thread for the life of the thread (one decoder and its
// buffers each); not thread-safe.
class JpegChecker {
 public:
  JpegChecker();
  ~JpegChecker();
  JpegChecker(const JpegChecker&) = delete;
  JpegChecker& operator=(const JpegChecker&) = delete;

  // Decodes all of `jpeg`'s coded data and checks its size and component
  // count (gray 1, CMYK/YCCK 4, others 3) against `expected` (the record's
  // shape). OK, or DataLossError with the decoder's reason (a warning such
  // as "Premature end of JPEG file" counts as a failure: the image would
  // come out partly gray).
  absl::Status Check(std::span<const uint8_t> jpeg, const ImageInfo& expected);

 private:
  std::unique_ptr<codec::JpegDecoder> decoder_;
};

}  // namespace shardpack::dump

#endif  // SHARDPACK_TOOLS_DUMP_JPEG_CHECK_H_
