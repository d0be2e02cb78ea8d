// The host ring: the slots in host memory (pinned for a device) that the
// batch builder's workers build whole batches into, in sequence numbers:
// batch `seq` goes into slot seq mod slots, once the batch of seq - slots
// was released. Workers claim and publish slots; the consumer (Reader::Next,
// or the stager's thread) takes and releases them.
//
// Synchronization is by atomics with wait/notify: per-slot sequence
// numbers, and a Doorbell for a consumer whose wait may time out.
#ifndef SHARDPACK_READER_HOST_RING_H_
#define SHARDPACK_READER_HOST_RING_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "reader/field_plan.h"
#include "reader/ring.h"
#include "reader/wait.h"

namespace shardpack::reader {

class Loader;  // reader/loader.h

class HostRing final : public BatchRing {
 public:
  // `slots` slots of `batch_size` samples of `sample_bytes`, `num_labels`
  // labels each, keys when `keys`, and the columns of `fields` (which
  // outlives the ring). Images come from `host_memory`'s
  // HostAlloc (pinned for a device) when given, which then outlives the
  // ring. The consumer's progress goes to `loader` (it drops past plans);
  // `stop` is the pipeline's stop flag. Both outlive the ring.
  HostRing(int slots, int batch_size, size_t sample_bytes, int num_labels, bool keys,
           const FieldPlan& fields, CopyEngine* host_memory, Loader* loader,
           const std::atomic<bool>& stop);

  // ResourceExhaustedError naming `path` when a slot's batch memory could
  // not be allocated; check it before the pipeline starts.
  absl::Status CheckMemory(const std::string& path) const;
  // Before the pipeline's threads start: every slot free for its first
  // sequence number, none built.
  void Reset();
  // Once the stop flag is set: wakes workers and a consumer that wait.
  void WakeForStop();

  // Workers: the slot for `seq` once it is free (the wait goes to
  // `*wait_ns`); null when stopped first.
  RingSlot* Claim(uint64_t seq, std::atomic<uint64_t>* wait_ns) {
    RingSlot& slot = slots_[seq % slots_.size()];
    return WaitFor(slot.free_for, seq, stop_, wait_ns) ? &slot : nullptr;
  }
  // Workers: `slot`, claimed for `seq`, holds its batch.
  void Publish(uint64_t seq, RingSlot& slot) {
    slot.ready.store(seq + 1, std::memory_order_release);
    built_.Ring();
  }

  // BatchRing. The pipeline's Start and Stop run the host ring: it has no
  // thread of its own. Take returns the slot once built, or once stopped
  // (then its contents are stale); one thread takes: Reader::Next, or the
  // stager's.
  absl::Status Start() override { return absl::OkStatus(); }
  void RequestStop() override {}
  void Join() override {}
  RingSlot* Take(uint64_t seq, std::chrono::nanoseconds timeout) override;
  void Release(uint64_t seq) override;
  void* device_buffer(uint64_t) override { return nullptr; }
  void* device_event(uint64_t) override { return nullptr; }
  int slots() const override { return static_cast<int>(slots_.size()); }
  const char* slot_name() const override { return "ring slots"; }
  double consumer_wait_s() const override { return consumer_wait_ns_.load() * 1e-9; }

  // Bytes of the slots' images, and of their fields' fixed part
  // (SlotFields::fixed_bytes).
  uint64_t image_bytes() const { return slots_.size() * batch_bytes_; }
  uint64_t field_bytes() const { return slots_.size() * slots_[0].fields.fixed_bytes(); }

 private:
  std::vector<RingSlot> slots_;
  const int batch_size_;
  const size_t sample_bytes_;
  const size_t batch_bytes_;
  Loader* loader_;
  const std::atomic<bool>& stop_;
  Doorbell built_;  // a slot's `ready` was stored
  std::atomic<uint64_t> consumer_wait_ns_{0};
};

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_HOST_RING_H_
