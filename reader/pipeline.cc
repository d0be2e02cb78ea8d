#include "reader/pipeline.h"

#include <algorithm>
#include <thread>

namespace shardpack::reader {

int WorkerThreads(int requested) {
  if (requested > 0) return requested;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

int RingSlotsFor(int requested, uint64_t batch_bytes, int workers) {
  if (requested != kAutoRingSlots) return requested;
  constexpr uint64_t kRingBytes = uint64_t{32} << 20;
  const uint64_t w = uint64_t(std::max(workers, 1));
  const uint64_t small = std::clamp<uint64_t>(kRingBytes / std::max<uint64_t>(batch_bytes, 1), 4, w + 4);
  return static_cast<int>(std::min<uint64_t>(std::max<uint64_t>(small, w + 2), kMaxRingSlots));
}

Pipeline::Pipeline(const PipelineConfig& config, StreamDataset* dataset, const BatchSpec& spec,
                   const EpochPlanner* planner, CopyEngine* host_memory)
    : batches_per_epoch_(planner->batches_per_epoch()),
      loader_(config.loader, dataset, planner, stop_),
      ring_(config.ring_slots, config.builder.batch_size, spec.transform->shape().sample_bytes,
            spec.num_labels, config.builder.keys, *spec.fields, host_memory, &loader_, stop_),
      builder_(config.builder, dataset, spec, &loader_, &ring_, batches_per_epoch_, stop_) {}

Pipeline::~Pipeline() { Stop(); }

absl::Status Pipeline::Start(uint64_t epoch, uint64_t batch,
                             std::shared_ptr<const EpochRests> rests) {
  StreamStart start;
  start.epoch = epoch;
  start.batch = batch;
  start.epoch_batches =
      rests != nullptr ? rests->batches : batches_per_epoch_;
  start.rests = std::move(rests);
  stop_ = false;
  ring_.Reset();
  absl::Status status = loader_.Start(start);
  if (status.ok()) status = builder_.Start(start);
  // What started is stopped again: the reader may try later (fewer
  // threads elsewhere in the process, a raised limit).
  if (!status.ok()) Stop();
  return status;
}

void Pipeline::Stop() {
  if (!loader_.running()) return;
  stop_ = true;
  loader_.WakeForStop();
  ring_.WakeForStop();
  loader_.JoinThread();
  builder_.Join();
  loader_.Settle();
}

void Pipeline::AddStats(ReaderStats* stats) const {
  builder_.AddStats(stats);
  loader_.AddStats(stats);
  stats->consumer_wait_s = ring_.consumer_wait_s();
  // Saturated: shuffle_bytes and read_ahead_bytes may be as large as 2^64-1.
  stats->memory_budget_bytes =
      SaturatingAdd(loader_.budget_bytes(), ring_.image_bytes() + ring_.field_bytes(),
                    stats->index_bytes, stats->plan_bytes);
}

}  // namespace shardpack::reader
