// A progress line on stderr for long jobs, redrawn in place with '\r' when
// stderr is a terminal; otherwise silent (logs and pipes stay clean), or, when
// asked, a plain line every few seconds.
//
//   cli::ProgressLine progress("verify", total_bytes, shards, "shards", !quiet);
//   ... progress.Add(bytes_done, 1);   // from any thread
//   progress.Finish();                 // erases the line
//
// The line reads "verify  3/10 shards  1.2 GiB/4.0 GiB  30%  850.1 MiB/s  ETA 3 s".
#ifndef SHARDPACK_TOOLS_COMMON_PROGRESS_LINE_H_
#define SHARDPACK_TOOLS_COMMON_PROGRESS_LINE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace shardpack::cli {

// True when stderr is a terminal (isatty).
bool StderrIsTerminal();

// Thread-safe: Add() may be called from any thread at once; it is an atomic
// add and a clock read, and redraws at most every 100 ms (the thread that
// finds a redraw due draws; the others go on).
class ProgressLine {
 public:
  // `label` starts the line. `total_bytes` and `total_items` are the work
  // expected (0: unknown, shown without a total or percentage);
  // `items_name` names the items ("shards", "records"). Draws nothing unless
  // `enabled` and stderr is a terminal.
  // With `log_when_piped`, a stderr that is not a terminal gets a plain line
  // every 5 seconds instead of nothing (for jobs whose logs are read later).
  ProgressLine(std::string label, uint64_t total_bytes, uint64_t total_items,
               std::string items_name, bool enabled, bool log_when_piped = false);
  ~ProgressLine();  // Finish()
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Whether anything is drawn at all.
  bool active() const { return active_; }

  // Records finished work.
  void Add(uint64_t bytes, uint64_t items = 0) {
    if (!active_) return;
    bytes_.fetch_add(bytes, std::memory_order_relaxed);
    items_.fetch_add(items, std::memory_order_relaxed);
    MaybeDraw();
  }

  // Erases the line (idempotent). Call before printing anything else on
  // stderr.
  void Finish();

 private:
  using Clock = std::chrono::steady_clock;
  void MaybeDraw();
  void Draw();  // with mu_ held

  const std::string label_;
  const uint64_t total_bytes_;
  const uint64_t total_items_;
  const std::string items_name_;
  const bool terminal_;
  const bool active_;
  const Clock::time_point start_;
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> items_{0};
  std::atomic<int64_t> next_draw_ns_{0};  // since start_
  std::mutex mu_;
  bool drawn_ = false;
  bool finished_ = false;
};

}  // namespace shardpack::cli

#endif  // SHARDPACK_TOOLS_COMMON_PROGRESS_LINE_H_
