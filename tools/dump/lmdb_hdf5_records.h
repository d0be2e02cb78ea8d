// The LMDB and HDF5 backends of OpenedDataset: records of one LMDB or HDF5
// shard file through the gate (backends/shard_gate.h) and
// backends::ShardScanner, with no file offsets of their own, and a check of
// the whole file's size and CRC-32C against its manifest entry plus a decode
// of every record. `.shard` files are in shard_file_records.h.
#ifndef SHARDPACK_TOOLS_DUMP_LMDB_HDF5_RECORDS_H_
#define SHARDPACK_TOOLS_DUMP_LMDB_HDF5_RECORDS_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "shardpack/manifest.h"
#include "tools/dump/opened_dataset.h"

namespace shardpack::dump {

// Opens an LMDB or HDF5 shard through the gate (backends/shard_gate.h):
// checked against `expected`, the manifest's entry, when given, else
// vetted. Records have no file offset of their own
// (RecordLocation::has_offset is false). Errors name the path.
absl::StatusOr<std::unique_ptr<ShardRecords>> OpenBackendShardFile(
    const std::string& path, Backend backend, const std::optional<ShardEntry>& expected);

// What `sharddump verify` checks in an LMDB or HDF5 shard, which carry no
// checksums of their own: the size and CRC-32C of the whole file (compared
// with `expected`, the manifest's entry, when given) and that every record
// decodes (an LMDB value is a valid record encoding under its 8-byte index
// key; an HDF5 row's offsets, image info and shape agree). A file that does
// not match its entry is not opened: liblmdb and libhdf5 trust their files,
// and damaged ones can crash them. One without an entry is vetted first.
// With `schema`, every record is checked against it in the same scan.
ShardCheck CheckBackendShardFile(const std::string& path, Backend backend,
                                 const std::optional<ShardEntry>& expected,
                                 const Schema* schema);

}  // namespace shardpack::dump

#endif  // SHARDPACK_TOOLS_DUMP_LMDB_HDF5_RECORDS_H_
