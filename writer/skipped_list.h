// OUT/skipped.tsv: the inputs a pack left out, or the samples a Writer
// skipped, one a line. `merge` concatenates its parts' lists.
#ifndef SHARDPACK_WRITER_SKIPPED_LIST_H_
#define SHARDPACK_WRITER_SKIPPED_LIST_H_

#include <span>
#include <string>

#include "absl/status/status.h"
#include "shardpack/writer.h"

namespace shardpack::writer {

inline constexpr char kSkippedListFileName[] = "skipped.tsv";

// Writes `dir`/skipped.tsv atomically: a header line "path<TAB>reason", then
// one line per entry, tabs, newlines and backslashes escaped (\t, \n, \\),
// so that each entry is one line.
absl::Status WriteSkippedList(const std::string& dir, std::span<const Skipped> skipped);

}  // namespace shardpack::writer

#endif  // SHARDPACK_WRITER_SKIPPED_LIST_H_
