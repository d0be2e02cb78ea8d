// The backends library's front door: writing a dataset in any backend and
// reading the records of a shard of any backend.
//
//   DatasetWriterOptions o = ...;
//   backends::UseBackend(&o, Backend::kLmdb);
//   SP_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> writer, DatasetWriter::Create(o));
//
// The per-backend readers are in lmdb_store.h and hdf5_store.h.
#ifndef SHARDPACK_BACKENDS_STORE_H_
#define SHARDPACK_BACKENDS_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/hdf5_store.h"
#include "backends/lmdb_store.h"
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

// Visits one record: its index in the shard and the record, whose views are
// valid during the call only.
using ShardRecordVisitor = absl::FunctionRef<absl::Status(uint64_t, const Record&)>;

// The records of one shard of any backend, in order, read a block (.shard),
// a cursor walk (LMDB) or a chunk of rows (HDF5) at a time.
// Thread-compatible.
class ShardScanner {
 public:
  // Errors name the path: NotFoundError when missing, DataLossError when
  // damaged or of another kind.
  static absl::StatusOr<std::unique_ptr<ShardScanner>> Open(const std::string& path,
                                                            Backend backend);
  virtual ~ShardScanner() = default;
  virtual uint64_t size() const = 0;
  // How the file's contents were recognized, for `sharddump info`: HDF5's
  // Hdf5ShardReader::LayoutText(); empty for backends of one layout.
  virtual std::string LayoutText() const { return {}; }
  // Visits records [begin, end) in order. Damage is a DataLossError naming
  // the path and the record. Precondition: begin <= end <= size().
  virtual absl::Status Scan(uint64_t begin, uint64_t end, ShardRecordVisitor visit) = 0;
};

}  // namespace shardpack::backends

#endif  // SHARDPACK_BACKENDS_STORE_H_
