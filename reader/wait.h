// Waiting on an atomic with a stop flag, timing the wait: how the pipeline's
// and the staging ring's threads hand work to each other (futexes, no lock).
#ifndef SHARDPACK_READER_WAIT_H_
#define SHARDPACK_READER_WAIT_H_

#include <atomic>
#include <chrono>
#include <cstdint>

namespace shardpack::internal {

inline uint64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Waits until `value` == want; false if `stop` was set first. The time spent
// blocked is added to `*wait_ns`.
template <typename T>
bool WaitFor(std::atomic<T>& value, T want, const std::atomic<bool>& stop,
             std::atomic<uint64_t>* wait_ns) {
  T v = value.load(std::memory_order_acquire);
  if (v == want) return true;
  uint64_t start = NowNs();
  while (v != want && !stop.load(std::memory_order_relaxed)) {
    value.wait(v, std::memory_order_acquire);
    v = value.load(std::memory_order_acquire);
  }
  wait_ns->fetch_add(NowNs() - start, std::memory_order_relaxed);
  return v == want;
}

}  // namespace shardpack::internal

#endif  // SHARDPACK_READER_WAIT_H_
