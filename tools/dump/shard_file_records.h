// The `.shard` backend of OpenedDataset: records of one `.shard` file read
// block by block from its mapping, each with its file offset and the
// blocks' storage stats, and a check of every byte against the format's own
// CRC-32Cs (VerifyShard). LMDB and HDF5 shards, which carry no offsets or
// checksums of their own, are in lmdb_hdf5_records.h.
#ifndef SHARDPACK_TOOLS_DUMP_SHARD_FILE_RECORDS_H_
#define SHARDPACK_TOOLS_DUMP_SHARD_FILE_RECORDS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "shardpack/file.h"
#include "tools/dump/opened_dataset.h"

namespace shardpack::dump {

// Maps `path` (no copy: the format code reads the mapping), falling back to
// pread where the file cannot be mapped.
absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenShardBytes(const std::string& path);

// Opens a shard and loads its index. Errors name the path (and the byte
// offset for damage).
absl::StatusOr<std::unique_ptr<ShardRecords>> OpenShardFile(const std::string& path);

// VerifyShard over the mapped file (each record checked against `schema`
// when given, in the same pass), plus the index's record count.
ShardCheck CheckShardFile(const std::string& path, const Schema* schema);

}  // namespace shardpack::dump

#endif  // SHARDPACK_TOOLS_DUMP_SHARD_FILE_RECORDS_H_
