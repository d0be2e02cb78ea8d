#include "backends/publish.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/posix_io.h"
#include "common/posix_open.h"
#include "common/status_macros.h"
#include "shardpack/crc32c.h"
#include "shardpack/file.h"

namespace shardpack::backends {
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
        ::shardpack::common::PreadFull(fd, path, offset, {buffer.data(), n}));
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
  uint64_t size = 0;
  SP_ASSIGN_OR_RETURN(const int raw, common::OpenRegularFile(partial, 0, &size));
  const common::UniqueFd fd(raw);
  ShardEntry entry;
  entry.records = records;
  entry.bytes = size;
  SP_RETURN_IF_ERROR(common::SyncFile(fd.get(), partial));
  SP_ASSIGN_OR_RETURN(entry.crc32c, FileCrc(fd.get(), partial, entry.bytes));
  SP_RETURN_IF_ERROR(::shardpack::common::PublishFile(partial, path));
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
    return absl::DataLossError(absl::StrCat(shardpack::common::AsAbsl(where),
                                            ": not the metadata of one ",
                                            shardpack::common::AsAbsl(BackendName(backend)),
                                            " shard"));
  }
  return meta;
}

}  // namespace shardpack::backends
