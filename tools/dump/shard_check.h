// What `sharddump verify` checks in one shard's bytes, per backend: a
// `.shard` file against the format's own CRC-32Cs (VerifyShard), an LMDB or
// HDF5 file, which carry none, against its manifest entry's size and
// CRC-32C plus a decode of every record. Each problem is a Damage
// (shardpack/damage.h). Records themselves are read through the one record
// scan, backends/record_scan.h.
#ifndef SHARDPACK_TOOLS_DUMP_SHARD_CHECK_H_
#define SHARDPACK_TOOLS_DUMP_SHARD_CHECK_H_

#include <optional>
#include <string>

#include "shardpack/manifest.h"
#include "tools/dump/opened_dataset.h"

namespace shardpack::dump {

// VerifyShard over the mapped file (each record checked against `schema`
// when given, in the same pass: format/record_check.h), plus the index's
// record count. A URL is read through `storage` (a dataset's,
// dataset::NamedPath::storage). `on_record`, when given, sees each record
// that passed its checks in that pass (VerifyShard's overload).
ShardCheck CheckShardFile(const std::string& path, const Schema* schema,
                          remote::Storage* storage, const RecordVisitor* on_record = nullptr);

// What `sharddump verify` checks in an LMDB or HDF5 shard, which carry no
// checksums of their own: the size and CRC-32C of the whole file (compared
// with `expected`, the manifest's entry, when given) and that every record
// decodes (an LMDB value is a valid record encoding under its 8-byte index
// key; an HDF5 row's offsets, image info and shape agree). A file that does
// not match its entry is not opened: liblmdb and libhdf5 trust their files,
// and damaged ones can crash them. One without an entry is vetted first.
// With `schema`, every record is checked against it in the same scan
// (format/record_check.h: with fields, its own CRC-32C and content too). A URL
// is checked in its local copy, made through `storage`.
ShardCheck CheckBackendShardFile(const std::string& path, Backend backend,
                                 const std::optional<ShardEntry>& expected,
                                 const Schema* schema, remote::Storage* storage);

}  // namespace shardpack::dump

#endif  // SHARDPACK_TOOLS_DUMP_SHARD_CHECK_H_
