#include "writer/compression.h"

#include <cstdint>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/size.h"

namespace shardpack::writer {

absl::Status ParseCompress(std::string_view text, ShardWriterOptions* shard) {
  if (text == "none") {
    shard->compression = Compression::kNone;
    return absl::OkStatus();
  }
  // "zstd", or "zstd:" and a whole number with an optional minus sign.
  std::string_view level = text;
  bool ok = level.starts_with("zstd");
  level.remove_prefix(ok ? 4 : 0);
  int value = ShardWriterOptions{}.zstd_level;
  if (ok && !level.empty()) {
    ok = level.starts_with(':');
    level.remove_prefix(ok ? 1 : 0);
    const bool negative = level.starts_with('-');
    level.remove_prefix(negative ? 1 : 0);
    const int64_t bound = negative ? -int64_t{kMinZstdLevel} : int64_t{kMaxZstdLevel};
    const std::optional<uint64_t> magnitude =
        common::ParseWholeNumber(level, 0, static_cast<uint64_t>(bound));
    ok = ok && magnitude.has_value();
    if (ok) value = static_cast<int>(negative ? -int64_t(*magnitude) : int64_t(*magnitude));
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", common::AsAbsl(text),
                     "' is not a compression: none, or zstd[:LEVEL] with LEVEL in ",
                     kMinZstdLevel, "..", kMaxZstdLevel, " (default ",
                     ShardWriterOptions{}.zstd_level, ")"));
  }
  shard->compression = Compression::kZstd;
  shard->zstd_level = value;
  return absl::OkStatus();
}

std::string CompressionName(const ShardWriterOptions& shard) {
  return shard.compression == Compression::kZstd ? absl::StrCat("zstd:", shard.zstd_level)
                                                 : "none";
}

}  // namespace shardpack::writer
