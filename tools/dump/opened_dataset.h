// What every sharddump command works on: an opened dataset, whatever PATH
// named (a dataset directory, its manifest.json, or one lone shard file),
// as a manifest plus per-shard record access.
//
// The commands never look at a backend's files themselves: they go through
// OpenedDataset::OpenShard (the one record scan, backends/record_scan.h:
// records in order, with where each lives) and OpenedDataset::CheckShard
// (every byte of one shard, tools/dump/shard_check.h).
#ifndef SHARDPACK_TOOLS_DUMP_OPENED_DATASET_H_
#define SHARDPACK_TOOLS_DUMP_OPENED_DATASET_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/record_scan.h"
#include "dataset/open_path.h"
#include "shardpack/damage.h"
#include "shardpack/manifest.h"
#include "shardpack/record.h"
#include "shardpack/shard.h"

namespace shardpack::dump {

// Sees each record of a `.shard` file that passed its checks, during the
// check's own pass: its index in the shard and the record.
using RecordVisitor = absl::FunctionRef<void(uint64_t, const Record&)>;

// What CheckShard found in one shard's bytes (not compared with a manifest).
struct ShardCheck {
  bool opened = false;                 // the file exists and could be opened
  bool index_ok = false;               // the index loaded; `records` is its count
  uint64_t records = 0;                // records the shard's index lists
  uint64_t records_offset = 0;         // file offset where the index stores that count
  uint64_t bytes = 0;                  // size of the file
  bool crc_valid = false;              // every byte was read: file_crc32c is exact
  uint32_t file_crc32c = 0;            // CRC-32C of the whole file
  bool visited = false;                // CheckShard's on_record saw the records
  std::vector<Damage> problems;        // record: index in the shard
};

class OpenedDataset {
 public:
  enum class ShardPolicy {
    // A shard the manifest lists but that is missing, or a lone shard whose
    // index is damaged, fails Open.
    kRequireAll,
    // Open succeeds with missing shards, and with a damaged lone shard (its
    // record count then 0); CheckShard reports what is wrong (verify).
    kCheckLater,
  };

  // Opens PATH: whatever dataset::OpenNamedPath resolves it to (a dataset
  // directory or its manifest.json, of any backend, or one shard file of any
  // backend, a "lone shard": the manifest is made up from its index or
  // metadata and has_manifest() is false). Errors are one line naming PATH.
  static absl::StatusOr<OpenedDataset> Open(const std::string& path, ShardPolicy policy);

  // What PATH opened to (for a lone `.shard` file, with its one shard entry
  // made up from its index).
  const dataset::NamedPath& named() const { return named_; }
  const std::string& path() const { return named_.path; }
  // The dataset directory (for a lone shard, the directory holding it).
  const std::string& directory() const { return named_.directory; }
  bool has_manifest() const { return named_.has_manifest(); }
  // Whether the schema is known: from the manifest, or from a lone LMDB or
  // HDF5 shard's own metadata (a lone `.shard` file has none).
  bool has_schema() const { return named_.schema_known(); }
  const Manifest& manifest() const { return named_.manifest; }
  // The version to show: the manifest's, or for a lone shard the shard
  // format's, as "MAJOR.MINOR".
  std::string version() const;

  size_t num_shards() const { return manifest().shards.size(); }
  uint64_t records() const { return first_record_.back(); }
  // Path of shard k (the directory joined with the manifest's path).
  const std::string& ShardPath(size_t k) const { return named_.shard_paths[k]; }
  // Dataset index of shard k's first record (from the manifest's counts).
  uint64_t first_record(size_t k) const { return first_record_[k]; }
  // The shard holding dataset record `index` and the record's index in it.
  // Precondition: index < records().
  std::pair<size_t, uint64_t> Locate(uint64_t index) const;

  // Opens shard k's records. An error naming the shard when it is missing
  // or its index is damaged, or (with `require_manifest_count`) when the
  // shard holds a different number of records than the manifest says, so
  // that dataset indexes stay right.
  absl::StatusOr<std::unique_ptr<backends::ShardScanner>> OpenShard(
      size_t k, bool require_manifest_count = true) const;

  // Checks every byte of shard k (checksums, index, padding) and, when the
  // schema is known, every record against it, in one pass. A missing or
  // unreadable file is a problem, not an error. `on_record` sees the records
  // of a `.shard` backend's shard in that pass (check_visited then true);
  // other backends' checks ignore it.
  ShardCheck CheckShard(size_t k, const RecordVisitor* on_record = nullptr) const;

  // Files in the dataset directory that look like shards of this backend
  // but that the manifest does not list (names relative to directory()).
  std::vector<std::string> UnlistedShardFiles() const;

 private:
  OpenedDataset() = default;
  absl::Status LoadLoneShardIndex(ShardPolicy policy);
  void CountRecords();

  dataset::NamedPath named_;
  std::string lone_version_;            // the lone shard's format version
  std::vector<uint64_t> first_record_;  // num_shards() + 1 entries
};

}  // namespace shardpack::dump

#endif  // SHARDPACK_TOOLS_DUMP_OPENED_DATASET_H_
