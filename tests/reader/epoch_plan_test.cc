// The epoch plan's contracts: coverage, rank disjointness, equal batch
// counts, memory bound, determinism, and shuffle quality on class-sorted data.
#include "reader/epoch_plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <span>
#include <tuple>
#include <vector>

#include "common/rng.h"
#include "reader/epoch_share.h"
#include "gtest/gtest.h"

namespace shardpack::reader {
namespace {

// `records` records in units of `per_unit` records of `unit_bytes` each.
std::vector<ReadUnit> Units(uint64_t records, uint32_t per_unit, uint64_t unit_bytes) {
  std::vector<ReadUnit> units;
  for (uint64_t first = 0; first < records; first += per_unit) {
    uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(per_unit, records - first));
    units.push_back({0, static_cast<uint32_t>(units.size()), first, n, unit_bytes});
  }
  return units;
}

std::vector<uint64_t> Records(const EpochPlan& plan, const std::vector<ReadUnit>& units) {
  std::vector<uint64_t> out;
  for (uint64_t p = 0; p < plan.order.size(); ++p) out.push_back(RecordAt(plan, units, p));
  return out;
}

TEST(EpochPlanTest, EachRankSeesItsRecordsOnceAndRanksAreDisjointAndComplete) {
  for (Remainder rem : {Remainder::kDrop, Remainder::kPartial, Remainder::kPad}) {
    for (int world : {1, 3, 4}) {
      std::vector<ReadUnit> units = Units(1003, 37, 4096);
      std::multiset<uint64_t> all;
      std::set<uint64_t> batches;
      for (int rank = 0; rank < world; ++rank) {
        PlanOptions o{true, 7, rank, world, 10, rem, 1 << 20};
        EpochPlan plan = MakeEpochPlan(units, o, 2);
        batches.insert(plan.batches);
        std::vector<uint64_t> recs = Records(plan, units);
        std::set<uint64_t> mine(recs.begin(), recs.end());
        if (rem != Remainder::kPad) {
          EXPECT_EQ(mine.size(), recs.size()) << "a record twice";
        }
        if (rem == Remainder::kPartial) {
          EXPECT_EQ(recs.size(), 1003u / world);
        }
        all.insert(mine.begin(), mine.end());
      }
      EXPECT_EQ(batches.size(), 1u) << "ranks disagree on the batch count";
      if (rem == Remainder::kPad) {
        EXPECT_EQ(std::set<uint64_t>(all.begin(), all.end()).size(), 1003u) << "pad covers all";
      } else if (rem == Remainder::kPartial) {
        std::set<uint64_t> distinct(all.begin(), all.end());
        EXPECT_EQ(distinct.size(), all.size()) << "ranks overlap";
        EXPECT_EQ(all.size(), 1003u / world * world);
      } else {
        std::set<uint64_t> distinct(all.begin(), all.end());
        EXPECT_EQ(distinct.size(), all.size()) << "ranks overlap";
      }
    }
  }
}

// At 10^7 records and more the plan's bytes matter: 8 a position at rest
// (no spare capacity) and, while a shuffled order larger than the budget is
// built, 8 a position plus the keys of two windows of pieces, not of the
// whole share. Whatever the plan holds, the reader's bound holds it.
TEST(EpochPlanTest, PlanHoldsEightBytesAPositionAndBuildsInAWindow) {
  const uint64_t n = 1000000;
  auto units = Units(n, 1000, 1 << 20);  // 1,000 units of 1 MiB
  struct Case {
    bool shuffle;
    uint64_t budget;
    bool windowed;
    double build_per_record;  // the most build_bytes may be, a record of the share
  };
  // Windowed: k = 6 pieces, the keys of two windows of 6,000 records (33
  // bytes each: 1.2 a position) beside 333,333 positions. Uniform: the
  // share's refs and bucket counts (10 bytes a record) beside its order.
  for (Case c : {Case{true, 8 << 20, true, 9.5}, Case{true, uint64_t{2} << 30, false, 18.5},
                 Case{false, 8 << 20, false, 8.5}}) {
    for (Remainder r : {Remainder::kDrop, Remainder::kPartial, Remainder::kPad}) {
      PlanOptions o{c.shuffle, 1, 1, 3, 64, r, c.budget};
      EpochPlan plan = MakeEpochPlan(units, o, 0);
      SCOPED_TRACE(testing::Message() << "shuffle " << c.shuffle << " budget " << c.budget
                                      << " remainder " << int(r));
      EXPECT_EQ(plan.windowed, c.windowed);
      EXPECT_EQ(plan.order.capacity(), plan.order.size()) << "spare capacity";
      EXPECT_LE(double(PlanBytes(plan)) / double(plan.order.size()), 8.1);  // + 40 a piece
      const double share = double(plan.samples_per_rank);
      EXPECT_LE(double(plan.build_bytes) / share, c.build_per_record);
      EXPECT_GE(plan.build_bytes, PlanBytes(plan));
      // The reader's budget: this plan at rest beside the next one's build.
      EXPECT_GE(PlanMemoryBound(units, o), PlanBytes(plan) + plan.build_bytes);
      EXPECT_LE(double(PlanMemoryBound(units, o)) / share, c.build_per_record + 9);
    }
  }
}

// The order is the one epoch_plan.h defines: records sorted by (key, piece,
// index), the key a uniform draw in [floor, 2^64) (the ramp's floor of its
// piece, epoch_share.h) or, windowed, piece << 32 plus a draw below k << 32.
// Built here the plain way (every key, one std::sort) for one rank, so a
// saved state's positions mean the same records however the plan is built.
TEST(EpochPlanTest, OrderIsTheSortOfTheDefinedKeys) {
  const uint64_t seed = 5, epoch = 3, per_unit = 700, unit_bytes = 1 << 20;
  auto units = Units(300 * per_unit + 123, per_unit, unit_bytes);
  for (uint64_t budget : {uint64_t{16} << 20, uint64_t{1} << 30}) {
    PlanOptions o{true, seed, 0, 1, 50, Remainder::kPartial, budget};
    EpochPlan plan = MakeEpochPlan(units, o, epoch);
    const bool windowed = budget < units.size() * unit_bytes;
    ASSERT_EQ(plan.windowed, windowed);
    std::vector<uint32_t> perm(units.size());
    std::iota(perm.begin(), perm.end(), 0u);
    common::Shuffle(std::span<uint32_t>(perm), seed, common::kStreamUnits, epoch);
    const uint64_t k = budget / unit_bytes - 2;
    Share share;
    for (uint32_t unit : perm) share.pieces.push_back({unit, 0, units[unit].records});
    share.records = units.size() * per_unit;
    const std::vector<uint64_t> floors = RampFloors(units, share, o.batch_size);
    ASSERT_EQ(floors.size(), perm.size());
    std::vector<std::tuple<uint64_t, uint32_t, uint32_t>> keyed;
    for (uint32_t piece = 0; piece < perm.size(); ++piece) {
      const ReadUnit& u = units[perm[piece]];
      for (uint32_t r = 0; r < u.records; ++r) {
        const uint64_t draw = common::Draw(seed, common::kStreamSamples, epoch, u.first_record + r);
        const uint64_t f = floors[piece];
        keyed.emplace_back(windowed ? (uint64_t{piece} << 32) + common::Below(draw, k << 32)
                                    : f + (f == 0 ? draw : common::Below(draw, -f)),
                           piece, r);
      }
    }
    std::sort(keyed.begin(), keyed.end());
    std::vector<uint64_t> want;
    for (const auto& [key, piece, r] : keyed) want.push_back(units[perm[piece]].first_record + r);
    EXPECT_EQ(Records(plan, units), want) << "budget " << budget;
  }
}

// The ramp (epoch_share.h): a share that fits the budget starts from the
// blocks holding its first kRampBatches batches' records, then twice as many records
// every batch, so the first batch waits for a few blocks, not for all of
// them; past the ramp every position draws from every record left alike.
TEST(EpochPlanTest, TheFirstBatchesDrawFromTheBlocksLoadedFirst) {
  const uint32_t per_unit = 300, batch = 100;
  auto units = Units(500 * per_unit, per_unit, 1 << 20);  // 500 units of 1 MiB
  for (uint64_t epoch : {0, 1, 7}) {
    PlanOptions o{true, 11, 0, 1, batch, Remainder::kDrop, uint64_t{1} << 30};
    EpochPlan plan = MakeEpochPlan(units, o, epoch);
    ASSERT_FALSE(plan.windowed);
    // Pieces are in load order (by first use): the records of the pieces a
    // batch needs, counted up to the batch's end.
    auto records_loaded_by = [&](uint64_t batches) {
      uint64_t n = 0;
      for (const Piece& p : plan.pieces) {
        if (p.first_use < batches * batch) n += p.end - p.begin;
      }
      return n;
    };
    // The pieces of kRampBatches batches' records are in at the first
    // position, and the records admitted double every batch: by the end of
    // batch k, kRampBatches * 2^k batches' worth, give or take the draws (the
    // floors place an admission where it falls on average) and the pieces at
    // the edge.
    for (uint64_t k = 1; k < 7; ++k) {
      EXPECT_LE(records_loaded_by(k), (kRampBatches * batch << k) * 5 / 4 + 2 * per_unit)
          << "batch " << k << " epoch " << epoch;
    }
    EXPECT_GE(records_loaded_by(1), batch);
    // Every piece is in soon after the ramp (log2(150,000 / 200) ~ 9.6
    // batches with kRampBatches 2), long before the epoch's end.
    EXPECT_EQ(records_loaded_by(60), 500u * per_unit);
    // Past the ramp, the records of the first pieces are spread evenly: in
    // each tenth of the rest of the epoch they are the same part of it.
    std::vector<bool> early(plan.pieces.size());
    for (size_t i = 0; i < plan.pieces.size(); ++i) early[i] = plan.pieces[i].first_use < batch;
    const uint64_t from = 20 * batch, tenth = (plan.order.size() - from) / 10;
    std::vector<double> part;
    for (int t = 0; t < 10; ++t) {
      uint64_t n = 0;
      for (uint64_t p = from + t * tenth; p < from + (t + 1) * tenth; ++p) n += early[plan.order[p].piece];
      part.push_back(double(n) / double(tenth));
    }
    const double lo = *std::min_element(part.begin(), part.end());
    const double hi = *std::max_element(part.begin(), part.end());
    EXPECT_GT(lo, 0.0);
    EXPECT_LT(hi - lo, 0.5 * hi) << "epoch " << epoch;
  }
}

// kAutoShuffleBytes: a rank's share whole (and a unit at each end) up to
// 256 MiB, else a 32 MiB window.
TEST(EpochPlanTest, TheChosenBudgetIsTheShareWholeOrAStreamWindow) {
  auto units = Units(100 * 300, 300, 1 << 20);  // 100 units of 1 MiB
  EXPECT_EQ(ChosenShuffleBytes(units, 1), uint64_t{102} << 20);
  EXPECT_EQ(ChosenShuffleBytes(units, 4), uint64_t{27} << 20);
  auto big = Units(300 * 300, 300, 1 << 20);  // 300 MiB
  EXPECT_EQ(ChosenShuffleBytes(big, 1), kStreamWindowBytes);
  EXPECT_EQ(ChosenShuffleBytes(big, 2), uint64_t{152} << 20);
  EXPECT_EQ(ChosenShuffleBytes({}, 1), 1u) << "an empty dataset: at least a byte";
}

// A share that its first kRampBatches batches cover has no ramp: a plain
// permutation.
TEST(EpochPlanTest, ASmallShareHasNoRamp) {
  auto units = Units(700, 100, 4096);
  Share share;
  for (uint32_t u = 0; u < units.size(); ++u) share.pieces.push_back({u, 0, 100});
  share.records = 700;
  EXPECT_TRUE(RampFloors(units, share, 700 / kRampBatches).empty());
  const std::vector<uint64_t> floors = RampFloors(units, share, 10);
  ASSERT_EQ(floors.size(), 7u);
  EXPECT_EQ(floors[0], 0u);
  EXPECT_TRUE(std::is_sorted(floors.begin(), floors.end()));
  EXPECT_GT(floors.back(), 0u);
  EXPECT_LE(floors.back(), uint64_t{1} << 63) << "at most half the key range";
}

TEST(EpochPlanTest, BatchCountsFollowTheRemainderRule) {
  std::vector<ReadUnit> units = Units(1003, 100, 4096);
  auto batches = [&](Remainder r) {
    return MakeEpochPlan(units, {false, 0, 1, 4, 16, r, 1 << 20}, 0).batches;
  };
  EXPECT_EQ(batches(Remainder::kDrop), 250u / 16);          // 250 a rank, full batches
  EXPECT_EQ(batches(Remainder::kPartial), (250u + 15) / 16);
  EXPECT_EQ(batches(Remainder::kPad), (251u + 15) / 16);    // ceil(1003 / 4) = 251
  EpochPlan pad = MakeEpochPlan(units, {false, 0, 1, 4, 16, Remainder::kPad, 1 << 20}, 0);
  EXPECT_EQ(pad.order.size(), pad.batches * 16);
}

TEST(EpochPlanTest, WithoutShuffleTheOrderIsTheDatasetOrder) {
  std::vector<ReadUnit> units = Units(100, 7, 4096);
  EpochPlan plan = MakeEpochPlan(units, {false, 0, 0, 1, 10, Remainder::kDrop, 1 << 20}, 5);
  std::vector<uint64_t> want(100);
  std::iota(want.begin(), want.end(), 0u);
  EXPECT_EQ(Records(plan, units), want);
}

TEST(EpochPlanTest, SameInputsSamePlanAndEpochsDiffer) {
  std::vector<ReadUnit> units = Units(5000, 50, 4096);
  PlanOptions o{true, 11, 0, 1, 32, Remainder::kDrop, 1 << 16};
  EXPECT_EQ(Records(MakeEpochPlan(units, o, 3), units), Records(MakeEpochPlan(units, o, 3), units));
  EXPECT_NE(Records(MakeEpochPlan(units, o, 3), units), Records(MakeEpochPlan(units, o, 4), units));
}

TEST(EpochPlanTest, PiecesInUseNeverExceedTheBudget) {
  // 200 units of 1 MiB, a 16 MiB budget: the jittered sort applies.
  const uint64_t unit = 1 << 20, budget = 16 << 20;
  std::vector<ReadUnit> units = Units(200 * 300, 300, unit);
  EpochPlan plan = MakeEpochPlan(units, {true, 1, 0, 1, 256, Remainder::kDrop, budget}, 0);
  ASSERT_TRUE(plan.windowed);
  // Pieces whose [first_use, last_use] spans a position are all held then.
  std::vector<int64_t> delta(plan.order.size() + 1, 0);
  for (const Piece& p : plan.pieces) {
    delta[p.first_use] += 1;
    delta[p.last_use + 1] -= 1;
  }
  int64_t live = 0, peak = 0;
  for (int64_t d : delta) peak = std::max(peak, live += d);
  EXPECT_LE(static_cast<uint64_t>(peak) * unit, budget);
  for (size_t i = 1; i < plan.pieces.size(); ++i) {
    EXPECT_LE(plan.pieces[i - 1].first_use, plan.pieces[i].first_use);
  }
}

double Spearman(const std::vector<uint64_t>& a_order, const std::vector<uint64_t>& b_order) {
  // Position of each record in two epochs; records are 0..n-1 here.
  size_t n = a_order.size();
  std::vector<double> pa(n), pb(n);
  for (size_t i = 0; i < n; ++i) pa[a_order[i]] = static_cast<double>(i);
  for (size_t i = 0; i < n; ++i) pb[b_order[i]] = static_cast<double>(i);
  double d2 = 0;
  for (size_t i = 0; i < n; ++i) d2 += (pa[i] - pb[i]) * (pa[i] - pb[i]);
  double dn = static_cast<double>(n);
  return 1 - 6 * d2 / (dn * (dn * dn - 1));
}

double MeanBatchEntropy(const std::vector<uint64_t>& order, uint64_t records, int classes,
                        int batch) {
  double total = 0;
  int batches = 0;
  for (size_t b = 0; b + batch <= order.size(); b += batch, ++batches) {
    std::map<uint64_t, int> counts;
    for (int i = 0; i < batch; ++i) counts[order[b + i] * classes / records]++;
    double h = 0;
    for (auto [label, n] : counts) h -= n / double(batch) * std::log2(n / double(batch));
    total += h;
  }
  return total / batches;
}

// CIFAR-10 packed class-sorted: 50,000 records of ~3.1 KB in 4 MiB blocks.
TEST(EpochPlanTest, ClassSortedCifarIsShuffledWellWithDefaultBudget) {
  const uint64_t n = 50000;
  std::vector<ReadUnit> units = Units(n, 1337, 4 << 20);
  ReaderOptions defaults;
  ASSERT_EQ(defaults.shuffle_bytes, kAutoShuffleBytes);
  const uint64_t chosen = ChosenShuffleBytes(units, 1);
  EXPECT_EQ(chosen, 50000 / 1337 * (4 << 20) + (4 << 20) + 2 * (4 << 20)) << "the share whole";
  PlanOptions o{true, defaults.seed, 0, 1, 256, Remainder::kDrop, chosen};
  std::vector<uint64_t> e0 = Records(MakeEpochPlan(units, o, 0), units);
  std::vector<uint64_t> e1 = Records(MakeEpochPlan(units, o, 1), units);
  double h = MeanBatchEntropy(e0, n, 10, 256);
  EXPECT_GE(h / std::log2(10.0), 0.95) << h;
  // Spearman needs every record in both epochs: use the partial remainder.
  o.remainder = Remainder::kPartial;
  double rho = Spearman(Records(MakeEpochPlan(units, o, 0), units),
                        Records(MakeEpochPlan(units, o, 1), units));
  EXPECT_LT(std::abs(rho), 0.05) << rho;
  RecordProperty("label_entropy_fraction", std::to_string(h / std::log2(10.0)));
  RecordProperty("spearman_epoch_0_1", std::to_string(rho));
}

// When the dataset is far larger than the budget the jittered sort applies;
// it still mixes many classes per batch and decorrelates epochs.
TEST(EpochPlanTest, LargeClassSortedDatasetWithinBudget) {
  const uint64_t n = 400000;  // 300 units of 4 MiB, budget 256 MiB
  std::vector<ReadUnit> units = Units(n, 1337, 4 << 20);
  PlanOptions o{true, 0, 0, 1, 256, Remainder::kPartial, uint64_t{256} << 20};
  EpochPlan p0 = MakeEpochPlan(units, o, 0);
  ASSERT_TRUE(p0.windowed);
  std::vector<uint64_t> e0 = Records(p0, units), e1 = Records(MakeEpochPlan(units, o, 1), units);
  EXPECT_GE(MeanBatchEntropy(e0, n, 10, 256) / std::log2(10.0), 0.9);
  EXPECT_LT(std::abs(Spearman(e0, e1)), 0.2);
}

// ---- Elastic resume ---------------------------------------------------------

namespace elastic {

// What the ranks of a segment deliver: every rank's first `batches` batches
// (all of its plan when `batches` is past it).
struct Phase {
  std::vector<uint64_t> records;  // in rank order, with repeats (padding)
  std::set<uint64_t> batch_counts;
};

Phase Deliver(const std::vector<ReadUnit>& units, PlanOptions o, uint64_t epoch,
              const EpochRest* rest, uint64_t batches) {
  Phase phase;
  for (int r = 0; r < o.world_size; ++r) {
    o.rank = r;
    EpochPlan plan = MakeEpochPlan(units, o, epoch, rest);
    phase.batch_counts.insert(plan.batches);
    uint64_t end = std::min<uint64_t>(plan.order.size(), batches * o.batch_size);
    for (uint64_t p = 0; p < end; ++p) phase.records.push_back(RecordAt(plan, units, p));
  }
  return phase;
}

std::set<uint64_t> Owed(const EpochRest& rest, uint64_t n) {
  std::set<uint64_t> owed;
  for (uint64_t r = 0; r < n; ++r) {
    if (rest.Owes(r)) owed.insert(r);
  }
  return owed;
}

std::set<uint64_t> AsSet(const std::vector<uint64_t>& v) { return {v.begin(), v.end()}; }

// The segment read with plan options `o` that delivered `batches`.
ReadSegment Segment(const PlanOptions& o, uint64_t batches) {
  return {o.world_size, o.batch_size, o.remainder, o.shuffle, o.budget_bytes, batches};
}

// W ranks read `b` batches, W' ranks read the rest: every record the epoch
// owed is delivered once (as the remainder rule allows), each rank the same
// number of batches.
void CheckElastic(Remainder rem, int w, int w2, uint64_t b, uint64_t budget, int batch2) {
  SCOPED_TRACE(testing::Message() << "remainder " << int(rem) << ", " << w << " -> " << w2
                                  << " ranks after " << b << " batches, budget " << budget
                                  << ", batch size 10 -> " << batch2);
  const uint64_t n = 1003;
  std::vector<ReadUnit> units = Units(n, 37, 4096);
  PlanOptions o{true, 7, 0, w, 10, rem, budget};
  Phase first = Deliver(units, o, 3, nullptr, b);
  EXPECT_EQ(PlanOf(Segment(o, b), o.seed, o.rank), o);  // the one conversion
  absl::StatusOr<EpochRest> rest = RestOfEpoch(units, {Segment(o, b)}, o.seed, 3);
  ASSERT_TRUE(rest.ok()) << rest.status();
  std::set<uint64_t> owed = Owed(*rest, n);
  EXPECT_EQ(rest->count, owed.size());
  // Owed: every record the W ranks did not deliver.
  std::set<uint64_t> expect_owed;
  for (uint64_t r = 0; r < n; ++r) expect_owed.insert(r);
  for (uint64_t r : first.records) expect_owed.erase(r);
  EXPECT_EQ(owed, expect_owed);

  PlanOptions o2{true, 7, 0, w2, batch2, rem, budget};
  Phase second = Deliver(units, o2, 3, &*rest, UINT64_MAX);
  EXPECT_EQ(second.batch_counts.size(), 1u) << "ranks disagree on the batch count";
  std::set<uint64_t> got = AsSet(second.records);
  for (uint64_t r : got) EXPECT_TRUE(owed.count(r)) << "record " << r << " was not owed";
  for (uint64_t r : first.records) EXPECT_FALSE(got.count(r)) << "record " << r << " twice";
  const uint64_t m = owed.size();
  if (rem == Remainder::kPad) {
    EXPECT_EQ(got, owed) << "pad delivers everything owed";
  } else {
    EXPECT_EQ(got.size(), second.records.size()) << "a record twice in the resumed part";
    EXPECT_EQ(AsSet(first.records).size(), first.records.size());
    uint64_t per_rank = m / w2;
    if (rem == Remainder::kDrop) per_rank = per_rank / batch2 * batch2;
    EXPECT_EQ(got.size(), per_rank * w2);
  }
}

TEST(EpochPlanElasticTest, TheRestIsDeliveredOnceOnFewerOrMoreRanks) {
  for (Remainder rem : {Remainder::kDrop, Remainder::kPartial, Remainder::kPad}) {
    for (auto [w, w2] : {std::pair{4, 3}, {2, 5}, {3, 3}, {1, 4}, {4, 1}, {3, 7}}) {
      const uint64_t batches = BatchesPerEpoch(1003, {true, 7, 0, w, 10, rem, 0});
      // 1: inside the shuffle window's reach (the budget holds 6 of 28 units).
      for (uint64_t b : {uint64_t{0}, uint64_t{1}, batches / 2, batches}) {
        for (uint64_t budget : {uint64_t{6 * 4096}, uint64_t{1} << 30}) {
          CheckElastic(rem, w, w2, b, budget, 10);
        }
      }
    }
  }
}

TEST(EpochPlanElasticTest, ABatchSizeChangeIsASegmentToo) {
  for (Remainder rem : {Remainder::kPartial, Remainder::kPad}) {
    CheckElastic(rem, 4, 3, 5, 6 * 4096, 16);
    CheckElastic(rem, 2, 6, 3, uint64_t{1} << 30, 3);
  }
}

TEST(EpochPlanElasticTest, AChainOfResumesStillDeliversEachRecordOnce) {
  const uint64_t n = 1003;
  std::vector<ReadUnit> units = Units(n, 37, 4096);
  std::vector<ReadSegment> segments = {{4, 10, Remainder::kPartial, true, 6 * 4096, 3},
                                       {3, 16, Remainder::kPartial, true, 6 * 4096, 4},
                                       {5, 8, Remainder::kPartial, true, 1 << 20, 2}};
  std::vector<uint64_t> delivered;
  for (size_t i = 0; i < segments.size(); ++i) {
    std::vector<ReadSegment> before(segments.begin(), segments.begin() + i);
    absl::StatusOr<EpochRest> rest = RestOfEpoch(units, before, 7, 1);
    ASSERT_TRUE(rest.ok()) << rest.status();
    Phase p = Deliver(units, PlanOf(segments[i], 7, 0), 1, i == 0 ? nullptr : &*rest,
                      segments[i].batches);
    EXPECT_EQ(p.batch_counts.size(), 1u);
    delivered.insert(delivered.end(), p.records.begin(), p.records.end());
  }
  absl::StatusOr<EpochRest> rest = RestOfEpoch(units, segments, 7, 1);
  ASSERT_TRUE(rest.ok());
  PlanOptions last{true, 7, 0, 2, 10, Remainder::kPartial, 1 << 20};
  Phase p = Deliver(units, last, 1, &*rest, UINT64_MAX);
  delivered.insert(delivered.end(), p.records.begin(), p.records.end());
  std::set<uint64_t> distinct = AsSet(delivered);
  EXPECT_EQ(distinct.size(), delivered.size()) << "a record twice";
  // Every record but what the last segment's remainder rule leaves out (at
  // most one: an odd count on 2 ranks).
  EXPECT_EQ(distinct.size(), n - rest->count % 2);
}

TEST(EpochPlanElasticTest, SegmentsThatCannotBeAreRefused) {
  std::vector<ReadUnit> units = Units(1003, 37, 4096);
  PlanOptions o{true, 7, 0, 4, 10, Remainder::kDrop, 1 << 20};
  // 25 batches an epoch
  absl::StatusOr<EpochRest> r = RestOfEpoch(units, {Segment(o, 26)}, o.seed, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("26 batches delivered"), std::string_view::npos)
      << r.status();
  PlanOptions bad = o;
  bad.world_size = 0;
  EXPECT_FALSE(RestOfEpoch(units, {Segment(bad, 0)}, bad.seed, 0).ok());
  bad = o;
  bad.batch_size = 0;
  EXPECT_FALSE(RestOfEpoch(units, {Segment(bad, 0)}, bad.seed, 0).ok());
  bad = o;
  bad.remainder = static_cast<Remainder>(7);
  EXPECT_FALSE(RestOfEpoch(units, {Segment(bad, 0)}, bad.seed, 0).ok());
  // The largest world size allowed is planned in well under a second.
  bad = o;
  bad.world_size = kMaxWorldSize;
  bad.remainder = Remainder::kPad;
  absl::StatusOr<EpochRest> big = RestOfEpoch(units, {Segment(bad, 1)}, bad.seed, 0);
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(big->count, 0u);  // each of the 2^20 ranks delivered its one record
}

}  // namespace elastic

}  // namespace
}  // namespace shardpack::reader
