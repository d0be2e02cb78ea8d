#include "common/errors.h"

#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace shardpack::common {
namespace {
constexpr char kOffsetPayload[] = "shardpack.dev/offset";
}

absl::Status DataLossAt(std::string_view name, uint64_t offset,
                        std::string_view what) {
  absl::Status s =
      absl::DataLossError(absl::StrCat(AsAbsl(name), " @", offset, ": ", AsAbsl(what)));
  s.SetPayload(kOffsetPayload, absl::Cord(absl::StrCat(offset)));
  return s;
}

absl::Status CheckManifestRecords(std::string_view path, uint64_t held, uint64_t says) {
  if (held == says) return absl::OkStatus();
  return absl::DataLossError(
      absl::StrCat(AsAbsl(path), ": holds ", held, " records, the manifest says ", says));
}

std::string Excerpt(std::string_view text, size_t max) {
  if (text.size() <= max) return std::string(text);
  size_t cut = max;
  // Not inside a UTF-8 sequence: back over at most three continuation bytes.
  for (int i = 0; i < 3 && cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80; ++i) {
    --cut;
  }
  return absl::StrCat(AsAbsl(text.substr(0, cut)), "... (", text.size(), " bytes)");
}

std::string OneLine(std::string_view message) {
  std::string line;
  line.reserve(message.size());
  for (char c : message) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      line += "\\n";
    } else if (c == '\r') {
      line += "\\r";
    } else if (c == '\t') {
      line += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      absl::StrAppend(&line, "\\x", absl::Hex(u, absl::kZeroPad2));
    } else {
      line += c;
    }
  }
  return line;
}

absl::Status WithMessage(const absl::Status& status, std::string_view message) {
  if (status.ok()) return status;
  absl::Status out(status.code(), AsAbsl(message));
  status.ForEachPayload(
      [&](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

std::optional<uint64_t> ErrorOffset(const absl::Status& status) {
  auto payload = status.GetPayload(kOffsetPayload);
  uint64_t offset;
  if (!payload || !absl::SimpleAtoi(std::string(*payload), &offset)) {
    return std::nullopt;
  }
  return offset;
}

}  // namespace shardpack::common
