// The mixture's epoch plan: the schedule's per-window shares and exact
// totals, each source drawn exactly once per source epoch whatever its
// ratio, every rank with the same per-source counts, and elastic resume
// onto another world size delivering what the epoch still owed, once.
#include "reader/mix_plan.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "common/rng.h"
#include "gtest/gtest.h"

namespace shardpack::reader {
namespace {

std::vector<ReadUnit> Units(uint64_t records, uint32_t per_unit, uint64_t unit_bytes) {
  std::vector<ReadUnit> units;
  for (uint64_t first = 0; first < records; first += per_unit) {
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(per_unit, records - first));
    units.push_back({0, static_cast<uint32_t>(units.size()), first, n, unit_bytes});
  }
  return units;
}

// A source of `records` records whose units start at stream unit
// `first_unit`, drawing `per_epoch` a mixture epoch; `keep(r)` selects.
template <typename Keep>
MixSourcePlan Source(uint64_t records, uint32_t first_unit, uint64_t per_epoch, Keep keep) {
  MixSourcePlan s;
  s.units = Units(records, 7, 7 * 100);
  s.first_unit = first_unit;
  s.selection.owed.assign((records + 63) / 64, 0);
  for (uint64_t r = 0; r < records; ++r) {
    if (keep(r)) {
      s.selection.owed[r >> 6] |= uint64_t{1} << (r & 63);
      ++s.selection.count;
    }
  }
  s.per_epoch = per_epoch;
  return s;
}
MixSourcePlan Source(uint64_t records, uint32_t first_unit, uint64_t per_epoch) {
  return Source(records, first_unit, per_epoch, [](uint64_t) { return true; });
}

// The stream's units: the sources' units one after the other, records
// numbered on.
std::vector<ReadUnit> StreamUnits(const std::vector<MixSourcePlan>& sources) {
  std::vector<ReadUnit> all;
  uint64_t first = 0;
  for (const MixSourcePlan& s : sources) {
    for (ReadUnit u : s.units) {
      u.first_record += first;
      all.push_back(u);
    }
    first += s.units.back().first_record + s.units.back().records;
  }
  return all;
}

PlanOptions Options(int rank, int world, int batch, Remainder rem = Remainder::kDrop) {
  PlanOptions o;
  o.seed = 42;
  o.rank = rank;
  o.world_size = world;
  o.batch_size = batch;
  o.remainder = rem;
  o.budget_bytes = 4 << 10;  // a few units: the windowed shuffle
  return o;
}

std::vector<uint64_t> Records(const EpochPlan& plan, const std::vector<ReadUnit>& units) {
  std::vector<uint64_t> out;
  for (uint64_t p = 0; p < plan.order.size(); ++p) out.push_back(RecordAt(plan, units, p));
  return out;
}

TEST(MixScheduleTest, EveryWindowHoldsFloorOrCeilOfItsShareAndTotalsAreExact) {
  uint64_t seed = 7;
  for (int trial = 0; trial < 400; ++trial) {
    const size_t n = 1 + common::Below(common::Draw(seed, trial, 1), 9);
    const uint64_t window = 1 + common::Below(common::Draw(seed, trial, 2), 300);
    std::vector<uint64_t> counts(n);
    for (size_t s = 0; s < n; ++s) {
      const uint64_t kind = common::Below(common::Draw(seed, trial, 3, s), 4);
      counts[s] = kind == 0 ? common::Below(common::Draw(seed, trial, 4, s), 3)
                            : common::Below(common::Draw(seed, trial, 4, s), 5000);
    }
    MixSchedule schedule(counts, window);
    const uint64_t total = std::accumulate(counts.begin(), counts.end(), uint64_t{0});
    ASSERT_EQ(schedule.positions(), total);
    std::vector<uint64_t> all(n, 0);
    for (uint64_t p = 0; p < total; p += window) {
      const uint64_t w = std::min(window, total - p);
      std::vector<uint64_t> in(n, 0);
      for (uint64_t i = 0; i < w; ++i) ++in[schedule.Next()];
      for (size_t s = 0; s < n; ++s) {
        const double target = double(w) * double(counts[s]) / double(total);
        ASSERT_LT(std::abs(double(in[s]) - target), 1.0)
            << "trial " << trial << " source " << s << " window at " << p;
        all[s] += in[s];
      }
    }
    EXPECT_EQ(all, counts) << "trial " << trial;
  }
}

// Source epochs of `n` records with per_epoch `c`: over mixture epochs that
// cover whole source epochs, every (selected) record comes up once per
// source epoch.
TEST(MixPlannerTest, EachSourceEpochDrawsEveryRecordOnceWhateverTheRatio) {
  for (uint64_t c : {uint64_t{4}, uint64_t{10}, uint64_t{25}, uint64_t{7}}) {
    const uint64_t n = 10;
    std::vector<MixSourcePlan> sources;
    sources.push_back(Source(20, 0, c, [](uint64_t r) { return r % 2 == 1; }));  // 10 selected
    MixPlanner planner(sources, Options(0, 1, 1));
    // lcm(c, n) / c mixture epochs make lcm / n whole source epochs.
    const uint64_t l = std::lcm(c, n), epochs = l / c, passes = l / n;
    std::map<uint64_t, int> seen;
    std::vector<ReadUnit> units;
    for (uint64_t e = 0; e < epochs; ++e) {
      const EpochRest draw = planner.DrawOf(0, e, &units);
      EXPECT_EQ(draw.count, c);
      uint64_t bits = 0;
      for (const ReadUnit& u : units) {
        for (uint32_t i = 0; i < u.records; ++i) {
          if (draw.Owes(u.first_record + i)) {
            ++seen[(u.first_record + i) % 20];
            ++bits;
          }
        }
      }
      EXPECT_EQ(bits, c);
    }
    ASSERT_EQ(seen.size(), n) << "c " << c;
    for (const auto& [r, times] : seen) {
      EXPECT_EQ(r % 2, 1u) << "a record the view left out";
      EXPECT_EQ(times, static_cast<int>(passes)) << "record " << r << ", c " << c;
    }
  }
}

TEST(MixPlannerTest, RanksShareEachSourceEquallyAndTogetherReadTheDraw) {
  std::vector<MixSourcePlan> sources;
  sources.push_back(Source(300, 0, 150));  // half of it a mixture epoch
  sources.push_back(Source(100, 43, 250)); // two and a half times
  const std::vector<ReadUnit> units = StreamUnits(sources);
  const int world = 3, batch = 8;
  for (uint64_t epoch : {0, 1, 5}) {
    std::multiset<uint64_t> all;
    std::vector<uint64_t> first_counts;
    for (int rank = 0; rank < world; ++rank) {
      MixPlanner planner(sources, Options(rank, world, batch));
      EXPECT_EQ(planner.per_rank(), (std::vector<uint64_t>{50, 83}));
      const EpochPlan plan = planner.Plan(epoch, nullptr);
      ASSERT_EQ(plan.batches, planner.batches_per_epoch());
      ASSERT_EQ(plan.order.size(), plan.batches * batch);
      std::vector<uint64_t> counts(2, 0);
      const std::vector<uint64_t> records = Records(plan, units);
      uint64_t in_batch = 0;
      for (uint64_t p = 0; p < records.size(); ++p) {
        ++counts[records[p] < 300 ? 0 : 1];
        in_batch += records[p] < 300;
        all.insert(records[p]);
        if (p % batch == batch - 1) {
          // Each batch: floor or ceil of 8 * 50 / 133 = 3.01 of source 0.
          EXPECT_TRUE(in_batch == 3 || in_batch == 4) << in_batch << " at " << p;
          in_batch = 0;
        }
      }
      if (rank == 0) first_counts = counts;
      EXPECT_EQ(counts, first_counts) << "rank " << rank;
    }
    // Source 1's draw repeats records; none of source 0's repeats.
    for (uint64_t r = 0; r < 300; ++r) EXPECT_LE(all.count(r), 1u);
    uint64_t source1 = 0;
    for (uint64_t r = 300; r < 400; ++r) {
      EXPECT_LE(all.count(r), 3u);
      source1 += all.count(r);
    }
    EXPECT_LE(source1, 250u);
    // 133 a rank, 16 batches of 8: the last 5 positions dropped.
    EXPECT_GE(source1, 3 * (83 - 5));
  }
}

TEST(MixPlannerTest, ElasticResumeDeliversWhatTheEpochOwedOnce) {
  std::vector<MixSourcePlan> sources;
  sources.push_back(Source(300, 0, 300));
  sources.push_back(Source(200, 43, 100, [](uint64_t r) { return r < 150; }));
  const std::vector<ReadUnit> units = StreamUnits(sources);
  const uint64_t epoch = 3;
  // Segment 0: 2 ranks, batch 10, 9 batches delivered each.
  ReadSegment first{2, 10, Remainder::kDrop, true, 4 << 10, 9};
  std::multiset<uint64_t> delivered;
  for (int rank = 0; rank < 2; ++rank) {
    MixPlanner planner(sources, PlanOf(first, 42, rank));
    const EpochPlan plan = planner.Plan(epoch, nullptr);
    const std::vector<uint64_t> r = Records(plan, units);
    delivered.insert(r.begin(), r.begin() + 90);
  }
  // Segment 1: 3 ranks, batch 7, partial, reading the rest.
  std::multiset<uint64_t> rest;
  std::vector<uint64_t> batches;
  for (int rank = 0; rank < 3; ++rank) {
    MixPlanner planner(sources, Options(rank, 3, 7, Remainder::kPartial));
    auto rests = planner.RestOf(epoch, {first});
    ASSERT_TRUE(rests.ok()) << rests.status();
    const EpochPlan plan = planner.Plan(epoch, rests->get());
    EXPECT_EQ(plan.batches, (*rests)->batches);
    batches.push_back(plan.batches);
    for (uint64_t r : Records(plan, units)) rest.insert(r);
  }
  EXPECT_EQ(batches[0], batches[2]);
  // Nothing twice; and together all but the leftovers of the two splits
  // (at most world - 1 per source and segment).
  std::multiset<uint64_t> all = delivered;
  all.insert(rest.begin(), rest.end());
  for (uint64_t r : all) ASSERT_EQ(all.count(r), 1u) << "record " << r;
  uint64_t from1 = 0;
  for (uint64_t r : all) from1 += r >= 300;
  EXPECT_GE(all.size() - from1, 300u - 1 - 2);
  EXPECT_GE(from1, 100u - 1 - 2);
  EXPECT_LE(from1, 100u);
  // A segment that claims more batches than its plan has is refused.
  MixPlanner planner(sources, Options(0, 3, 7));
  ReadSegment too_many = first;
  too_many.batches = 1000;
  auto bad = planner.RestOf(epoch, {too_many});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("segment 0 of the epoch: 1000 batches"), std::string::npos)
      << bad.status();
}

TEST(MixPlannerTest, PlansArePureFunctionsOfTheirInputs) {
  std::vector<MixSourcePlan> sources;
  sources.push_back(Source(300, 0, 120));
  sources.push_back(Source(100, 43, 100));
  const std::vector<ReadUnit> units = StreamUnits(sources);
  MixPlanner a(sources, Options(1, 2, 16, Remainder::kPad));
  MixPlanner b(sources, Options(1, 2, 16, Remainder::kPad));
  EXPECT_EQ(Records(a.Plan(4, nullptr), units), Records(b.Plan(4, nullptr), units));
  EXPECT_NE(Records(a.Plan(4, nullptr), units), Records(a.Plan(5, nullptr), units));
  EXPECT_EQ(a.Plan(4, nullptr).order.size() % 16, 0u);
}

}  // namespace
}  // namespace shardpack::reader
