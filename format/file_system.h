// What the files a path names are opened through, handed down as a value
// (LevelDB's Env, Arrow's FileSystem): the seam that lets the storage code
// below the dataset layer (backends/: the shard gate, the record scan) read
// a shard of a dataset in an object store without knowing object stores.
//
// remote::Storage (remote/storage.h) is the one implementation: a URL of a
// dataset it opened is read through its cache, a local path is the posix or
// mapped file. backends/ opens local paths itself and asks a FileSystem only
// for a path spelled as a URL (common::IsUrlPath); the dataset layer
// (dataset/open_path.h) says which FileSystem a dataset's paths belong to.
//
// Implementations are thread-safe: one serves every thread of a reader.
#ifndef SHARDPACK_FORMAT_FILE_SYSTEM_H_
#define SHARDPACK_FORMAT_FILE_SYSTEM_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "shardpack/file.h"

namespace shardpack::format {

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // `path` as a file to read (a `.shard` file's bytes): a local path through
  // OpenPosixFile (OpenMappedFile when `mmap`); a URL through this file
  // system's cache (the file keeps what it reads through alive). A URL it
  // cannot serve is a NotFoundError naming it.
  virtual absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenFile(const std::string& path,
                                                                     bool mmap) = 0;
  // `path` as one whole local file, for the libraries that open files by
  // name (liblmdb, libhdf5): `path` itself when it is local; a URL's checked
  // local copy, which stays that file while this FileSystem lives.
  virtual absl::StatusOr<std::string> LocalPath(const std::string& path) = 0;
};

}  // namespace shardpack::format

#endif  // SHARDPACK_FORMAT_FILE_SYSTEM_H_
