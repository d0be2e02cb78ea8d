// The LMDB and HDF5 backends of the reader (the `.shard` one is in
// shard_source.h).
//
// LMDB: a unit is a run of consecutive keys of one shard, about
// kTargetUnitBytes of values, collected by one cursor walk over the map (the
// values are not copied: the unit's buffer holds only a table of views, and
// the environment's read transaction keeps them valid). HDF5: a unit is a run
// of rows (whole chunks when the file has the writer's default chunking),
// read with one H5Dread per dataset into the unit's buffer. Both load synchronously on the loader thread.
#ifndef SHARDPACK_READER_BACKEND_SOURCES_H_
#define SHARDPACK_READER_BACKEND_SOURCES_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "reader/unit_source.h"
#include "remote/storage.h"
#include "shardpack/manifest.h"

namespace shardpack::reader {

// Bytes of records a unit of these backends aims at (as a `.shard` block).
inline constexpr uint64_t kTargetUnitBytes = uint64_t{4} << 20;

// `paths` are the shards of `manifest` (one per ShardEntry). Units are cut
// from the manifest's record counts and sizes; each shard is opened when the
// loader first needs it, through backends/shard_gate.h: checked against its
// entry's size and CRC-32C when `checksummed` (the manifest was read from a
// manifest.json), vetted otherwise. Its record count is then checked against
// the manifest; a shard that fails fails each of its units with that error.
// A URL path is opened through `storage` (its checked local copy), which the
// source holds: the loader thread opens a shard long after this returns.
absl::StatusOr<std::unique_ptr<UnitSource>> OpenLmdbSource(
    const std::vector<std::string>& paths, const Manifest& manifest, bool checksummed,
    std::shared_ptr<remote::Storage> storage);
absl::StatusOr<std::unique_ptr<UnitSource>> OpenHdf5Source(
    const std::vector<std::string>& paths, const Manifest& manifest, bool checksummed,
    std::shared_ptr<remote::Storage> storage);

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_BACKEND_SOURCES_H_
