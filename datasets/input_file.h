// An input file read whole, as the packer's sources and the converters read
// an image: through the one regular-file opener, bounded.
#ifndef SHARDPACK_DATASETS_INPUT_FILE_H_
#define SHARDPACK_DATASETS_INPUT_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace shardpack::datasets {

// A file bigger than this is not an image we pack (and would not fit a
// record comfortably); it is bad input, not an allocation.
inline constexpr uint64_t kMaxInputFileBytes = uint64_t{1} << 30;

// Reads the whole regular file `path` into `out` (whose capacity is
// reused). A FIFO or device named like an image is refused, not waited on;
// DataLossError "<path> @0: empty file" for zero bytes; InvalidArgumentError
// past kMaxInputFileBytes; the opener's errors (NotFound, PermissionDenied)
// naming the path.
absl::Status ReadInputFile(const std::string& path, std::vector<uint8_t>* out);

}  // namespace shardpack::datasets

#endif  // SHARDPACK_DATASETS_INPUT_FILE_H_
