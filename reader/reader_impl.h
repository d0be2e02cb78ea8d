// Reader::Impl, behind Reader and Batch (include/shardpack/reader.h), in
// four files by responsibility:
//   reader/reader.cc          Next, the Batch handle, the Reader's forwarding;
//   reader/reader_open.cc     the opener: options resolved, dataset, transform,
//                             pipeline and GPU staging made;
//   reader/reader_restore.cc  state() and Restore;
//   reader/reader_options.cc  the options' checks and names.
#ifndef SHARDPACK_READER_READER_IMPL_H_
#define SHARDPACK_READER_READER_IMPL_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "reader/dataset_units.h"
#include "reader/epoch_plan.h"
#include "reader/field_plan.h"
#include "reader/pipeline.h"
#include "reader/planner.h"
#include "reader/ring.h"
#include "reader/staging.h"
#include "reader/transform.h"
#include "remote/storage.h"
#include "shardpack/reader.h"

namespace shardpack {
namespace reader {

// reader/reader_options.cc. InvalidArgumentError naming the first option
// out of its range.
absl::Status CheckOptions(const ReaderOptions& o);
// RANK / WORLD_SIZE from the environment where `o` says -1.
absl::Status ResolveRank(ReaderOptions* o);
// The plan options of `o`, whose rank and world size are resolved.
PlanOptions PlanOptionsOf(const ReaderOptions& o);

}  // namespace reader

struct Batch::Slot {
  reader::RingSlot* ring = nullptr;
  uint64_t seq = 0;
  const reader::OutputShape* shape = nullptr;
  int num_labels = 0;
  OutputLayout layout = OutputLayout::kNHWC;
  size_t sample_bytes = 0;    // of images() or, on a device, device_images()
  void* device = nullptr;     // the device buffer, when staged
  void* event = nullptr;
  const reader::FieldPlan* fields = nullptr;  // the reader's
  // A live Batch has it. Atomic: a Batch may be destroyed on any thread.
  std::atomic<bool> held{false};
};

class Reader::Impl {
 public:
  ~Impl() { Stop(); }
  // A Reader around an initialized Impl (a nested class may call Reader's
  // private constructor; the public header names no test hook).
  static std::unique_ptr<Reader> Wrap(std::unique_ptr<Impl> impl) {
    return std::unique_ptr<Reader>(new Reader(std::move(impl)));
  }
  // `engine`: the copy engine to stage batches through (tests), else one is
  // made for options.device when it is >= 0.
  absl::Status Init(const ReaderOptions& options, std::unique_ptr<reader::CopyEngine> engine);
  absl::StatusOr<Batch> Next(Reader* reader, std::chrono::nanoseconds timeout);
  // ~Batch, on any thread: the slot goes back through atomics only.
  void Release(Batch::Slot* slot) {
    GiveBack(slot);
    outstanding_.fetch_sub(1, std::memory_order_relaxed);
    slot->held.store(false, std::memory_order_release);
  }
  ReaderState state() const;
  absl::Status Restore(const ReaderState& state);
  ReaderStats stats() const;
  uint64_t batches_per_epoch() const { return pipeline_->batches_per_epoch(); }
  int ring_slots() const { return options_.ring_slots; }
  uint64_t shuffle_bytes() const { return options_.shuffle_bytes; }
  uint64_t batches_in_epoch() const { return epoch_batches_; }
  // The records read from: a view's selected, a mixture's sources' together.
  uint64_t records() const {
    uint64_t n = 0;
    for (const SourceInfo& s : sources_) n += s.records;
    return n;
  }
  uint64_t fingerprint() const { return fingerprint_; }
  const Schema& schema() const { return schema_; }
  const std::vector<SourceInfo>& sources() const { return sources_; }
  std::array<int64_t, 4> output_shape() const;
  IoEngine io_engine() const { return dataset_.source->engine(); }
  const std::string& device_fallback() const { return no_device_; }
  ElementType dtype() const { return dtype_; }

 private:
  // The options the pipeline builds with: a device finish's input is uint8
  // NHWC; with no device, it is done here on the host.
  absl::Status HostOptions(ReaderOptions* host);
  // Opens the dataset, or the mixture's sources, and what plans them:
  // dataset_, planner_, schema_, sources_, fingerprint_ (reader_open.cc).
  // OpenSources takes storage_ (the options' shared Storage, else one made
  // from their cache options), then calls OpenDatasetOrMixture.
  absl::Status OpenSources();
  absl::Status OpenDatasetOrMixture();
  // kAutoShuffleBytes resolved from the opened dataset's units.
  void ResolveShuffleBytes();
  // What the reader reads, for messages: the path, or the mixture.
  std::string Describe() const;
  // fields_, transform_ and followers_ for the options the pipeline builds
  // with (`host`).
  absl::Status MakeTransforms(const ReaderOptions& host);
  absl::Status MakeFollower(const ReaderOptions& host, int k);
  absl::Status InitStaging(int num_labels);
  size_t DeviceSampleBytes() const;
  void GiveBack(Batch::Slot* slot);
  void ResizeSlots(int n) {
    slots_ = std::make_unique<Batch::Slot[]>(static_cast<size_t>(n));
    num_slots_ = static_cast<size_t>(n);
  }
  // Tells options_.corrupt_reporter of the samples `ring` replaced.
  void ReportCorrupt(const reader::RingSlot& ring) const;
  void Stop();
  // Starts the pipeline and the ring at (epoch_, batch_); on failure
  // nothing was delivered and the next Next() tries again.
  absl::Status Start();
  // Next() at the end of epoch_: its OutOfRangeError, and the reader moves
  // on to the next epoch (or stays at the end of the last).
  absl::Status EndEpoch();
  // The segments `state` says its epoch was read in, oldest first, ending
  // with the state's own; InvalidArgumentError naming a bad field.
  absl::StatusOr<std::vector<ReadSegment>> SegmentsOf(const ReaderState& state) const;

  ReaderOptions options_;
  reader::PlanOptions plan_;
  uint64_t fingerprint_ = 0;
  reader::StreamDataset dataset_;
  Schema schema_;                     // the dataset's, or the mixture's label space
  std::vector<SourceInfo> sources_;   // one, or a mixture's
  std::vector<uint64_t> source_samples_;  // a mixture: delivered from each source
  // What every path of the reader is opened through: its datasets in an
  // object store, read through its cache (their stats are the reader's),
  // shared with other readers when the options gave a Storage.
  std::shared_ptr<remote::Storage> storage_;
  // What a batch delivers of the dataset's fields (inactive: a classic
  // read), the transform of Batch::images() and those of the image fields
  // that follow it (followers_[k - 1]: fields_.transformed()[k]).
  reader::FieldPlan fields_;
  std::unique_ptr<reader::SampleTransform> transform_;
  std::vector<reader::SampleTransform> followers_;
  std::unique_ptr<reader::EpochPlanner> planner_;  // before pipeline_, which uses it
  // Before pipeline_: the ring slots are its (pinned) memory.
  std::unique_ptr<reader::CopyEngine> engine_;
  std::unique_ptr<reader::Pipeline> pipeline_;
  std::unique_ptr<reader::Stager> stager_;  // null: batches stay on the host
  // Where Next takes batches from: the stager, else the pipeline's host ring.
  reader::BatchRing* ring_ = nullptr;
  size_t device_sample_bytes_ = 0;
  size_t sample_bytes_ = 0;  // of a sample of what Next hands out
  std::string no_device_;  // why there is no engine for options_.device
  ElementType dtype_ = ElementType::kUint8;  // of every Batch's images
  std::unique_ptr<Batch::Slot[]> slots_;  // ring_slots or device_buffers of them
  size_t num_slots_ = 0;
  bool started_ = false;
  uint64_t epoch_ = 0, batch_ = 0;  // the next batch Next() delivers
  bool last_epoch_ended_ = false;   // epoch_ is kMaxEpoch and its end was told
  uint64_t epoch_batches_ = 0;      // batches of epoch_
  // After an elastic Restore: epoch_'s earlier segments and what they left
  // (null otherwise). Cleared when epoch_ ends.
  std::vector<ReadSegment> earlier_;
  std::shared_ptr<const reader::EpochRests> rest_;
  uint64_t seq_ = 0;  // its pipeline sequence number
  std::atomic<int> outstanding_{0};  // live Batches
  // Counted as batches are delivered: workers run ahead into the next epoch,
  // so counts of what was built would depend on timing.
  uint64_t delivered_ = 0;
  uint64_t delivered_samples_ = 0;
  uint64_t delivered_skipped_ = 0;
};

// Opens a Reader through its private Impl: the one way reader/ code outside
// Reader's members makes one (Reader::Impl is private to Reader).
class ReaderAccess {
 public:
  // `engine` as Reader::Impl::Init takes it.
  static absl::StatusOr<std::unique_ptr<Reader>> Open(const ReaderOptions& options,
                                                      std::unique_ptr<reader::CopyEngine> engine);
};

}  // namespace shardpack

#endif  // SHARDPACK_READER_READER_IMPL_H_
