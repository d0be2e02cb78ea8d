#include "dataset/open_path.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/shard_gate.h"
#include "common/posix_io.h"
#include "common/redact.h"
#include "common/status_macros.h"
#include "format/shard_layout.h"
#include "shardpack/dataset.h"

namespace shardpack::dataset {
namespace {

namespace fs = std::filesystem;

using ::shardpack::format::kShardMagic;  // format/shard_layout.h, the one definition
// The HDF5 specification's format signature, at offset 0 of a file.
constexpr std::array<uint8_t, 8> kHdf5Magic = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
// An LMDB file starts with a meta page: a 16-byte page header, then the
// meta's magic 0xBEEFC0DE, stored in the machine's byte order (mdb.c).
constexpr uint64_t kLmdbMagicOffset = 16;
constexpr uint32_t kLmdbMagic = 0xBEEFC0DE;
// An LMDB environment opened without MDB_NOSUBDIR is a directory holding
// this; ours are single files.
constexpr char kLmdbDataFile[] = "data.mdb";

bool Exists(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

std::string ParentOf(const std::string& path) {
  std::string dir = fs::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

absl::StatusOr<NamedPath> OpenDatasetDirectory(const std::string& path,
                                               const std::string& directory) {
  NamedPath named;
  named.path = path;
  named.kind = PathKind::kDataset;
  named.directory = directory;
  if (!Exists(fs::path(directory) / kManifestFileName) &&
      Exists(fs::path(directory) / kLmdbDataFile)) {
    return absl::UnimplementedError(
        absl::StrCat(directory,
                     ": an LMDB environment directory without a shardpack manifest "
                     "(shardpack's LMDB shards are single files with metadata)"));
  }
  SP_ASSIGN_OR_RETURN(named.manifest, ReadManifest(directory));
  for (const ShardEntry& s : named.manifest.shards) {
    named.shard_paths.push_back((fs::path(directory) / s.path).string());
  }
  return named;
}

absl::StatusOr<NamedPath> OpenLoneFile(const std::string& path, FileMagic magic) {
  NamedPath named;
  named.path = path;
  named.kind = PathKind::kLoneShard;
  named.directory = ParentOf(path);
  named.shard_paths.push_back(path);
  switch (magic) {
    case FileMagic::kEmpty:
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": empty file, not a dataset or shard"));
    case FileMagic::kUnknown:
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": not a dataset or shard (no .shard, LMDB or HDF5 magic; a dataset is a "
                "directory holding manifest.json)"));
    case FileMagic::kShard:
      named.manifest.backend = Backend::kShard;
      return named;
    case FileMagic::kLmdb:
    case FileMagic::kHdf5: {
      const Backend backend = magic == FileMagic::kLmdb ? Backend::kLmdb : Backend::kHdf5;
      SP_ASSIGN_OR_RETURN(backends::LoneShard lone, backends::OpenLoneShard(path, backend));
      named.manifest = std::move(lone.manifest);
      named.lone_entry = std::move(lone.entry);
      return named;
    }
  }
  return absl::InternalError(absl::StrCat(path, ": unknown file kind"));
}

}  // namespace

std::optional<ShardEntry> NamedPath::ExpectedEntry(size_t k) const {
  if (has_manifest()) return manifest.shards[k];
  return lone_entry;
}

absl::StatusOr<FileMagic> SniffFile(const std::string& path) {
  SP_ASSIGN_OR_RETURN(std::unique_ptr<common::PosixFile> file, common::PosixFile::Open(path));
  if (file->size() == 0) return FileMagic::kEmpty;
  std::array<uint8_t, kLmdbMagicOffset + sizeof(kLmdbMagic)> head{};
  const size_t n = std::min<uint64_t>(file->size(), head.size());
  SP_RETURN_IF_ERROR(file->ReadExact(0, {head.data(), n}));
  // A shard cut short inside its magic is still a shard (a damaged one).
  if (std::memcmp(head.data(), kShardMagic.data(), std::min(n, kShardMagic.size())) == 0) {
    return FileMagic::kShard;
  }
  if (n >= kHdf5Magic.size() &&
      std::memcmp(head.data(), kHdf5Magic.data(), kHdf5Magic.size()) == 0) {
    return FileMagic::kHdf5;
  }
  if (n == head.size()) {
    uint32_t magic;
    std::memcpy(&magic, head.data() + kLmdbMagicOffset, sizeof(magic));
    if (magic == kLmdbMagic) return FileMagic::kLmdb;
  }
  return FileMagic::kUnknown;
}

namespace {

// A dataset in an object store: its manifest fetched, its shards URLs.
absl::StatusOr<NamedPath> OpenDatasetUrl(const std::string& url, remote::Storage& storage) {
  NamedPath named;
  named.path = url;
  SP_ASSIGN_OR_RETURN(std::shared_ptr<remote::RemoteDataset> remote,
                      storage.OpenRemoteDataset(url));
  named.directory = remote->url();
  named.directory.pop_back();  // the trailing '/'
  named.manifest = remote->manifest();
  for (const ShardEntry& s : named.manifest.shards) {
    named.shard_paths.push_back(remote->url() + s.path);
  }
  return named;
}

absl::StatusOr<NamedPath> OpenLocalPath(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found) {
    return absl::NotFoundError(
        absl::StrCat(common::RedactUrl(path), ": no such file or directory"));
  }
  if (fs::is_directory(status)) return OpenDatasetDirectory(path, path);
  // Anything else goes through the checked opener, which names a FIFO, a
  // device or an unreadable file for what it is, without blocking on it.
  SP_ASSIGN_OR_RETURN(FileMagic magic, SniffFile(path));
  if (fs::path(path).filename() == kManifestFileName) {
    return OpenDatasetDirectory(path, ParentOf(path));
  }
  return OpenLoneFile(path, magic);
}

}  // namespace

absl::StatusOr<NamedPath> OpenNamedPath(const std::string& path,
                                        std::shared_ptr<remote::Storage> storage) {
  if (storage == nullptr) {
    SP_ASSIGN_OR_RETURN(storage, remote::Storage::Make());
  }
  absl::StatusOr<NamedPath> named =
      remote::IsUrl(path) ? OpenDatasetUrl(path, *storage) : OpenLocalPath(path);
  if (named.ok()) named->storage = std::move(storage);
  return named;
}

}  // namespace shardpack::dataset
