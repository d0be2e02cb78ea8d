#include "tools/bench/flags.h"

#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "codec/contact_sheet.h"
#include "common/size.h"
#include "common/status_macros.h"
#include "reader/option_table.h"
#include "tools/common/cli.h"

namespace shardpack::shardbench {
namespace {

constexpr uint64_t kMaxInt = std::numeric_limits<int>::max();
constexpr double kMaxSeconds = 365 * 24 * 3600;  // a year: past that, a typo
// --shuffle-bytes and --read-ahead: a pebibyte each, past any machine's
// memory, and their sum (the reader's memory budget) far from wrapping.
constexpr uint64_t kMaxBufferBytes = uint64_t{1} << 50;

// The range of a reader option's flag, as its row of the reader's option
// table says (reader/option_table.h); the automatic value is the flag left out.
CLI::Validator RangeOf(std::string_view option) {
  const reader::OptionSpec& s = reader::FindOption(option);
  return cli::WholeNumberIn(static_cast<uint64_t>(s.lo), static_cast<uint64_t>(s.hi));
}

// CLI11 validators: an empty string accepts, anything else is the message.
// ParseTransform refuses a SIZE past kMaxTransformSize, so a usage error
// says so before any file is read.
std::string CheckTransform(const std::string& text) {
  if (ParseTransform(text).ok()) return "";
  return absl::StrCat("'", text,
                      "' is not a transform: none, cifar-train[:SIZE], cifar-eval[:SIZE], "
                      "rrc[:SIZE] or center[:SIZE], SIZE a whole number from 1 (at most ",
                      kMaxTransformSize, " for rrc and center, as for every transform)");
}

std::string CheckIo(const std::string& text) {
  auto e = ParseIoEngine(text);
  return e.ok() ? "" : std::string(e.status().message());
}

std::string CheckSource(const std::string& text) {
  auto s = ParseSource(text);
  return s.ok() ? "" : std::string(s.status().message());
}

std::string CheckLabelSpace(const std::string& text) {
  auto l = ParseLabelSpace(text);
  return l.ok() ? "" : std::string(l.status().message());
}

// --source, --epoch-samples and --label-space into `r`: a mixture, or
// nothing for PATH.
absl::Status SetSources(const Flags& f, ReaderOptions* r) {
  if (f.path.empty() == f.sources.empty()) {
    return absl::InvalidArgumentError(
        f.path.empty() ? "name a dataset: PATH, or --source for each dataset of a mixture"
                       : "PATH or --source: a run reads one dataset or a mixture, not both");
  }
  if (f.sources.empty()) {
    if (f.epoch_samples != 0 || f.label_space != "shared") {
      return absl::InvalidArgumentError("--epoch-samples and --label-space need --source");
    }
    return absl::OkStatus();
  }
  for (const std::string& text : f.sources) {
    SP_ASSIGN_OR_RETURN(MixSource m, ParseSource(text));
    r->sources.push_back(std::move(m));
  }
  r->epoch_samples = f.epoch_samples;
  SP_ASSIGN_OR_RETURN(r->label_space, ParseLabelSpace(f.label_space));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MixSource> ParseSource(const std::string& text) {
  MixSource m;
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || text.find('=', colon) == std::string::npos) {
    m.path = text;
    m.repeat = 1;
    return m;
  }
  m.path = text.substr(0, colon);
  const std::string count = text.substr(colon + 1);
  const std::string key = count.substr(0, count.find('='));
  const std::string value = count.substr(key.size() + 1);
  const std::string where = absl::StrCat("'", text, "'");
  if (m.path.empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": no PATH"));
  if (key == "choose") {
    const std::optional<uint64_t> n =
        common::ParseWholeNumber(value, 1, std::numeric_limits<uint64_t>::max());
    if (!n) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": choose '", value, "' is not a whole number in 1..2^64-1"));
    }
    m.choose = *n;
    return m;
  }
  if (key != "weight" && key != "repeat") {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": unknown key '", key, "' (PATH:weight=W, PATH:repeat=R or PATH:choose=N)"));
  }
  const double max = key == "repeat" ? kMaxMixRepeat : std::numeric_limits<double>::max();
  double v = 0;
  if (!absl::SimpleAtod(value, &v) || !(v > 0 && v <= max)) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": ", key, " '", value, "' is not ",
        key == "repeat" ? absl::StrCat("a number above 0 and at most ", kMaxMixRepeat)
                        : "a finite number above 0"));
  }
  (key == "weight" ? m.weight : m.repeat) = v;
  return m;
}

void AddFlags(CLI::App* app, Flags* f) {
  app->add_option("PATH", f->path,
                  "Dataset directory, a single .shard file, a view, or a dataset in an object "
                  "store: s3://bucket/prefix/ or https://host/path/ (or --source)");
  app->add_option("--source", f->sources,
                  "A dataset of a mixture, in place of PATH, repeated: PATH:weight=W, "
                  "PATH:repeat=R, PATH:choose=N, or PATH (repeat=1)")
      ->check(CheckSource, "SOURCE");
  app->add_option("--epoch-samples", f->epoch_samples,
                  "With --source: samples a mixture epoch draws, all ranks together, for the "
                  "weighted sources to share (default 0: the sources' records)")
      ->transform(cli::WholeNumberIn(0, std::numeric_limits<uint64_t>::max()));
  app->add_option("--label-space", f->label_space,
                  "With --source: shared, offset or source (default shared)")
      ->check(CheckLabelSpace, "SPACE");
  app->add_option("--batch-size", f->batch_size, "Samples per batch (default 256)")
      ->transform(RangeOf("batch_size"));
  app->add_option("--threads", f->threads, "Transform worker threads (default 0: all cores)")
      ->transform(RangeOf("threads"));
  app->add_option("--transform", f->transform,
                  "none, cifar-train[:SIZE], cifar-eval[:SIZE], rrc[:SIZE] or center[:SIZE] "
                  "(default none)")
      ->check(CheckTransform, "TRANSFORM");
  app->add_option("--io", f->io, "I/O engine: auto, pread, direct, mmap, uring (default auto)")
      ->check(CheckIo, "ENGINE");
  CLI::Option* epochs =
      app->add_option("--epochs", f->epochs, "Stream this many epochs (default 1)")
          ->transform(cli::WholeNumberIn(1, kMaxInt));
  CLI::Option* seconds =
      app->add_option("--seconds", f->seconds, "Stream for this many seconds instead")
          ->transform(cli::RealAboveUpTo(0, kMaxSeconds));
  epochs->excludes(seconds);
  CLI::Option* rank = app->add_option("--rank", f->rank, "This process's rank (default $RANK or 0)")
                          ->transform(cli::WholeNumberIn(0, kMaxInt - 1));
  CLI::Option* world =
      app->add_option("--world-size", f->world_size, "Number of ranks (default $WORLD_SIZE or 1)")
          ->transform(cli::WholeNumberIn(1, kMaxInt));
  rank->needs(world);
  world->needs(rank);
  app->add_option("--seed", f->seed, "Seed of the shuffle and the augmentation (default 0)")
      ->transform(cli::WholeNumberIn(0, std::numeric_limits<uint64_t>::max()));
  app->add_flag("--shuffle,!--no-shuffle", f->shuffle, "Shuffle (default on)");
  // Empty values are refused: "" would read as the default, silently.
  app->add_option("--cache-dir", f->cache_dir,
                  "A dataset in an object store (s3://, https://): its local cache's folder "
                  "(default SHARDPACK_CACHE_DIR, else ~/.cache/shardpack)")
      ->check(
          [](const std::string& dir) -> std::string {
            return dir.empty() ? "'' is not a folder (leave the flag out for the default)" : "";
          },
          "DIR");
  app->add_option("--cache-bytes", f->cache_bytes,
                  "A dataset in an object store: the cache's budget, e.g. 10GiB; 0 keeps nothing "
                  "(default SHARDPACK_CACHE_BYTES, else 16GiB)")
      ->check(cli::SizeIn(0, std::numeric_limits<uint64_t>::max()));
  app->add_option("--shuffle-bytes", f->shuffle_bytes,
                  "Bytes of blocks held for the shuffle (default 0: chosen, the dataset whole "
                  "up to 256MiB a rank, else 32MiB)")
      ->check(cli::SizeIn(0, kMaxBufferBytes));
  app->add_option("--read-ahead", f->read_ahead, "Bytes of reads in flight (default 32MiB)")
      ->check(cli::SizeIn(0, kMaxBufferBytes));
  app->add_option("--ring-slots", f->ring_slots,
                  "Batches in flight (default: 4, up to threads + 4 for small batches)")
      ->transform(RangeOf("ring_slots"));
  app->add_option("--warmup", f->warmup,
                  "Batches left out of the steady figures, as the torchvision peers' --warmup "
                  "(default 5)")
      ->transform(cli::WholeNumberIn(0, kMaxInt));
  app->add_option("--layout", f->layout, "Output layout: nhwc or nchw (default nhwc)");
  app->add_option("--dtype", f->dtype, "Output type: uint8 or float32 (default uint8)");
  app->add_option("--device", f->device,
                  "Stage batches to this CUDA device, as a training loop would (default: none; "
                  "without CUDA the batches stay on the host and shardbench says why)")
      ->transform(cli::WholeNumberIn(0, 1 << 16));
  app->add_option("--device-dtype", f->device_dtype,
                  "With --device: as-host, or float32 / float16 made on the device from uint8 "
                  "(default as-host)");
  app->add_option("--device-buffers", f->device_buffers,
                  "With --device: device buffers in the staging ring, 2..1024 (default: the "
                  "reader's choice, 3 or up to 16 for small batches)")
      ->transform(RangeOf("device_buffers"));
  app->add_option("--fields", f->fields,
                  "The fields a batch delivers, separated by commas (default: all; a dataset "
                  "of any fields, docs/reader.md)");
  app->add_option("--image-fields", f->image_fields,
                  "The image fields the transform applies to, separated by commas, each NAME, "
                  "NAME:linear or NAME:nearest; the first leads, the others take its crop "
                  "(default: the first image field)");
  app->add_flag("--json", f->json, "Print one JSON object on stdout");
  app->add_option("--order-out", f->order_out,
                  "Write 'epoch batch slot record_index label' per sample to FILE "
                  "(costs time: not for speed runs)");
  app->add_option("--save-batch", f->save_batch,
                  "Write the first batch, as transformed, as a contact sheet FILE.png or FILE.jpg");
  app->add_flag("--overwrite", f->overwrite,
                "--order-out and --save-batch may replace a file already there (else refused)");
  app->add_flag("--compare-raw", f->compare_raw,
                "Also read the shard files raw (4 MiB preads, O_DIRECT with --io direct)");
  app->add_flag("--compare-memcpy", f->compare_memcpy,
                "Also memcpy the records' stored pixels in the reader's order into batch slots "
                "(raw-image datasets; loads the whole dataset)");
  app->add_flag("--drop-caches", f->drop_caches,
                "posix_fadvise(DONTNEED) every shard file before the run (and the raw read)");
  app->add_flag("-q,--quiet", f->quiet, "Nothing on stderr but errors");
}

absl::StatusOr<BenchOptions> ToBenchOptions(const Flags& f) {
  BenchOptions o;
  ReaderOptions& r = o.reader;
  r.path = f.path;
  SP_RETURN_IF_ERROR(SetSources(f, &r));
  if (!r.sources.empty() && f.compare_memcpy) {
    return absl::InvalidArgumentError("--compare-memcpy copies one dataset: not with --source");
  }
  r.batch_size = f.batch_size;
  r.threads = f.threads;
  SP_ASSIGN_OR_RETURN(r.transform, ParseTransform(f.transform));
  o.transform_name = f.transform;
  SP_ASSIGN_OR_RETURN(r.io, ParseIoEngine(f.io));
  if (f.world_size > 0 && f.rank >= f.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rank ", f.rank, " is not below --world-size ", f.world_size));
  }
  r.rank = f.rank;
  r.world_size = f.world_size;
  r.seed = f.seed;
  r.shuffle = f.shuffle;
  SP_ASSIGN_OR_RETURN(r.shuffle_bytes, cli::ParseSize(f.shuffle_bytes));
  SP_ASSIGN_OR_RETURN(r.read_ahead_bytes, cli::ParseSize(f.read_ahead));
  r.cache_dir = f.cache_dir;
  if (!f.cache_bytes.empty()) {
    SP_ASSIGN_OR_RETURN(const uint64_t cache_bytes, cli::ParseSize(f.cache_bytes));
    r.cache_bytes = static_cast<int64_t>(std::min<uint64_t>(cache_bytes, INT64_MAX));
  }
  r.ring_slots = f.ring_slots;
  SP_ASSIGN_OR_RETURN(r.layout, ParseOutputLayout(f.layout));
  SP_ASSIGN_OR_RETURN(r.dtype, ParseDType(f.dtype));
  r.device = f.device;
  r.device_buffers = f.device_buffers;
  if (!f.fields.empty()) r.fields = absl::StrSplit(f.fields, ',');
  if (!f.image_fields.empty()) r.image_fields = absl::StrSplit(f.image_fields, ',');
  SP_ASSIGN_OR_RETURN(r.device_dtype, ParseDeviceDType(f.device_dtype));
  if (f.device < 0 && r.device_dtype != DeviceDType::kAsHost) {
    return absl::InvalidArgumentError("--device-dtype needs --device");
  }
  if (f.device >= 0 && !f.save_batch.empty()) {
    return absl::InvalidArgumentError(
        "--save-batch draws the first batch from host memory; leave out --device to save it");
  }
  o.epochs = f.epochs > 0 ? f.epochs : 1;
  o.seconds = f.seconds;
  o.warmup_batches = f.warmup;
  o.json = f.json;
  o.order_out = f.order_out;
  if (!f.save_batch.empty()) SP_RETURN_IF_ERROR(codec::CheckSheetPath(f.save_batch));
  o.save_batch = f.save_batch;
  o.overwrite = f.overwrite;
  o.compare_raw = f.compare_raw;
  o.compare_memcpy = f.compare_memcpy;
  o.drop_caches = f.drop_caches;
  o.quiet = f.quiet;
  return o;
}

}  // namespace shardpack::shardbench
