#include "reader/dataset_units.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "format/coding.h"
#include "reader/io_engine.h"
#include "reader/shard_source.h"
#include "shardpack/dataset.h"
#include "shardpack/status.h"

namespace shardpack::internal {

namespace fs = std::filesystem;

uint64_t UnitBytes(const BlockInfo& block) {
  return AlignUp(block.stored_size, kIoAlignment) + (block.compressed() ? block.raw_size : 0);
}

absl::StatusOr<StreamDataset> OpenStreamDataset(const std::string& path, IoEngine engine) {
  StreamDataset d;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    SP_ASSIGN_OR_RETURN(d.manifest, ReadManifest(path));
    for (const ShardEntry& s : d.manifest.shards) d.paths.push_back((fs::path(path) / s.path).string());
  } else {
    d.paths.push_back(path);
  }
  if (d.manifest.backend != Backend::kShard) {
    return absl::UnimplementedError(absl::StrCat(
        path, ": reading ", std::string(BackendName(d.manifest.backend)),
        " datasets is not supported yet"));
  }
  SP_ASSIGN_OR_RETURN(d.source, OpenShardSource(d.paths, d.manifest, engine));
  for (const ReadUnit& u : d.units()) d.records += u.records;
  return d;
}

}  // namespace shardpack::internal
