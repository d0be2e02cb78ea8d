// shardbench's report: the figures of a run, derived once, printed as a
// table for people or as one JSON object for scripts.
//
// Units: MB is 10^6 bytes (as dd prints), times are seconds.
//   images_per_s    samples delivered per second of streaming
//   mb_per_s        image bytes of the delivered batches per second
//   read_mb_per_s   bytes read from storage per second (mmap: bytes of the
//                   blocks handed out; the reader keeps blocks that fit its
//                   budget loaded across epochs, so later epochs may read none)
//   stream_mb_per_s the shard files' bytes that the delivered samples stand
//                   for, per second: (samples / records) x dataset bytes / s.
//                   This is what --compare-raw sets beside dd of the same
//                   files: raw_ratio = stream_mb_per_s / raw_mb_per_s.
//   cpu_us_per_image  CPU time of the whole process (reader threads and
//                   consumer) per delivered sample: the cost that does not
//                   depend on how many cores a shared machine lends the run
//   cores_used      CPU time / wall time of the streaming
//   steady_*        the same three after the first --warmup batches (start-up
//                   left out, as the torchvision peers leave theirs out)
//   memcpy_ns_per_image  --compare-memcpy: one thread copying each delivered
//                   sample's stored pixels in the reader's order into a ring
//                   of batch slots and folding each batch, per image; set
//                   beside the reader's: memcpy_cpu_ratio =
//                   steady_cpu_us_per_image x 1000 / memcpy_ns_per_image (the
//                   memcpy's time leaves out its loading too)
#ifndef SHARDPACK_TOOLS_BENCH_REPORT_H_
#define SHARDPACK_TOOLS_BENCH_REPORT_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "tools/bench/memcpy_ref.h"
#include "tools/bench/raw_read.h"
#include "tools/bench/reader_run.h"
#include "tools/bench/shardbench.h"

namespace shardpack::shardbench {

// A run, or its steady part, shorter than this is too short for a stable
// figure; its CPU time is not even measurable (the time of threads running
// on other cores is accounted at the scheduler's tick, every few ms).
inline constexpr double kStableSeconds = 0.5;

struct Report {
  // What ran.
  std::string path;            // empty for a mixture (reader.sources names them)
  bool mixture = false;        // --source: the per-source lines and fields
  uint64_t epoch_samples = 0;  // --epoch-samples
  std::string label_space;     // --label-space
  int shards = 0;
  uint64_t dataset_bytes = 0;  // all shard files
  std::string transform;       // as given on the command line
  std::string io;              // as given on the command line
  int threads = 0;             // as given (0: all cores)
  int batch_size = 0;
  bool shuffle = true;
  bool drop_caches = false;
  int warmup_batches = 0;  // --warmup
  double load_avg_1m = 0;  // /proc/loadavg when the run started
  int cpus = 0;            // processors this process may run on

  ReaderRun reader;
  std::optional<RawRun> raw;
  std::optional<MemcpyRun> memcpy;
  double peak_rss_mb = 0;  // getrusage(RUSAGE_SELF).ru_maxrss, the process's VmHWM

  // Derived.
  double images_per_s() const;
  double mb_per_s() const;
  double read_mb_per_s() const;
  double stream_mb_per_s() const;
  double raw_mb_per_s() const;  // 0 without a raw run
  double raw_ratio() const;     // 0 without a raw run
  double cpu_us_per_image() const;
  double cores_used() const;
  double steady_images_per_s() const;  // 0 when the run was all warm-up
  double steady_cpu_us_per_image() const;
  double steady_cores_used() const;
  double memcpy_cpu_ratio() const;  // 0 without a memcpy run
};

void PrintText(std::FILE* out, const Report& report);
void PrintJson(std::FILE* out, const Report& report);

}  // namespace shardpack::shardbench

#endif  // SHARDPACK_TOOLS_BENCH_REPORT_H_
