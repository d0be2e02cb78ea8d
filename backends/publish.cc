#include "backends/publish.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "format/errors.h"
#include "format/posix_io.h"
#include "shardpack/crc32c.h"
#include "shardpack/file.h"
#include "format/status_macros.h"

namespace shardpack::backends::internal {
namespace {

namespace fs = std::filesystem;

// Reads the whole file through `fd` for its CRC-32C; the pages are still in
// the page cache from writing it.
absl::StatusOr<uint32_t> FileCrc(int fd, const std::string& path, uint64_t size) {
  std::vector<uint8_t> buffer(std::min<uint64_t>(size, uint64_t{1} << 20) + 1);
  uint32_t crc = 0;
  for (uint64_t offset = 0; offset < size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buffer.size(), size - offset));
    SP_RETURN_IF_ERROR(
        ::shardpack::internal::PreadFull(fd, path, offset, {buffer.data(), n}));
    crc = Crc32cExtend(crc, buffer.data(), n);
    offset += n;
  }
  return crc;
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
  if (fd < 0) return shardpack::internal::ErrnoError("open", partial, errno);
  ShardEntry entry;
  entry.records = records;
  const off_t size = lseek(fd, 0, SEEK_END);
  absl::Status status = size < 0 ? shardpack::internal::ErrnoError("seek", partial, errno)
                                 : ::shardpack::internal::SyncFile(fd, partial);
  if (status.ok()) {
    entry.bytes = static_cast<uint64_t>(size);
    auto crc = FileCrc(fd, partial, entry.bytes);
    if (crc.ok()) entry.crc32c = *crc;
    status = crc.status();
  }
  close(fd);
  SP_RETURN_IF_ERROR(status);
  SP_RETURN_IF_ERROR(::shardpack::internal::PublishFile(partial, path));
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
