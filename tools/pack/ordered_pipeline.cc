#include "tools/pack/ordered_pipeline.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/threads.h"

namespace shardpack::pack {
namespace {

// Items go from the workers to the consumer in groups of consecutive
// positions: one hand-off (an atomic store and, when someone sleeps on it, a
// futex wake) per group instead of per item. Per-item hand-offs cost about
// 40% of a CIFAR pack's CPU in futex waits and wakes (docs/benchmarks.md,
// "Packing at scale"). A group holds about kGroupBytes of input, at most
// kMaxGroupItems items, so large images keep small groups and memory stays
// about window x kGroupBytes.
constexpr uint64_t kGroupBytes = uint64_t{1} << 20;
constexpr size_t kMaxGroupItems = 64;

// One ring slot: a group of items. `ready` holds 1 + the group number
// prepared into it (0: none yet); `free_for` holds the next group number
// allowed to use it.
struct Slot {
  std::atomic<uint64_t> ready{0};
  std::atomic<uint64_t> free_for{0};
  std::vector<absl::Status> status;
  std::vector<datasets::PreparedRecord> records;
};

void WaitUntil(std::atomic<uint64_t>& value, uint64_t want, const std::atomic<bool>& stop) {
  for (uint64_t v = value.load(std::memory_order_acquire); v != want && !stop.load();
       v = value.load(std::memory_order_acquire)) {
    value.wait(v, std::memory_order_acquire);
  }
}

size_t GroupItems(const datasets::Source& source) {
  const uint64_t per_item = source.size() == 0 ? 1 : source.input_bytes() / source.size();
  return static_cast<size_t>(
      std::clamp<uint64_t>(kGroupBytes / std::max<uint64_t>(per_item, 1), 1, kMaxGroupItems));
}

}  // namespace

absl::Status RunOrdered(const datasets::Source& source, std::span<const size_t> order,
                        int threads, const ConsumeFn& consume) {
  threads = std::max(threads, 1);
  const size_t group = GroupItems(source);
  const uint64_t groups = (order.size() + group - 1) / group;
  const size_t window = 2 * static_cast<size_t>(threads) + 2;
  std::vector<Slot> slots(window);
  for (size_t k = 0; k < window; ++k) {
    slots[k].free_for.store(k);
    slots[k].status.resize(group);
    slots[k].records.resize(group);
  }
  std::atomic<uint64_t> next{0};
  std::atomic<bool> stop{false};

  auto work = [&] {
    std::unique_ptr<datasets::SourceWorker> worker = source.NewWorker();
    for (uint64_t g = next.fetch_add(1); g < groups && !stop.load(); g = next.fetch_add(1)) {
      Slot& slot = slots[g % window];
      WaitUntil(slot.free_for, g, stop);
      if (stop.load()) return;
      const size_t begin = g * group, end = std::min(order.size(), begin + group);
      for (size_t seq = begin; seq < end; ++seq) {
        slot.status[seq - begin] = worker->Prepare(order[seq], &slot.records[seq - begin]);
      }
      slot.ready.store(g + 1, std::memory_order_release);
      slot.ready.notify_all();
    }
  };
  // atomic::wait returns only once the value changes, so everyone waiting
  // is woken with a value no sequence number has; they then see `stop` and
  // leave. Called by the consumer on an error, or by a worker that the
  // system refused memory (its group would never be ready).
  const auto stop_all = [&] {
    stop.store(true);
    for (Slot& slot : slots) {
      for (std::atomic<uint64_t>* value : {&slot.free_for, &slot.ready}) {
        value->store(UINT64_MAX, std::memory_order_release);
        value->notify_all();
      }
    }
  };
  common::ThreadGroup pool;
  absl::Status result =
      pool.Start(threads, "the pack's worker threads", [&](int) { work(); }, stop_all);
  for (uint64_t g = 0; g < groups && result.ok(); ++g) {
    Slot& slot = slots[g % window];
    WaitUntil(slot.ready, g + 1, stop);
    if (stop.load()) break;  // a worker failed: JoinAll() says how
    const size_t begin = g * group, end = std::min(order.size(), begin + group);
    for (size_t seq = begin; seq < end && result.ok(); ++seq) {
      result = consume(seq, order[seq], slot.status[seq - begin], slot.records[seq - begin]);
    }
    if (!result.ok()) break;
    slot.free_for.store(g + window, std::memory_order_release);
    slot.free_for.notify_all();
  }
  if (!result.ok()) stop_all();
  result.Update(pool.JoinAll());
  return result;
}

}  // namespace shardpack::pack
