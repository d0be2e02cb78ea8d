// The one way this library opens a file it reads: never blocking on a FIFO
// or a device, and refusing anything but a regular file, so that a FIFO
// named like a shard, a manifest or an image is an error, not a hang.
#ifndef SHARDPACK_COMMON_POSIX_OPEN_H_
#define SHARDPACK_COMMON_POSIX_OPEN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shardpack::common {

// Opens `path` with O_RDONLY | O_CLOEXEC | `extra_flags` (e.g. O_DIRECT).
// The open itself does not block (O_NONBLOCK, cleared once the file is known
// to be regular). Returns the descriptor, which the caller closes, and sets
// *size. NotFoundError when missing; FailedPreconditionError
// "<path>: a FIFO, not a regular file" (or a directory, a device, ...);
// UnavailableError "<path>: O_DIRECT is not supported on this filesystem"
// where the file system refuses O_DIRECT at open.
absl::StatusOr<int> OpenRegularFile(const std::string& path, int extra_flags, uint64_t* size);

// The same test for a path handed to a library that opens it itself
// (liblmdb, libhdf5): OK for a regular file, else the error above. Sets
// *size, when given, to the file's size.
absl::Status CheckRegularFile(const std::string& path, uint64_t* size = nullptr);

// A whole file of text that may also be a pipe (a list file given as
// `<(find ...)` or /dev/stdin): a regular file as ReadSmallFile reads it;
// a FIFO or character device read to its end, an error past `max_bytes`.
// Other kinds (a directory, a socket) are refused.
absl::StatusOr<std::string> ReadStream(const std::string& path, uint64_t max_bytes);

// A file bigger than this is not an input we pack (an image, a file a
// Writer is given by path; it would not fit a record comfortably): bad
// input, not an allocation.
inline constexpr uint64_t kMaxInputFileBytes = uint64_t{1} << 30;

// Reads the whole regular file `path` into `out` (whose capacity is
// reused), as the packer's sources, the converters and shardpack.Writer's
// files= read an input: through OpenRegularFile, so a FIFO or device named
// like an image is refused, not waited on. DataLossError "<path> @0: empty
// file" for zero bytes; InvalidArgumentError past kMaxInputFileBytes; the
// opener's errors (NotFound, PermissionDenied) naming the path.
absl::Status ReadInputFile(const std::string& path, std::vector<uint8_t>* out);

// What a stat mode is, in words, for messages: "a FIFO", "a directory", ...
const char* FileKindName(uint32_t st_mode);

}  // namespace shardpack::common

#endif  // SHARDPACK_COMMON_POSIX_OPEN_H_
