// Datasets: a directory holding manifest.json and its shards.
//
// DatasetWriter fills a directory shard by shard and writes the manifest
// last. It writes `.shard` files itself; the LMDB and HDF5 backends (library
// shardpack::backends) plug in through a ShardSinkFactory: call
// UseBackend(&options, backend) of shardpack/backends.h before
// DatasetWriter::Create.
#ifndef SHARDPACK_DATASET_H_
#define SHARDPACK_DATASET_H_

#include <cstdint>
#include <functional>
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

// The file extension of a backend's shards: ".shard", ".lmdb" or ".h5".
std::string_view ShardExtension(Backend backend);

// The file name of shard `index`: "<prefix>-<index, 5 digits><extension>",
// e.g. "shard-00003.shard" or "shard-00003.lmdb".
std::string ShardFileName(std::string_view prefix, size_t index,
                          Backend backend = Backend::kShard);

// Shard files of datasets the tools write start with this.
inline constexpr char kDefaultShardPrefix[] = "shard";

struct DatasetWriterOptions;

// One shard of another backend being written. Not thread-safe. The shard is
// written under a temporary name and appears at its path only in Commit();
// destroying an uncommitted sink removes what it wrote.
class ShardSink {
 public:
  virtual ~ShardSink() = default;
  // Copies the record into the shard (the views need not outlive the call).
  virtual absl::Status Add(const Record& record) = 0;
  virtual uint64_t records() const = 0;
  // Bytes of records added so far (the size limit counts these).
  virtual uint64_t bytes() const = 0;
  // Completes the shard, makes it durable and renames it into place. The
  // entry's path is left empty for the caller; records, bytes (the file
  // size) and crc32c (of the whole file) are filled in. Call once.
  virtual absl::StatusOr<ShardEntry> Commit() = 0;
};

// Opens the sink of a new shard at `path` (its final path).
using ShardSinkFactory = std::function<absl::StatusOr<std::unique_ptr<ShardSink>>(
    const std::string& path, const DatasetWriterOptions& options)>;

struct DatasetWriterOptions {
  // Existing, empty directory that receives the shards and manifest.json.
  std::string directory;
  // Shard file names are "<prefix>-<5-digit index><extension>". Default
  // "shard".
  std::string shard_prefix = kDefaultShardPrefix;
  // The backend of the shards. Default kShard. Any other needs
  // `open_shard`, which UseBackend (shardpack/backends.h) fills in.
  Backend backend = Backend::kShard;
  ShardSinkFactory open_shard;
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
  // Write the record table (docs/format.md section 16: every record's labels
  // and key, and a hash table of keys) as records.idx and list it in the
  // manifest. It costs about 8 bytes per label field, 8 per record and the
  // key's bytes of memory while writing, plus 12 to 24 bytes per record
  // (8 per hash slot) during Finish(). Default true.
  bool record_table = true;
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

  // Closes the current shard now, if one is open, so that the next record
  // starts a new one (convert keeps its input's shard boundaries this way).
  absl::Status FinishShard();

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
