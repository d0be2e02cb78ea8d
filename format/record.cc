#include <algorithm>

#include "shardpack/record.h"

namespace shardpack {

std::string_view EncodingName(Encoding e) {
  switch (e) {
    case Encoding::kRaw: return "raw";
    case Encoding::kJpeg: return "jpeg";
  }
  return "unknown";
}

std::string_view LayoutName(Layout l) {
  switch (l) {
    case Layout::kHWC: return "hwc";
    case Layout::kCHW: return "chw";
  }
  return "unknown";
}

std::optional<Encoding> ParseEncoding(std::string_view name) {
  if (name == "raw") return Encoding::kRaw;
  if (name == "jpeg") return Encoding::kJpeg;
  return std::nullopt;
}

std::optional<Layout> ParseLayout(std::string_view name) {
  if (name == "hwc") return Layout::kHWC;
  if (name == "chw") return Layout::kCHW;
  return std::nullopt;
}

bool SameContents(const Record& a, const Record& b) {
  return a.key == b.key && a.labels == b.labels && a.image == b.image &&
         std::ranges::equal(a.payload, b.payload) && std::ranges::equal(a.extra, b.extra);
}

}  // namespace shardpack
