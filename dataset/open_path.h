// The one opener of what a user named: the path given to the reader
// (ReaderOptions::path), to sharddump (PATH) and to shardpack convert. It
// says what the path is; the callers differ only in what they do with it.
//
// A path may name (docs/cli.md, "What a path may name"):
//  - a dataset in an object store: `s3://bucket/prefix/` or
//    `https://host/path/` (or its manifest.json), read through the local
//    cache of the remote::Storage it is opened with;
//  - a directory holding manifest.json: the dataset, of any backend;
//  - a file named manifest.json: the dataset in its directory;
//  - one shard file of any backend (a "lone shard"), told by its first bytes,
//    never by its name: the `.shard` magic, the HDF5 signature, or an LMDB
//    meta page (an LMDB file of ours, or an environment's data.mdb). A file
//    cut short inside the `.shard` magic is still a `.shard` file (damaged,
//    which its opener reports). A plain h5py file with `images` and `labels`
//    is an HDF5 shard.
// Anything else is an error naming the path and what was expected: a
// missing path (NotFoundError), a FIFO, device or socket
// (FailedPreconditionError, never opened for reading, so never a hang), an
// empty file or one with no magic of ours (InvalidArgumentError), a
// directory without manifest.json (NotFoundError), a directory holding an
// LMDB environment but no manifest (UnimplementedError). Symlinks are
// followed.
#ifndef SHARDPACK_DATASET_OPEN_PATH_H_
#define SHARDPACK_DATASET_OPEN_PATH_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "remote/storage.h"
#include "shardpack/manifest.h"

namespace shardpack::dataset {

enum class PathKind {
  kDataset,    // a dataset directory, or its manifest.json
  kLoneShard,  // one shard file of any backend, without its dataset
};

// What a path names, resolved.
struct NamedPath {
  std::string path;  // as the user gave it
  PathKind kind = PathKind::kDataset;
  // The dataset directory; for a lone shard, the directory holding it ("."
  // for a bare file name).
  std::string directory;
  // kDataset: the manifest.json read. A lone LMDB or HDF5 file: its own
  // metadata (made up from the shapes for a plain h5py file) as a dataset of
  // one shard. A lone `.shard` file: backend kShard and no shards, no
  // schema (the shard's index, which its user loads, gives its records).
  Manifest manifest;
  // A lone LMDB or HDF5 file: the entry of a manifest.json beside it that
  // lists it, when there is one (it was checked against that entry).
  std::optional<ShardEntry> lone_entry;
  // The file of each shard: the directory joined with each manifest entry's
  // path, or the lone file.
  std::vector<std::string> shard_paths;
  // What its shard paths are opened through (never null): a dataset in an
  // object store (a URL) had its manifest fetched by it, its shard paths are
  // URLs of that dataset and read through this Storage's cache.
  std::shared_ptr<remote::Storage> storage;

  Backend backend() const { return manifest.backend; }
  bool has_manifest() const { return kind == PathKind::kDataset; }
  // The schema is known: from a manifest, or a lone LMDB or HDF5 file's own
  // metadata (a lone `.shard` file carries none).
  bool schema_known() const { return has_manifest() || manifest.backend != Backend::kShard; }
  // Shard sizes and CRC-32Cs are known (a manifest.json's): LMDB and HDF5
  // shards are checked against them, else vetted (backends/shard_gate.h).
  bool checksummed() const { return has_manifest() || lone_entry.has_value(); }
  // The size and CRC-32C shard k must have before liblmdb or libhdf5 sees it
  // (backends/shard_gate.h): the manifest's entry, or a lone file's entry
  // beside it. Nullopt when nobody checksummed it (the gate then vets it).
  std::optional<ShardEntry> ExpectedEntry(size_t k) const;
};

// Resolves `path` as above. A dataset's manifest is read (its shards are not
// opened); a lone LMDB or HDF5 file is admitted through the gate and its
// metadata read (backends::OpenLoneShard); a lone `.shard` file is only
// sniffed. Errors are one line naming the path. A URL is opened through
// `storage`; none: one made from the environment (remote::Storage::Make).
absl::StatusOr<NamedPath> OpenNamedPath(const std::string& path,
                                        std::shared_ptr<remote::Storage> storage = nullptr);

// What a regular file's first bytes say it is, read through the checked
// opener (common/posix_io.h): refuses non-regular files.
enum class FileMagic { kEmpty, kShard, kLmdb, kHdf5, kUnknown };
absl::StatusOr<FileMagic> SniffFile(const std::string& path);

}  // namespace shardpack::dataset

#endif  // SHARDPACK_DATASET_OPEN_PATH_H_
