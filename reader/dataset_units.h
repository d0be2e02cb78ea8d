// A dataset opened for streaming: its manifest and the source of its read
// units, whatever the backend.
#ifndef SHARDPACK_READER_DATASET_UNITS_H_
#define SHARDPACK_READER_DATASET_UNITS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/open_path.h"
#include "reader/epoch_plan.h"
#include "reader/unit_source.h"
#include "shardpack/manifest.h"

namespace shardpack::reader {

// What the path opened to, kept whole, plus what streaming adds: the source
// of its read units and their record count.
struct StreamDataset {
  // The manifest (read, or made up for a lone shard or file), the shard
  // files, whether their sizes and CRC-32Cs are real (LMDB and HDF5 shards
  // are then checked against them before they are opened; otherwise vetted,
  // backends/shard_gate.h) and whether the schema is known (a lone `.shard`
  // file carries none: its records are then not checked against one).
  backends::NamedPath named;
  std::unique_ptr<UnitSource> source;
  uint64_t records = 0;

  const Manifest& manifest() const { return named.manifest; }
  const std::vector<ReadUnit>& units() const { return source->units(); }
  // The shard file of unit `u`. Precondition: u < units().size().
  const std::string& UnitPath(uint32_t u) const { return named.shard_paths[units()[u].file]; }
  // The shard file holding dataset record `record`.
  // Precondition: record < records.
  const std::string& ShardPathOf(uint64_t record) const;
};

// Opens a dataset directory (manifest.json) or a single shard file with the
// chosen I/O engine. `.shard` shards: loads every shard's index and checks
// the record counts against the manifest. LMDB and HDF5 shards of a
// directory are opened (and checked) when first read; a lone one now.
absl::StatusOr<StreamDataset> OpenStreamDataset(const std::string& path, IoEngine engine);

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_DATASET_UNITS_H_
