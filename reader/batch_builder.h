// The batch builder: worker threads that each build a whole batch into a
// host ring slot. For each position of the batch a worker waits for its
// piece (reader/loader.h), parses the record in place, checks it against
// the schema and transforms it straight into its row of the slot (the only
// copy of its bytes); damaged samples fail the batch or, with
// OnCorrupt::kSkip, are replaced by good ones of the same batch; then the
// batch's units are unpinned.
//
// Each worker owns its decoder and scratch (TransformScratch) and its
// damage lists for its life: nothing is allocated per sample, no lock is
// taken per sample.
#ifndef SHARDPACK_READER_BATCH_BUILDER_H_
#define SHARDPACK_READER_BATCH_BUILDER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "reader/dataset_units.h"
#include "reader/field_plan.h"
#include "reader/host_ring.h"
#include "reader/loader.h"
#include "reader/transform.h"
#include "shardpack/fields.h"
#include "shardpack/reader.h"

namespace shardpack::reader {

// What a batch holds and how its parts are made: made by the opener,
// outlives the pipeline.
struct BatchSpec {
  const SampleTransform* transform = nullptr;  // Batch::images()
  // The image fields that follow it: followers[k - 1] transforms
  // fields->transformed()[k].
  const std::vector<SampleTransform>* followers = nullptr;
  const FieldPlan* fields = nullptr;  // inactive for a classic read
  int num_labels = 1;
};

// What the batch builder takes of ReaderOptions (made by PipelineConfigOf).
struct BuilderConfig {
  int threads = 1;  // resolved (WorkerThreads): at least 1
  int batch_size = 0;
  bool keys = false;
  OnCorrupt on_corrupt = OnCorrupt::kError;
  uint64_t seed = 0;  // of the replacements of damaged samples
};

class BatchBuilder {
 public:
  // `config.threads` workers. Every pointer and `stop` (the pipeline's stop
  // flag) outlive the builder.
  BatchBuilder(const BuilderConfig& config, StreamDataset* dataset, const BatchSpec& spec,
               Loader* loader, HostRing* ring, uint64_t batches_per_epoch,
               const std::atomic<bool>& stop);
  ~BatchBuilder();

  // Starts the workers at `start`, building sequence number 0 first.
  // ResourceExhaustedError when the system will not start one; those that
  // started run until Join.
  absl::Status Start(const StreamStart& start);
  // Joins the workers, the stop flag set and the ring woken.
  void Join();

  // Fills samples, skipped, io_wait_s and transform_wait_s.
  void AddStats(ReaderStats* stats) const;

 private:
  // What a worker owns for its life.
  struct Worker {
    TransformScratch scratch;
    std::vector<int> bad, good;  // positions of the batch; used only with damage
    std::vector<int> from;       // with damage and fields: the row each row copies
    std::vector<uint8_t> compact;  // with damage and fields: CopyRows' scratch
    std::vector<FieldValue> values;  // a record's fields (RecordFields::Decode)
  };

  void WorkerMain(Worker& worker);
  // The (epoch, batch) of sequence number `seq`.
  void Locate(uint64_t seq, uint64_t* epoch, uint64_t* batch) const;
  void BuildBatch(Worker& worker, uint64_t seq, RingSlot& slot);
  // Builds every row of `slot` from position `first` of `run`; false when
  // stopped first.
  bool BuildRows(Worker& worker, const EpochRun& run, uint64_t first, RingSlot& slot);
  // Row i from record `index` of `unit`, whose piece is ready; the damage,
  // named, if any.
  absl::Status BuildRow(Worker& worker, uint32_t unit, uint32_t index, int i, ByteSpan ahead,
                        RingSlot& slot);
  // BuildRow's with fields, beside the labels: the record split into its
  // fields (checked), the image fields transformed (the first leading),
  // the other columns' rows filled (CollateRow).
  absl::Status BuildFields(Worker& worker, const Record& record, const StreamMember& member,
                           uint64_t record_index, int i, ByteSpan ahead, RingSlot& slot);
  // The bytes of position j to prefetch: empty when not loaded yet.
  ByteSpan RecordBytes(const EpochRun& run, uint64_t first, int size, int j) const;
  // Sample j's unit view when its unit is loaded (its index in the unit in
  // `index`), else null.
  const UnitView* ReadyView(const EpochRun& run, uint64_t first, int size, int j,
                            uint32_t* index) const;
  void Damaged(Worker& worker, int i, absl::Status error, RingSlot& slot);
  // kSkip: the damaged rows refilled from good rows of the batch.
  void ReplaceDamaged(Worker& worker, uint64_t first, RingSlot& slot);
  // One atomic per run of samples from the same unit.
  void UnpinBatch(const EpochPlan& plan, uint64_t first, int size);

  const BuilderConfig config_;
  StreamDataset* dataset_;
  const SampleTransform* transform_;
  const std::vector<SampleTransform>* followers_;
  const FieldPlan& fields_;
  // With fields: each member's record splitter (a mixture's sources have
  // the same fields, but each checks labels against its own classes).
  std::vector<RecordFields> decoders_;
  Loader* loader_;
  HostRing* ring_;
  const int num_labels_;
  const uint64_t batches_per_epoch_;
  const std::atomic<bool>& stop_;

  StreamStart start_;
  std::atomic<uint64_t> next_build_{0};
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;

  std::atomic<uint64_t> io_wait_ns_{0}, transform_wait_ns_{0};
  std::atomic<uint64_t> samples_{0}, skipped_{0};
};

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_BATCH_BUILDER_H_
