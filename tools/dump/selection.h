// Record selections on the command line: --range A:B, --shard K, --index I,J.
#ifndef SHARDPACK_TOOLS_DUMP_SELECTION_H_
#define SHARDPACK_TOOLS_DUMP_SELECTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace shardpack::dump {

// Half-open dataset record indexes [begin, end).
struct IndexRange {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t size() const { return end - begin; }
};

// The syntax of a range: "A:B", "A:" (to the end) or ":B" (from 0); either
// bound left out is nullopt. InvalidArgumentError for anything else.
struct RangeText {
  std::optional<uint64_t> begin;
  std::optional<uint64_t> end;
};
absl::StatusOr<RangeText> ParseRangeText(std::string_view text);

// The range `text` names in a dataset of `records` records.
// InvalidArgumentError when A > B or B > records (the message names both).
absl::StatusOr<IndexRange> ResolveRange(std::string_view text, uint64_t records);

// Of [range.begin, range.end) the part inside [begin, end); empty (begin ==
// end) when they do not meet.
IndexRange Intersect(IndexRange range, uint64_t begin, uint64_t end);

}  // namespace shardpack::dump

#endif  // SHARDPACK_TOOLS_DUMP_SELECTION_H_
