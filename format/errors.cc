#include "format/errors.h"

#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace shardpack::internal {
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

std::optional<uint64_t> ErrorOffset(const absl::Status& status) {
  auto payload = status.GetPayload(kOffsetPayload);
  uint64_t offset;
  if (!payload || !absl::SimpleAtoi(std::string(*payload), &offset)) {
    return std::nullopt;
  }
  return offset;
}

}  // namespace shardpack::internal
