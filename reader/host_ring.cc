#include "reader/host_ring.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "reader/io_engine.h"
#include "reader/loader.h"
#include "reader/staging.h"

namespace shardpack::reader {
namespace {

uint8_t* AlignedAlloc(size_t bytes) {
  size_t rounded = common::AlignUp(std::max<size_t>(bytes, 1), kIoAlignment);
  return static_cast<uint8_t*>(std::aligned_alloc(kIoAlignment, rounded));
}

}  // namespace

void SlotFree::operator()(uint8_t* p) const {
  if (engine != nullptr) {
    engine->HostFree(p);
  } else {
    std::free(p);
  }
}

HostRing::HostRing(int slots, int batch_size, size_t sample_bytes, int num_labels, bool keys,
                   const FieldPlan& fields, CopyEngine* host_memory, Loader* loader,
                   const std::atomic<bool>& stop)
    : slots_(static_cast<size_t>(slots)),
      batch_size_(batch_size),
      sample_bytes_(sample_bytes),
      batch_bytes_(static_cast<size_t>(batch_size) * sample_bytes),
      loader_(loader),
      stop_(stop) {
  const size_t batch = static_cast<size_t>(batch_size);
  for (RingSlot& slot : slots_) {
    slot.images = {host_memory != nullptr ? host_memory->HostAlloc(batch_bytes_)
                                          : AlignedAlloc(batch_bytes_),
                   SlotFree{host_memory}};
    slot.labels.resize(batch * num_labels);
    slot.records.resize(batch);
    if (keys) slot.keys.resize(batch);
    slot.fields.Size(fields, batch_size);
  }
}

absl::Status HostRing::CheckMemory(const std::string& path) const {
  for (const RingSlot& slot : slots_) {
    if (slot.images == nullptr) {
      return absl::ResourceExhaustedError(absl::StrCat(
          path, ": out of memory for a batch of ", batch_size_, " samples of ", sample_bytes_,
          " bytes"));
    }
  }
  return absl::OkStatus();
}

void HostRing::Reset() {
  for (size_t k = 0; k < slots_.size(); ++k) {
    slots_[k].ready = 0;
    slots_[k].free_for = k;
  }
}

void HostRing::WakeForStop() {
  for (RingSlot& slot : slots_) {
    slot.free_for.store(UINT64_MAX);
    slot.free_for.notify_all();
  }
  built_.Ring();  // the stop flag is set
}

RingSlot* HostRing::Take(uint64_t seq, std::chrono::nanoseconds timeout) {
  RingSlot& slot = slots_[seq % slots_.size()];
  if (!built_.Wait(slot.ready, seq + 1, stop_, &consumer_wait_ns_, timeout)) {
    return stop_.load() ? &slot : nullptr;
  }
  loader_->ConsumerAt(slot.epoch);
  return &slot;
}

void HostRing::Release(uint64_t seq) {
  RingSlot& slot = slots_[seq % slots_.size()];
  slot.free_for.store(seq + slots_.size(), std::memory_order_release);
  slot.free_for.notify_all();
}

}  // namespace shardpack::reader
