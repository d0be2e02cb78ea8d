#include "writer/skipped_list.h"

#include <string_view>

#include "absl/strings/str_cat.h"
#include "shardpack/file.h"

namespace shardpack::writer {
namespace {

// Tabs, newlines and backslashes escaped, so each skipped input is one line.
std::string TsvField(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\\') {
      out += "\\\\";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

absl::Status WriteSkippedList(const std::string& dir, std::span<const Skipped> skipped) {
  std::string text = "path\treason\n";
  for (const Skipped& s : skipped) {
    absl::StrAppend(&text, TsvField(s.path), "\t", TsvField(s.reason), "\n");
  }
  return WriteFileAtomically(absl::StrCat(dir, "/", kSkippedListFileName), text);
}

}  // namespace shardpack::writer
