// The measured part of shardbench: the reader drained by a consumer that
// reads every byte it is handed, as a training step's host-to-device copy
// would.
#ifndef SHARDPACK_TOOLS_BENCH_READER_RUN_H_
#define SHARDPACK_TOOLS_BENCH_READER_RUN_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "shardpack/file.h"
#include "shardpack/reader.h"
#include "tools/bench/shardbench.h"

namespace shardpack::shardbench {

struct ReaderRun {
  uint64_t records = 0;            // in the dataset
  uint64_t batches_per_epoch = 0;  // on this rank
  uint64_t batches = 0;            // delivered
  uint64_t samples = 0;            // delivered
  uint64_t epochs = 0;             // finished (Next() said OutOfRange)
  uint64_t output_bytes = 0;       // image bytes of the delivered batches
  double seconds = 0;              // wall time from the first Next() to the last batch consumed
  double open_s = 0;               // wall time of Reader::Open (manifest, indexes)
  double first_batch_s = 0;        // wall time of the first Next() (pipeline start-up)
  double consume_s = 0;            // of `seconds`, the consumer reading the batches
  double cpu_s = 0;                // user + system CPU time of the process over `seconds`
  int ring_slots = 0;              // Reader::ring_slots()
  std::string io_engine;           // Reader::io_engine(): what --io auto chose
  std::string device = "host";     // where the batches were delivered: "host", "cuda:N"
  // The same after the first BenchOptions::warmup_batches batches were
  // consumed: zero when the run had no more batches than that.
  uint64_t steady_samples = 0;
  double steady_seconds = 0;
  double steady_cpu_s = 0;
  uint64_t fold = 0;               // XOR of every 8-byte word of every batch
  ReaderStats stats;               // the reader's counters at the end
  // Reader::sources(): what each source draws an epoch (a mixture's; one
  // dataset's is itself). stats.source_samples: what each delivered.
  std::vector<SourceInfo> sources;
};

// XOR of the 8-byte little-endian words of [p, p + n) (a short tail is
// folded in byte by byte). Reads every byte once; the loop vectorizes.
uint64_t FoldBytes(const void* p, size_t n);

// XOR of the values of every field of `batch` but images() (which is
// FoldBytes'), their bytes added to `*bytes`.
uint64_t FoldFields(const Batch& batch, uint64_t* bytes);

// Opens the reader with options.reader and drains it for options.epochs or
// options.seconds. With `order_out`, writes one line per delivered sample.
absl::StatusOr<ReaderRun> RunReader(const BenchOptions& options, AtomicFile* order_out);

}  // namespace shardpack::shardbench

#endif  // SHARDPACK_TOOLS_BENCH_READER_RUN_H_
