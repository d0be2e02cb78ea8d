#include "tools/common/progress_line.h"

#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/common/cli.h"

namespace shardpack::cli {
namespace {
constexpr int64_t kRedrawIntervalNs = 100'000'000;  // on a terminal
constexpr int64_t kLogIntervalNs = 5'000'000'000;   // plain lines in a log
}

bool StderrIsTerminal() { return isatty(STDERR_FILENO) == 1; }

ProgressLine::ProgressLine(std::string label, uint64_t total_bytes, uint64_t total_items,
                           std::string items_name, bool enabled, bool log_when_piped)
    : label_(std::move(label)),
      total_bytes_(total_bytes),
      total_items_(total_items),
      items_name_(std::move(items_name)),
      terminal_(StderrIsTerminal()),
      active_(enabled && (terminal_ || log_when_piped)),
      start_(Clock::now()) {
  if (!terminal_) next_draw_ns_ = kLogIntervalNs;
}

ProgressLine::~ProgressLine() { Finish(); }

void ProgressLine::MaybeDraw() {
  int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count();
  int64_t due = next_draw_ns_.load(std::memory_order_relaxed);
  if (now < due) return;
  // One thread wins the redraw; the others carry on without waiting.
  if (!next_draw_ns_.compare_exchange_strong(due,
                                             now + (terminal_ ? kRedrawIntervalNs : kLogIntervalNs),
                                             std::memory_order_relaxed)) {
    return;
  }
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (lock.owns_lock() && !finished_) Draw();
}

void ProgressLine::Draw() {
  const uint64_t bytes = bytes_.load(std::memory_order_relaxed);
  const uint64_t items = items_.load(std::memory_order_relaxed);
  const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  std::string line = label_;
  if (!items_name_.empty()) {
    absl::StrAppend(&line, "  ", items);
    if (total_items_ != 0) absl::StrAppend(&line, "/", total_items_);
    absl::StrAppend(&line, " ", items_name_);
  }
  absl::StrAppend(&line, "  ", FormatBytes(bytes));
  if (total_bytes_ != 0) {
    absl::StrAppend(&line, "/", FormatBytes(total_bytes_),
                    absl::StrFormat("  %.0f%%", 100.0 * bytes / total_bytes_));
  }
  if (seconds > 0.05) {
    double rate = bytes / seconds;
    absl::StrAppend(&line, "  ", FormatBytes(static_cast<uint64_t>(rate)), "/s");
    if (total_bytes_ > bytes && rate > 0) {
      absl::StrAppend(&line, absl::StrFormat("  ETA %.0f s", (total_bytes_ - bytes) / rate));
    } else if (total_bytes_ == 0 && total_items_ > items && items > 0) {
      absl::StrAppend(&line, absl::StrFormat("  ETA %.0f s", (total_items_ - items) * seconds / items));
    }
  }
  if (!terminal_) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
    return;
  }
  // \033[K erases what a longer previous line left behind.
  std::fprintf(stderr, "\r%s\033[K", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressLine::Finish() {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  drawn_ = false;
  finished_ = true;
}

}  // namespace shardpack::cli
