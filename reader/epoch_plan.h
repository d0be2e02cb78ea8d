// The epoch plan: which records a rank reads in an epoch, in which order,
// and when each read unit is first and last needed.
//
// 1. Read units (a block of a shard: one contiguous read) are permuted per
//    epoch from (seed, epoch).
// 2. The records, taken unit by unit in that order, form the epoch's global
//    sequence; rank r of W takes the r-th contiguous share of it. Each share
//    holds floor(N / W) records, or ceil(N / W) with Remainder::kPad (the
//    last positions wrap to the start of the sequence), so every rank gets
//    the same number of batches. A share covers whole units except at its
//    two ends ("pieces" are a unit, or part of one, used by this rank).
// 3. The share is ordered: when its pieces fit in the shuffle budget, by a
//    full permutation; otherwise by a jittered sort (each record keyed by its
//    piece's position plus a uniform offset in [0, K), K the pieces the
//    budget holds), so at most about K pieces are in use at any position and
//    memory stays within the budget without a window boundary to stall on.
//    The sort is built K pieces at a time: piece i's keys lie in [i, i + K),
//    so once pieces [0, c) are keyed every position keyed below c is final.
//    The build holds the keys of at most 2K pieces beside the order (8 bytes
//    a position), whatever the share's size, and takes linear time.
//
// A plan is a pure function of (units, options, epoch): any thread count and
// any restore point see the same plan.
//
// Elastic resume (docs/reader.md): an epoch may be read in segments, each
// with its own plan options (world size, batch size...). Every rank of a
// segment delivers the same number of batches, so a segment's plan options
// and its batch count say which records every rank delivered in it. The
// records the segment's plan held and did not deliver are the epoch's rest
// (EpochRest); the next segment splits the rest into shares as step 2 splits
// the whole sequence (the rest taken in the epoch's unit order) and orders
// each share as step 3 does, with draws of its own.
#ifndef SHARDPACK_READER_EPOCH_PLAN_H_
#define SHARDPACK_READER_EPOCH_PLAN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "shardpack/reader.h"

namespace shardpack::reader {

// A contiguous run of records read in one request (a .shard block).
struct ReadUnit {
  uint32_t file = 0;          // index into the dataset's shard files
  uint32_t block = 0;         // block within the shard (LMDB, HDF5: unit within it)
  uint64_t first_record = 0;  // global index of the unit's first record
  uint32_t records = 0;
  uint64_t bytes = 0;         // bytes held in memory while the unit is in use
};

// A unit, or the part of it that this rank uses.
struct Piece {
  uint32_t unit = 0;
  uint32_t begin = 0;  // records [begin, end) of the unit
  uint32_t end = 0;
  uint64_t first_use = 0;  // first and last position that use the piece
  uint64_t last_use = 0;
  uint32_t uses = 0;       // positions that use it
};

// One position of the epoch: record `index` of piece `piece`'s unit.
struct SampleRef {
  uint32_t piece = 0;
  uint32_t index = 0;
};

struct PlanOptions {
  bool shuffle = true;
  uint64_t seed = 0;
  int rank = 0;
  int world_size = 1;
  int batch_size = 1;
  Remainder remainder = Remainder::kDrop;
  uint64_t budget_bytes = 0;  // bytes of pieces that may be in use at once
  friend bool operator==(const PlanOptions&, const PlanOptions&) = default;
};

// The one conversion from a segment to a plan's input: rank `rank` of
// `segment`'s world (0..world_size-1) for a reader of `seed`, the segment's
// shuffle_bytes as the budget.
PlanOptions PlanOf(const ReadSegment& segment, uint64_t seed, int rank);
// The segment a reader opened with `options` reads (rank and world size
// resolved, not -1), having delivered `batches` of it.
ReadSegment SegmentOf(const ReaderOptions& options, uint64_t batches = 0);

// The plan of a reader opened with `options` on a dataset of `units`
// (reader/reader.cc): rank and world size from RANK / WORLD_SIZE where they
// are -1, the shuffle budget chosen where it is kAutoShuffleBytes, and
// InvalidArgumentError for a bad value or a rank that does not exist. For
// what plans as the reader does (shardbench --compare-memcpy).
absl::StatusOr<PlanOptions> ReaderPlanOptions(ReaderOptions options,
                                              const std::vector<ReadUnit>& units);

struct EpochPlan {
  std::vector<Piece> pieces;     // sorted by first_use: the load order
  std::vector<SampleRef> order;  // one per position, batches * batch_size
                                 // long (shorter for a partial last batch)
  uint64_t batches = 0;
  uint64_t samples_per_rank = 0;  // before padding or dropping
  bool windowed = false;          // true when the jittered sort was used
  // The most bytes MakeEpochPlan held at once while building the plan: the
  // order and the shuffle's scratch (10 bytes a record within the budget,
  // else sort keys for two windows of pieces, not for the whole share), at
  // least PlanBytes(plan).
  uint64_t build_bytes = 0;
};

// Bytes the plan holds: 8 a position (its order) and 40 a piece.
uint64_t PlanBytes(const EpochPlan& plan);

// The most bytes a reader's plans hold at once for a dataset of `units`:
// one plan at rest (its epoch's) while the next is built (build_bytes: the
// new order, 8 bytes a position, and a shuffle's scratch, which holds at
// most twice the records of the shuffle budget, 33 bytes each). Known
// before any plan is made, so the reader's budget can say it at Open.
uint64_t PlanMemoryBound(const std::vector<ReadUnit>& units, const PlanOptions& options);

// The records an epoch still owes after its earlier segments.
struct EpochRest {
  std::vector<uint64_t> owed;  // bit r of owed[r / 64]: record r is owed
  uint64_t count = 0;          // bits set
  uint32_t segment = 0;        // segments before: the next segment's index
  bool Owes(uint64_t record) const { return (owed[record >> 6] >> (record & 63)) & 1; }
};

// What `segments` (finished segments of `epoch`, oldest first, read with
// `seed`) left of it: a pure function of its arguments, O(records) per
// segment. InvalidArgumentError naming the segment when one claims more
// batches than its plan has or has options out of range (they come from a
// saved state, docs/reader.md).
// With `base`, the epoch holds base's records only (a selection: a view's,
// or a mixture's draw from a source) and segment 0 reads them as
// MakeEpochPlan(units, options, epoch, base) does; base->segment is ignored.
absl::StatusOr<EpochRest> RestOfEpoch(const std::vector<ReadUnit>& units,
                                      const std::vector<ReadSegment>& segments, uint64_t seed,
                                      uint64_t epoch, const EpochRest* base = nullptr);

// Every record of `units` owed: the rest before an epoch's first segment.
EpochRest AllOwed(const std::vector<ReadUnit>& units);

// The plan of `options.rank` for `epoch`, or, with `rest`, for the segment
// that reads that rest (the records of the plan are then rest's records).
// A rest with `segment` 0 is a selection read as a whole epoch is (its
// first segment): the same draws as an epoch of those records.
// `load_order` false: the pieces are left as the share holds them (uses,
// first and last use not counted, unused ones kept), for a caller that
// assembles plans and calls OrderPieces once on the whole (a mixture).
EpochPlan MakeEpochPlan(const std::vector<ReadUnit>& units, const PlanOptions& options,
                        uint64_t epoch, const EpochRest* rest = nullptr, bool load_order = true);

// Extends `order` (a share's `share` positions) to `used` positions,
// wrapping to its start (Remainder::kPad); wrapped positions use copies of
// their pieces, appended to `pieces`.
void PadOrder(std::vector<SampleRef>& order, std::vector<Piece>& pieces, uint64_t used,
              uint64_t share);

// Finishes a plan whose `order` refers to `pieces`: counts each piece's uses
// and first and last use, drops unused pieces and puts the rest in load
// order (by first use), renumbering the order's references.
void OrderPieces(std::vector<Piece> pieces, EpochPlan* plan);

// Global record index of position p.
inline uint64_t RecordAt(const EpochPlan& plan, const std::vector<ReadUnit>& units,
                         uint64_t p) {
  const SampleRef& s = plan.order[p];
  return units[plan.pieces[s.piece].unit].first_record + s.index;
}

// Batches per epoch (of `records` records, or the rest's), the same for
// every rank.
uint64_t BatchesPerEpoch(uint64_t records, const PlanOptions& options);

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_EPOCH_PLAN_H_
