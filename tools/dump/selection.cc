#include "tools/dump/selection.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace shardpack::dump {
namespace {

absl::Status BadRange(std::string_view text) {
  return absl::InvalidArgumentError(
      absl::StrCat("--range '", absl::string_view(text.data(), text.size()),
                   "': expected A:B, A: or :B with record indexes A <= B"));
}

bool ParseIndex(std::string_view s, uint64_t* out) {
  // SimpleAtoi accepts signs and spaces; an index is digits only.
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  return absl::SimpleAtoi(absl::string_view(s.data(), s.size()), out);
}

}  // namespace

absl::StatusOr<RangeText> ParseRangeText(std::string_view text) {
  size_t colon = text.find(':');
  if (colon == std::string_view::npos || text.find(':', colon + 1) != std::string_view::npos) {
    return BadRange(text);
  }
  RangeText r;
  std::string_view a = text.substr(0, colon), b = text.substr(colon + 1);
  uint64_t v;
  if (!a.empty()) {
    if (!ParseIndex(a, &v)) return BadRange(text);
    r.begin = v;
  }
  if (!b.empty()) {
    if (!ParseIndex(b, &v)) return BadRange(text);
    r.end = v;
  }
  if (r.begin && r.end && *r.begin > *r.end) return BadRange(text);
  return r;
}

absl::StatusOr<IndexRange> ResolveRange(std::string_view text, uint64_t records) {
  auto parsed = ParseRangeText(text);
  if (!parsed.ok()) return parsed.status();
  IndexRange r{parsed->begin.value_or(0), parsed->end.value_or(records)};
  if (r.begin > r.end || r.end > records) {
    return absl::InvalidArgumentError(
        absl::StrCat("--range ", absl::string_view(text.data(), text.size()), ": ", r.begin, ":",
                     r.end, " is outside the dataset's ", records, " records"));
  }
  return r;
}

IndexRange Intersect(IndexRange range, uint64_t begin, uint64_t end) {
  IndexRange r{std::max(range.begin, begin), std::min(range.end, end)};
  if (r.begin > r.end) r.end = r.begin;
  return r;
}

}  // namespace shardpack::dump
