// What plans the reader's epochs: one dataset's (DatasetPlanner, below) or
// a mixture's (reader/mix_plan.h). The loader asks for each epoch's plan;
// Restore asks what an elastic resume left of an epoch.
#ifndef SHARDPACK_READER_PLANNER_H_
#define SHARDPACK_READER_PLANNER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "reader/epoch_plan.h"
#include "shardpack/reader.h"

namespace shardpack::reader {

// What an epoch's earlier segments left (an elastic resume), worked out once
// by EpochPlanner::RestOf: the records still owed (one rest for a dataset,
// one per source for a mixture) and the batches of the segment that reads
// them.
struct EpochRests {
  std::vector<EpochRest> rests;
  uint64_t batches = 0;
};

class EpochPlanner {
 public:
  virtual ~EpochPlanner() = default;
  // The plan of `epoch` for this reader's rank: the whole epoch, or with
  // `rests` (from RestOf for this epoch) the segment that reads what they
  // owe. A pure function of its arguments and the planner's options.
  virtual EpochPlan Plan(uint64_t epoch, const EpochRests* rests) const = 0;
  // What `earlier` (segments of `epoch`, oldest first) left of it.
  // InvalidArgumentError naming the segment when one does not fit (they
  // come from a saved state).
  virtual absl::StatusOr<std::shared_ptr<const EpochRests>> RestOf(
      uint64_t epoch, const std::vector<ReadSegment>& earlier) const = 0;
  // Batches of a whole epoch, the same on every rank and every epoch.
  virtual uint64_t batches_per_epoch() const = 0;
  // The most bytes the plans hold at once (PlanMemoryBound).
  virtual uint64_t MemoryBound() const = 0;
};

// One dataset's epochs (reader/epoch_plan.h).
class DatasetPlanner final : public EpochPlanner {
 public:
  // `units` outlive the planner.
  DatasetPlanner(const std::vector<ReadUnit>& units, const PlanOptions& options)
      : units_(units), options_(options) {
    for (const ReadUnit& u : units) records_ += u.records;
  }
  EpochPlan Plan(uint64_t epoch, const EpochRests* rests) const override {
    return MakeEpochPlan(units_, options_, epoch, rests != nullptr ? &rests->rests[0] : nullptr);
  }
  absl::StatusOr<std::shared_ptr<const EpochRests>> RestOf(
      uint64_t epoch, const std::vector<ReadSegment>& earlier) const override;
  uint64_t batches_per_epoch() const override { return BatchesPerEpoch(records_, options_); }
  uint64_t MemoryBound() const override { return PlanMemoryBound(units_, options_); }

 private:
  const std::vector<ReadUnit>& units_;
  const PlanOptions options_;
  uint64_t records_ = 0;
};

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_PLANNER_H_
