// The LMDB and HDF5 backends of the reader (the `.shard` one is in
// shard_source.h).
//
// LMDB: a unit is a run of consecutive keys of one shard, about
// kTargetUnitBytes of values, collected by one cursor walk over the map (the
// values are not copied: the unit's buffer holds only a table of views, and
// the environment's read transaction keeps them valid). HDF5: a unit is a run
// of whole chunks of rows, read with one H5Dread per dataset into the unit's
// buffer. Both load synchronously on the loader thread.
#ifndef SHARDPACK_READER_BACKEND_SOURCES_H_
#define SHARDPACK_READER_BACKEND_SOURCES_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "reader/unit_source.h"
#include "shardpack/manifest.h"

namespace shardpack::internal {

// Bytes of records a unit of these backends aims at (as a `.shard` block).
inline constexpr uint64_t kTargetUnitBytes = uint64_t{4} << 20;

// `paths` are the shards of `manifest` (one per ShardEntry); record counts
// are checked against it.
absl::StatusOr<std::unique_ptr<UnitSource>> OpenLmdbSource(const std::vector<std::string>& paths,
                                                           const Manifest& manifest);
absl::StatusOr<std::unique_ptr<UnitSource>> OpenHdf5Source(const std::vector<std::string>& paths,
                                                           const Manifest& manifest);

}  // namespace shardpack::internal

#endif  // SHARDPACK_READER_BACKEND_SOURCES_H_
