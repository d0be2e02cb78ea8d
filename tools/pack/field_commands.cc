#include "tools/pack/field_commands.h"

#include <cstdio>
#include <limits>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/errors.h"
#include "common/redact.h"
#include "common/status_macros.h"
#include "datasets/coco.h"
#include "datasets/coco_convert.h"
#include "nlohmann/json.hpp"
#include "remote/object_file.h"
#include "remote/object_store.h"
#include "shardpack/file.h"
#include "shardpack/writer.h"
#include "tools/common/cli.h"
#include "tools/common/progress_line.h"
#include "tools/pack/flag_values.h"
#include "writer/compression.h"

namespace shardpack::pack {
namespace {

constexpr char kTool[] = "shardpack";
constexpr uint64_t kMaxU64 = std::numeric_limits<uint64_t>::max();
constexpr size_t kMaxExpanded = 1000000;

void AddWriteFlags(CLI::App* app, WriteFlags* f) {
  AddOutputFlags(app, f);
  app->add_option("--part", f->part, "Write part I of N (1-based), e.g. 3/8; needs --job")
      ->check(CheckPart, "I/N");
  app->add_option("--job", f->job, "With --part: the name of the write, the same in every part");
  app->add_option("--convert-quality", f->convert_quality,
                  "JPEG quality of images stored into a JPEG field from other formats")
      ->transform(cli::WholeNumberIn(1, 100));
}

absl::StatusOr<WriterOptions> ToWriterOptions(const WriteFlags& f, std::string source_json) {
  WriterOptions o;
  o.backend = *ParseBackend(f.format);  // a CLI choice: valid
  if (f.shard_records > 0) {
    o.shard_max_records = f.shard_records;
    o.shard_max_bytes = 0;
  } else {
    SP_ASSIGN_OR_RETURN(o.shard_max_bytes, cli::ParseSize(f.shard_size));
  }
  SP_ASSIGN_OR_RETURN(uint64_t block, cli::ParseSize(f.block_size));
  o.shard.block_size = static_cast<uint32_t>(block);
  absl::Status compress = writer::ParseCompress(f.compress, &o.shard);
  if (!compress.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--compress: ", compress.message()));
  }
  o.overwrite = f.overwrite;
  o.on_error = f.on_error == "fail" ? OnError::kFail : OnError::kSkip;
  if (!f.part.empty()) {
    uint32_t index = 0, count = 0;
    absl::Status part = ParsePart(f.part, &index, &count);
    if (!part.ok()) return absl::InvalidArgumentError(absl::StrCat("--part: ", part.message()));
    o.part = WriterPart{index + 1, count};
    o.job = f.job;
  } else if (!f.job.empty()) {
    return absl::InvalidArgumentError("--job goes with --part");
  }
  o.source_json = std::move(source_json);
  return o;
}

// The summary every converter prints.
void Report(const WriteFlags& f, const Writer& w, const Manifest& m, uint64_t bytes_in,
            double seconds) {
  if (f.json) {
    nlohmann::ordered_json j{{"output", f.output},      {"records", w.records()},
                             {"shards", m.shards.size()}, {"skipped", w.skipped().size()},
                             {"bytes_in", bytes_in},     {"seconds", seconds}};
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
                            .c_str());
  }
  if (f.quiet) return;
  cli::PrintLine(stderr, absl::StrCat("wrote ", w.records(), " records of ", w.fields().size(),
                                      " fields into ", m.shards.size(), " shard",
                                      m.shards.size() == 1 ? "" : "s",
                                      w.skipped().empty() ? "" : absl::StrCat(", ", w.skipped().size(), " skipped"),
                                      ": ", cli::FormatBytes(bytes_in), " in, ",
                                      absl::StrFormat("%.2f s", seconds)));
  if (!w.skipped().empty()) {
    cli::PrintLine(stderr, absl::StrCat("skipped ", w.skipped().size(),
                                        w.skipped().size() == 1 ? " sample" : " samples", ", listed in ",
                                        f.output, "/skipped.tsv"));
  }
  if (f.verbose) {
    for (const Skipped& s : w.skipped()) {
      cli::PrintLine(stderr, absl::StrCat("skipped ", s.path, ": ", s.reason));
    }
  }
}

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Writes a dataset of `fields` to f.output: `convert(writer, progress)`
// offers every sample (progress(bytes) after each), then the writer
// publishes and the summary is printed. `rejected` are samples the input's
// own checks left out, offered first.
int WriteAll(const WriteFlags& f, const WriterOptions& options, std::vector<Field> fields,
             const std::vector<Skipped>& rejected, std::string_view label, uint64_t items,
             std::chrono::steady_clock::time_point start,
             const std::function<absl::Status(Writer*, const std::function<void(uint64_t)>&)>&
                 convert) {
  auto writer = Writer::Create(f.output, std::move(fields), options);
  if (!writer.ok()) return cli::Fail(kTool, writer.status());
  for (const Skipped& s : rejected) {
    absl::Status r = (*writer)->Reject(s.path, absl::InvalidArgumentError(s.reason));
    if (!r.ok()) return cli::Fail(kTool, r);
  }
  cli::ProgressLine progress(std::string(label), 0, items, "samples", !f.quiet);
  uint64_t bytes = 0;
  absl::Status converted = convert(writer->get(), [&](uint64_t total) {
    progress.Add(total - bytes, 1);
    bytes = total;
  });
  auto manifest = converted.ok() ? (*writer)->Finish() : absl::StatusOr<Manifest>(converted);
  progress.Finish();
  if (!manifest.ok()) return cli::Fail(kTool, manifest.status());
  Report(f, **writer, *manifest, bytes, Since(start));
  return 0;
}

int RunWebDataset(FieldCommands& c) {
  const WriteFlags& f = c.webdataset_flags;
  c.wds.tars.clear();
  for (const std::string& pattern : c.tar_patterns) {
    absl::StatusOr<std::vector<std::string>> names = ExpandBraces(pattern);
    if (!names.ok()) return cli::UsageError(kTool, names.status());
    for (std::string& n : *names) {
      // A tar in an object store is opened as the conversion reaches it.
      if (!remote::IsUrl(n)) {
        if (absl::Status s = cli::CheckLocalPath("TAR", n, cli::LocalPath::kInput, "webdataset");
            !s.ok()) {
          return cli::Fail(kTool, s);
        }
        if (absl::Status s = cli::CheckInputExists(n); !s.ok()) return cli::Fail(kTool, s);
      }
      c.wds.tars.push_back(std::move(n));
    }
  }
  c.wds.open = [](const std::string& tar) -> absl::StatusOr<std::unique_ptr<RandomAccessFile>> {
    if (remote::IsUrl(tar)) return remote::OpenObjectUrl(tar, remote::FetchOptions{});
    return OpenMappedFile(tar);
  };
  c.wds.images.jpeg_quality = f.convert_quality;
  // The manifest records where the samples came from, never a secret a
  // URL carried (common/redact.h).
  std::vector<std::string> tars;
  for (const std::string& pattern : c.tar_patterns) tars.push_back(common::RedactUrl(pattern));
  nlohmann::ordered_json source{{"kind", "webdataset"}, {"tars", tars},
                                {"fields", c.wds.fields}, {"drop", c.wds.drop}};
  auto options = ToWriterOptions(f, source.dump());
  if (!options.ok()) return cli::UsageError(kTool, options.status());
  if (absl::Status s = cli::CheckLocalPath("-o", f.output, cli::LocalPath::kOutput); !s.ok()) {
    return cli::Fail(kTool, s);
  }
  const auto start = std::chrono::steady_clock::now();
  auto columns = datasets::InferWebDatasetColumns(c.wds);
  if (!columns.ok()) return cli::Fail(kTool, columns.status());
  std::vector<Field> fields;
  for (const datasets::WebDatasetColumn& col : *columns) fields.push_back(col.field);
  if (f.verbose) {
    for (const datasets::WebDatasetColumn& col : *columns) {
      cli::PrintLine(stderr, absl::StrCat(kTool, ": .", col.ext, " -> field '", col.field.name,
                                          "': ", FieldText(col.field)));
    }
  }
  return WriteAll(f, *options, std::move(fields), {}, "webdataset", 0, start,
                  [&](Writer* w, const std::function<void(uint64_t)>& progress) {
                    datasets::WebDatasetStats stats;
                    return datasets::ConvertWebDataset(
                        c.wds, *columns, w, &stats,
                        [&](const datasets::WebDatasetStats& st) { progress(st.bytes); });
                  });
}

int RunCoco(FieldCommands& c) {
  const WriteFlags& f = c.coco_flags;
  for (const std::string* p : {&c.annotations, &c.image_dir}) {
    if (absl::Status s = cli::CheckLocalPath("INPUT", *p, cli::LocalPath::kInput, "coco"); !s.ok()) {
      return cli::Fail(kTool, s);
    }
    if (absl::Status s = cli::CheckInputExists(*p); !s.ok()) return cli::Fail(kTool, s);
  }
  nlohmann::ordered_json source{{"kind", "coco"}, {"annotations", c.annotations},
                                {"images", c.image_dir}};
  auto options = ToWriterOptions(f, source.dump());
  if (!options.ok()) return cli::UsageError(kTool, options.status());
  if (absl::Status s = cli::CheckLocalPath("-o", f.output, cli::LocalPath::kOutput); !s.ok()) {
    return cli::Fail(kTool, s);
  }
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> text = ReadSmallFile(c.annotations);
  if (!text.ok()) return cli::Fail(kTool, text.status());
  std::vector<Skipped> skipped;
  auto coco = datasets::ParseCoco(*text, c.annotations, options->on_error, &skipped);
  if (!coco.ok()) return cli::Fail(kTool, coco.status());
  text->clear();
  text->shrink_to_fit();
  return WriteAll(f, *options, datasets::CocoFields(*coco), skipped, "coco",
                  coco->images.size(), start,
                  [&](Writer* w, const std::function<void(uint64_t)>& progress) {
                    datasets::CocoStats stats;
                    return datasets::ConvertCoco(
                        *coco, c.image_dir, {.jpeg_quality = f.convert_quality}, w, &stats,
                        [&](const datasets::CocoStats& st) { progress(st.bytes); });
                  });
}

}  // namespace

void AddFieldCommands(CLI::App& app, FieldCommands* c) {
  c->webdataset = app.add_subcommand(
      "webdataset", "Pack WebDataset tar shards into a dataset of fields, one a file extension");
  c->webdataset->add_option("tars", c->tar_patterns,
                            "Tar files, in record order; {000000..000099} ranges are expanded")
      ->required();
  c->webdataset->add_option("--field", c->wds.fields,
                            "EXT=NAME or EXT=NAME:TYPE: an extension's field name and type");
  c->webdataset->add_option("--drop", c->wds.drop, "Leave the files of this extension out");
  c->webdataset->add_option("--infer-samples", c->wds.infer_samples,
                            "Samples of the first tar the fields are inferred from (default 1000)")
      ->transform(cli::WholeNumberIn(1, kMaxU64));
  AddWriteFlags(c->webdataset, &c->webdataset_flags);

  c->coco = app.add_subcommand(
      "coco", "Pack a COCO instances file and its images: image, boxes, category ids, image id");
  c->coco->add_option("annotations", c->annotations, "The instances JSON file")->required();
  c->coco->add_option("images", c->image_dir, "The folder its file_names are relative to")
      ->required();
  AddWriteFlags(c->coco, &c->coco_flags);

  c->parquet = app.add_subcommand(
      "parquet", "Pack Parquet files (Hugging Face datasets' layout): runs in Python, with pyarrow");
  c->parquet->allow_extras();
  c->parquet->prefix_command();
}

int RunFieldCommands(FieldCommands& c, bool verbose) {
  if (c.webdataset->parsed()) {
    c.webdataset_flags.verbose |= verbose;
    return RunWebDataset(c);
  }
  if (c.coco->parsed()) {
    c.coco_flags.verbose |= verbose;
    return RunCoco(c);
  }
  if (c.parquet->parsed()) {
    // A pip install's `shardpack` is a Python launcher that runs this
    // command itself (shardpack/_tools.py); a source build's binary cannot.
    cli::PrintLine(stderr, absl::StrCat(
        kTool, ": parquet runs in Python: pip install the shardpack wheel and pyarrow, then "
               "`shardpack parquet ...`; or, from a source build, `PYTHONPATH=build/python "
               "python3 -m shardpack.parquet ...`"));
    return 1;
  }
  return -1;
}

absl::StatusOr<std::vector<std::string>> ExpandBraces(const std::string& pattern) {
  const size_t open = pattern.find('{');
  if (open == std::string::npos) {
    if (pattern.find('}') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("'", pattern, "': a '}' without its '{'"));
    }
    return std::vector<std::string>{pattern};
  }
  const size_t close = pattern.find('}', open);
  if (close == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("'", pattern, "': a '{' without its '}'"));
  }
  const std::string body = pattern.substr(open + 1, close - open - 1);
  std::vector<std::string> choices;
  const size_t dots = body.find("..");
  if (dots != std::string::npos) {
    const std::string a = body.substr(0, dots), b = body.substr(dots + 2);
    uint64_t lo = 0, hi = 0;
    if (a.empty() || b.empty() || !absl::SimpleAtoi(a, &lo) || !absl::SimpleAtoi(b, &hi) ||
        a.find_first_not_of("0123456789") != std::string::npos ||
        b.find_first_not_of("0123456789") != std::string::npos || hi < lo ||
        hi - lo >= kMaxExpanded) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", pattern, "': {", body, "} is not a range {FIRST..LAST} of at most ",
                       kMaxExpanded, " numbers, FIRST <= LAST"));
    }
    const size_t width = a.size();  // zero padding, as braceexpand pads
    for (uint64_t v = lo; v <= hi; ++v) {
      std::string digits = absl::StrCat(v);
      if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
      choices.push_back(std::move(digits));
    }
  } else {
    choices = absl::StrSplit(body, ',');
  }
  SP_ASSIGN_OR_RETURN(std::vector<std::string> rests, ExpandBraces(pattern.substr(close + 1)));
  if (choices.size() * rests.size() > kMaxExpanded) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", pattern, "': more than ", kMaxExpanded, " names"));
  }
  std::vector<std::string> out;
  for (const std::string& choice : choices) {
    for (const std::string& rest : rests) {
      out.push_back(absl::StrCat(pattern.substr(0, open), choice, rest));
    }
  }
  return out;
}

}  // namespace shardpack::pack
