// Writing a dataset in another backend than `.shard`: LMDB or HDF5 shards,
// read by the same Reader (link shardpack::backends, which the installed
// package provides).
//
//   DatasetWriterOptions o;
//   o.directory = "out";
//   o.schema = ...;
//   UseBackend(&o, Backend::kLmdb);
//   absl::StatusOr<std::unique_ptr<DatasetWriter>> writer = DatasetWriter::Create(o);
#ifndef SHARDPACK_BACKENDS_H_
#define SHARDPACK_BACKENDS_H_

#include "shardpack/dataset.h"
#include "shardpack/manifest.h"

namespace shardpack {

// Sets options->backend and, for LMDB and HDF5, the shard writer
// (options->open_shard) with the backend's default settings: LMDB one
// record a key, HDF5 chunked datasets (docs/format.md, "LMDB and HDF5").
void UseBackend(DatasetWriterOptions* options, Backend backend);

}  // namespace shardpack

#endif  // SHARDPACK_BACKENDS_H_
