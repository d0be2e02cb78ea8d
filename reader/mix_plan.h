// A mixture's epochs (docs/reader.md, "Mixtures"): several sources, each
// drawing a set number of samples into every mixture epoch.
//
// 1. Source s is an endless stream of its own epochs: source epoch E is a
//    permutation of its records (a view's selection of them), drawn from
//    (the source's seed, E). Mixture epoch e takes the stream's positions
//    [e * c, (e + 1) * c), c = MixSourcePlan::per_epoch. So each record is
//    drawn exactly once per source epoch, whatever the ratio: with c twice
//    the source's records a mixture epoch holds two source epochs; with a
//    quarter, a source epoch spans four mixture epochs.
// 2. That draw is a set of parts, one per source epoch it meets. Part k is
//    a copy of the source's units whose records are numbered k * N + r (N
//    the source's records): a record drawn twice is two records to the plan.
// 3. Each source's draw is planned as one dataset is (reader/epoch_plan.h:
//    units permuted, rank shares, the order shuffled within the source's
//    part of the shuffle budget), with batch size 1 and kDrop: each of W
//    ranks takes floor(c / W) of it.
// 4. A rank's positions interleave its sources by MixSchedule, a pure
//    function of the per-rank counts: the same on every rank and for any
//    thread count. Remainder then applies to the total as for one dataset.
//
// Elastic resume: a mixture segment's batch count says how many positions
// of each source every rank delivered (the schedule's prefix counts), so
// each source's rest is its draw's rest after segments of batch size 1
// (RestOfEpoch with the draw as the base), and the next segment plans
// those rests as step 3 does.
#ifndef SHARDPACK_READER_MIX_PLAN_H_
#define SHARDPACK_READER_MIX_PLAN_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "reader/epoch_plan.h"
#include "reader/planner.h"

namespace shardpack::reader {

// Which source each position of a rank's mixture segment takes. In every
// window of `window` positions (the last may be shorter, w long), source s
// takes floor or ceil of w * counts[s] / total, and over the whole
// schedule exactly counts[s]; inside a window its positions are spread as
// evenly as the counts allow.
class MixSchedule {
 public:
  MixSchedule(std::vector<uint64_t> counts, uint64_t window);
  uint64_t positions() const { return total_; }
  // The source of the next position. Precondition: fewer than positions()
  // were taken.
  uint32_t Next() {
    if (at_ == size_) {
      StartWindow();
      OrderWindow();
    }
    return pattern_[at_++];
  }

 private:
  void StartWindow();
  void OrderWindow();

  std::vector<uint64_t> counts_;
  std::vector<uint64_t> before_;  // taken in earlier windows
  std::vector<uint64_t> quota_;   // of the current window
  std::vector<uint64_t> taken_;   // scratch of OrderWindow
  std::vector<uint32_t> pattern_;        // the current window's sources, in order
  std::vector<uint64_t> pattern_quota_;  // the quotas pattern_ was made for
  uint64_t total_ = 0, window_ = 1;
  uint64_t done_ = 0;             // positions taken before the current window
  uint64_t size_ = 0, at_ = 0;    // the current window's size and position
};

// Positions of each source among the first `positions` of MixSchedule(counts, window).
std::vector<uint64_t> ScheduledCounts(const std::vector<uint64_t>& counts, uint64_t window,
                                      uint64_t positions);

struct MixSourcePlan {
  std::vector<ReadUnit> units;  // the source's units, its records numbered from 0
  uint32_t first_unit = 0;      // where units[0] is among the reader's units
  EpochRest selection;          // the records it holds: a view's, else all
  uint64_t per_epoch = 0;       // samples a mixture epoch draws, all ranks together
};

class MixPlanner final : public EpochPlanner {
 public:
  // `options`: the reader's (seed, rank, world size, batch size, remainder,
  // shuffle budget). Preconditions (checked by the reader's opener): every
  // source holds a record, 1 <= per_epoch <= kMaxMixRepeat (shardpack/reader.h) * its records.
  MixPlanner(std::vector<MixSourcePlan> sources, const PlanOptions& options);

  EpochPlan Plan(uint64_t epoch, const EpochRests* rests) const override;
  absl::StatusOr<std::shared_ptr<const EpochRests>> RestOf(
      uint64_t epoch, const std::vector<ReadSegment>& earlier) const override;
  uint64_t batches_per_epoch() const override { return batches_; }
  uint64_t MemoryBound() const override { return memory_bound_; }

  // Samples of each source a rank takes in a whole epoch.
  const std::vector<uint64_t>& per_rank() const { return per_rank_; }

  // What source s draws into mixture epoch `epoch` (step 2 above): the
  // parts' units into `units` and the drawn records, as a rest of segment 0.
  EpochRest DrawOf(size_t s, uint64_t epoch, std::vector<ReadUnit>* units) const;

 private:
  // The plan options of source s within a segment of `o`.
  PlanOptions SourceOptions(size_t s, const PlanOptions& o) const;
  // Batches of a rank's `positions` under o's batch size and remainder.
  static uint64_t SegmentBatches(uint64_t positions, const PlanOptions& o);

  std::vector<MixSourcePlan> sources_;
  std::vector<uint64_t> seeds_;
  std::vector<double> budget_share_;  // of the shuffle budget, per source
  // Per source: every epoch draws all its records once (no view selection,
  // per_epoch its records), so an epoch's draw is its whole source epoch,
  // planned as one dataset's epoch is (no bitmap, no DrawOf).
  std::vector<bool> whole_;
  PlanOptions options_;
  std::vector<uint64_t> per_rank_;
  uint64_t batches_ = 0;
  uint64_t memory_bound_ = 0;
};

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_MIX_PLAN_H_
