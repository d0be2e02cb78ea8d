// A dataset opened for streaming: its manifest and the source of its read
// units, whatever the backend. A mixture's sources and a view's datasets
// are several datasets streamed as one: members whose units, shard files
// and records follow one another.
#ifndef SHARDPACK_READER_DATASET_UNITS_H_
#define SHARDPACK_READER_DATASET_UNITS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dataset/open_path.h"
#include "reader/epoch_plan.h"
#include "reader/unit_source.h"
#include "shardpack/manifest.h"

namespace shardpack::reader {

// How a member's stored labels become a batch's: label_map[field][stored]
// where the field has a map (a view's relabelling), then + offset[field]
// (LabelSpace::kOffset); with `source` >= 0, one more label, the source's
// index (LabelSpace::kSource). Plain: labels as stored.
struct LabelMapping {
  std::vector<std::vector<int64_t>> map;
  std::vector<int64_t> offset;
  int64_t source = -1;
  bool plain() const { return map.empty() && offset.empty() && source < 0; }
};

// One dataset of the stream.
struct StreamMember {
  // The manifest (read, or made up for a lone shard or file), the shard
  // files, whether their sizes and CRC-32Cs are real (LMDB and HDF5 shards
  // are then checked against them before they are opened; otherwise vetted,
  // backends/shard_gate.h) and whether the schema is known (a lone `.shard`
  // file carries none: its records are then not checked against one).
  // Shared by the members a view names one dataset for.
  std::shared_ptr<const dataset::NamedPath> named;
  uint32_t first_unit = 0;     // where its units start among the stream's
  uint64_t first_record = 0;   // where its records start
  uint32_t source = 0;         // the mixture source it belongs to (0 otherwise)
  LabelMapping labels;
};

// What the path (or paths) opened to, kept whole, plus what streaming adds:
// the source of its read units and their record count.
struct StreamDataset {
  std::vector<StreamMember> members;  // at least one
  std::vector<std::string> files;     // every member's shard files: ReadUnit::file
  std::unique_ptr<UnitSource> source;
  uint64_t records = 0;
  std::vector<uint32_t> unit_member;  // per unit, with several members (else empty)
  // A mixture's sources (a view is one): the workers count each batch's
  // samples per source (RingSlot::sources). 0: a plain dataset, not counted.
  uint32_t sources = 0;

  const Manifest& manifest() const { return members[0].named->manifest; }
  const std::vector<ReadUnit>& units() const { return source->units(); }
  // The member unit `u` belongs to. Precondition: u < units().size().
  const StreamMember& MemberOf(uint32_t u) const {
    return members[unit_member.empty() ? 0 : unit_member[u]];
  }
  // The shard file of unit `u`. Precondition: u < units().size().
  const std::string& UnitPath(uint32_t u) const { return files[units()[u].file]; }
  // The shard file holding dataset record `record`.
  // Precondition: record < records.
  const std::string& ShardPathOf(uint64_t record) const;
};

// Opens a dataset directory (manifest.json) or a single shard file with the
// chosen I/O engine. `.shard` shards: loads every shard's index and checks
// the record counts against the manifest. LMDB and HDF5 shards of a
// directory are opened (and checked) when first read; a lone one now.
// URLs are read through `storage` (none: one made from the environment).
// `window_bytes` is what the reader holds of it (ReaderOptions::
// shuffle_bytes), for kAuto's choice (BlockIo::Open).
absl::StatusOr<StreamDataset> OpenStreamDataset(const std::string& path, IoEngine engine,
                                                std::shared_ptr<remote::Storage> storage = nullptr,
                                                uint64_t window_bytes = UINT64_MAX);

// Opens `members` (their `named` filled in) as one stream, in order.
absl::StatusOr<StreamDataset> OpenStreamMembers(std::vector<StreamMember> members,
                                                IoEngine engine,
                                                uint64_t window_bytes = UINT64_MAX);

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_DATASET_UNITS_H_
