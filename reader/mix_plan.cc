#include "reader/mix_plan.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "reader/epoch_share.h"

namespace shardpack::reader {
namespace {

using Wide = __int128_t;

// The bits [at, at + n) of `to` from `from`'s [0, n).
void CopyBits(const std::vector<uint64_t>& from, uint64_t n, uint64_t at,
              std::vector<uint64_t>& to) {
  for (uint64_t r = 0; r < n; ++r) {
    if ((from[r >> 6] >> (r & 63)) & 1) to[(at + r) >> 6] |= uint64_t{1} << ((at + r) & 63);
  }
}

uint64_t RecordsOf(const std::vector<ReadUnit>& units) {
  uint64_t n = 0;
  for (const ReadUnit& u : units) n += u.records;
  return n;
}

}  // namespace

MixSchedule::MixSchedule(std::vector<uint64_t> counts, uint64_t window)
    : counts_(std::move(counts)),
      before_(counts_.size(), 0),
      quota_(counts_.size(), 0),
      taken_(counts_.size(), 0),
      total_(std::accumulate(counts_.begin(), counts_.end(), uint64_t{0})),
      window_(std::max<uint64_t>(window, 1)) {}

// The window's quota: floor(w * c / total) each, and one more for the
// sources furthest behind their share so far (their deficit plus the
// fraction the floor cut), so the totals come out exact.
void MixSchedule::StartWindow() {
  const size_t n = counts_.size();
  for (size_t s = 0; s < n; ++s) before_[s] += quota_[s];  // the last window's, all taken
  done_ += size_;
  size_ = std::min(window_, total_ - done_);
  at_ = 0;
  std::fill(taken_.begin(), taken_.end(), 0);
  uint64_t given = 0;
  std::vector<std::pair<Wide, uint32_t>> behind;
  for (size_t s = 0; s < n; ++s) {
    const Wide scaled = Wide(size_) * counts_[s];
    quota_[s] = static_cast<uint64_t>(scaled / total_);
    given += quota_[s];
    const Wide deficit = Wide(done_) * counts_[s] - Wide(before_[s]) * total_;
    if (scaled % total_ != 0) behind.push_back({-(deficit + scaled % total_), uint32_t(s)});
  }
  std::sort(behind.begin(), behind.end());
  for (size_t i = 0; given < size_ && i < behind.size(); ++i, ++given) ++quota_[behind[i].second];
  // Never more than a source has left; what that frees goes to the others.
  for (size_t s = 0; s < n; ++s) {
    const uint64_t left = counts_[s] - before_[s];
    if (quota_[s] > left) {
      given -= quota_[s] - left;
      quota_[s] = left;
    }
  }
  for (size_t s = 0; given < size_ && s < n; ++s) {
    const uint64_t more = std::min(size_ - given, counts_[s] - before_[s] - quota_[s]);
    quota_[s] += more;
    given += more;
  }
}

// The window's order: at each position the source furthest behind its
// quota's even spread, (at + 1) * quota / size - taken, the largest (lowest
// index on a tie). The leads sum to size > 0, so the largest is positive
// and that source has positions left. Every product is below window^2 <=
// 2^40: 64 bits hold them. Windows of the same quotas (most of them) reuse
// the order made for the first.
void MixSchedule::OrderWindow() {
  if (quota_ == pattern_quota_ && pattern_.size() == size_) return;
  pattern_quota_ = quota_;
  pattern_.clear();
  const int64_t size = static_cast<int64_t>(size_);
  for (uint64_t at = 0; at < size_; ++at) {
    const int64_t next = static_cast<int64_t>(at + 1);
    uint32_t best = 0;
    int64_t best_lead = next * int64_t(quota_[0]) - int64_t(taken_[0]) * size;
    for (size_t s = 1; s < counts_.size(); ++s) {
      const int64_t lead = next * int64_t(quota_[s]) - int64_t(taken_[s]) * size;
      if (lead > best_lead) {
        best = static_cast<uint32_t>(s);
        best_lead = lead;
      }
    }
    ++taken_[best];
    pattern_.push_back(best);
  }
}

std::vector<uint64_t> ScheduledCounts(const std::vector<uint64_t>& counts, uint64_t window,
                                      uint64_t positions) {
  MixSchedule schedule(counts, window);
  std::vector<uint64_t> taken(counts.size(), 0);
  positions = std::min(positions, schedule.positions());
  for (uint64_t p = 0; p < positions; ++p) ++taken[schedule.Next()];
  return taken;
}

MixPlanner::MixPlanner(std::vector<MixSourcePlan> sources, const PlanOptions& options)
    : sources_(std::move(sources)), options_(options) {
  double total_bytes = 0;
  std::vector<double> bytes(sources_.size());
  for (size_t s = 0; s < sources_.size(); ++s) {
    const MixSourcePlan& src = sources_[s];
    seeds_.push_back(common::Draw(options.seed, common::kStreamMixSource, s));
    uint64_t unit_bytes = 0;
    for (const ReadUnit& u : src.units) unit_bytes += u.bytes;
    const uint64_t records = std::max<uint64_t>(RecordsOf(src.units), 1);
    bytes[s] = double(src.per_epoch) * double(unit_bytes) / double(records);
    total_bytes += bytes[s];
  }
  uint64_t positions = 0;
  for (size_t s = 0; s < sources_.size(); ++s) {
    const uint64_t all = RecordsOf(sources_[s].units);
    whole_.push_back(sources_[s].selection.count == all && sources_[s].per_epoch == all);
    budget_share_.push_back(total_bytes > 0 ? bytes[s] / total_bytes : 1.0 / sources_.size());
    const PlanOptions o = SourceOptions(s, options_);
    per_rank_.push_back(SamplesPerRank(sources_[s].per_epoch, o));
    positions += per_rank_.back();
    // The bound: the source's plan over as many copies of its units as a
    // draw may have parts.
    const MixSourcePlan& src = sources_[s];
    const uint64_t parts = src.per_epoch / std::max<uint64_t>(src.selection.count, 1) + 2;
    std::vector<ReadUnit> copies;
    for (uint64_t k = 0; k < parts; ++k) copies.insert(copies.end(), src.units.begin(), src.units.end());
    memory_bound_ += PlanMemoryBound(copies, o);
    // DrawOf: the draw's bitmap, and for a part of a source epoch the keys
    // of its records (16 bytes each).
    const uint64_t records = RecordsOf(src.units);
    memory_bound_ += parts * ((records + 63) / 64) * 8 + parts * src.units.size() * sizeof(ReadUnit);
    if (src.per_epoch % std::max<uint64_t>(src.selection.count, 1) != 0) {
      memory_bound_ += 16 * src.selection.count;
    }
  }
  batches_ = SegmentBatches(positions, options_);
  // The interleaved order and its pieces, at rest and while built.
  memory_bound_ += 2 * (positions + options_.batch_size) * sizeof(SampleRef);
}

PlanOptions MixPlanner::SourceOptions(size_t s, const PlanOptions& o) const {
  PlanOptions so = o;
  so.seed = seeds_[s];
  so.batch_size = 1;
  so.remainder = Remainder::kDrop;
  so.budget_bytes = std::max<uint64_t>(
      1, static_cast<uint64_t>(double(o.budget_bytes) * budget_share_[s]));
  return so;
}

uint64_t MixPlanner::SegmentBatches(uint64_t positions, const PlanOptions& o) {
  const uint64_t b = static_cast<uint64_t>(o.batch_size);
  return o.remainder == Remainder::kDrop ? positions / b : (positions + b - 1) / b;
}

EpochRest MixPlanner::DrawOf(size_t s, uint64_t epoch, std::vector<ReadUnit>* units) const {
  const MixSourcePlan& src = sources_[s];
  const uint64_t n = src.selection.count, c = src.per_epoch, big_n = RecordsOf(src.units);
  const __uint128_t first = __uint128_t(epoch) * c, last = first + c;  // [first, last)
  const __uint128_t e0 = first / n, e1 = (last - 1) / n;
  const uint64_t parts = static_cast<uint64_t>(e1 - e0) + 1;
  units->clear();
  EpochRest draw;
  draw.owed.assign((parts * big_n + 63) / 64, 0);
  draw.count = c;
  std::vector<std::pair<uint64_t, uint64_t>> keyed;
  for (uint64_t k = 0; k < parts; ++k) {
    for (ReadUnit u : src.units) {
      u.first_record += k * big_n;
      units->push_back(u);
    }
    const __uint128_t e = e0 + k;
    const uint64_t a = static_cast<uint64_t>(std::max(first, e * n) - e * n);
    const uint64_t b = static_cast<uint64_t>(std::min(last, (e + 1) * n) - e * n);
    if (a == 0 && b == n) {
      CopyBits(src.selection.owed, big_n, k * big_n, draw.owed);
      continue;
    }
    // Positions [a, b) of source epoch e's permutation: the records whose
    // draws rank there (two selections, linear time).
    keyed.clear();
    for (uint64_t r = 0; r < big_n; ++r) {
      if (src.selection.Owes(r)) {
        keyed.push_back({common::Draw(seeds_[s], common::kStreamMixDraw,
                                      static_cast<uint64_t>(e), r), r});
      }
    }
    std::nth_element(keyed.begin(), keyed.begin() + a, keyed.end());
    std::nth_element(keyed.begin() + a, keyed.begin() + b, keyed.end());
    for (uint64_t i = a; i < b; ++i) {
      const uint64_t r = k * big_n + keyed[i].second;
      draw.owed[r >> 6] |= uint64_t{1} << (r & 63);
    }
  }
  return draw;
}

EpochPlan MixPlanner::Plan(uint64_t epoch, const EpochRests* rests) const {
  const size_t n = sources_.size();
  std::vector<EpochPlan> plans(n);
  std::vector<uint64_t> counts(n);
  std::vector<uint32_t> piece_at(n);  // each source's first piece in the mixture's
  std::vector<Piece> pieces;
  EpochPlan plan;
  std::vector<ReadUnit> units;
  for (size_t s = 0; s < n; ++s) {
    // A source drawn whole each epoch is planned as its dataset's epoch is.
    const EpochRest draw = whole_[s] ? EpochRest() : DrawOf(s, epoch, &units);
    const EpochRest* rest = rests != nullptr ? &rests->rests[s] : whole_[s] ? nullptr : &draw;
    plans[s] = MakeEpochPlan(whole_[s] ? sources_[s].units : units, SourceOptions(s, options_),
                             epoch, rest, /*load_order=*/false);
    counts[s] = plans[s].order.size();
    piece_at[s] = static_cast<uint32_t>(pieces.size());
    const uint32_t source_units = static_cast<uint32_t>(sources_[s].units.size());
    for (const Piece& p : plans[s].pieces) {
      Piece mixed{sources_[s].first_unit + p.unit % source_units, p.begin, p.end};
      pieces.push_back(mixed);
    }
    plan.build_bytes += plans[s].build_bytes + draw.owed.capacity() * sizeof(uint64_t) +
                        units.capacity() * sizeof(ReadUnit);
  }
  MixSchedule schedule(counts, static_cast<uint64_t>(options_.batch_size));
  const uint64_t total = schedule.positions();
  plan.samples_per_rank = total;
  plan.batches = SegmentBatches(total, options_);
  const uint64_t used = options_.remainder == Remainder::kPartial
                            ? total
                            : plan.batches * static_cast<uint64_t>(options_.batch_size);
  plan.order.resize(std::min(used, total));
  std::vector<const SampleRef*> next(n);
  for (size_t s = 0; s < n; ++s) next[s] = plans[s].order.data();
  for (SampleRef& ref : plan.order) {
    const uint32_t s = schedule.Next();
    ref = *next[s]++;
    ref.piece += piece_at[s];
  }
  plans.clear();
  if (used > total) PadOrder(plan.order, pieces, used, total);
  const size_t piece_capacity = pieces.capacity();
  OrderPieces(std::move(pieces), &plan);
  plan.build_bytes += plan.order.capacity() * sizeof(SampleRef) + piece_capacity * 2 * sizeof(Piece);
  return plan;
}

absl::StatusOr<std::shared_ptr<const EpochRests>> MixPlanner::RestOf(
    uint64_t epoch, const std::vector<ReadSegment>& earlier) const {
  const size_t n = sources_.size();
  std::vector<std::vector<ReadUnit>> units(n);
  std::vector<EpochRest> draws(n);
  auto out = std::make_shared<EpochRests>();
  for (size_t s = 0; s < n; ++s) {
    if (whole_[s]) {
      units[s] = sources_[s].units;
      draws[s] = AllOwed(units[s]);
    } else {
      draws[s] = DrawOf(s, epoch, &units[s]);
    }
  }
  out->rests = draws;
  std::vector<std::vector<ReadSegment>> segments(n);
  for (size_t j = 0; j < earlier.size(); ++j) {
    const PlanOptions o = PlanOf(earlier[j], options_.seed, 0);
    std::vector<uint64_t> counts(n);
    for (size_t s = 0; s < n; ++s) counts[s] = SamplesPerRank(out->rests[s].count, SourceOptions(s, o));
    const uint64_t total = std::accumulate(counts.begin(), counts.end(), uint64_t{0});
    if (earlier[j].batches > SegmentBatches(total, o)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "segment ", j, " of the epoch: ", earlier[j].batches,
          " batches delivered, but its plan (world size ", o.world_size, ", batch size ",
          o.batch_size, ", ", total, " samples a rank) has ", SegmentBatches(total, o)));
    }
    const std::vector<uint64_t> delivered = ScheduledCounts(
        counts, static_cast<uint64_t>(o.batch_size), earlier[j].batches * uint64_t(o.batch_size));
    for (size_t s = 0; s < n; ++s) {
      const PlanOptions so = SourceOptions(s, o);
      segments[s].push_back({so.world_size, 1, Remainder::kDrop, so.shuffle, so.budget_bytes,
                             delivered[s]});
      SP_ASSIGN_OR_RETURN(out->rests[s],
                          RestOfEpoch(units[s], segments[s], seeds_[s], epoch,
                                      whole_[s] ? nullptr : &draws[s]));
    }
  }
  uint64_t total = 0;
  for (size_t s = 0; s < n; ++s) total += SamplesPerRank(out->rests[s].count, SourceOptions(s, options_));
  out->batches = SegmentBatches(total, options_);
  return out;
}

}  // namespace shardpack::reader
