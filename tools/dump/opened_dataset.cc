#include "tools/dump/opened_dataset.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "format/errors.h"
#include "format/shard_layout.h"
#include "format/posix_open.h"
#include "shardpack/dataset.h"
#include "shardpack/file.h"
#include "shardpack/status.h"
#include "backends/shard_gate.h"
#include "backends/store.h"
#include "tools/dump/backend_shards.h"
#include "tools/dump/shard_backend.h"

namespace shardpack::dump {
namespace {

namespace fs = std::filesystem;

using ::shardpack::internal::kShardMagic;  // the first bytes of a `.shard` file
// An LMDB environment opened without MDB_NOSUBDIR is a directory holding
// this; ours are single files.
constexpr char kLmdbDataFile[] = "data.mdb";

enum class FileKind { kEmpty, kShard, kLmdb, kHdf5, kUnknown };

absl::StatusOr<FileKind> SniffFile(const std::string& path) {
  SP_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, OpenPosixFile(path));
  if (file->size() == 0) return FileKind::kEmpty;
  std::array<uint8_t, 8> head{};
  size_t n = std::min<uint64_t>(file->size(), head.size());
  SP_RETURN_IF_ERROR(file->ReadExact(0, {head.data(), n}));
  // A shard cut short inside its magic is still reported as a shard.
  if (std::memcmp(head.data(), kShardMagic.data(), n) == 0) return FileKind::kShard;
  SP_ASSIGN_OR_RETURN(std::optional<Backend> backend, backends::SniffShardFile(path));
  if (backend == Backend::kHdf5) return FileKind::kHdf5;
  if (backend == Backend::kLmdb) return FileKind::kLmdb;
  return FileKind::kUnknown;
}

bool Exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

}  // namespace

uint64_t RecordLocation::file_offset() const {
  return compressed ? block_offset : block_offset + 32 + in_block;
}

std::string RecordLocation::Text() const {
  if (!has_offset) return "-";
  if (compressed) return absl::StrCat(block_offset, ":", in_block);
  return absl::StrCat(file_offset());
}

absl::StatusOr<OpenedDataset> OpenedDataset::Open(const std::string& path, ShardPolicy policy) {
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file or directory"));
  }
  if (fs::is_directory(status)) return OpenDirectory(path, path, policy);
  if (!fs::is_regular_file(status)) {
    // A FIFO, device or socket: named for what it is ("a FIFO, not a
    // regular file"), as every opener names it.
    SP_RETURN_IF_ERROR(::shardpack::internal::CheckRegularFile(path));
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a dataset directory, manifest or shard file"));
  }
  if (fs::path(path).filename() == kManifestFileName) {
    std::string directory = fs::path(path).parent_path().string();
    return OpenDirectory(path, directory.empty() ? "." : directory, policy);
  }
  SP_ASSIGN_OR_RETURN(FileKind kind, SniffFile(path));
  switch (kind) {
    case FileKind::kEmpty:
      return absl::DataLossError(absl::StrCat(path, ": empty file, not a dataset or shard"));
    case FileKind::kHdf5:
      return OpenLoneBackendShard(path, Backend::kHdf5);
    case FileKind::kLmdb:
      return OpenLoneBackendShard(path, Backend::kLmdb);
    case FileKind::kUnknown:
      return absl::DataLossError(
          absl::StrCat(path,
                       ": not a dataset or shard (no shard magic; a dataset is a directory "
                       "holding manifest.json)"));
    case FileKind::kShard:
      break;
  }
  return OpenLoneShard(path, policy);
}

OpenedDataset OpenedDataset::Lone(const std::string& path) {
  OpenedDataset ds;
  ds.path_ = path;
  ds.directory_ = fs::path(path).parent_path().string();
  if (ds.directory_.empty()) ds.directory_ = ".";
  ds.has_manifest_ = false;
  return ds;
}

absl::StatusOr<OpenedDataset> OpenedDataset::OpenLoneShard(const std::string& path,
                                                           ShardPolicy policy) {
  OpenedDataset ds = Lone(path);
  ShardEntry entry;
  entry.path = fs::path(path).filename().string();
  auto shard = OpenShardFile(path);
  if (shard.ok()) {
    ds.lone_version_ = (*shard)->format_version();
    entry.records = (*shard)->size();
    entry.bytes = (*shard)->file_bytes();
  } else if (policy == ShardPolicy::kCheckLater && absl::IsDataLoss(shard.status())) {
    ds.lone_version_ = "unknown";  // CheckShard says what is wrong
  } else {
    return shard.status();
  }
  ds.manifest_.shards.push_back(std::move(entry));
  ds.CountRecords();
  return ds;
}

absl::StatusOr<OpenedDataset> OpenedDataset::OpenLoneBackendShard(const std::string& path,
                                                                  Backend backend) {
  OpenedDataset ds = Lone(path);
  SP_ASSIGN_OR_RETURN(backends::LoneShard lone, backends::OpenLoneShard(path, backend));
  ds.manifest_ = std::move(lone.manifest);
  ds.lone_entry_ = std::move(lone.entry);
  ds.lone_version_ = absl::StrCat(ds.manifest_.version_major, ".", ds.manifest_.version_minor);
  ds.CountRecords();
  return ds;
}

absl::StatusOr<OpenedDataset> OpenedDataset::OpenDirectory(const std::string& path,
                                                           const std::string& directory,
                                                           ShardPolicy policy) {
  OpenedDataset ds;
  ds.path_ = path;
  ds.directory_ = directory;
  ds.has_manifest_ = true;
  if (!Exists((fs::path(directory) / kManifestFileName).string()) &&
      Exists((fs::path(directory) / kLmdbDataFile).string())) {
    return absl::UnimplementedError(
        absl::StrCat(directory,
                     ": an LMDB environment directory without a shardpack manifest "
                     "(shardpack's LMDB shards are single files with metadata)"));
  }
  SP_ASSIGN_OR_RETURN(ds.manifest_, ReadManifest(directory));
  ds.CountRecords();
  if (policy == ShardPolicy::kRequireAll) {
    for (size_t k = 0; k < ds.num_shards(); ++k) {
      if (!Exists(ds.ShardPath(k))) {
        return absl::NotFoundError(
            absl::StrCat(ds.ShardPath(k), ": missing (shard ", k, " of the dataset's manifest)"));
      }
    }
  }
  return ds;
}

void OpenedDataset::CountRecords() {
  first_record_.assign(1, 0);
  for (const ShardEntry& s : manifest_.shards) {
    first_record_.push_back(first_record_.back() + s.records);
  }
}

std::string OpenedDataset::version() const {
  if (has_manifest_) return absl::StrCat(manifest_.version_major, ".", manifest_.version_minor);
  return lone_version_;
}

std::string OpenedDataset::ShardPath(size_t k) const {
  if (!has_manifest_) return path_;
  return (fs::path(directory_) / manifest_.shards[k].path).string();
}

std::pair<size_t, uint64_t> OpenedDataset::Locate(uint64_t index) const {
  auto it = std::upper_bound(first_record_.begin(), first_record_.end(), index);
  size_t k = static_cast<size_t>(it - first_record_.begin()) - 1;
  return {k, index - first_record_[k]};
}

absl::StatusOr<std::unique_ptr<ShardRecords>> OpenedDataset::OpenShard(
    size_t k, bool require_manifest_count) const {
  const std::string path = ShardPath(k);
  auto shard = manifest_.backend == Backend::kShard
                   ? OpenShardFile(path)
                   : OpenBackendShardFile(path, manifest_.backend, ExpectedEntry(k));
  if (absl::IsNotFound(shard.status())) {
    return absl::NotFoundError(
        absl::StrCat(path, ": missing (shard ", k, " of the dataset's manifest)"));
  }
  SP_RETURN_IF_ERROR(shard.status());
  if (require_manifest_count) {
    SP_RETURN_IF_ERROR(::shardpack::internal::CheckManifestRecords(
        path, (*shard)->size(), manifest_.shards[k].records));
  }
  return shard;
}

ShardCheck OpenedDataset::CheckShard(size_t k) const {
  const std::string path = ShardPath(k);
  if (!Exists(path)) {
    ShardCheck check;
    ShardProblem p;
    p.message = absl::StrCat(path, ": missing (shard ", k, " of the dataset's manifest)");
    check.problems.push_back(std::move(p));
    return check;
  }
  const Schema* schema = has_schema() ? &manifest_.schema : nullptr;
  if (manifest_.backend == Backend::kShard) return CheckShardFile(path, schema);
  return CheckBackendShardFile(path, manifest_.backend, ExpectedEntry(k), schema);
}

std::optional<ShardEntry> OpenedDataset::ExpectedEntry(size_t k) const {
  if (has_manifest_) return manifest_.shards[k];
  return lone_entry_;
}

std::vector<std::string> OpenedDataset::UnlistedShardFiles() const {
  std::vector<std::string> unlisted;
  if (!has_manifest_) return unlisted;
  std::set<std::string> listed;
  for (const ShardEntry& s : manifest_.shards) listed.insert(s.path);
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(directory_, ec)) {
    std::string name = e.path().filename().string();
    if (name.ends_with(ShardExtension(manifest_.backend)) && !listed.count(name) &&
        e.is_regular_file(ec)) {
      unlisted.push_back(name);
    }
  }
  std::sort(unlisted.begin(), unlisted.end());
  return unlisted;
}

}  // namespace shardpack::dump
