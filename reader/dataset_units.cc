#include "reader/dataset_units.h"

#include <algorithm>
#include <cassert>
#include <iterator>
#include <utility>

#include "backends/open_path.h"
#include "common/status_macros.h"
#include "reader/backend_sources.h"
#include "reader/shard_source.h"
#include "shardpack/dataset.h"

namespace shardpack::reader {

namespace {

absl::StatusOr<std::unique_ptr<UnitSource>> OpenSource(const StreamDataset& d, IoEngine engine) {
  const backends::NamedPath& n = d.named;
  switch (n.backend()) {
    case Backend::kShard:
      return OpenShardSource(n.shard_paths, n.manifest, engine);
    case Backend::kLmdb:
      return OpenLmdbSource(n.shard_paths, n.manifest, n.checksummed());
    case Backend::kHdf5:
      return OpenHdf5Source(n.shard_paths, n.manifest, n.checksummed());
  }
  return absl::InvalidArgumentError("unknown backend");
}

}  // namespace

absl::StatusOr<StreamDataset> OpenStreamDataset(const std::string& path, IoEngine engine) {
  // What the path names is resolved where sharddump resolves it; a lone
  // `.shard` file keeps no shards in its manifest (its source reads the index).
  StreamDataset d;
  SP_ASSIGN_OR_RETURN(d.named, backends::OpenNamedPath(path));
  SP_ASSIGN_OR_RETURN(d.source, OpenSource(d, engine));
  for (const ReadUnit& u : d.units()) d.records += u.records;
  return d;
}

const std::string& StreamDataset::ShardPathOf(uint64_t record) const {
  assert(record < records);
  const std::vector<ReadUnit>& u = units();
  // Units are in record order: the last one starting at or before `record`.
  auto after = std::upper_bound(u.begin(), u.end(), record, [](uint64_t r, const ReadUnit& unit) {
    return r < unit.first_record;
  });
  assert(after != u.begin());
  return named.shard_paths[std::prev(after)->file];
}

}  // namespace shardpack::reader
