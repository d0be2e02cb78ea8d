#include "backends/store.h"

#include "shardpack/backends.h"

namespace shardpack {

void UseBackend(DatasetWriterOptions* options, Backend backend) {
  backends::UseBackend(options, backend, {});
}

}  // namespace shardpack

namespace shardpack::backends {

void UseBackend(DatasetWriterOptions* options, Backend backend,
                const BackendOptions& backend_options) {
  options->backend = backend;
  switch (backend) {
    case Backend::kLmdb:
      options->open_shard = [lmdb = backend_options.lmdb](const std::string& path,
                                                          const DatasetWriterOptions& o) {
        return OpenLmdbShardSink(path, o, lmdb);
      };
      break;
    case Backend::kHdf5:
      options->open_shard = [hdf5 = backend_options.hdf5](const std::string& path,
                                                          const DatasetWriterOptions& o) {
        return OpenHdf5ShardSink(path, o, hdf5);
      };
      break;
    case Backend::kShard:
      options->open_shard = nullptr;
      break;
  }
}

}  // namespace shardpack::backends
