#include "reader/dataset_units.h"

#include <filesystem>
#include <optional>

#include "absl/strings/str_cat.h"
#include "backends/shard_gate.h"
#include "backends/store.h"
#include "reader/backend_sources.h"
#include "reader/shard_source.h"
#include "shardpack/dataset.h"
#include "shardpack/status.h"

namespace shardpack::internal {

namespace fs = std::filesystem;

namespace {

// A dataset that is one file: an LMDB or HDF5 shard of ours, or a plain
// h5py file (images + labels), as its one shard, admitted through the gate
// (checked against the entry of a manifest.json beside it, else vetted); a
// `.shard` file gets a manifest with no shards (its source reads the
// shard's index).
absl::Status OpenLoneFile(const std::string& path, StreamDataset* d) {
  SP_ASSIGN_OR_RETURN(std::optional<Backend> kind, backends::SniffShardFile(path));
  if (!kind.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a dataset directory, nor a .shard, LMDB or HDF5 file"));
  }
  if (*kind != Backend::kShard) {
    SP_ASSIGN_OR_RETURN(backends::LoneShard lone, backends::OpenLoneShard(path, *kind));
    d->manifest = std::move(lone.manifest);
    d->checksummed = lone.entry.has_value();
  }
  d->paths.push_back(path);
  return absl::OkStatus();
}

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
  StreamDataset d;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    SP_ASSIGN_OR_RETURN(d.manifest, ReadManifest(path));
    d.checksummed = true;
    for (const ShardEntry& s : d.manifest.shards) d.paths.push_back((fs::path(path) / s.path).string());
  } else {
    SP_RETURN_IF_ERROR(OpenLoneFile(path, &d));
    d.schema_known = d.manifest.backend != Backend::kShard;
  }
  SP_ASSIGN_OR_RETURN(d.source, OpenSource(d, engine));
  for (const ReadUnit& u : d.units()) d.records += u.records;
  return d;
}

}  // namespace shardpack::internal
