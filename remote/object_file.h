// One object of an object store read as a file, by byte ranges: a file that
// belongs to no dataset of ours (a WebDataset tar in a bucket), so there is
// no manifest to check it against and no cache to keep it in. What reads
// such a file checks what it reads (datasets/tar_stream.h checks every
// header); the store's errors name the object's URL.
//
// Opening fetches the object's first byte, whose answer says the object's
// size (Content-Range). Each ReadExact is one round of range requests:
// pieces of at most kObjectPieceBytes, fetched in parallel (the store's
// max_in_flight), so a reader that asks for large windows (TarStream's 8
// MiB) streams the object at the store's rate, not one request's.
#ifndef SHARDPACK_REMOTE_OBJECT_FILE_H_
#define SHARDPACK_REMOTE_OBJECT_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "remote/object_store.h"
#include "shardpack/file.h"

namespace shardpack::remote {

inline constexpr uint64_t kObjectPieceBytes = uint64_t{2} << 20;

// `object` of `store` (shared by every file opened from it), read in pieces
// of `piece_bytes`. The errors of the first fetch (NotFound,
// PermissionDenied, DataLoss for an empty object), or DataLossError when the
// store does not say the object's size.
absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenObjectFile(
    std::shared_ptr<ObjectStore> store, std::string object,
    uint64_t piece_bytes = kObjectPieceBytes);

// The object at `url` ("s3://bucket/dir/a.tar", "https://host/dir/a.tar"),
// through a store for its folder configured from the environment (as
// OpenObjectStore's). InvalidArgumentError for a URL that names a folder.
absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenObjectUrl(std::string_view url,
                                                                const FetchOptions& options);

}  // namespace shardpack::remote

#endif  // SHARDPACK_REMOTE_OBJECT_FILE_H_
