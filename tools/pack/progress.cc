#include "tools/pack/progress.h"

#include <unistd.h>

#include <cstdio>

namespace shardpack::pack {

Progress::Progress(uint64_t total, bool enabled)
    : total_(total), enabled_(enabled), terminal_(isatty(STDERR_FILENO) == 1),
      start_(Clock::now()), last_(start_) {}

double Progress::Seconds() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

void Progress::MaybePrint(uint64_t done, uint64_t bytes) {
  Clock::time_point now = Clock::now();
  auto interval = terminal_ ? std::chrono::milliseconds(200) : std::chrono::seconds(5);
  if (now - last_ < interval) return;
  last_ = now;
  double seconds = std::chrono::duration<double>(now - start_).count();
  double rate = done / seconds;
  double eta = rate > 0 ? (total_ - done) / rate : 0;
  std::fprintf(stderr, "%s%llu/%llu records  %.1f MB/s  ETA %.0f s%s",
               terminal_ ? "\r" : "", static_cast<unsigned long long>(done),
               static_cast<unsigned long long>(total_), bytes / seconds / 1e6, eta,
               terminal_ ? "\033[K" : "\n");
  drawn_ = terminal_;
}

void Progress::Finish() {
  if (drawn_) std::fprintf(stderr, "\r\033[K");
  drawn_ = false;
}

}  // namespace shardpack::pack
