// Datasets: a directory holding manifest.json and its shards.
//
// DatasetWriter fills a directory shard by shard and writes the manifest
// last; Dataset opens one for reading. Both work on `.shard` datasets; the
// LMDB and HDF5 backends plug in behind the same classes later.
#ifndef SHARDPACK_DATASET_H_
#define SHARDPACK_DATASET_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shardpack/file.h"
#include "shardpack/manifest.h"
#include "shardpack/record.h"
#include "shardpack/shard.h"

namespace shardpack {

// The file name of shard `index`: "<prefix>-<index, 5 digits>.shard".
std::string ShardFileName(std::string_view prefix, size_t index);

// Shard files of datasets the tools write start with this.
inline constexpr char kDefaultShardPrefix[] = "shard";

struct DatasetWriterOptions {
  // Existing, empty directory that receives the shards and manifest.json.
  std::string directory;
  // Shard file names are "<prefix>-<5-digit index>.shard". Default "shard".
  std::string shard_prefix = kDefaultShardPrefix;
  // A shard is closed once it holds this many bytes of records (0: no
  // limit). Default 256 MiB.
  uint64_t shard_max_bytes = uint64_t{256} << 20;
  // A shard is closed once it holds this many records (0: no limit; the
  // default).
  uint64_t shard_max_records = 0;
  ShardWriterOptions shard;
  // Copied into the manifest.
  Schema schema;
  std::string pack_json = "{}";
  // When false, Finish() returns the manifest without writing it, for callers
  // that publish the directory first and write the manifest last (the
  // packer). Default true.
  bool write_manifest = true;
};

// Writes a dataset. Not thread-safe. Every shard is written through an
// AtomicFile; the manifest is written (atomically) by Finish() only, so a
// directory whose writer did not finish holds no manifest and is not a
// dataset.
class DatasetWriter {
 public:
  static absl::StatusOr<std::unique_ptr<DatasetWriter>> Create(
      const DatasetWriterOptions& options);
  ~DatasetWriter();

  // Appends a record to the current shard, starting a new one when a limit
  // is reached.
  absl::Status Add(const Record& record);

  // Closes the last shard, writes manifest.json and returns the manifest.
  absl::StatusOr<Manifest> Finish();

  uint64_t records() const;
  // Bytes of committed shards plus the current shard so far.
  uint64_t bytes() const;

 private:
  class Impl;
  explicit DatasetWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Reads manifest.json of `directory`. NotFoundError naming the path when the
// directory has no manifest ("not a dataset").
absl::StatusOr<Manifest> ReadManifest(const std::string& directory);

// Writes `manifest` as `directory`/manifest.json, atomically.
absl::Status WriteManifest(const std::string& directory, const Manifest& manifest);

}  // namespace shardpack

#endif  // SHARDPACK_DATASET_H_
