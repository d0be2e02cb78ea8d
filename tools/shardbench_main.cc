// shardbench: how fast can this machine feed a GPU from this dataset.
//
//   shardbench PATH [--batch-size N] [--threads N] [--transform T] [--io E]
//              [--epochs E | --seconds S] [--json] [--compare-raw] ...
//
// Streams the dataset through the reader into a consumer that reads every
// byte, and prints images/s, MB/s, where the time went and peak memory.
// Parses the command line and hands the run to tools/bench/.
#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "tools/bench/flags.h"
#include "tools/bench/shardbench.h"
#include "tools/common/cli.h"

namespace {

constexpr char kTool[] = "shardbench";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Streams a shardpack dataset through the reader and reports images/s, MB/s,\n"
      "each stage's wait and peak RSS; --compare-raw sets a raw read of the same\n"
      "files (as dd bs=4M) beside it.",
      kTool};
  shardpack::cli::AddVersionFlag(app, kTool);
  shardpack::shardbench::Flags flags;
  shardpack::shardbench::AddFlags(&app, &flags);
  if (int code = shardpack::cli::ParseCommandLine(kTool, app, argc, argv); code >= 0) return code;
  auto options = shardpack::shardbench::ToBenchOptions(flags);
  if (!options.ok()) {  // flags that do not go together: a usage error
    return shardpack::cli::UsageError(kTool, options.status());
  }
  return shardpack::cli::RunMain(kTool, [&] {
    const shardpack::ReaderOptions& reader = options->reader;
    absl::Status status = absl::OkStatus();
    if (!reader.path.empty()) status = shardpack::cli::CheckInputExists(reader.path);
    for (const shardpack::MixSource& source : reader.sources) {
      if (status.ok()) status = shardpack::cli::CheckInputExists(source.path);
    }
    if (status.ok()) status = shardpack::shardbench::RunShardbench(*options);
    return status.ok() ? 0 : shardpack::cli::Fail(kTool, status);
  });
}
