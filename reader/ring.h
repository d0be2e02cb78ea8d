// What Reader::Next takes batches from. The batch builder's workers build
// whole batches into the host ring's slots (reader/host_ring.h); with GPU
// staging the stager (reader/staging.h) copies each built batch into a ring
// of device buffers and the consumer takes them from there. Both are a
// BatchRing, so the consumer's path is one whichever it is:
//
//   loader --> batch builder --> HostRing --(with a device)--> Stager
//                                   \______ BatchRing ______/   |
//                                          Reader::Next  <------'
//
// A virtual call per batch, none per sample.
#ifndef SHARDPACK_READER_RING_H_
#define SHARDPACK_READER_RING_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "reader/field_columns.h"

namespace shardpack::reader {

class CopyEngine;  // reader/staging.h

// Frees a ring slot's images: std::free, or the copy engine's HostFree.
struct SlotFree {
  CopyEngine* engine = nullptr;
  void operator()(uint8_t* p) const;
};

// A damaged sample that OnCorrupt::kSkip replaced in a batch.
struct CorruptInBatch {
  int position = 0;
  uint64_t record = 0;
  absl::Status error;
};

// A staging slot of a ring: a batch and its metadata.
struct RingSlot {
  std::atomic<uint64_t> ready{0};     // 1 + sequence number built into it
  std::atomic<uint64_t> free_for{0};  // next sequence number allowed in
  uint64_t epoch = 0, batch = 0;
  int size = 0, skipped = 0;
  absl::Status status;
  std::unique_ptr<uint8_t, SlotFree> images;
  std::vector<int64_t> labels;
  std::vector<uint64_t> records;
  std::vector<std::string> keys;
  std::vector<CorruptInBatch> corrupt;  // with kSkip; empty unless damaged (rare)
  // A mixture: the batch's samples drawn from each source (sized on the
  // slot's first batch, then reused); empty otherwise.
  std::vector<uint32_t> sources;
  // The delivered fields and each sample's crop window (sized with the ring).
  SlotFields fields;
};

// The consumer's side of a ring of batches, in sequence numbers counted
// from the pipeline's Start (0 is the batch it started at). One consumer
// thread calls Take; Release may come from any thread (~Batch).
class BatchRing {
 public:
  virtual ~BatchRing() = default;

  // Starts what the ring runs of its own (the stager's thread), after the
  // pipeline started. ResourceExhaustedError when the system will not
  // start a thread.
  virtual absl::Status Start() = 0;
  // Stopping: RequestStop before Pipeline::Stop (which wakes a thread of
  // the ring's that waits for a build), Join after it.
  virtual void RequestStop() = 0;
  virtual void Join() = 0;

  // The batch of `seq` once it is ready, its error in `status`; null when
  // it was not within `timeout`. Records the wait.
  virtual RingSlot* Take(uint64_t seq, std::chrono::nanoseconds timeout) = 0;
  // Gives the slot of `seq` back: its batch is no longer used.
  virtual void Release(uint64_t seq) = 0;
  // The device buffer of `seq` and the event after its last work; null for
  // batches in host memory.
  virtual void* device_buffer(uint64_t seq) = 0;
  virtual void* device_event(uint64_t seq) = 0;

  // Slots of the ring; slot k holds the batches of seq = k mod slots().
  virtual int slots() const = 0;
  // What a slot is, for messages: "ring slots", "device buffers".
  virtual const char* slot_name() const = 0;
  // Seconds the consumer waited in Take.
  virtual double consumer_wait_s() const = 0;
};

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_RING_H_
