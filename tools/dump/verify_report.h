// sharddump verify's report of one dataset, and verify of a view file: each
// of its datasets verified in turn, then the view resolved
// (tools/dump/verify_view.cc).
#ifndef SHARDPACK_TOOLS_DUMP_VERIFY_REPORT_H_
#define SHARDPACK_TOOLS_DUMP_VERIFY_REPORT_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tools/dump/commands.h"
#include "tools/dump/text.h"

namespace shardpack::dump {

// What verify found in the dataset at options.path: the report as text and
// as its JSON document, and how many problems it lists. An error only when
// the dataset cannot be opened at all.
struct VerifyResult {
  std::string text;
  Json json;
  size_t problems = 0;
};
absl::StatusOr<VerifyResult> VerifyDataset(const VerifyOptions& options);

// "N problem(s)".
std::string Plural(size_t n, std::string_view noun);

// verify on a view file (docs/cli.md, "Views as PATH"): prints the report
// and returns DataLossError "<path>: N problems found" when a dataset is
// damaged or the view does not resolve.
absl::Status VerifyView(const VerifyOptions& options);

}  // namespace shardpack::dump

#endif  // SHARDPACK_TOOLS_DUMP_VERIFY_REPORT_H_
