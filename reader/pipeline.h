// The reader's machinery behind Reader::Impl: a loader thread that reads and
// decodes units in the plan's load order within the memory budget, worker
// threads that build whole batches into ring slots, and the ring itself.
//
// Synchronization is by atomics with wait/notify (futexes): per-piece ready
// flags, per-slot sequence numbers. The one mutex guards the list of
// released units and the epoch plans, and is taken per unit released or plan
// published, never per sample.
#ifndef SHARDPACK_READER_PIPELINE_H_
#define SHARDPACK_READER_PIPELINE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "reader/dataset_units.h"
#include "reader/epoch_plan.h"
#include "reader/io_engine.h"
#include "reader/transform.h"
#include "reader/unit_view.h"
#include "reader/wait.h"
#include "shardpack/reader.h"

namespace shardpack::internal {

// A unit's life in memory. The loader alone loads, pins and evicts; workers
// only read ready units and unpin them.
struct UnitSlot {
  enum State : uint32_t { kAbsent = 0, kReady = 1, kFailed = 2 };
  std::atomic<uint32_t> state{kAbsent};
  std::atomic<int64_t> pins{0};  // planned uses not yet done
  UnitView view;
  absl::Status error;
  uint8_t* buffer = nullptr;  // from the pipeline's buffer pool
  size_t capacity = 0;
};

// Aligned buffers for unit loads, reused: units come and go every few
// milliseconds, and handing each back to malloc fragments the heap (RSS grew
// by the dataset's size before this pool). Loader thread only.
class BufferPool {
 public:
  ~BufferPool();
  // A buffer of at least `bytes`, aligned to kIoAlignment.
  uint8_t* Take(size_t bytes, size_t* capacity);
  void Give(uint8_t* buffer, size_t capacity);

 private:
  std::vector<std::pair<uint8_t*, size_t>> free_;
};

// One epoch's plan and the loader's progress through it.
struct EpochRun {
  uint64_t epoch = 0;
  EpochPlan plan;
  std::unique_ptr<std::atomic<uint32_t>[]> piece_ready;  // 1 once pinned and loaded
};

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

// The transform workers for ReaderOptions::threads: as given, 0 one a core.
int WorkerThreads(int requested);

// The ring's slots for ReaderOptions::ring_slots `requested`, batches of
// `batch_bytes` and `workers` (the caller counts a device's buffers among
// them): `requested`, or kAutoRingSlots' rule (include/shardpack/reader.h,
// the one statement of it). Why that rule: with small batches (CIFAR's are
// 1.5 MiB) 4 slots are about a millisecond of the workers' output, and a
// consumer that the scheduler holds back that long (three threads on two
// cores) stalled them; each worker builds a whole batch into a slot of its
// own, so with fewer slots than workers the rest sit idle (16 workers on 4
// slots of 224x224 batches kept 4 cores busy), and two more let the
// consumer hold one batch while the next is ready.
int RingSlotsFor(int requested, uint64_t batch_bytes, int workers);

// A staging slot of the ring.
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
};

class Pipeline {
 public:
  // Ring slots come from `host_memory`'s HostAlloc (pinned for a device)
  // when given, which then outlives the pipeline.
  Pipeline(const ReaderOptions& options, StreamDataset* dataset, const SampleTransform* transform,
           const PlanOptions& plan_options, int num_labels, CopyEngine* host_memory = nullptr);
  ~Pipeline();

  // Starts the threads so that sequence number 0 is (epoch, batch). With
  // `rest`, `epoch` is the segment that reads that rest (an elastic resume)
  // and the epochs after it are ordinary.
  // ResourceExhaustedError when the system will not start a thread; what
  // had started is stopped again.
  absl::Status Start(uint64_t epoch, uint64_t batch,
                     std::shared_ptr<const EpochRest> rest = nullptr);
  // Stops and joins every thread; resident units stay cached, unpinned.
  void Stop();

  // The slot of sequence number `seq`, once built (or once stopped); null
  // when it was not built within `timeout`. Records the wait. One thread
  // waits: Reader::Next, or the stager's.
  RingSlot* WaitBuilt(uint64_t seq, std::chrono::nanoseconds timeout = kNoTimeout);
  // Returns the slot of `seq` to the ring.
  void Release(uint64_t seq);

  uint64_t batches_per_epoch() const { return batches_per_epoch_; }
  void AddStats(ReaderStats* stats) const;
  // ResourceExhaustedError naming `path` when a ring slot's batch memory
  // (sized from the dataset's image shape) could not be allocated; check it
  // before Start().
  absl::Status CheckRing(const std::string& path) const;

 private:
  // Loader.
  void LoaderMain();
  bool LoadEpoch(EpochRun& run, uint64_t start_position);
  // Makes piece i of `run` ready: at once when its unit is loaded, when its
  // read completes otherwise. False when stopped.
  bool Acquire(EpochRun& run, uint32_t piece);
  bool MakeRoom(uint64_t bytes);
  void Submit(uint32_t unit, EpochRun& run, uint32_t piece);
  void CompleteOldest();
  void Drain();
  void Evict(uint32_t unit);
  std::shared_ptr<EpochRun> PublishRun(uint64_t epoch);
  std::shared_ptr<EpochRun> WaitRun(uint64_t epoch);
  // Forgets the plans of epochs before the consumer's. Caller holds mu_.
  void DropPastRuns();

  // Workers.
  // The (epoch, batch) of sequence number `seq`.
  void Locate(uint64_t seq, uint64_t* epoch, uint64_t* batch) const;
  void WorkerMain();
  void BuildBatch(uint64_t seq, RingSlot& slot);
  void Unpin(uint32_t unit, int64_t n);

  const ReaderOptions options_;
  StreamDataset* dataset_;
  const SampleTransform* transform_;
  const PlanOptions plan_options_;
  const int num_labels_;
  const uint64_t batches_per_epoch_;
  const uint64_t plan_bound_bytes_;  // PlanMemoryBound: a constant of the dataset and options
  const uint64_t budget_bytes_;
  const size_t max_in_flight_;  // reads the loader keeps outstanding

  std::vector<UnitSlot> units_;
  std::vector<RingSlot> ring_;
  // Loader thread only.
  BufferPool pool_;
  struct InFlight {
    uint32_t unit;
    std::vector<std::pair<EpochRun*, uint32_t>> waiters;  // pieces to mark ready
  };
  std::deque<InFlight> in_flight_;
  std::vector<uint8_t> loading_;  // per unit: a read is in flight

  uint64_t start_epoch_ = 0, start_batch_ = 0;
  std::shared_ptr<const EpochRest> rest_;  // of start_epoch_, when elastic
  uint64_t start_epoch_batches_ = 0;       // batches of start_epoch_
  std::atomic<bool> stop_{false};
  Doorbell built_;  // a ring slot's `ready` was stored
  std::atomic<uint64_t> next_build_{0};
  std::atomic<uint64_t> consumer_epoch_{0};

  std::mutex mu_;
  std::condition_variable cv_;  // released units, new plans, consumer progress
  std::deque<uint32_t> released_;
  std::map<uint64_t, std::shared_ptr<EpochRun>> runs_;
  uint64_t resident_bytes_ = 0;  // loader thread only

  std::thread loader_;
  std::vector<std::thread> workers_;

  std::atomic<uint64_t> io_wait_ns_{0}, transform_wait_ns_{0}, consumer_wait_ns_{0};
  std::atomic<uint64_t> samples_{0}, skipped_{0}, loads_{0};
  std::atomic<uint64_t> plan_peak_bytes_{0};  // see PublishRun
};

}  // namespace shardpack::internal

#endif  // SHARDPACK_READER_PIPELINE_H_
