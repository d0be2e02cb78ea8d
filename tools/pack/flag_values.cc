#include "tools/pack/flag_values.h"

#include <optional>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "codec/jpeg_probe.h"
#include "common/size.h"
#include "datasets/images.h"
#include "tools/common/cli.h"
#include "tools/pack/scheduler_part.h"
#include "writer/compression.h"

namespace shardpack::pack {
namespace {

// The two whole numbers of "A<sep>B", each in [min, max]; nullopt for both
// unless both parse.
std::pair<std::optional<uint64_t>, std::optional<uint64_t>> SplitPair(std::string_view text,
                                                                      char sep, uint64_t min,
                                                                      uint64_t max) {
  const size_t at = text.find(sep);
  if (at == std::string_view::npos) return {};
  return {common::ParseWholeNumber(text.substr(0, at), min, max),
          common::ParseWholeNumber(text.substr(at + 1), min, max)};
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
  return MessageOf(writer::ParseCompress(text, &shard));
}

std::string CheckRawSize(const std::string& text) {
  uint32_t width, height;
  return MessageOf(ParseRawSize(text, &width, &height));
}

}  // namespace shardpack::pack
