// shardbench: how fast this machine can feed a training step from a dataset.
//
// RunShardbench() opens the reader, drains it with a consumer that reads
// every byte of every batch, optionally reads the same shard files raw (as
// `dd bs=4M` would) and copies the same pixel bytes with memcpy for
// references taken in the same run, and prints the
// report: a table on stdout, or one JSON object with --json. Progress and
// notes go to stderr. docs/cli.md and docs/benchmarks.md describe the fields.
#ifndef SHARDPACK_TOOLS_BENCH_SHARDBENCH_H_
#define SHARDPACK_TOOLS_BENCH_SHARDBENCH_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "shardpack/reader.h"

namespace shardpack::shardbench {

struct BenchOptions {
  // The reader's options, path included, as the flags set them.
  ReaderOptions reader;
  std::string transform_name = "none";  // reader.transform as typed, for the report
  // Stop after this many epochs (--epochs, default 1) or after this many
  // seconds of streaming (--seconds); a positive `seconds` wins.
  int epochs = 1;
  double seconds = 0;
  // The steady figures leave out the first this many batches (start-up:
  // the first reads, the first plan), as a DataLoader benchmark's warm-up
  // does; the run's own figures count everything.
  int warmup_batches = 5;
  bool json = false;         // --json: one JSON object on stdout
  std::string order_out;     // --order-out FILE: "epoch batch slot record_index label" lines
  // --save-batch FILE: the first batch as a contact sheet (.png or .jpg);
  // drawing it counts in the run's time.
  std::string save_batch;
  // --overwrite: order_out and save_batch may replace an existing file;
  // without it one already there is an error and is left as it is.
  bool overwrite = false;
  bool compare_raw = false;  // --compare-raw: also read the shard files raw
  // --compare-memcpy: also copy the records' stored pixels in the reader's
  // order (tools/bench/memcpy_ref.h)
  bool compare_memcpy = false;
  bool drop_caches = false;  // --drop-caches: POSIX_FADV_DONTNEED on every shard first
  bool quiet = false;        // -q: no notes on stderr
};

// Runs the benchmark and prints its report. An error (a bad dataset, damage,
// an I/O failure) is returned with the path or shard and offset in it; the
// caller prints "shardbench: <message>" and exits 1.
absl::Status RunShardbench(const BenchOptions& options);

}  // namespace shardpack::shardbench

#endif  // SHARDPACK_TOOLS_BENCH_SHARDBENCH_H_
