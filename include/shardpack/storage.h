// Where datasets in an object store are read through, as a handle that
// readers share: the local cache of checked blocks (docs/reader.md,
// "Datasets in an object store") and the datasets opened through it.
//
//   SP_ASSIGN_OR_RETURN(std::shared_ptr<Storage> storage,
//                       Storage::Open({.cache_dir = "/mnt/nvme/shardpack-cache"}));
//   ReaderOptions train;
//   train.path = "s3://bucket/imagenet-train/";
//   train.storage = storage;
//   RecordReaderOptions lookup;
//   lookup.storage = storage;  // RecordReader::Open("s3://bucket/imagenet-train/", lookup)
//
// Readers that share a Storage open each dataset once: its manifest is
// fetched once, its cache entries are held once, and every reader's
// ReaderStats::remote counts what all of them did through it. A reader
// given none makes its own from its options' cache_dir and cache_bytes, as
// it always did; readers that each make their own share only the cache's
// folder and budget (a block one kept is a hit for the other), nothing else.
//
// Thread-safe: readers on any threads may share one. Owned jointly by the
// shared_ptrs: the datasets it opened stay open (their whole-object cache
// entries held) while any reader or any copy of the handle lives. C++ only:
// the Python module makes one per shardpack.Reader and shardpack.Dataset.
#ifndef SHARDPACK_STORAGE_H_
#define SHARDPACK_STORAGE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace shardpack {

struct StorageOptions {
  // The cache's folder, on disk or tmpfs; "" (the default):
  // SHARDPACK_CACHE_DIR, else ~/.cache/shardpack.
  std::string cache_dir;
  // The cache's budget in bytes, shared by the processes of a node that use
  // the folder; -1 (the default): SHARDPACK_CACHE_BYTES, else 16 GiB. 0:
  // nothing is kept.
  int64_t cache_bytes = -1;
};

class Storage {
 public:
  // A Storage with these cache options. A cache_dir that is no path (a NUL
  // in it, longer than PATH_MAX, spelled like a URL) is an
  // InvalidArgumentError naming cache_dir. The environment is read when the
  // first dataset in an object store is opened, so that a bad variable
  // never fails a local dataset; nothing is opened or fetched here.
  static absl::StatusOr<std::shared_ptr<Storage>> Open(const StorageOptions& options = {});

  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

 private:
  class Impl;
  friend class StorageAccess;  // the readers' way in (reader/storage_handle.h)
  explicit Storage(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardpack

#endif  // SHARDPACK_STORAGE_H_
