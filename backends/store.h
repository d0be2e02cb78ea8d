// The backends library's front door: writing a dataset in any backend, and
// (record_scan.h) reading the records of a shard of any backend.
//
//   DatasetWriterOptions o = ...;
//   backends::UseBackend(&o, Backend::kLmdb);
//   SP_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> writer, DatasetWriter::Create(o));
//
// The per-backend readers are in lmdb_store.h and hdf5_store.h; the one
// record scan over any backend in record_scan.h.
#ifndef SHARDPACK_BACKENDS_STORE_H_
#define SHARDPACK_BACKENDS_STORE_H_

#include "backends/hdf5_store.h"
#include "backends/lmdb_store.h"
#include "backends/record_scan.h"
#include "shardpack/dataset.h"
#include "shardpack/record.h"

namespace shardpack::backends {

struct BackendOptions {
  LmdbWriterOptions lmdb;
  Hdf5WriterOptions hdf5;
};

// Sets options->backend and, for LMDB and HDF5, options->open_shard.
void UseBackend(DatasetWriterOptions* options, Backend backend,
                const BackendOptions& backend_options = {});

}  // namespace shardpack::backends

#endif  // SHARDPACK_BACKENDS_STORE_H_
