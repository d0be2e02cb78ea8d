#include "reader/dataset_units.h"

#include <utility>

#include "backends/open_path.h"
#include "reader/backend_sources.h"
#include "reader/shard_source.h"
#include "shardpack/dataset.h"
#include "format/status_macros.h"

namespace shardpack::internal {

namespace {

absl::StatusOr<std::unique_ptr<UnitSource>> OpenSource(const StreamDataset& d, IoEngine engine) {
  switch (d.manifest.backend) {
    case Backend::kShard:
      return OpenShardSource(d.paths, d.manifest, engine);
    case Backend::kLmdb:
      return OpenLmdbSource(d.paths, d.manifest, d.checksummed);
    case Backend::kHdf5:
      return OpenHdf5Source(d.paths, d.manifest, d.checksummed);
  }
  return absl::InvalidArgumentError("unknown backend");
}

}  // namespace

absl::StatusOr<StreamDataset> OpenStreamDataset(const std::string& path, IoEngine engine) {
  // What the path names is resolved where sharddump resolves it; a lone
  // `.shard` file keeps no shards in its manifest (its source reads the index).
  SP_ASSIGN_OR_RETURN(backends::NamedPath named, backends::OpenNamedPath(path));
  StreamDataset d;
  d.manifest = std::move(named.manifest);
  d.paths = std::move(named.shard_paths);
  d.checksummed = named.checksummed();
  d.schema_known = named.schema_known();
  SP_ASSIGN_OR_RETURN(d.source, OpenSource(d, engine));
  for (const ReadUnit& u : d.units()) d.records += u.records;
  return d;
}

}  // namespace shardpack::internal
