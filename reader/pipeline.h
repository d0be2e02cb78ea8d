// The reader's machinery behind Reader::Impl, in three parts:
//   - the loader (reader/loader.h): one thread that plans each epoch and
//     reads and decodes its units within the memory budget;
//   - the batch builder (reader/batch_builder.h): workers that each build a
//     whole batch into a slot of the host ring, each with its own decoder
//     and scratch;
//   - the host ring (reader/host_ring.h), a BatchRing (reader/ring.h): the
//     consumer takes built batches from it, or the GPU stager
//     (reader/staging.h), the other BatchRing, takes them to the device.
// The pipeline owns the three and their one stop flag, and starts and
// stops them in order.
#ifndef SHARDPACK_READER_PIPELINE_H_
#define SHARDPACK_READER_PIPELINE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "reader/batch_builder.h"
#include "reader/dataset_units.h"
#include "reader/epoch_plan.h"
#include "reader/host_ring.h"
#include "reader/loader.h"
#include "reader/ring.h"
#include "reader/transform.h"
#include "shardpack/reader.h"

namespace shardpack::reader {

// The transform workers for ReaderOptions::threads: as given, 0 one a core.
// The one statement of the rule: Reader::Open resolves the option with it,
// and whatever else counts the reader's workers (shardbench) asks it.
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

// What each stage of the pipeline takes of ReaderOptions: a narrow config
// each, made once when the reader opens (the epoch planner's is
// PlanOptions, reader/epoch_plan.h).
struct PipelineConfig {
  LoaderConfig loader;
  BuilderConfig builder;
  int ring_slots = 0;  // resolved (RingSlotsFor)
};
// The stages' configs of `options`, whose threads and ring_slots are
// resolved (WorkerThreads, RingSlotsFor): the one place they are made.
PipelineConfig PipelineConfigOf(const ReaderOptions& options);

class Pipeline {
 public:
  // Ring slots come from `host_memory`'s HostAlloc (pinned for a device)
  // when given, which then outlives the pipeline, as do `spec`'s parts.
  Pipeline(const PipelineConfig& config, StreamDataset* dataset, const BatchSpec& spec,
           const EpochPlanner* planner, CopyEngine* host_memory = nullptr);
  ~Pipeline();

  // Starts the threads so that sequence number 0 is (epoch, batch). With
  // `rests`, `epoch` is the segment that reads those rests (an elastic resume)
  // and the epochs after it are ordinary.
  // ResourceExhaustedError when the system will not start a thread; what
  // had started is stopped again.
  absl::Status Start(uint64_t epoch, uint64_t batch,
                     std::shared_ptr<const EpochRests> rests = nullptr);
  // Stops and joins every thread; resident units stay cached, unpinned.
  void Stop();

  // Where built batches are taken from: by Reader::Next, or by the stager.
  HostRing& host_ring() { return ring_; }

  uint64_t batches_per_epoch() const { return batches_per_epoch_; }
  void AddStats(ReaderStats* stats) const;
  // ResourceExhaustedError naming `path` when a ring slot's batch memory
  // (sized from the dataset's image shape) could not be allocated; check it
  // before Start().
  absl::Status CheckRing(const std::string& path) const { return ring_.CheckMemory(path); }

 private:
  const uint64_t batches_per_epoch_;
  std::atomic<bool> stop_{false};
  Loader loader_;
  HostRing ring_;
  BatchBuilder builder_;
};

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_PIPELINE_H_
