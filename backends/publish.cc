#include "backends/publish.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "format/errors.h"
#include "shardpack/crc32c.h"
#include "shardpack/file.h"
#include "shardpack/status.h"

namespace shardpack::backends::internal {
namespace {

namespace fs = std::filesystem;

// Reads the whole file through `fd` for its CRC-32C; the pages are still in
// the page cache from writing it.
absl::StatusOr<uint32_t> FileCrc(int fd, const std::string& path, uint64_t size) {
  std::vector<uint8_t> buffer(std::min<uint64_t>(size, uint64_t{1} << 20) + 1);
  uint32_t crc = 0;
  for (uint64_t offset = 0; offset < size;) {
    ssize_t n = pread(fd, buffer.data(), std::min<uint64_t>(buffer.size(), size - offset),
                      static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("read", path, errno);
    if (n == 0) return absl::DataLossError(absl::StrCat(path, ": shrank while being published"));
    crc = Crc32cExtend(crc, buffer.data(), static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  return crc;
}

absl::Status SyncDirectory(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open directory", dir, errno);
  int rc = fsync(fd);
  int err = errno;
  close(fd);
  if (rc != 0) return ErrnoError("fsync", dir, err);
  return absl::OkStatus();
}

}  // namespace

std::string PartialPath(const std::string& path) { return absl::StrCat(path, ".partial"); }

void RemoveIfExists(const std::string& path) {
  std::error_code ec;
  fs::remove(path, ec);
}

absl::StatusOr<ShardEntry> PublishShardFile(const std::string& partial, const std::string& path,
                                            uint64_t records) {
  int fd = open(partial.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open", partial, errno);
  ShardEntry entry;
  entry.records = records;
  absl::Status status = absl::OkStatus();
  off_t size = lseek(fd, 0, SEEK_END);
  if (size < 0) {
    status = ErrnoError("seek", partial, errno);
  } else if (fsync(fd) != 0) {
    status = ErrnoError("fsync", partial, errno);
  } else {
    entry.bytes = static_cast<uint64_t>(size);
    auto crc = FileCrc(fd, partial, entry.bytes);
    if (crc.ok()) entry.crc32c = *crc;
    status = crc.status();
  }
  close(fd);
  SP_RETURN_IF_ERROR(status);
  if (rename(partial.c_str(), path.c_str()) != 0) return ErrnoError("rename", partial, errno);
  SP_RETURN_IF_ERROR(SyncDirectory(path));
  return entry;
}

std::string ShardMetaJson(const Manifest& dataset, const std::string& shard_name,
                          uint64_t records) {
  Manifest meta = dataset;
  meta.shards.assign(1, ShardEntry{shard_name, records, 0, 0});
  return SerializeManifest(meta);
}

absl::StatusOr<Manifest> ParseShardMeta(std::string_view text, std::string_view where,
                                        Backend backend) {
  SP_ASSIGN_OR_RETURN(Manifest meta, ParseManifest(text, where));
  if (meta.backend != backend || meta.shards.size() != 1) {
    return absl::DataLossError(absl::StrCat(shardpack::internal::AsAbsl(where),
                                            ": not the metadata of one ",
                                            shardpack::internal::AsAbsl(BackendName(backend)),
                                            " shard"));
  }
  return meta;
}

}  // namespace shardpack::backends::internal
