// Helpers shared by the benchmark programs in bench/: side-by-side timing,
// medians, machine facts, and the two report formats (a table for people,
// JSON for scripts).
//
// A benchmark here is a plain program, not a test: it measures one thing
// against a reference measured in the same run on the same machine, and
// reports medians and the ratio, because absolute figures from a shared,
// noisy machine mean little on their own.
#ifndef SHARDPACK_BENCH_BENCH_COMMON_H_
#define SHARDPACK_BENCH_BENCH_COMMON_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace shardpack::bench {

// Seconds from a monotonic clock (steady_clock); only differences mean
// anything.
double NowSeconds();

// Keeps the compiler from discarding the computation that produced `p`'s
// memory or value. Modelled on Google Benchmark's DoNotOptimize.
inline void KeepAlive(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

// Timings of the runs of one measurement, in seconds.
struct Series {
  std::vector<double> seconds;

  double MedianSeconds() const;
  // Throughput of the median, fastest and slowest run moving `bytes` bytes.
  double MedianRate(uint64_t bytes) const { return bytes / MedianSeconds(); }
  double BestRate(uint64_t bytes) const;
  double WorstRate(uint64_t bytes) const;
};

// One line of a report: a measurement and the reference it is compared with.
struct Row {
  std::string case_name;         // e.g. "cifar 3 KB"
  std::string measurement;       // e.g. "scan, memory"
  std::string reference;         // e.g. "memcpy"
  std::string unit;              // "GB/s" or "MB/s"
  double unit_bytes = 1e9;       // bytes per unit (1e9 for GB/s, 1e6 for MB/s)
  uint64_t bytes = 0;            // bytes one run of the measurement moves
  uint64_t reference_bytes = 0;  // bytes one run of the reference moves
  Series measured;
  Series reference_runs;

  // Median throughput of the measurement over that of its reference.
  double Ratio() const;
};

// Runs `measured` and `reference` `repeats` times each, interleaved, and
// appends their timings. Even rounds run the reference first, odd rounds the
// measurement, so a drift in machine load falls on both. Each function
// returns the seconds it measured itself, so it can leave set-up and
// clean-up out of the timing.
void SideBySide(int repeats, const std::function<double()>& measured,
                const std::function<double()>& reference, Series* measured_runs,
                Series* reference_runs);

// The "model name" of the first processor in /proc/cpuinfo, or "unknown".
std::string CpuModel();

// Number of processors the scheduler may run this program on.
int UsableCpus();

// The mount that holds `path`: longest mount point that is a prefix of its
// real path, from /proc/self/mounts. Fields are "unknown" when not found.
struct MountInfo {
  std::string fs_type;      // "ext4", "tmpfs", ...
  std::string source;       // "/dev/vda"
  std::string mount_point;  // "/"
};
MountInfo MountOf(const std::string& path);

// A fact about the run, printed above the table and as a JSON member.
struct Fact {
  std::string key;    // JSON member name, snake_case
  std::string label;  // what the table shows
  std::string value;
  bool is_number = false;  // emitted unquoted in JSON
};

// A fixed-width table: the facts, then one line per row.
void PrintTable(std::FILE* out, const std::vector<Fact>& facts, const std::vector<Row>& rows);

// {"facts": {...}, "rows": [...]} with every sample, medians and ratios.
void PrintJson(std::FILE* out, const std::vector<Fact>& facts, const std::vector<Row>& rows);

// `s` as a JSON string literal, quotes included.
std::string JsonString(std::string_view s);

}  // namespace shardpack::bench

#endif  // SHARDPACK_BENCH_BENCH_COMMON_H_
