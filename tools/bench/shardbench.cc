#include "tools/bench/shardbench.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/os.h"
#include "common/status_macros.h"
#include "dataset/open_path.h"
#include "reader/pipeline.h"
#include "remote/storage.h"
#include "shardpack/file.h"
#include "tools/bench/memcpy_ref.h"
#include "tools/bench/raw_read.h"
#include "tools/bench/reader_run.h"
#include "tools/bench/report.h"
#include "tools/common/cli.h"

namespace shardpack::shardbench {
namespace {

double LoadAverage() {
  std::ifstream in("/proc/loadavg");
  double load = 0;
  in >> load;
  return load;
}

int UsableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

double PeakRssMb() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024 / 1e6;  // ru_maxrss is in KiB
}

absl::StatusOr<uint64_t> TotalBytes(const std::vector<std::string>& paths) {
  uint64_t total = 0;
  for (const std::string& path : paths) {
    SP_ASSIGN_OR_RETURN(const common::FileStatus st, common::Stat(path));
    total += st.size;
  }
  return total;
}

// The references taken after the reader's run: the raw read of the files
// (--compare-raw) and the memcpy of the same pixels (--compare-memcpy).
absl::Status RunReferences(const BenchOptions& options, const std::vector<std::string>& files,
                           MemcpyReference* memcpy_ref, Report* report) {
  const ReaderOptions& ro = options.reader;
  if (options.compare_raw) {
    // As many passes over the files as the reader made over the dataset, so
    // both run for a similar time; a cold reader run gets a cold raw run.
    const double epochs = report->reader.records == 0
                              ? 1
                              : static_cast<double>(report->reader.samples) /
                                    static_cast<double>(report->reader.records);
    const int passes = static_cast<int>(std::clamp(std::lround(epochs), 1L, 1000L));
    if (options.drop_caches) SP_RETURN_IF_ERROR(DropCaches(files));
    SP_ASSIGN_OR_RETURN(report->raw, RawRead(files, ro.io == IoEngine::kDirect, passes));
  }

  if (memcpy_ref != nullptr) {
    // As many threads as the reader had workers: its own rule.
    SP_ASSIGN_OR_RETURN(report->memcpy, memcpy_ref->Run(report->reader.samples,
                                                        reader::WorkerThreads(ro.threads)));
  }
  return absl::OkStatus();
}

// The shard files of the dataset, or of every source of a mixture in turn
// (a source named twice twice, as the reader's records count it), and their
// bytes. A dataset in an object store is opened here with the reader's
// cache (its manifest gives the shards and their sizes) and kept open in
// `remote`, so that the reader finds it open.
struct DatasetFiles {
  std::vector<std::string> local;
  uint64_t bytes = 0;
  std::vector<dataset::NamedPath> remote;
  size_t shards() const {
    size_t n = local.size();
    for (const dataset::NamedPath& r : remote) n += r.shard_paths.size();
    return n;
  }
};

absl::Status AddFiles(const ReaderOptions& ro, const std::string& path, DatasetFiles* d) {
  if (!remote::IsUrl(path)) {
    SP_ASSIGN_OR_RETURN(std::vector<std::string> files, ShardFiles(path));
    SP_ASSIGN_OR_RETURN(const uint64_t bytes, TotalBytes(files));
    d->local.insert(d->local.end(), files.begin(), files.end());
    d->bytes += bytes;
    return absl::OkStatus();
  }
  SP_ASSIGN_OR_RETURN(std::shared_ptr<remote::Storage> storage,
                      remote::Storage::Make(ro.cache_dir, ro.cache_bytes));
  SP_ASSIGN_OR_RETURN(dataset::NamedPath named, dataset::OpenNamedPath(path, storage));
  for (const ShardEntry& e : named.manifest.shards) d->bytes += e.bytes;
  d->remote.push_back(std::move(named));
  return absl::OkStatus();
}

absl::StatusOr<DatasetFiles> AllShardFiles(const ReaderOptions& ro) {
  DatasetFiles d;
  if (ro.sources.empty()) SP_RETURN_IF_ERROR(AddFiles(ro, ro.path, &d));
  for (const MixSource& m : ro.sources) SP_RETURN_IF_ERROR(AddFiles(ro, m.path, &d));
  return d;
}

}  // namespace

absl::Status RunShardbench(const BenchOptions& options) {
  const ReaderOptions& ro = options.reader;
  SP_ASSIGN_OR_RETURN(const DatasetFiles dataset, AllShardFiles(ro));
  const std::vector<std::string>& files = dataset.local;
  if (!dataset.remote.empty() && (options.compare_raw || options.drop_caches)) {
    return absl::InvalidArgumentError(
        "--compare-raw and --drop-caches read local files: a dataset in an object store has "
        "none (a cold run of it is one with an empty --cache-dir)");
  }

  Report report;
  report.path = ro.path;
  report.mixture = !ro.sources.empty();
  report.epoch_samples = ro.epoch_samples;
  report.label_space = std::string(LabelSpaceName(ro.label_space));
  report.shards = static_cast<int>(dataset.shards());
  report.dataset_bytes = dataset.bytes;
  report.transform = options.transform_name;
  report.io = std::string(IoEngineName(ro.io));
  report.threads = ro.threads;
  report.batch_size = ro.batch_size;
  report.shuffle = ro.shuffle;
  report.warmup_batches = options.warmup_batches;
  report.drop_caches = options.drop_caches;
  report.load_avg_1m = LoadAverage();
  report.cpus = UsableCpus();

  // Files named for output are written whole or not at all, and one
  // already there is kept unless --overwrite: checked before the run.
  const AtomicFile::Existing existing =
      options.overwrite ? AtomicFile::Existing::kReplace : AtomicFile::Existing::kRefuse;
  for (const auto& [flag, path] : {std::pair{"--save-batch", &options.save_batch},
                                    std::pair{"--order-out", &options.order_out}}) {
    if (path->empty()) continue;
    SP_RETURN_IF_ERROR(cli::CheckLocalPath(flag, *path, cli::LocalPath::kOutput));
    SP_RETURN_IF_ERROR(cli::CheckOutputFile(*path, options.overwrite));
  }
  std::unique_ptr<AtomicFile> order_out;
  if (!options.order_out.empty()) {
    SP_ASSIGN_OR_RETURN(order_out, AtomicFile::Create(options.order_out, existing));
  }

  // Opened first, so that a dataset it cannot copy is refused before the run.
  std::unique_ptr<MemcpyReference> memcpy_ref;
  if (options.compare_memcpy) {
    SP_ASSIGN_OR_RETURN(memcpy_ref, MemcpyReference::Open(ro));
  }
  if (options.drop_caches) SP_RETURN_IF_ERROR(DropCaches(files));
  SP_ASSIGN_OR_RETURN(report.reader, RunReader(options, order_out.get()));
  report.peak_rss_mb = PeakRssMb();  // before the references add their buffers
  if (order_out != nullptr) SP_RETURN_IF_ERROR(order_out->Commit());

  SP_RETURN_IF_ERROR(RunReferences(options, files, memcpy_ref.get(), &report));
  if (!options.quiet && report.reader.seconds < kStableSeconds) {
    std::fprintf(stderr,
                 "shardbench: note: the run took %.3f s, too short for a stable figure; "
                 "use more --epochs or --seconds\n",
                 report.reader.seconds);
  }
  if (options.json) {
    PrintJson(stdout, report);
  } else {
    PrintText(stdout, report);
  }
  return absl::OkStatus();
}

}  // namespace shardpack::shardbench
