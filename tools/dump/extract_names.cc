#include "tools/dump/extract_names.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace shardpack::dump {

int IndexDigits(uint64_t records) {
  uint64_t largest = records > 0 ? records - 1 : 0;
  int digits = 1;
  while (largest >= 10) {
    largest /= 10;
    ++digits;
  }
  return digits;
}

std::string SanitizeKey(std::string_view key) {
  absl::string_view k(key.data(), key.size());
  for (absl::string_view ext : {".jpg", ".jpeg", ".png", ".ppm", ".pgm", ".raw"}) {
    if (absl::EndsWithIgnoreCase(k, ext)) {
      k.remove_suffix(ext.size());
      break;
    }
  }
  std::string out;
  out.reserve(std::min(k.size(), kMaxKeyInName));
  for (char c : k.substr(0, kMaxKeyInName)) {
    bool safe =
        absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    out.push_back(safe ? c : '_');
  }
  return out;
}

std::string ExtractFileName(uint64_t index, int digits, std::string_view key,
                            std::string_view extension) {
  std::string name = absl::StrFormat("%0*d", digits, index);
  std::string k = SanitizeKey(key);
  if (!k.empty()) absl::StrAppend(&name, "_", k);
  absl::StrAppend(&name, ".", absl::string_view(extension.data(), extension.size()));
  return name;
}

}  // namespace shardpack::dump
