#include "tools/pack/flag_values.h"

#include <optional>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "codec/jpeg_probe.h"
#include "datasets/images.h"
#include "tools/common/cli.h"
#include "tools/pack/scheduler_part.h"

namespace shardpack::pack {
namespace {

// The two whole numbers of "A<sep>B", each in [min, max]; nullopt for both
// unless both parse.
std::pair<std::optional<uint64_t>, std::optional<uint64_t>> SplitPair(std::string_view text,
                                                                      char sep, uint64_t min,
                                                                      uint64_t max) {
  const size_t at = text.find(sep);
  if (at == std::string_view::npos) return {};
  return {cli::ParseWholeNumber(text.substr(0, at), min, max),
          cli::ParseWholeNumber(text.substr(at + 1), min, max)};
}

std::string MessageOf(const absl::Status& s) { return s.ok() ? "" : std::string(s.message()); }

}  // namespace

absl::Status ParsePart(const std::string& text, uint32_t* index, uint32_t* count) {
  auto [i, n] = SplitPair(text, '/', 1, kMaxParts);
  if (!i || !n || *i > *n) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a part I/N with 1 <= I <= N <= ", kMaxParts));
  }
  *index = static_cast<uint32_t>(*i - 1);
  *count = static_cast<uint32_t>(*n);
  return absl::OkStatus();
}

absl::Status ParseCompress(const std::string& text, ShardWriterOptions* shard) {
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
        cli::ParseWholeNumber(level, 0, static_cast<uint64_t>(bound));
    ok = ok && magnitude.has_value();
    if (ok) value = static_cast<int>(negative ? -int64_t(*magnitude) : int64_t(*magnitude));
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a compression: none, or zstd[:LEVEL] with LEVEL in ",
                     kMinZstdLevel, "..", kMaxZstdLevel, " (default ",
                     ShardWriterOptions{}.zstd_level, ")"));
  }
  shard->compression = Compression::kZstd;
  shard->zstd_level = value;
  return absl::OkStatus();
}

absl::Status ParseRawSize(const std::string& text, uint32_t* width, uint32_t* height) {
  const uint64_t max_pixels = datasets::ImageOptions{}.max_pixels;
  auto [w, h] = SplitPair(text, 'x', 1, codec::kMaxJpegSide);
  if (!w || !h || *w * *h > max_pixels) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", text, "' is not a size WxH with W and H in 1..", codec::kMaxJpegSide,
        " and W x H at most ", max_pixels, " pixels"));
  }
  *width = static_cast<uint32_t>(*w);
  *height = static_cast<uint32_t>(*h);
  return absl::OkStatus();
}

std::string CheckPart(const std::string& text) {
  uint32_t index, count;
  return text == "auto" ? "" : MessageOf(ParsePart(text, &index, &count));
}

std::string CheckCompress(const std::string& text) {
  ShardWriterOptions shard;
  return MessageOf(ParseCompress(text, &shard));
}

std::string CheckRawSize(const std::string& text) {
  uint32_t width, height;
  return MessageOf(ParseRawSize(text, &width, &height));
}

}  // namespace shardpack::pack
