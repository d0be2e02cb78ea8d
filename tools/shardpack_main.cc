// shardpack: CIFAR binaries and JPEG folders into sharded datasets.
//
//   shardpack cifar INPUT... -o OUT [--cifar 10|100] [--split train|test] ...
//   shardpack images ROOT -o OUT [--mode passthrough|reencode|raw] ...
//   shardpack images --list FILE --root DIR -o OUT ...
//   shardpack merge PART... -o OUT [--format shard|lmdb|hdf5]
//   shardpack convert INPUT... -o OUT --format shard|lmdb|hdf5
//
// docs/cli.md documents every flag.
#include <cstdio>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "backends/store.h"
#include "datasets/cifar.h"
#include "datasets/images.h"
#include "nlohmann/json.hpp"
#include "shardpack/status.h"
#include "tools/common/cli.h"
#include "tools/pack/pack.h"

namespace shardpack {
namespace {

constexpr char kTool[] = "shardpack";

// Flags shared by the packing commands, as typed.
struct CommonFlags {
  std::string output;
  std::string format = "shard";
  std::string shard_size = "256MiB";
  uint64_t shard_records = 0;
  std::string block_size = "4MiB";
  std::string compress = "none";
  bool shuffle = true;
  uint64_t seed = 0;
  int threads = 0;
  bool overwrite = false;
  bool quiet = false;
  bool json = false;
  std::string on_error = "skip";
  std::string part = "1/1";
};

void AddCommonFlags(CLI::App* app, CommonFlags* f) {
  app->add_option("-o,--output", f->output, "Output dataset directory")->required();
  app->add_option("--format", f->format, "Backend: shard (default), lmdb or hdf5")
      ->check(CLI::IsMember({"shard", "lmdb", "hdf5"}));
  app->add_option("--shard-size", f->shard_size, "Close a shard after this many bytes");
  app->add_option("--shard-records", f->shard_records,
                  "Close a shard after this many records (replaces --shard-size)");
  app->add_option("--block-size", f->block_size, "Target block size");
  app->add_option("--compress", f->compress, "none or zstd[:LEVEL]");
  app->add_flag("--shuffle,!--no-shuffle", f->shuffle, "Pack-time permutation (default on)");
  app->add_option("--seed", f->seed, "Seed of the pack-time permutation");
  app->add_option("--threads", f->threads, "Worker threads (default: all cores)");
  app->add_flag("--overwrite", f->overwrite, "Replace an existing output");
  app->add_flag("-q,--quiet", f->quiet, "No progress or summary on stderr");
  app->add_flag("--json", f->json, "Print a JSON summary on stdout");
  app->add_option("--on-error", f->on_error, "skip (list in skipped.tsv) or fail")
      ->check(CLI::IsMember({"skip", "fail"}));
  app->add_option("--part", f->part, "Pack part I of N (1-based), e.g. 3/8");
}

datasets::OnError OnErrorOf(const CommonFlags& f) {
  return f.on_error == "fail" ? datasets::OnError::kFail : datasets::OnError::kSkip;
}

// --block-size and --compress into `w`; they apply to .shard output only.
absl::Status ParseShardFlags(const std::string& format, const std::string& block_size,
                             const std::string& compress_flag, DatasetWriterOptions* w) {
  SP_ASSIGN_OR_RETURN(uint64_t block, cli::ParseSize(block_size));
  if (block == 0 || block > (uint64_t{1} << 30)) {
    return absl::InvalidArgumentError("--block-size must be between 1 byte and 1 GiB");
  }
  w->shard.block_size = static_cast<uint32_t>(block);
  std::vector<std::string> compress = absl::StrSplit(compress_flag, ':');
  if (compress[0] == "zstd" && compress.size() <= 2) {
    w->shard.compression = Compression::kZstd;
    if (compress.size() == 2 && !absl::SimpleAtoi(compress[1], &w->shard.zstd_level)) {
      return absl::InvalidArgumentError(absl::StrCat("--compress ", compress_flag, ": bad level"));
    }
  } else if (compress_flag != "none") {
    return absl::InvalidArgumentError(absl::StrCat("--compress ", compress_flag,
                                                   ": expected none or zstd[:LEVEL]"));
  }
  if (format != "shard" && compress_flag != "none") {
    return absl::InvalidArgumentError(
        absl::StrCat("--compress applies to --format shard only, not ", format));
  }
  backends::UseBackend(w, *backends::ParseBackend(format));
  return absl::OkStatus();
}

absl::StatusOr<pack::PackOptions> ToPackOptions(const CommonFlags& f) {
  pack::PackOptions o;
  o.output = f.output;
  o.overwrite = f.overwrite;
  o.on_error = OnErrorOf(f);
  o.shuffle = f.shuffle;
  o.seed = f.seed;
  o.threads = f.threads;
  o.quiet = f.quiet;
  std::vector<std::string> part = absl::StrSplit(f.part, '/');
  if (part.size() != 2 || !absl::SimpleAtoi(part[0], &o.part_index) ||
      !absl::SimpleAtoi(part[1], &o.part_count) || o.part_index < 1 ||
      o.part_index > o.part_count) {
    return absl::InvalidArgumentError(absl::StrCat("--part ", f.part, ": expected I/N, 1 <= I <= N"));
  }
  o.part_index -= 1;
  if (f.shard_records > 0) {
    o.writer.shard_max_records = f.shard_records;
    o.writer.shard_max_bytes = 0;
  } else {
    SP_ASSIGN_OR_RETURN(o.writer.shard_max_bytes, cli::ParseSize(f.shard_size));
  }
  SP_RETURN_IF_ERROR(ParseShardFlags(f.format, f.block_size, f.compress, &o.writer));
  return o;
}

void Report(const CommonFlags& f, const pack::PackSummary& s) {
  if (f.json) {
    nlohmann::ordered_json j{{"output", f.output},         {"records", s.records},
                             {"classes", s.classes},       {"shards", s.shards},
                             {"skipped", s.skipped},       {"bytes_in", s.bytes_in},
                             {"bytes_out", s.bytes_out},   {"seconds", s.seconds}};
    std::printf("%s\n", j.dump().c_str());
  }
  if (f.quiet) return;
  std::fprintf(stderr, "packed %llu records (%zu classes) into %zu shard%s: %s in, %s out, %.2f s\n",
               static_cast<unsigned long long>(s.records), s.classes, s.shards,
               s.shards == 1 ? "" : "s", cli::FormatBytes(s.bytes_in).c_str(),
               cli::FormatBytes(s.bytes_out).c_str(), s.seconds);
  if (s.skipped > 0) {
    std::fprintf(stderr, "skipped %llu input%s, listed in %s/skipped.tsv\n",
                 static_cast<unsigned long long>(s.skipped), s.skipped == 1 ? "" : "s",
                 f.output.c_str());
  }
}

int RunPack(const CommonFlags& f, const absl::StatusOr<std::unique_ptr<datasets::Source>>& source) {
  if (!source.ok()) return cli::Fail(kTool, source.status());
  auto options = ToPackOptions(f);
  if (!options.ok()) return cli::Fail(kTool, options.status());
  if (!f.quiet) {
    for (const datasets::Skipped& p : (*source)->open_problems()) {
      std::fprintf(stderr, "%s: warning: %s: %s\n", kTool, p.path.c_str(), p.reason.c_str());
    }
  }
  auto summary = pack::Pack(**source, *options);
  if (!summary.ok()) return cli::Fail(kTool, summary.status());
  Report(f, *summary);
  return 0;
}

}  // namespace
}  // namespace shardpack

int main(int argc, char** argv) {
  using namespace shardpack;
  CLI::App app{"shardpack: pack CIFAR binaries and JPEG folders into sharded datasets"};
  app.set_version_flag("--version", "shardpack " SHARDPACK_VERSION);
  app.require_subcommand(1);

  CommonFlags cifar_flags;
  datasets::CifarOptions cifar;
  std::string cifar_layout = "hwc";
  CLI::App* cifar_cmd = app.add_subcommand("cifar", "Pack CIFAR-10/100 binary files");
  cifar_cmd->add_option("inputs", cifar.inputs, "Binary files or the extracted folder")
      ->required();
  cifar_cmd->add_option("--cifar", cifar.variant, "10 or 100 (default: detect)")
      ->check(CLI::IsMember({10, 100}));
  cifar_cmd->add_option("--split", cifar.split, "train or test, for a folder input")
      ->check(CLI::IsMember({"train", "test"}));
  cifar_cmd->add_option("--layout", cifar_layout, "Stored pixel order: hwc or chw")
      ->check(CLI::IsMember({"hwc", "chw"}));
  cifar_cmd->add_option("--pad", cifar.pad, "Store images zero-padded by N on each side")
      ->check(CLI::Range(0, 64));
  AddCommonFlags(cifar_cmd, &cifar_flags);

  CommonFlags image_flags;
  datasets::ImageOptions images;
  std::string mode = "passthrough", size;
  CLI::App* images_cmd = app.add_subcommand("images", "Pack an ImageFolder tree or a list file");
  images_cmd->add_option("root", images.root, "ImageFolder root (ROOT/class/file)");
  images_cmd->add_option("--root", images.root, "Root the --list paths are relative to");
  images_cmd->add_option("--list", images.list_file, "Lines of 'relative/path label'");
  images_cmd->add_option("--mode", mode, "passthrough, reencode or raw")
      ->check(CLI::IsMember({"passthrough", "reencode", "raw"}));
  images_cmd->add_option("--max-side", images.max_side, "reencode: longest side at most N");
  images_cmd->add_option("--quality", images.quality, "reencode: JPEG quality")
      ->check(CLI::Range(1, 100));
  images_cmd->add_option("--size", size, "raw: output WxH, e.g. 64x64");
  images_cmd->add_flag("--validate-decode", images.validate_decode,
                       "passthrough: decode every image to catch corrupt data");
  images_cmd->add_flag("--restart-markers", images.restart_markers,
                       "Re-code each JPEG losslessly with a restart marker after every MCU "
                       "(same pixels; the reader's crops then decode only their blocks)");
  AddCommonFlags(images_cmd, &image_flags);

  std::vector<std::string> parts;
  std::string merge_output;
  bool merge_overwrite = false;
  CLI::App* merge_cmd = app.add_subcommand("merge", "Make one dataset of packed parts");
  merge_cmd->add_option("parts", parts, "Part datasets, in order")->required();
  merge_cmd->add_option("-o,--output", merge_output, "Output dataset directory")->required();
  merge_cmd->add_flag("--overwrite", merge_overwrite, "Replace an existing output");
  std::string merge_format;
  merge_cmd->add_option("--format", merge_format,
                        "Backend of the output (default: the parts'; others are converted)")
      ->check(CLI::IsMember({"shard", "lmdb", "hdf5"}));

  std::vector<std::string> convert_inputs;
  std::string convert_format, convert_block = "4MiB", convert_compress = "none";
  pack::ConvertOptions convert;
  CLI::App* convert_cmd =
      app.add_subcommand("convert", "Convert datasets to another backend, record for record");
  convert_cmd->add_option("inputs", convert_inputs,
                          "Dataset directories, or LMDB/HDF5 shard files")->required();
  convert_cmd->add_option("-o,--output", convert.output, "Output dataset directory")->required();
  convert_cmd->add_option("--format", convert_format, "Backend: shard, lmdb or hdf5")
      ->required()
      ->check(CLI::IsMember({"shard", "lmdb", "hdf5"}));
  convert_cmd->add_option("--block-size", convert_block, "Target block size (shard)");
  convert_cmd->add_option("--compress", convert_compress, "none or zstd[:LEVEL] (shard)");
  convert_cmd->add_flag("--overwrite", convert.overwrite, "Replace an existing output");
  convert_cmd->add_flag("-q,--quiet", convert.quiet, "No progress or summary on stderr");

  if (int code = cli::ParseCommandLine(app, argc, argv); code >= 0) return code;

  if (cifar_cmd->parsed()) {
    cifar.layout = *ParseLayout(cifar_layout);
    cifar.on_error = OnErrorOf(cifar_flags);
    return RunPack(cifar_flags, datasets::OpenCifar(cifar));
  }
  if (images_cmd->parsed()) {
    if (images.root.empty()) {
      return cli::Fail(kTool, absl::InvalidArgumentError("images: give ROOT or --list FILE --root DIR"));
    }
    images.mode = mode == "raw" ? datasets::ImageMode::kRaw
                  : mode == "reencode" ? datasets::ImageMode::kReencode
                                       : datasets::ImageMode::kPassthrough;
    if (images.mode == datasets::ImageMode::kRaw) {
      std::vector<std::string> wh = absl::StrSplit(size, 'x');
      if (wh.size() != 2 || !absl::SimpleAtoi(wh[0], &images.raw_width) ||
          !absl::SimpleAtoi(wh[1], &images.raw_height) || images.raw_width == 0 ||
          images.raw_height == 0) {
        return cli::Fail(kTool, absl::InvalidArgumentError("--mode raw needs --size WxH"));
      }
    }
    images.on_error = OnErrorOf(image_flags);
    return RunPack(image_flags, datasets::OpenImages(images));
  }
  if (convert_cmd->parsed()) {
    absl::Status flags =
        ParseShardFlags(convert_format, convert_block, convert_compress, &convert.writer);
    if (!flags.ok()) return cli::Fail(kTool, flags);
    convert.backend = convert.writer.backend;
    auto converted = pack::Convert(convert_inputs, convert);
    if (!converted.ok()) return cli::Fail(kTool, converted.status());
    if (!convert.quiet) {
      std::fprintf(stderr, "converted %llu records into %zu shards (%s)\n",
                   static_cast<unsigned long long>(converted->records()),
                   converted->shards.size(), convert_format.c_str());
    }
    return 0;
  }
  std::optional<Backend> merge_backend;
  if (!merge_format.empty()) merge_backend = backends::ParseBackend(merge_format);
  auto merged = pack::Merge(parts, merge_output, merge_overwrite, merge_backend);
  if (!merged.ok()) return cli::Fail(kTool, merged.status());
  std::fprintf(stderr, "merged %zu parts: %llu records in %zu shards\n", parts.size(),
               static_cast<unsigned long long>(merged->records()), merged->shards.size());
  return 0;
}
