// shardpack: image folders, list files and CIFAR-10/100 binaries into sharded
// datasets (.shard, LMDB or HDF5); merge parts, convert between backends.
//
//   shardpack cifar INPUT... -o OUT [--cifar 10|100] [--split train|test] ...
//   shardpack images ROOT -o OUT [--mode passthrough|reencode|raw] ...
//   shardpack images --list FILE --root DIR -o OUT ...
//   shardpack merge PART... -o OUT [--format shard|lmdb|hdf5] [--check]
//   shardpack convert INPUT... -o OUT --format shard|lmdb|hdf5
//   shardpack index DATASET
//   shardpack webdataset TAR... -o OUT [--field EXT=NAME[:TYPE]] [--drop EXT]
//   shardpack coco INSTANCES.json IMAGE_DIR -o OUT
//   shardpack parquet FILE... -o OUT   (in Python: shardpack/parquet.py)
//
// docs/cli.md documents every flag.
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "backends/store.h"
#include "codec/jpeg_probe.h"
#include "common/status_macros.h"
#include "datasets/cifar.h"
#include "datasets/images.h"
#include "nlohmann/json.hpp"
#include "shardpack/manifest.h"
#include "shardpack/writer.h"
#include "tools/common/cli.h"
#include "tools/pack/field_commands.h"
#include "tools/pack/flag_values.h"
#include "tools/pack/output_flags.h"
#include "tools/pack/pack.h"
#include "tools/pack/path_overlap.h"
#include "tools/pack/scheduler_part.h"
#include "writer/compression.h"

namespace shardpack {
namespace {

// --format's choices: the backends' own names (BackendName), listed once.
std::vector<std::string> BackendNames() {
  std::vector<std::string> names;
  for (Backend b : kBackends) names.emplace_back(BackendName(b));
  return names;
}

constexpr char kTool[] = "shardpack";

// Flags shared by the packing commands, as typed: those of every command
// that writes a dataset, and the packer's own.
struct CommonFlags : pack::OutputFlags {
  bool shuffle = true;
  uint64_t seed = 0;
  int threads = 0;
  std::string part;    // "" (1/1, not a part), "I/N" or "auto"
  uint64_t parts = 0;  // --parts, with --part auto; 0: not given
};

constexpr uint64_t kMaxU64 = std::numeric_limits<uint64_t>::max();

// -v, --verbose: each command takes it, and so does shardpack before the
// command (docs/cli.md lists it among the flags every tool has).
void AddVerbose(CLI::App* app, bool* verbose) {
  app->add_flag("-v,--verbose", *verbose, "More detail on stderr");
}

void AddCommonFlags(CLI::App* app, CommonFlags* f) {
  pack::AddOutputFlags(app, f);
  app->add_flag("--shuffle,!--no-shuffle", f->shuffle, "Pack-time permutation (default on)");
  app->add_option("--seed", f->seed, "Seed of the pack-time permutation")
      ->transform(cli::WholeNumberIn(0, kMaxU64));
  app->add_option("--threads", f->threads, "Worker threads (default 0: all cores)")
      ->transform(cli::WholeNumberIn(0, cli::kMaxThreads));
  app->add_option("--part", f->part,
                  "Pack part I of N (1-based), e.g. 3/8; auto: from the scheduler's variables")
      ->check(pack::CheckPart, "I/N or auto");
  app->add_option("--parts", f->parts, "With --part auto: the number of parts (Kubernetes)")
      ->transform(cli::WholeNumberIn(1, kMaxParts));
}

datasets::OnError OnErrorOf(const CommonFlags& f) {
  return f.on_error == "fail" ? datasets::OnError::kFail : datasets::OnError::kSkip;
}

// --block-size and --compress into `w`; they apply to .shard output only.
absl::Status ParseShardFlags(const std::string& format, const std::string& block_size,
                             const std::string& compress_flag, DatasetWriterOptions* w) {
  SP_ASSIGN_OR_RETURN(uint64_t block, cli::ParseSize(block_size));
  if (block == 0 || block > kMaxBlockSize) {
    return absl::InvalidArgumentError("--block-size must be between 1 byte and 1 GiB");
  }
  w->shard.block_size = static_cast<uint32_t>(block);
  absl::Status compress = writer::ParseCompress(compress_flag, &w->shard);
  if (!compress.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--compress: ", compress.message()));
  }
  if (format != "shard" && compress_flag != "none") {
    return absl::InvalidArgumentError(
        absl::StrCat("--compress applies to --format shard only, not ", format));
  }
  backends::UseBackend(w, *ParseBackend(format));  // a CLI choice: valid
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
  if (f.parts != 0 && f.part != "auto") {
    return absl::InvalidArgumentError("--parts goes with --part auto");
  }
  if (!f.part.empty() && f.part != "auto") {
    absl::Status part = pack::ParsePart(f.part, &o.part_index, &o.part_count);
    if (!part.ok()) return absl::InvalidArgumentError(absl::StrCat("--part: ", part.message()));
  }
  // A part (of a job array) may be retried: its own earlier output goes.
  o.retry_replaces = !f.part.empty();
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
  uint64_t converted = 0;
  std::string by_format;  // "2 PNG, 1 WebP"
  for (const auto& [format, n] : s.converted) {
    converted += n;
    absl::StrAppend(&by_format, by_format.empty() ? "" : ", ", n, " ", format);
  }
  if (f.json) {
    nlohmann::ordered_json j{{"output", f.output},         {"records", s.records},
                             {"classes", s.classes},       {"shards", s.shards},
                             {"skipped", s.skipped},       {"left_out", s.left_out},
                             {"converted", converted},     {"converted_from", s.converted},
                             {"bytes_in", s.bytes_in},     {"bytes_out", s.bytes_out},
                             {"seconds", s.seconds}};
    // Paths may be any bytes: invalid UTF-8 becomes U+FFFD, as in every
    // JSON document the tools print.
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
                            .c_str());
  }
  if (f.quiet) return;
  // Converted and skipped inputs are counted on the summary line itself: a
  // folder of mixed formats never packs to fewer records in silence.
  std::string counts;
  if (converted > 0) absl::StrAppend(&counts, ", ", converted, " converted (", by_format, ")");
  if (s.skipped > 0) absl::StrAppend(&counts, ", ", s.skipped, " skipped");
  std::fprintf(stderr,
               "packed %llu records (%zu classes) into %zu shard%s%s: %s in, %s out, %.2f s\n",
               static_cast<unsigned long long>(s.records), s.classes, s.shards,
               s.shards == 1 ? "" : "s", counts.c_str(), cli::FormatBytes(s.bytes_in).c_str(),
               cli::FormatBytes(s.bytes_out).c_str(), s.seconds);
  if (s.skipped > 0) {
    cli::PrintLine(stderr, absl::StrCat("skipped ", s.skipped, " input", s.skipped == 1 ? "" : "s",
                                        ", listed in ", f.output, "/skipped.tsv"));
  }
}

// The first of `paths` that is missing, in the words every tool uses.
absl::Status CheckInputsExist(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) SP_RETURN_IF_ERROR(cli::CheckInputExists(path));
  return absl::OkStatus();
}

// Packs the source that `open_source` returns, after the flags are checked (a bad
// value is a usage error) and the output is known to lie apart from
// `inputs`, so that a folder walk never meets the output.
int RunPack(const CommonFlags& f, const std::vector<pack::InputPath>& inputs,
            const std::function<absl::StatusOr<std::unique_ptr<datasets::Source>>()>&
                open_source) {
  auto options = ToPackOptions(f);
  if (!options.ok()) return cli::UsageError(kTool, options.status());
  absl::Status local = cli::CheckLocalPath("-o", f.output, cli::LocalPath::kOutput);
  if (!local.ok()) return cli::Fail(kTool, local);
  if (f.part == "auto") {
    // The environment is read once the flags are known good; a bad value
    // there is a failure (exit 1) naming the variable, not a usage error.
    std::optional<uint64_t> parts;
    if (f.parts != 0) parts = f.parts;
    auto part = pack::PartFromScheduler(parts);
    if (!part.ok()) return cli::Fail(kTool, part.status());
    options->part_index = part->index;
    options->part_count = part->count;
    if (f.verbose) {
      cli::PrintLine(stderr, absl::StrCat(kTool, ": part ", part->index + 1, " of ", part->count,
                                          " (", part->source, ")"));
    }
  }
  for (const pack::InputPath& input : inputs) {
    if (absl::Status s = cli::CheckInputExists(input.path); !s.ok()) return cli::Fail(kTool, s);
  }
  absl::Status apart = pack::CheckOutputApartFromInputs(f.output, inputs);
  if (!apart.ok()) return cli::Fail(kTool, apart);
  auto source = open_source();
  if (!source.ok()) return cli::Fail(kTool, source.status());
  if (!f.quiet) {
    for (const datasets::Skipped& p : (*source)->open_problems()) {
      cli::PrintLine(stderr, absl::StrCat(kTool, ": warning: ", p.path, ": ", p.reason));
    }
  }
  if (f.verbose) {
    cli::PrintLine(stderr, absl::StrCat(kTool, ": ", (*source)->size(), " inputs into ", f.output,
                                        " (built in ", f.output, ".partial), format ", f.format));
  }
  auto summary = pack::Pack(**source, *options);
  if (!summary.ok()) return cli::Fail(kTool, summary.status());
  Report(f, *summary);
  if (f.verbose) {
    for (const datasets::Skipped& s : summary->skipped_inputs) {
      cli::PrintLine(stderr, absl::StrCat("skipped ", s.path, ": ", s.reason));
    }
  }
  return 0;
}

struct CifarCommand {
  CommonFlags flags;
  datasets::CifarOptions cifar;
  std::string layout = "hwc";
};

CLI::App* AddCifarCommand(CLI::App& app, CifarCommand* c) {
  CLI::App* cmd = app.add_subcommand("cifar", "Pack CIFAR-10/100 binary files");
  cmd->add_option("inputs", c->cifar.inputs, "Binary files or the extracted folder")->required();
  cmd->add_option("--cifar", c->cifar.variant, "10 or 100 (default: detect)")
      ->check(CLI::IsMember({10, 100}));
  cmd->add_option("--split", c->cifar.split, "train or test, for a folder input")
      ->check(CLI::IsMember({"train", "test"}));
  cmd->add_option("--layout", c->layout, "Stored pixel order: hwc or chw")
      ->check(CLI::IsMember({"hwc", "chw"}));
  cmd->add_option("--pad", c->cifar.pad, "Store images zero-padded by N on each side")
      ->transform(cli::WholeNumberIn(0, 64));
  AddCommonFlags(cmd, &c->flags);
  return cmd;
}

int RunCifar(CifarCommand& c) {
  c.cifar.layout = *ParseLayout(c.layout);  // a CLI choice: valid
  c.cifar.on_error = OnErrorOf(c.flags);
  std::vector<pack::InputPath> inputs;
  for (const std::string& input : c.cifar.inputs) {
    absl::Status local = cli::CheckLocalPath("INPUT", input, cli::LocalPath::kInput, "cifar");
    if (!local.ok()) return cli::Fail(kTool, local);
    inputs.push_back({input});
  }
  return RunPack(c.flags, inputs, [&] { return datasets::OpenCifar(c.cifar); });
}

struct ImagesCommand {
  CommonFlags flags;
  datasets::ImageOptions images;
  std::string root_arg, root_flag;
  std::string mode = "passthrough", size, non_jpeg = "convert";
  CLI::Option* quality = nullptr;
  CLI::Option* max_side = nullptr;
};

CLI::App* AddImagesCommand(CLI::App& app, ImagesCommand* c) {
  CLI::App* cmd = app.add_subcommand("images", "Pack an ImageFolder tree or a list file");
  datasets::ImageOptions& images = c->images;
  cmd->add_option("root", c->root_arg, "ImageFolder root (ROOT/class/file), or the --list root");
  CLI::Option* list = cmd->add_option("--list", images.list_file, "Lines of 'relative/path label'");
  cmd->add_option("--root", c->root_flag, "Folder the --list paths are relative to")->needs(list);
  cmd->add_option("--mode", c->mode, "passthrough, reencode or raw")
      ->check(CLI::IsMember({"passthrough", "reencode", "raw"}));
  c->max_side = cmd->add_option("--max-side", images.max_side, "reencode: longest side at most N")
                    ->transform(cli::WholeNumberIn(0, codec::kMaxJpegSide));
  c->quality = cmd->add_option("--quality", images.quality,
                               "JPEG quality: reencode (default 90), and passthrough's "
                               "converted non-JPEG inputs (default 100)")
                   ->transform(cli::WholeNumberIn(1, 100));
  cmd->add_option("--non-jpeg", c->non_jpeg,
                  "passthrough: convert (default; PNG, WebP, BMP, TIFF, PNM stored as JPEG "
                  "4:4:4) or skip (listed in skipped.tsv) inputs that are not JPEG by content")
      ->check(CLI::IsMember({"convert", "skip"}));
  cmd->add_option("--size", c->size, "raw: output WxH, e.g. 64x64")
      ->check(pack::CheckRawSize, "WxH");
  cmd->add_flag("--validate-decode", images.validate_decode,
                "passthrough: decode every image to catch corrupt data");
  cmd->add_flag("--restart-markers", images.restart_markers,
                "Re-code each JPEG losslessly with a restart marker after every MCU "
                "(same pixels; the reader's crops then decode only their blocks)");
  AddCommonFlags(cmd, &c->flags);
  return cmd;
}

// The image options the flags ask for; InvalidArgumentError (a usage
// error) for flags that do not go together.
absl::Status ResolveImageFlags(ImagesCommand& c) {
  datasets::ImageOptions& images = c.images;
  if (!c.root_arg.empty() && !c.root_flag.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("images: the list's root given twice (ROOT ",
                                                   c.root_arg, " and --root ", c.root_flag,
                                                   "): give it once"));
  }
  images.root = c.root_arg.empty() ? c.root_flag : c.root_arg;
  if (images.root.empty()) {
    return absl::InvalidArgumentError("images: give ROOT, or --list FILE --root DIR");
  }
  images.mode = c.mode == "raw"        ? datasets::ImageMode::kRaw
                : c.mode == "reencode" ? datasets::ImageMode::kReencode
                                       : datasets::ImageMode::kPassthrough;
  if (images.mode == datasets::ImageMode::kRaw) {
    if (images.restart_markers) {
      return absl::InvalidArgumentError(
          "images: raw mode stores pixels: restart markers do not apply");
    }
    if (c.size.empty()) {
      return absl::InvalidArgumentError("--mode raw needs --size WxH, e.g. 64x64");
    }
    absl::Status size = pack::ParseRawSize(c.size, &images.raw_width, &images.raw_height);
    if (!size.ok()) return absl::InvalidArgumentError(absl::StrCat("--size: ", size.message()));
  } else if (!c.size.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("images: --size is for --mode raw, not ", c.mode));
  }
  if (images.mode != datasets::ImageMode::kReencode && c.max_side->count() > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("images: --max-side is for --mode reencode, not ", c.mode));
  }
  images.non_jpeg =
      c.non_jpeg == "skip" ? datasets::NonJpeg::kSkip : datasets::NonJpeg::kConvert;
  if (c.quality->count() > 0) images.convert_quality = images.quality;
  if (images.mode != datasets::ImageMode::kPassthrough && c.non_jpeg == "skip") {
    return absl::InvalidArgumentError(
        "images: --non-jpeg skip is for passthrough; reencode and raw decode every format");
  }
  images.on_error = OnErrorOf(c.flags);
  return absl::OkStatus();
}

int RunImages(ImagesCommand& c) {
  absl::Status flags = ResolveImageFlags(c);
  if (!flags.ok()) return cli::UsageError(kTool, flags);
  for (absl::Status local :
       {cli::CheckLocalPath(c.root_arg.empty() ? "--root" : "ROOT", c.images.root,
                            cli::LocalPath::kInput, "images"),
        cli::CheckLocalPath("--list", c.images.list_file, cli::LocalPath::kInput, "images")}) {
    if (!local.ok()) return cli::Fail(kTool, local);
  }
  std::vector<pack::InputPath> inputs;
  if (c.images.list_file.empty()) {
    inputs.push_back({c.images.root});  // walked: the output must not lie inside
  } else {
    inputs.push_back({c.images.list_file});
    inputs.push_back({c.images.root, /*output_may_be_inside=*/true});
  }
  return RunPack(c.flags, inputs, [&] { return datasets::OpenImages(c.images); });
}

struct MergeCommand {
  std::vector<std::string> parts;
  std::string output, format;
  bool overwrite = false;
  bool check = false;
  bool verbose = false;
  uint64_t count = 0;  // --count; 0: not given
};

CLI::App* AddMergeCommand(CLI::App& app, MergeCommand* c) {
  CLI::App* cmd = app.add_subcommand("merge", "Make one dataset of packed parts");
  cmd->add_option("parts", c->parts, "Part datasets, in any order")->required();
  cmd->add_option("-o,--output", c->output, "Output dataset directory (not with --check)");
  cmd->add_flag("--check", c->check, "Check that the parts make one pack; write nothing");
  cmd->add_flag("--overwrite", c->overwrite,
                "Replace an existing output (only a dataset shardpack wrote, or an empty folder)");
  cmd->add_option("--format", c->format,
                  "Backend of the output (default: the parts'; others are converted)")
      ->check(CLI::IsMember(BackendNames()));
  cmd->add_option("--count", c->count,
                  "N, the number of parts: needed for parts written with an open count "
                  "(a Ray Data write); for others, checked against theirs")
      ->check(CLI::Range(uint64_t{1}, kMaxParts));
  AddVerbose(cmd, &c->verbose);
  return cmd;
}

int RunMerge(const MergeCommand& c) {
  if (c.output.empty() && !c.check) {
    return cli::UsageError(kTool, absl::InvalidArgumentError("merge: -o OUT is required"));
  }
  if (c.check && !c.output.empty()) {
    return cli::UsageError(kTool,
                           absl::InvalidArgumentError("merge --check writes nothing: give no -o"));
  }
  absl::Status local = cli::CheckLocalPath("-o", c.output, cli::LocalPath::kOutput);
  for (size_t i = 0; local.ok() && i < c.parts.size(); ++i) {
    local = cli::CheckLocalPath("PART", c.parts[i], cli::LocalPath::kInput, "merge");
  }
  if (!local.ok()) return cli::Fail(kTool, local);
  if (absl::Status s = CheckInputsExist(c.parts); !s.ok()) return cli::Fail(kTool, s);
  pack::MergeOptions o;
  o.output = c.output;
  o.overwrite = c.overwrite;
  o.check_only = c.check;
  if (c.count != 0) o.count = c.count;
  if (!c.format.empty()) o.backend = *ParseBackend(c.format);  // a CLI choice: valid
  if (c.verbose) {
    cli::PrintLine(stderr, absl::StrCat(kTool, ": ", c.check ? "checking " : "merging ",
                                        c.parts.size(), " parts", c.check ? "" : " into ",
                                        c.output));
  }
  auto merged = pack::Merge(c.parts, o);
  if (!merged.ok()) return cli::Fail(kTool, merged.status());
  // The fingerprint is the parts' manifests' text, whatever they hold.
  // A Writer's parts have a job where a pack's have an input.
  const std::string of =
      merged->fingerprint.empty() && !merged->job.empty()
          ? absl::StrCat(" parts of one write (job ", merged->job, "): ")
          : absl::StrCat(" parts of one pack (input ", merged->fingerprint, "): ");
  cli::PrintLine(stderr, absl::StrCat(c.check ? "checked " : "merged ", merged->parts, of,
                                      merged->records, " records in ", merged->shards, " shards"));
  return 0;
}

struct ConvertCommand {
  std::vector<std::string> inputs;
  std::string format, block = "4MiB", compress = "none";
  pack::ConvertOptions options;
  bool verbose = false;
};

CLI::App* AddConvertCommand(CLI::App& app, ConvertCommand* c) {
  CLI::App* cmd =
      app.add_subcommand("convert", "Convert datasets to another backend, record for record");
  cmd->add_option("inputs", c->inputs, "Dataset directories, or LMDB/HDF5 shard files")
      ->required();
  cmd->add_option("-o,--output", c->options.output, "Output dataset directory")->required();
  cmd->add_option("--format", c->format, "Backend: shard, lmdb or hdf5")
      ->required()
      ->check(CLI::IsMember(BackendNames()));
  cmd->add_option("--block-size", c->block, "Target block size (shard)")
      ->check(cli::SizeIn(1, kMaxBlockSize));
  cmd->add_option("--compress", c->compress, "none or zstd[:LEVEL] (shard)")
      ->check(pack::CheckCompress, "none|zstd[:LEVEL]");
  cmd->add_flag("--overwrite", c->options.overwrite,
                "Replace an existing output (only a dataset shardpack wrote, or an empty folder)");
  cmd->add_flag("-q,--quiet", c->options.quiet, "No progress or summary on stderr");
  AddVerbose(cmd, &c->verbose);
  return cmd;
}

int RunConvert(ConvertCommand& c) {
  absl::Status flags = ParseShardFlags(c.format, c.block, c.compress, &c.options.writer);
  if (!flags.ok()) return cli::UsageError(kTool, flags);
  c.options.backend = c.options.writer.backend;
  absl::Status local = cli::CheckLocalPath("-o", c.options.output, cli::LocalPath::kOutput);
  if (!local.ok()) return cli::Fail(kTool, local);
  if (absl::Status s = CheckInputsExist(c.inputs); !s.ok()) return cli::Fail(kTool, s);
  if (c.verbose) {
    cli::PrintLine(stderr, absl::StrCat(kTool, ": converting ", c.inputs.size(), " inputs into ",
                                        c.options.output, ", format ", c.format));
  }
  auto converted = pack::Convert(c.inputs, c.options);
  if (!converted.ok()) return cli::Fail(kTool, converted.status());
  if (!c.options.quiet) {
    std::fprintf(stderr, "converted %llu records into %zu shards (%s)\n",
                 static_cast<unsigned long long>(converted->records()),
                 converted->shards.size(), c.format.c_str());
  }
  return 0;
}

struct IndexCommand {
  std::string path;
  bool quiet = false;
};

CLI::App* AddIndexCommand(CLI::App& app, IndexCommand* c) {
  CLI::App* cmd = app.add_subcommand(
      "index", "Write a dataset's record table (records by key), by one scan of its records");
  cmd->add_option("dataset", c->path, "Dataset directory or its manifest.json")->required();
  cmd->add_flag("-q,--quiet", c->quiet, "No summary on stderr");
  return cmd;
}

int RunIndex(const IndexCommand& c) {
  // The record table is written into the dataset's own folder.
  absl::Status local = cli::CheckLocalPath("DATASET", c.path, cli::LocalPath::kInput, "index");
  if (!local.ok()) return cli::Fail(kTool, local);
  if (absl::Status s = cli::CheckInputExists(c.path); !s.ok()) return cli::Fail(kTool, s);
  auto indexed = pack::Index(c.path);
  if (!indexed.ok()) return cli::Fail(kTool, indexed.status());
  if (!c.quiet) {
    cli::PrintLine(stderr, absl::StrCat(indexed->had_table ? "rebuilt " : "wrote ",
                                        indexed->entry.path, ": ", indexed->records,
                                        " records, ", indexed->entry.bytes, " bytes"));
  }
  return 0;
}

}  // namespace
}  // namespace shardpack

int main(int argc, char** argv) {
  using namespace shardpack;
  CLI::App app{
      "shardpack: pack image folders, list files, CIFAR binaries, WebDataset tars, COCO and "
      "Parquet into sharded datasets (.shard, LMDB, HDF5)"};
  cli::AddVersionFlag(app, kTool);
  app.require_subcommand(1);
  bool verbose = false;  // -v before the command
  AddVerbose(&app, &verbose);

  CifarCommand cifar;
  CLI::App* cifar_cmd = AddCifarCommand(app, &cifar);
  ImagesCommand images;
  CLI::App* images_cmd = AddImagesCommand(app, &images);
  MergeCommand merge;
  CLI::App* merge_cmd = AddMergeCommand(app, &merge);
  ConvertCommand convert;
  CLI::App* convert_cmd = AddConvertCommand(app, &convert);
  IndexCommand index;
  CLI::App* index_cmd = AddIndexCommand(app, &index);
  pack::FieldCommands fields;
  pack::AddFieldCommands(app, &fields);

  if (int code = cli::ParseCommandLine(kTool, app, argc, argv); code >= 0) return code;
  cifar.flags.verbose |= verbose;
  images.flags.verbose |= verbose;
  merge.verbose |= verbose;
  convert.verbose |= verbose;
  return cli::RunMain(kTool, [&] {
    if (cifar_cmd->parsed()) return RunCifar(cifar);
    if (images_cmd->parsed()) return RunImages(images);
    if (convert_cmd->parsed()) return RunConvert(convert);
    if (merge_cmd->parsed()) return RunMerge(merge);
    if (index_cmd->parsed()) return RunIndex(index);
    if (int code = pack::RunFieldCommands(fields, verbose); code >= 0) return code;
    return cli::kExitUsage;  // not reached: CLI11 requires one command
  });
}
