// Where a path's bytes come from: the one value that says which cache a
// file is read through (LevelDB's Options::env, Arrow's FileSystemFromUri).
//
// A Storage is made once from the cache options a reader, a record reader
// or a tool was given (cache_dir, cache_bytes, else the environment's
// SHARDPACK_CACHE_*), or is the one inside the public handle that readers
// share (shardpack/storage.h, reader/storage_handle.h), and is handed down
// to everything that opens a shard: a local path is the posix or mapped
// file; a URL is an object of a dataset this Storage opened
// (remote/remote_dataset.h), read through its cache.
// Two Storages with two caches never read through each other's, whatever
// thread opens a file: there is no ambient state, no process-wide list of
// datasets. (The cache's byte budget is shared by every BlockCache of one
// folder in the process: remote/block_cache.h says why.)
//
// It is the format::FileSystem (format/file_system.h) the shard gate and the
// record scan (backends/) read a URL through, without knowing object stores.
//
// Thread-safe. Datasets opened here stay open while the Storage lives.
#ifndef SHARDPACK_REMOTE_STORAGE_H_
#define SHARDPACK_REMOTE_STORAGE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "format/file_system.h"
#include "remote/block_cache.h"
#include "remote/remote_dataset.h"
#include "shardpack/file.h"

namespace shardpack::remote {

class Storage final : public format::FileSystem {
 public:
  // `dir` (when not empty) and `bytes` (when >= 0) in place of the
  // environment's: what ReaderOptions' and RecordReaderOptions' cache_dir
  // and cache_bytes mean. The environment is read when the first URL is
  // opened, so that a bad variable never fails a local dataset. A cache
  // folder that looks like a URL is an InvalidArgumentError.
  static absl::StatusOr<std::shared_ptr<Storage>> Make(const std::string& dir = "",
                                                       int64_t bytes = -1);
  // A Storage with these cache options as they are (tests, tools that
  // resolved them).
  static std::shared_ptr<Storage> WithCache(const CacheOptions& cache);

  // The dataset at `url` (its prefix, or its manifest.json): its manifest
  // fetched, or the one this Storage opened before with the same prefix.
  absl::StatusOr<std::shared_ptr<RemoteDataset>> OpenRemoteDataset(std::string_view url);

  // `path` as a file: a local path through OpenPosixFile (OpenMappedFile
  // when `mmap`); a URL through the dataset of this Storage it belongs to
  // (NotFoundError naming the URL when none is open).
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenFile(const std::string& path,
                                                             bool mmap = false) override;
  // Several at once: one round of requests for the shards of each dataset
  // (RemoteDataset::OpenFiles); local paths one by one.
  absl::StatusOr<std::vector<std::unique_ptr<RandomAccessFile>>> OpenFiles(
      std::span<const std::string> paths);
  // `path` itself when it is not a URL; else the whole local copy of that
  // object (RemoteDataset::LocalCopy), for liblmdb and libhdf5.
  absl::StatusOr<std::string> LocalPath(const std::string& path) override;

  // The cache options URLs are read with (resolved on first use).
  absl::StatusOr<CacheOptions> cache_options();
  // The datasets opened here, for their stats.
  std::vector<std::shared_ptr<RemoteDataset>> datasets() const;

 private:
  Storage(std::string dir, int64_t bytes) : dir_(std::move(dir)), bytes_(bytes) {}
  // The dataset of this Storage whose URL begins `path` (the longest), and
  // the object's name within it.
  absl::StatusOr<std::pair<std::shared_ptr<RemoteDataset>, std::string>> Find(
      std::string_view path) const;

  const std::string dir_;
  const int64_t bytes_;
  mutable std::mutex mu_;
  std::optional<CacheOptions> cache_;                     // guarded by mu_
  std::vector<std::shared_ptr<RemoteDataset>> datasets_;  // guarded by mu_
};

}  // namespace shardpack::remote

#endif  // SHARDPACK_REMOTE_STORAGE_H_
