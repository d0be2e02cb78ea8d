#include "reader/storage_handle.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "reader/options.h"

namespace shardpack {

class Storage::Impl {
 public:
  std::shared_ptr<remote::Storage> remote;  // never null
};

Storage::Storage(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Storage::~Storage() = default;

absl::StatusOr<std::shared_ptr<Storage>> Storage::Open(const StorageOptions& options) {
  SP_RETURN_IF_ERROR(reader::CheckPathOption("cache_dir", options.cache_dir));
  SP_ASSIGN_OR_RETURN(std::shared_ptr<remote::Storage> remote,
                      remote::Storage::Make(options.cache_dir, options.cache_bytes));
  return std::shared_ptr<Storage>(new Storage(std::unique_ptr<Impl>(new Impl{std::move(remote)})));
}

std::shared_ptr<remote::Storage> StorageAccess::Remote(const Storage& storage) {
  return storage.impl_->remote;
}

absl::StatusOr<std::shared_ptr<remote::Storage>> reader::ResolveStorage(
    const std::shared_ptr<Storage>& shared, const std::string& cache_dir, int64_t cache_bytes) {
  if (shared == nullptr) return remote::Storage::Make(cache_dir, cache_bytes);
  if (!cache_dir.empty() || cache_bytes != -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "storage is set, so cache_dir and cache_bytes must be left at their defaults (\"\" and "
        "-1), not '", common::Excerpt(cache_dir), "' and ", cache_bytes,
        ": a shared Storage carries its own cache (StorageOptions)"));
  }
  return StorageAccess::Remote(*shared);
}

}  // namespace shardpack
