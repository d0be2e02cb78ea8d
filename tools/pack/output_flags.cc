#include "tools/pack/output_flags.h"

#include <limits>

#include "shardpack/writer.h"
#include "tools/common/cli.h"
#include "tools/pack/flag_values.h"

namespace shardpack::pack {

void AddOutputFlags(CLI::App* app, OutputFlags* f) {
  constexpr uint64_t kMaxU64 = std::numeric_limits<uint64_t>::max();
  app->add_option("-o,--output", f->output, "Output dataset directory")->required();
  app->add_option("--format", f->format, "Backend: shard (default), lmdb or hdf5")
      ->check(CLI::IsMember({"shard", "lmdb", "hdf5"}));
  app->add_option("--shard-size", f->shard_size, "Close a shard after this many bytes")
      ->check(cli::SizeIn(1, kMaxU64));
  app->add_option("--shard-records", f->shard_records,
                  "Close a shard after this many records (replaces --shard-size)")
      ->transform(cli::WholeNumberIn(1, kMaxU64));
  app->add_option("--block-size", f->block_size, "Target block size")
      ->check(cli::SizeIn(1, kMaxBlockSize));
  app->add_option("--compress", f->compress, "none or zstd[:LEVEL]")
      ->check(CheckCompress, "none|zstd[:LEVEL]");
  app->add_flag("--overwrite", f->overwrite,
                "Replace an existing output (only a dataset shardpack wrote, or an empty folder)");
  app->add_option("--on-error", f->on_error, "skip (list in skipped.tsv) or fail")
      ->check(CLI::IsMember({"skip", "fail"}));
  app->add_flag("-q,--quiet", f->quiet, "No progress or summary on stderr");
  app->add_flag("-v,--verbose", f->verbose, "More detail on stderr");
  app->add_flag("--json", f->json, "Print a JSON summary on stdout");
}

}  // namespace shardpack::pack
