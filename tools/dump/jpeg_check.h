// Full JPEG decodes for `sharddump verify --decode`, with TurboJPEG.
// (Issue 6 moves this onto the reader's decoder.)
#ifndef SHARDPACK_TOOLS_DUMP_JPEG_CHECK_H_
#define SHARDPACK_TOOLS_DUMP_JPEG_CHECK_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "shardpack/record.h"

namespace shardpack::dump {

// Decodes JPEGs into one reused buffer. Keep one per thread for the life of
// the thread (one TurboJPEG handle each); not thread-safe.
class JpegChecker {
 public:
  JpegChecker();
  ~JpegChecker();
  JpegChecker(const JpegChecker&) = delete;
  JpegChecker& operator=(const JpegChecker&) = delete;

  // Decodes `jpeg` fully (gray as 1 channel, CMYK/YCCK as 4, others as RGB)
  // and checks its size and component count against `expected` (the
  // record's shape). OK, or DataLossError with TurboJPEG's reason (a warning
  // such as "Premature end of JPEG file" counts as a failure: the image
  // would come out partly gray).
  absl::Status Check(std::span<const uint8_t> jpeg, const ImageInfo& expected);

 private:
  absl::Status Decode(std::span<const uint8_t> jpeg, const ImageInfo& expected);
  void* handle_;  // tjhandle
  std::vector<uint8_t> pixels_;
};

}  // namespace shardpack::dump

#endif  // SHARDPACK_TOOLS_DUMP_JPEG_CHECK_H_
