#include "reader/dataset_units.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "common/check.h"
#include "common/status_macros.h"
#include "dataset/open_path.h"
#include "reader/backend_sources.h"
#include "reader/composite_source.h"
#include "reader/shard_source.h"
#include "shardpack/dataset.h"

namespace shardpack::reader {

namespace {

absl::StatusOr<std::unique_ptr<UnitSource>> OpenSource(const dataset::NamedPath& n,
                                                       IoEngine engine, uint64_t window_bytes) {
  switch (n.backend()) {
    case Backend::kShard:
      return OpenShardSource(n.shard_paths, n.manifest, engine, n.storage.get(), window_bytes);
    case Backend::kLmdb:
      return OpenLmdbSource(n.shard_paths, n.manifest, n.checksummed(), n.storage);
    case Backend::kHdf5:
      return OpenHdf5Source(n.shard_paths, n.manifest, n.checksummed(), n.storage);
  }
  return absl::InvalidArgumentError("unknown backend");
}

}  // namespace

absl::StatusOr<StreamDataset> OpenStreamDataset(const std::string& path, IoEngine engine,
                                                std::shared_ptr<remote::Storage> storage,
                                                uint64_t window_bytes) {
  // What the path names is resolved where sharddump resolves it; a lone
  // `.shard` file keeps no shards in its manifest (its source reads the index).
  std::vector<StreamMember> members(1);
  SP_ASSIGN_OR_RETURN(dataset::NamedPath named, dataset::OpenNamedPath(path, std::move(storage)));
  members[0].named = std::make_shared<const dataset::NamedPath>(std::move(named));
  return OpenStreamMembers(std::move(members), engine, window_bytes);
}

absl::StatusOr<StreamDataset> OpenStreamMembers(std::vector<StreamMember> members,
                                                IoEngine engine, uint64_t window_bytes) {
  SP_DCHECK(!members.empty());
  StreamDataset d;
  std::vector<std::unique_ptr<UnitSource>> parts;
  std::vector<uint32_t> files;
  for (StreamMember& m : members) {
    SP_ASSIGN_OR_RETURN(std::unique_ptr<UnitSource> part,
                        OpenSource(*m.named, engine, window_bytes));
    files.push_back(static_cast<uint32_t>(m.named->shard_paths.size()));
    d.files.insert(d.files.end(), m.named->shard_paths.begin(), m.named->shard_paths.end());
    parts.push_back(std::move(part));
  }
  d.members = std::move(members);
  if (parts.size() == 1) {
    d.source = std::move(parts[0]);
  } else {
    auto composite = std::make_unique<CompositeSource>(std::move(parts), files);
    for (uint32_t p = 0; p < d.members.size(); ++p) {
      d.members[p].first_unit = composite->FirstUnit(p);
      const uint32_t end = p + 1 < d.members.size() ? composite->FirstUnit(p + 1)
                                                    : static_cast<uint32_t>(composite->units().size());
      d.members[p].first_record = composite->FirstRecord(p);
      d.unit_member.resize(end, p);
    }
    d.source = std::move(composite);
  }
  for (const ReadUnit& u : d.units()) d.records += u.records;
  return d;
}

const std::string& StreamDataset::ShardPathOf(uint64_t record) const {
  SP_DCHECK(record < records);
  const std::vector<ReadUnit>& u = units();
  // Units are in record order: the last one starting at or before `record`.
  auto after = std::upper_bound(u.begin(), u.end(), record, [](uint64_t r, const ReadUnit& unit) {
    return r < unit.first_record;
  });
  SP_DCHECK(after != u.begin());
  return files[std::prev(after)->file];
}

}  // namespace shardpack::reader
