// sharddump verify on a view file: each dataset it names verified as verify
// verifies a dataset (its damage is reported whether or not the view
// resolves), then the view resolved.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "dataset/view.h"
#include "shardpack/manifest.h"
#include "tools/common/cli.h"
#include "tools/common/escape.h"
#include "tools/dump/verify_report.h"

namespace shardpack::dump {
namespace {

// The view resolved, as a line and a JSON object; counts one problem when
// it does not.
void ResolveView(const std::string& path, std::string* text, Json* json, size_t* problems) {
  absl::StatusOr<dataset::DatasetView> view = dataset::OpenView(path);
  Json& j = *json;
  if (!view.ok()) {
    ++*problems;
    j["view"] = {{"ok", false}, {"error", cli::EscapeText(std::string(view.status().message()))}};
    absl::StrAppend(text, cli::EscapeText(std::string(view.status().message())), "\n");
    return;
  }
  j["view"] = {{"ok", true},
               {"records", view->records},
               {"base_records", view->base_records},
               {"fingerprint", FormatFingerprint(view->fingerprint)},
               {"canonical", view->canonical}};
  absl::StrAppend(text, "view ", cli::EscapeText(path), ": ", view->records, " of ",
                  view->base_records, " records, fingerprint ",
                  FormatFingerprint(view->fingerprint), "\n");
}

}  // namespace

absl::Status VerifyView(const VerifyOptions& options) {
  SP_ASSIGN_OR_RETURN(std::vector<std::string> paths, dataset::ViewDatasetPaths(options.path));
  std::string text;
  Json json = {{"path", options.path}, {"datasets", Json::array()}};
  size_t problems = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    VerifyOptions one = options;
    one.path = paths[i];
    absl::StatusOr<VerifyResult> result = VerifyDataset(one);
    absl::StrAppend(&text, "dataset ", i, ": ", cli::EscapeText(paths[i]), "\n");
    if (!result.ok()) {
      ++problems;
      json["datasets"].push_back({{"path", paths[i]}, {"ok", false},
                                  {"error", cli::EscapeText(std::string(result.status().message()))}});
      absl::StrAppend(&text, cli::EscapeText(std::string(result.status().message())), "\n");
      continue;
    }
    problems += result->problems;
    json["datasets"].push_back(std::move(result->json));
    text += result->text;
  }
  ResolveView(options.path, &text, &json, &problems);
  json["ok"] = problems == 0;
  SP_RETURN_IF_ERROR(cli::WriteStdout(options.common.json ? DumpJson(json, true) + "\n" : text));
  SP_RETURN_IF_ERROR(cli::FlushStdout());
  if (problems > 0) {
    return absl::DataLossError(
        absl::StrCat(options.path, ": ", Plural(problems, "problem"), " found"));
  }
  return absl::OkStatus();
}

}  // namespace shardpack::dump
