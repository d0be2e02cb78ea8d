// The loader: one thread that plans each epoch (reader/epoch_plan.h) and
// reads and decodes its units in the plan's load order within the memory
// budget, keeping them resident while planned uses remain. Workers wait for
// a piece to be ready, read its unit in place and unpin it when done.
//
// Synchronization: per-piece ready flags (atomics with wait/notify); the
// one mutex guards the released units and the epoch plans, and is taken per
// unit released or plan published, never per sample.
#ifndef SHARDPACK_READER_LOADER_H_
#define SHARDPACK_READER_LOADER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "reader/dataset_units.h"
#include "reader/epoch_plan.h"
#include "reader/planner.h"
#include "reader/unit_view.h"
#include "shardpack/reader.h"

namespace shardpack::reader {

// a + b + ..., or UINT64_MAX when that does not fit.
template <typename... More>
uint64_t SaturatingAdd(uint64_t a, uint64_t b, More... more) {
  const uint64_t sum = a + b < a ? UINT64_MAX : a + b;
  if constexpr (sizeof...(more) == 0) {
    return sum;
  } else {
    return SaturatingAdd(sum, static_cast<uint64_t>(more)...);
  }
}

// A unit's life in memory. The loader alone loads, pins and evicts; workers
// only read ready units and unpin them.
struct UnitSlot {
  enum State : uint32_t { kAbsent = 0, kReady = 1, kFailed = 2 };
  std::atomic<uint32_t> state{kAbsent};
  std::atomic<int64_t> pins{0};  // planned uses not yet done
  UnitView view;
  absl::Status error;
  uint8_t* buffer = nullptr;  // from the loader's buffer pool
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

// Where a started pipeline begins: sequence number 0 is batch `batch` of
// `epoch`. With `rests`, `epoch` is the segment that reads those rests (an
// elastic resume) and has `epoch_batches` batches; the epochs after it are
// ordinary.
struct StreamStart {
  uint64_t epoch = 0, batch = 0;
  std::shared_ptr<const EpochRests> rests;
  uint64_t epoch_batches = 0;
};

// What the loader takes of ReaderOptions (made by PipelineConfigOf).
struct LoaderConfig {
  int batch_size = 0;
  uint64_t shuffle_bytes = 0;     // with read_ahead_bytes: what units may hold
  uint64_t read_ahead_bytes = 0;  // also: how many reads are kept in flight
};

class Loader {
 public:
  // `dataset` and `stop` (the pipeline's stop flag) outlive the loader.
  Loader(const LoaderConfig& config, StreamDataset* dataset, const EpochPlanner* planner,
         const std::atomic<bool>& stop);
  ~Loader();

  // Starts the thread at `start`. ResourceExhaustedError when the system
  // will not start it.
  absl::Status Start(const StreamStart& start);
  bool running() const { return thread_.joinable(); }
  // Stopping, the stop flag set: wakes every waiter on a piece or a plan;
  // then joins the thread; then, once no worker runs, finishes the reads in
  // flight and unpins every unit (loaded units stay cached for a restart,
  // evictable).
  void WakeForStop();
  void JoinThread();
  void Settle();

  // Workers: the run of `epoch` once published; null when stopped first.
  std::shared_ptr<EpochRun> WaitRun(uint64_t epoch);
  const UnitSlot& unit(uint32_t u) const { return units_[u]; }
  // Workers: `n` planned uses of `unit` are done.
  void Unpin(uint32_t unit, int64_t n);
  // Consumer: it took a batch of `epoch`; plans of epochs before it go, and
  // the loader may run an epoch past it. A load and a compare unless the
  // epoch changed.
  void ConsumerAt(uint64_t epoch) {
    if (epoch != consumer_epoch_.load()) NewConsumerEpoch(epoch);
  }

  // Fills bytes_read, index_bytes, plan_peak_bytes and plan_bytes.
  void AddStats(ReaderStats* stats) const;
  // shuffle_bytes + read_ahead_bytes, saturated: what units may hold.
  uint64_t budget_bytes() const { return budget_bytes_; }

 private:
  void Main();
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
  // Forgets the plans of epochs before the consumer's. Caller holds mu_.
  void DropPastRuns();
  void NewConsumerEpoch(uint64_t epoch);

  const int batch_size_;
  StreamDataset* dataset_;
  const EpochPlanner* planner_;
  const uint64_t plan_bound_bytes_;  // PlanMemoryBound: a constant of the dataset and options
  const uint64_t budget_bytes_;
  const size_t max_in_flight_;  // reads the loader keeps outstanding
  const std::atomic<bool>& stop_;

  std::vector<UnitSlot> units_;
  // Loader thread only.
  BufferPool pool_;
  struct InFlight {
    uint32_t unit;
    std::vector<std::pair<EpochRun*, uint32_t>> waiters;  // pieces to mark ready
  };
  std::deque<InFlight> in_flight_;
  std::vector<uint8_t> loading_;  // per unit: a read is in flight
  uint64_t resident_bytes_ = 0;

  StreamStart start_;
  std::atomic<uint64_t> consumer_epoch_{0};
  std::mutex mu_;
  std::condition_variable cv_;  // released units, new plans, consumer progress
  std::deque<uint32_t> released_;
  std::map<uint64_t, std::shared_ptr<EpochRun>> runs_;
  std::thread thread_;

  std::atomic<uint64_t> loads_{0};
  std::atomic<uint64_t> plan_peak_bytes_{0};  // see PublishRun
};

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_LOADER_H_
