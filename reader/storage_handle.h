// The public Storage handle (shardpack/storage.h) over the remote::Storage
// it holds, and the one place a reader's or a record reader's storage is
// chosen: the handle its options share, else one of its own made from its
// cache options.
#ifndef SHARDPACK_READER_STORAGE_HANDLE_H_
#define SHARDPACK_READER_STORAGE_HANDLE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "remote/storage.h"
#include "shardpack/storage.h"

namespace shardpack {

// Storage's friend: the readers' way to the remote::Storage inside.
class StorageAccess {
 public:
  // Never null; shared with every reader given the handle.
  static std::shared_ptr<remote::Storage> Remote(const Storage& storage);
};

namespace reader {

// `shared` when it is set: then `cache_dir` and `cache_bytes` must be left
// at their defaults ("" and -1; the handle carries its own), else an
// InvalidArgumentError naming storage, cache_dir and cache_bytes. Unset: a
// Storage of its own made from them (remote::Storage::Make). `cache_dir`
// has been checked as a path option (CheckPathOption).
absl::StatusOr<std::shared_ptr<remote::Storage>> ResolveStorage(
    const std::shared_ptr<Storage>& shared, const std::string& cache_dir, int64_t cache_bytes);

}  // namespace reader
}  // namespace shardpack

#endif  // SHARDPACK_READER_STORAGE_HANDLE_H_
