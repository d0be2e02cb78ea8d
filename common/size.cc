#include "common/size.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace shardpack::common {

absl::StatusOr<uint64_t> ParseSize(std::string_view text) {
  absl::string_view s(text.data(), text.size());
  size_t split = 0;
  while (split < s.size() && (absl::ascii_isdigit(s[split]) || s[split] == '.')) ++split;
  double value;
  if (split == 0 || !absl::SimpleAtod(s.substr(0, split), &value)) {
    return absl::InvalidArgumentError(absl::StrCat("'", s, "' is not a size"));
  }
  std::string unit = absl::AsciiStrToLower(s.substr(split));
  double scale;
  if (unit.empty() || unit == "b") {
    scale = 1;
  } else if (unit == "k" || unit == "kib") {
    scale = 1024.0;
  } else if (unit == "m" || unit == "mib") {
    scale = 1024.0 * 1024;
  } else if (unit == "g" || unit == "gib") {
    scale = 1024.0 * 1024 * 1024;
  } else if (unit == "kb") {
    scale = 1e3;
  } else if (unit == "mb") {
    scale = 1e6;
  } else if (unit == "gb") {
    scale = 1e9;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("'", s, "': unknown size unit"));
  }
  // 2^64 bytes and more do not fit (and llround of them is undefined).
  const double bytes = std::round(value * scale);
  if (!(bytes < 18446744073709551616.0)) {
    return absl::InvalidArgumentError(absl::StrCat("'", s, "' is too large for a size"));
  }
  return static_cast<uint64_t>(bytes);
}

std::optional<uint64_t> ParseWholeNumber(std::string_view text, uint64_t min, uint64_t max) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), absl::ascii_isdigit)) {
    return std::nullopt;
  }
  while (text.size() > 1 && text.front() == '0') text.remove_prefix(1);
  uint64_t value = 0;
  if (!absl::SimpleAtoi(absl::string_view(text.data(), text.size()), &value) || value < min ||
      value > max) {
    return std::nullopt;
  }
  return value;
}

}  // namespace shardpack::common
