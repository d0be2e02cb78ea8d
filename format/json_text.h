// JSON text from a file, parsed with the checks every file of ours gets: a
// bound on nesting (so that nothing recurses on absurdly deep text) and a
// message that says where the text is wrong. Used by the manifest
// (format/manifest.cc) and by view files (backends/view.h).
#ifndef SHARDPACK_FORMAT_JSON_TEXT_H_
#define SHARDPACK_FORMAT_JSON_TEXT_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace shardpack::format {

// The deepest nesting JSON text of ours may have.
inline constexpr int kMaxJsonNesting = 64;

// Parses `text`, read from `name`. DataLossError "<name>:LINE:COLUMN: not
// valid JSON: <reason>" for a syntax error, "<name>: not valid JSON:
// <reason>" for a value the parser cannot hold (a number past a double's
// range), "<name>: JSON nested more than 64 levels deep". Callers for whom
// the text is user input rather than data re-code the status.
absl::StatusOr<nlohmann::ordered_json> ParseJsonText(std::string_view text,
                                                     std::string_view name);

}  // namespace shardpack::format

#endif  // SHARDPACK_FORMAT_JSON_TEXT_H_
