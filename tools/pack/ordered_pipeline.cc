#include "tools/pack/ordered_pipeline.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace shardpack::pack {
namespace {

// One ring slot. `ready` holds 1 + the sequence number prepared into it (0:
// none yet); `free_for` holds the next sequence number allowed to use it.
struct Slot {
  std::atomic<uint64_t> ready{0};
  std::atomic<uint64_t> free_for{0};
  absl::Status status;
  datasets::PreparedRecord record;
};

void WaitUntil(std::atomic<uint64_t>& value, uint64_t want, const std::atomic<bool>& stop) {
  for (uint64_t v = value.load(std::memory_order_acquire); v != want && !stop.load();
       v = value.load(std::memory_order_acquire)) {
    value.wait(v, std::memory_order_acquire);
  }
}

}  // namespace

absl::Status RunOrdered(const datasets::Source& source, std::span<const size_t> order,
                        int threads, const ConsumeFn& consume) {
  threads = std::max(threads, 1);
  const size_t window = 4 * static_cast<size_t>(threads);
  std::vector<Slot> slots(window);
  for (size_t k = 0; k < window; ++k) slots[k].free_for.store(k);
  std::atomic<uint64_t> next{0};
  std::atomic<bool> stop{false};

  auto work = [&] {
    std::unique_ptr<datasets::SourceWorker> worker = source.NewWorker();
    for (uint64_t seq = next.fetch_add(1); seq < order.size() && !stop.load();
         seq = next.fetch_add(1)) {
      Slot& slot = slots[seq % window];
      WaitUntil(slot.free_for, seq, stop);
      if (stop.load()) return;
      slot.status = worker->Prepare(order[seq], &slot.record);
      slot.ready.store(seq + 1, std::memory_order_release);
      slot.ready.notify_all();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work);

  absl::Status result;
  for (uint64_t seq = 0; seq < order.size(); ++seq) {
    Slot& slot = slots[seq % window];
    WaitUntil(slot.ready, seq + 1, stop);
    result = consume(seq, order[seq], slot.status, slot.record);
    if (!result.ok()) break;
    slot.free_for.store(seq + window, std::memory_order_release);
    slot.free_for.notify_all();
  }
  if (!result.ok()) {
    // atomic::wait returns only once the value changes, so wake the workers
    // with a value no sequence number has; they then see `stop` and leave.
    stop.store(true);
    for (Slot& slot : slots) {
      slot.free_for.store(UINT64_MAX, std::memory_order_release);
      slot.free_for.notify_all();
    }
  }
  for (std::thread& t : pool) t.join();
  return result;
}

}  // namespace shardpack::pack
