#include "tools/dump/opened_dataset.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "backends/shard_gate.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "dataset/open_path.h"
#include "dataset/view.h"
#include "remote/object_store.h"
#include "shardpack/dataset.h"
#include "tools/dump/shard_check.h"

namespace shardpack::dump {
namespace {

namespace fs = std::filesystem;

bool Exists(const std::string& path) {
  // An object of a dataset in an object store: a missing one is an error
  // naming its URL when it is read.
  if (remote::IsUrl(path)) return true;
  std::error_code ec;
  return fs::exists(path, ec);
}

// Shard k of the manifest, at `path`, is not there.
absl::Status MissingShard(const std::string& path, size_t k) {
  return absl::NotFoundError(
      absl::StrCat(path, ": missing (shard ", k, " of the dataset's manifest)"));
}

}  // namespace

absl::StatusOr<OpenedDataset> OpenedDataset::Open(const std::string& path, ShardPolicy policy) {
  OpenedDataset ds;
  absl::StatusOr<dataset::NamedPath> named = dataset::OpenNamedPath(path);
  if (!named.ok() && dataset::IsViewFile(path).value_or(false)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": a view file; this command takes a dataset or shard (ls, show and verify take "
              "views; shardpack convert materializes one)"));
  }
  SP_ASSIGN_OR_RETURN(ds.named_, std::move(named));
  if (!ds.has_manifest()) {
    if (ds.manifest().backend == Backend::kShard) {
      SP_RETURN_IF_ERROR(ds.LoadLoneShardIndex(policy));
    } else {
      ds.lone_version_ =
          absl::StrCat(ds.manifest().version_major, ".", ds.manifest().version_minor);
    }
  }
  ds.CountRecords();
  if (ds.has_manifest() && policy == ShardPolicy::kRequireAll) {
    for (size_t k = 0; k < ds.num_shards(); ++k) {
      if (!Exists(ds.ShardPath(k))) {
        return MissingShard(ds.ShardPath(k), k);
      }
    }
  }
  return ds;
}

// A lone `.shard` file carries no manifest: its one entry comes from its
// index. With kCheckLater a damaged index leaves 0 records, for CheckShard
// to explain.
absl::Status OpenedDataset::LoadLoneShardIndex(ShardPolicy policy) {
  ShardEntry entry;
  entry.path = fs::path(path()).filename().string();
  auto shard = backends::ShardScanner::Open(path(), Backend::kShard);
  if (shard.ok()) {
    lone_version_ = (*shard)->format_version();
    entry.records = (*shard)->size();
    entry.bytes = (*shard)->file_bytes();
  } else if (policy == ShardPolicy::kCheckLater && absl::IsDataLoss(shard.status())) {
    lone_version_ = "unknown";  // CheckShard says what is wrong
  } else {
    return shard.status();
  }
  named_.manifest.shards.push_back(std::move(entry));
  return absl::OkStatus();
}

void OpenedDataset::CountRecords() {
  first_record_.assign(1, 0);
  for (const ShardEntry& s : manifest().shards) {
    first_record_.push_back(first_record_.back() + s.records);
  }
}

std::string OpenedDataset::version() const {
  if (has_manifest()) return absl::StrCat(manifest().version_major, ".", manifest().version_minor);
  return lone_version_;
}

std::pair<size_t, uint64_t> OpenedDataset::Locate(uint64_t index) const {
  auto it = std::upper_bound(first_record_.begin(), first_record_.end(), index);
  size_t k = static_cast<size_t>(it - first_record_.begin()) - 1;
  return {k, index - first_record_[k]};
}

absl::StatusOr<std::unique_ptr<backends::ShardScanner>> OpenedDataset::OpenShard(
    size_t k, bool require_manifest_count) const {
  const std::string path = ShardPath(k);
  // Through the gate for LMDB and HDF5; a `.shard` file passes as it is.
  auto shard = backends::OpenShardScanner(path, manifest().backend, named_.ExpectedEntry(k),
                                          {}, named_.storage.get());
  if (absl::IsNotFound(shard.status())) {
    return MissingShard(path, k);
  }
  SP_RETURN_IF_ERROR(shard.status());
  if (require_manifest_count) {
    SP_RETURN_IF_ERROR(::shardpack::common::CheckManifestRecords(
        path, (*shard)->size(), manifest().shards[k].records));
  }
  return shard;
}

ShardCheck OpenedDataset::CheckShard(size_t k, const RecordVisitor* on_record) const {
  const std::string path = ShardPath(k);
  if (!Exists(path)) {
    ShardCheck check;
    check.problems.push_back({path, 0, std::nullopt, MissingShard(path, k)});
    return check;
  }
  const Schema* schema = has_schema() ? &manifest().schema : nullptr;
  if (manifest().backend == Backend::kShard) {
    ShardCheck check = CheckShardFile(path, schema, named_.storage.get(), on_record);
    check.visited = on_record != nullptr && check.opened;
    return check;
  }
  return CheckBackendShardFile(path, manifest().backend, named_.ExpectedEntry(k), schema,
                               named_.storage.get());
}

std::vector<std::string> OpenedDataset::UnlistedShardFiles() const {
  std::vector<std::string> unlisted;
  if (!has_manifest()) return unlisted;
  std::set<std::string> listed;
  for (const ShardEntry& s : manifest().shards) listed.insert(s.path);
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(directory(), ec)) {
    std::string name = e.path().filename().string();
    if (name.ends_with(ShardExtension(manifest().backend)) && !listed.count(name) &&
        e.is_regular_file(ec)) {
      unlisted.push_back(name);
    }
  }
  std::sort(unlisted.begin(), unlisted.end());
  return unlisted;
}

}  // namespace shardpack::dump
