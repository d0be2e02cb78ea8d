// sharddump: inspect, list, verify and extract shardpack datasets.
// Parses the command line and hands each subcommand to tools/dump/.
// docs/cli.md documents every command, flag and output field.
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "CLI/CLI.hpp"
#include "tools/common/cli.h"
#include "tools/dump/commands.h"
#include "tools/dump/selection.h"

namespace {

using shardpack::dump::CommonOptions;

constexpr char kTool[] = "sharddump";
constexpr uint64_t kMaxIndex = std::numeric_limits<uint64_t>::max();
constexpr char kPathHelp[] =
    "dataset folder, manifest.json, shard (.shard, LMDB, HDF5), view file or URL (s3://, https://)";

std::string CheckRange(const std::string& text) {
  auto parsed = shardpack::dump::ParseRangeText(text);
  return parsed.ok() ? "" : std::string(parsed.status().message());
}

void AddCommon(CLI::App* command, CommonOptions* common, bool json) {
  if (json) command->add_flag("--json", common->json, "machine-readable output (docs/cli.md)");
  command->add_flag("-q,--quiet", common->quiet, "no progress line or summary");
  command->add_flag("-v,--verbose", common->verbose, "more detail on stderr");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Inspects, lists, verifies, extracts and shows shardpack datasets.\n"
      "PATH is a dataset directory, its manifest.json, a single shard (.shard, LMDB\n"
      "or HDF5), a view file (JSON: a subset, split or concatenation of datasets), or\n"
      "a dataset in an object store (s3://bucket/prefix/, https://host/path/).",
      kTool};
  shardpack::cli::AddVersionFlag(app, kTool);
  app.require_subcommand(1);

  shardpack::dump::InfoOptions info;
  CLI::App* info_cmd = app.add_subcommand(
      "info", "Counts, sizes, schema, classes with a label histogram, image statistics");
  info_cmd->add_option("PATH", info.path, kPathHelp)->required();
  AddCommon(info_cmd, &info.common, true);

  shardpack::dump::LsOptions ls;
  CLI::App* ls_cmd = app.add_subcommand("ls", "One line per record");
  ls_cmd->add_option("PATH", ls.path, kPathHelp)->required();
  ls_cmd->add_option("--range", ls.range, "records A:B (half-open dataset indexes)")
      ->check(CheckRange, "A:B");
  ls_cmd->add_option("--shard", ls.shard, "only shard K")
      ->transform(shardpack::cli::WholeNumberIn(0, kMaxIndex));
  AddCommon(ls_cmd, &ls.common, true);

  shardpack::dump::VerifyOptions verify;
  CLI::App* verify_cmd =
      app.add_subcommand("verify", "Checks every byte; exit status 0 only when all is well");
  verify_cmd->add_option("PATH", verify.path, kPathHelp)->required();
  verify_cmd->add_flag("--decode", verify.decode, "also decode every JPEG in full");
  verify_cmd->add_option("--threads", verify.threads, "shards checked at once (default: cores)")
      ->transform(shardpack::cli::WholeNumberIn(0, shardpack::cli::kMaxThreads));
  AddCommon(verify_cmd, &verify.common, true);

  shardpack::dump::ExtractOptions extract;
  CLI::App* extract_cmd =
      app.add_subcommand("extract", "Writes selected records' images and labels.tsv to DIR");
  extract_cmd->add_option("PATH", extract.path, kPathHelp)->required();
  CLI::App* selection = extract_cmd->add_option_group("selection", "which records (one of)");
  selection->add_option("--index", extract.indexes, "dataset indexes I[,J...]")
      ->delimiter(',')
      ->transform(shardpack::cli::WholeNumberIn(0, kMaxIndex));
  selection->add_option("--range", extract.range, "records A:B (half-open)")
      ->check(CheckRange, "A:B");
  selection->add_option("--key", extract.key, "records whose key is exactly K");
  selection->require_option(1);
  extract_cmd->add_option("-o,--output", extract.output, "output directory (created)")->required();
  extract_cmd->add_flag("--overwrite", extract.overwrite,
                        "replace files already at the names written (else refused)");
  AddCommon(extract_cmd, &extract.common, false);

  shardpack::dump::ShowOptions show;
  CLI::App* show_cmd = app.add_subcommand(
      "show", "Writes a contact sheet of records (index, labels, class) as PNG or JPEG");
  show_cmd->add_option("PATH", show.path, kPathHelp)->required();
  CLI::App* which = show_cmd->add_option_group("selection", "which records (default: the first 64)");
  which->add_option("--range", show.range, "records A:B (half-open)")->check(CheckRange, "A:B");
  CLI::Option* random =
      which->add_option("--random", show.random, "N distinct records drawn at random")
          ->transform(shardpack::cli::WholeNumberIn(0, kMaxIndex));
  which->require_option(0, 1);
  show_cmd->add_option("--seed", show.seed, "seed of --random (default 0)")
      ->needs(random)
      ->transform(shardpack::cli::WholeNumberIn(0, kMaxIndex));
  show_cmd->add_option("--columns", show.columns, "tiles per row (default: about square)")
      ->transform(shardpack::cli::WholeNumberIn(1, 65535));
  show_cmd->add_option("--tile", show.tile, "tile side in pixels (default 96)")
      ->transform(shardpack::cli::WholeNumberIn(16, 1024));
  show_cmd->add_option("-o,--output", show.output, "the sheet: FILE.png or FILE.jpg")->required();
  show_cmd->add_flag("--overwrite", show.overwrite, "replace a file already at -o (else refused)");
  AddCommon(show_cmd, &show.common, false);

  if (int code = shardpack::cli::ParseCommandLine(kTool, app, argc, argv); code >= 0) return code;

  // Data goes out in large writes; progress goes to stderr unbuffered.
  static char buffer[1 << 16];
  std::setvbuf(stdout, buffer, _IOFBF, sizeof(buffer));

  return shardpack::cli::RunMain(kTool, [&] {
    const std::string& path = info_cmd->parsed()     ? info.path
                              : ls_cmd->parsed()     ? ls.path
                              : verify_cmd->parsed() ? verify.path
                              : show_cmd->parsed()   ? show.path
                                                     : extract.path;
    absl::Status status = shardpack::cli::CheckInputExists(path);
    if (!status.ok()) {
      // Nothing to open.
    } else if (info_cmd->parsed()) {
      status = shardpack::dump::RunInfo(info);
    } else if (ls_cmd->parsed()) {
      status = shardpack::dump::RunLs(ls);
    } else if (verify_cmd->parsed()) {
      status = shardpack::dump::RunVerify(verify);
    } else if (show_cmd->parsed()) {
      status = shardpack::dump::RunShow(show);
    } else {
      status = shardpack::dump::RunExtract(extract);
    }
    return status.ok() ? 0 : shardpack::cli::Fail(kTool, status);
  });
}
