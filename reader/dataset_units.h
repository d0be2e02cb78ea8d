// A dataset opened for streaming: its manifest and the source of its read
// units, whatever the backend.
#ifndef SHARDPACK_READER_DATASET_UNITS_H_
#define SHARDPACK_READER_DATASET_UNITS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "reader/epoch_plan.h"
#include "reader/unit_source.h"
#include "shardpack/manifest.h"

namespace shardpack::internal {

struct StreamDataset {
  Manifest manifest;               // read, or made up for a lone shard or file
  std::vector<std::string> paths;  // shard files
  // The manifest's shard sizes and CRC-32Cs are real (read from a
  // manifest.json): LMDB and HDF5 shards are checked against them before
  // they are opened; otherwise they are vetted (backends/shard_gate.h).
  bool checksummed = false;
  std::unique_ptr<UnitSource> source;
  uint64_t records = 0;
  // False for a lone `.shard` file, which carries no schema: its records are
  // then not checked against one.
  bool schema_known = true;

  const std::vector<ReadUnit>& units() const { return source->units(); }
};

// Opens a dataset directory (manifest.json) or a single shard file with the
// chosen I/O engine. `.shard` shards: loads every shard's index and checks
// the record counts against the manifest. LMDB and HDF5 shards of a
// directory are opened (and checked) when first read; a lone one now.
absl::StatusOr<StreamDataset> OpenStreamDataset(const std::string& path, IoEngine engine);

}  // namespace shardpack::internal

#endif  // SHARDPACK_READER_DATASET_UNITS_H_
