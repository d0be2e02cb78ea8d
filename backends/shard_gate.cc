// The checksum gate and the memory of files vetted (the vetting child is in
// shard_vet.cc).
#include "backends/shard_gate.h"

#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/posix_io.h"
#include "common/posix_open.h"
#include "common/status_macros.h"
#include "common/unique_fd.h"
#include "shardpack/crc32c.h"
#include "shardpack/dataset.h"
#include "shardpack/file.h"

namespace shardpack::backends {
namespace {

namespace fs = std::filesystem;

// Large reads: the CRC runs at several GB/s, so the pass is bound by the
// storage, which wants big requests.
constexpr size_t kDigestChunk = size_t{4} << 20;

// The contents of files this process vetted and found sound, by size and
// CRC-32C: a file opened twice (a lone file's metadata, then its records) is
// vetted once, and one whose bytes changed since is vetted again. Keyed by
// content, not by name or timestamps, which a rewrite can keep. Thread-safe;
// never locked across a fork (the child does not use it).
class VettedFiles {
 public:
  static VettedFiles& Get() {
    static VettedFiles* files = new VettedFiles;
    return *files;
  }
  bool Contains(const FileDigest& d) {
    std::lock_guard<std::mutex> lock(mu_);
    return digests_.count({d.bytes, d.crc32c}) > 0;
  }
  void Add(const FileDigest& d) {
    std::lock_guard<std::mutex> lock(mu_);
    digests_.insert({d.bytes, d.crc32c});
  }

 private:
  std::mutex mu_;
  std::set<std::pair<uint64_t, uint32_t>> digests_;
};

absl::StatusOr<FileDigest> DigestOpenFile(int fd, const std::string& path, uint64_t size) {
  std::vector<uint8_t> buffer(std::min<uint64_t>(size, kDigestChunk) + 1);
  FileDigest d;
  while (true) {
    SP_ASSIGN_OR_RETURN(size_t n, ::shardpack::common::PreadSome(fd, path, d.bytes, buffer));
    if (n == 0) break;
    d.crc32c = Crc32cExtend(d.crc32c, buffer.data(), n);
    d.bytes += n;
  }
  return d;
}

}  // namespace

absl::StatusOr<std::string> LocalPathOf(const std::string& path, format::FileSystem* files) {
  if (!common::IsUrlPath(path)) return path;
  if (files == nullptr) {
    return absl::NotFoundError(absl::StrCat(path, ": no dataset is open at this URL"));
  }
  return files->LocalPath(path);
}

absl::StatusOr<FileDigest> DigestFile(const std::string& path, format::FileSystem* files) {
  // An object of a remote dataset is digested in its local copy.
  SP_ASSIGN_OR_RETURN(const std::string local, LocalPathOf(path, files));
  // The one opener: a FIFO put in place of a shard is refused, not waited on.
  uint64_t size = 0;
  SP_ASSIGN_OR_RETURN(int raw, ::shardpack::common::OpenRegularFile(local, 0, &size));
  ::shardpack::common::UniqueFd fd(raw);
  // Read to the end rather than to the size stat gave: a file that grows
  // while it is read must not match an entry of its old size.
  return DigestOpenFile(fd.get(), path, size);
}

absl::Status CompareDigest(const std::string& path, const FileDigest& actual,
                           const ShardEntry& expected) {
  if (actual.bytes != expected.bytes) {
    return absl::DataLossError(absl::StrCat(
        path, ": ", actual.bytes, " bytes, the manifest says ", expected.bytes,
        " (the file changed since it was packed: not opened)"));
  }
  if (actual.crc32c != expected.crc32c) {
    return absl::DataLossError(absl::StrFormat(
        "%s: CRC-32C of the whole file is %08x, the manifest says %08x (the file changed since "
        "it was packed: not opened)",
        path, actual.crc32c, expected.crc32c));
  }
  return absl::OkStatus();
}

absl::Status AdmitShardFile(const std::string& path, Backend backend,
                            const std::optional<ShardEntry>& expected, const VetOptions& vet,
                            format::FileSystem* files) {
  if (backend == Backend::kShard) return absl::OkStatus();
  SP_ASSIGN_OR_RETURN(FileDigest digest, DigestFile(path, files));
  if (expected.has_value()) return CompareDigest(path, digest, *expected);
  if (VettedFiles::Get().Contains(digest)) return absl::OkStatus();
  SP_ASSIGN_OR_RETURN(const std::string local, LocalPathOf(path, files));
  SP_RETURN_IF_ERROR(VetShardFile(local, backend, vet));
  // Remembered only if the bytes the child read are still the file's.
  SP_ASSIGN_OR_RETURN(FileDigest after, DigestFile(path, files));
  if (after.bytes == digest.bytes && after.crc32c == digest.crc32c) VettedFiles::Get().Add(digest);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LmdbShardReader>> OpenLmdbShard(
    const std::string& path, const std::optional<ShardEntry>& expected,
    format::FileSystem* files) {
  SP_RETURN_IF_ERROR(AdmitShardFile(path, Backend::kLmdb, expected, {}, files));
  SP_ASSIGN_OR_RETURN(const std::string local, LocalPathOf(path, files));
  return LmdbShardReader::Open(local);
}

absl::StatusOr<std::unique_ptr<Hdf5ShardReader>> OpenHdf5Shard(
    const std::string& path, const std::optional<ShardEntry>& expected,
    format::FileSystem* files) {
  SP_RETURN_IF_ERROR(AdmitShardFile(path, Backend::kHdf5, expected, {}, files));
  SP_ASSIGN_OR_RETURN(const std::string local, LocalPathOf(path, files));
  return Hdf5ShardReader::Open(local);
}

absl::StatusOr<std::unique_ptr<ShardScanner>> OpenShardScanner(
    const std::string& path, Backend backend, const std::optional<ShardEntry>& expected,
    const VetOptions& vet, format::FileSystem* files) {
  SP_RETURN_IF_ERROR(AdmitShardFile(path, backend, expected, vet, files));
  return ShardScanner::Open(path, backend, files);
}

absl::StatusOr<LoneShard> OpenLoneShard(const std::string& path, Backend backend) {
  LoneShard lone;
  const fs::path file(path);
  const std::string name = file.filename().string();
  // A manifest beside the file that cannot be read or parsed is no entry:
  // the file is then vetted, which is as safe, only slower.
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  auto manifest = ReadManifest(dir.string());
  if (manifest.ok() && manifest->backend == backend) {
    for (const ShardEntry& e : manifest->shards) {
      if (e.path == name) lone.entry = e;
    }
  }
  SP_RETURN_IF_ERROR(AdmitShardFile(path, backend, lone.entry));
  if (backend == Backend::kLmdb) {
    SP_ASSIGN_OR_RETURN(auto reader, LmdbShardReader::Open(path));
    lone.manifest = reader->meta();
  } else {
    SP_ASSIGN_OR_RETURN(lone.manifest, SynthesizeHdf5Manifest(path));
  }
  ShardEntry& shard = lone.manifest.shards[0];
  shard.path = name;
  std::error_code ec;
  shard.bytes = fs::file_size(path, ec);
  shard.crc32c = lone.entry.has_value() ? lone.entry->crc32c : 0;
  return lone;
}

}  // namespace shardpack::backends
