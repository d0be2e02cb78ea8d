// Waiting on an atomic with a stop flag, timing the wait: how the pipeline's
// and the staging ring's threads hand work to each other (futexes, no lock).
#ifndef SHARDPACK_READER_WAIT_H_
#define SHARDPACK_READER_WAIT_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace shardpack::reader {

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

// No timeout: Doorbell::Wait until the value comes or the stop.
inline constexpr std::chrono::nanoseconds kNoTimeout = std::chrono::nanoseconds::max();

// What a consumer waits on when its wait may end at a deadline
// (Reader::Next(timeout)), which std::atomic::wait cannot do: producers
// store a value and Ring(); the consumer's Wait returns when the value is
// the one it wants, the stop flag is set (Ring after setting it too), or
// the time is up. While the consumer keeps up, Ring() costs a fence and a
// load, Wait() a load: the mutex and the condition variable are for a
// consumer that sleeps. Thread-safe.
class Doorbell {
 public:
  // After a store that a consumer may be waiting for.
  void Ring() {
    // Pairs with the fence in Wait: either the consumer sees the store, or
    // this sees the consumer asleep (Dekker's handshake).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_relaxed) == 0) return;
    { std::lock_guard<std::mutex> lock(mu_); }  // the sleeper is inside wait
    cv_.notify_all();
  }

  // Until `value` == want (true), or `stop` or `timeout` first (false). The
  // time spent blocked is added to `*wait_ns`; the clock is read only then.
  template <typename T>
  bool Wait(const std::atomic<T>& value, T want, const std::atomic<bool>& stop,
            std::atomic<uint64_t>* wait_ns, std::chrono::nanoseconds timeout = kNoTimeout) {
    if (value.load(std::memory_order_acquire) == want) return true;
    const auto start = std::chrono::steady_clock::now();
    // A year or more is as good as forever, and start + timeout cannot wrap.
    const bool forever = timeout >= std::chrono::hours(24 * 365);
    const auto deadline = start + (forever ? std::chrono::nanoseconds(0) : timeout);
    bool got = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      for (;;) {
        got = value.load(std::memory_order_acquire) == want;
        if (got || stop.load(std::memory_order_relaxed)) break;
        if (forever) {
          cv_.wait(lock);
        } else if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
          got = value.load(std::memory_order_acquire) == want;
          break;
        }
      }
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    wait_ns->fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - start)
                           .count(),
                       std::memory_order_relaxed);
    return got;
  }

 private:
  std::atomic<int> sleepers_{0};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_WAIT_H_
