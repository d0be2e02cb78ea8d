#include "reader/epoch_plan.h"

#include <algorithm>
#include <numeric>

#include "reader/rng.h"

namespace shardpack::internal {
namespace {

uint64_t SamplesPerRank(uint64_t records, const PlanOptions& o) {
  uint64_t w = static_cast<uint64_t>(o.world_size);
  return o.remainder == Remainder::kPad ? (records + w - 1) / w : records / w;
}

// The epoch's order of units: a seeded Fisher-Yates permutation.
std::vector<uint32_t> UnitOrder(size_t n, const PlanOptions& o, uint64_t epoch) {
  std::vector<uint32_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0u);
  if (o.shuffle) Shuffle(std::span<uint32_t>(perm), o.seed, kStreamUnits, epoch);
  return perm;
}

// The pieces of this rank's share, in sequence order.
std::vector<Piece> SharePieces(const std::vector<ReadUnit>& units,
                               const std::vector<uint32_t>& perm, uint64_t records,
                               uint64_t share, uint64_t start) {
  std::vector<uint64_t> cum(perm.size() + 1, 0);
  for (size_t k = 0; k < perm.size(); ++k) cum[k + 1] = cum[k] + units[perm[k]].records;
  std::vector<Piece> pieces;
  uint64_t g = start % records;
  for (uint64_t remaining = share; remaining > 0;) {
    size_t k = std::upper_bound(cum.begin(), cum.end(), g) - cum.begin() - 1;
    uint32_t offset = static_cast<uint32_t>(g - cum[k]);
    uint32_t take = static_cast<uint32_t>(
        std::min<uint64_t>(units[perm[k]].records - offset, remaining));
    pieces.push_back({perm[k], offset, offset + take, 0, 0, 0});
    remaining -= take;
    g = (g + take) % records;
  }
  return pieces;
}

// Orders the share's samples (see the file comment of epoch_plan.h).
std::vector<SampleRef> ShareOrder(const std::vector<ReadUnit>& units,
                                  const std::vector<Piece>& pieces, const PlanOptions& o,
                                  uint64_t epoch, bool* windowed) {
  std::vector<SampleRef> refs;
  for (uint32_t i = 0; i < pieces.size(); ++i) {
    for (uint32_t r = pieces[i].begin; r < pieces[i].end; ++r) refs.push_back({i, r});
  }
  *windowed = false;
  if (!o.shuffle) return refs;
  uint64_t total = 0, largest = 1;
  for (const Piece& p : pieces) {
    total += units[p.unit].bytes;
    largest = std::max(largest, units[p.unit].bytes);
  }
  // Pieces the budget holds while the next ones load.
  uint64_t k = o.budget_bytes / largest;
  *windowed = total > o.budget_bytes;
  k = k > 2 ? k - 2 : 1;
  std::vector<std::pair<uint64_t, SampleRef>> keyed(refs.size());
  for (size_t i = 0; i < refs.size(); ++i) {
    const SampleRef& s = refs[i];
    uint64_t draw = Draw(o.seed, kStreamSamples, epoch, units[pieces[s.piece].unit].first_record + s.index);
    uint64_t key = *windowed ? (uint64_t{s.piece} << 32) + Below(draw, k << 32) : draw;
    keyed[i] = {key, s};
  }
  std::sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return a.second.piece != b.second.piece ? a.second.piece < b.second.piece
                                            : a.second.index < b.second.index;
  });
  for (size_t i = 0; i < refs.size(); ++i) refs[i] = keyed[i].second;
  return refs;
}

}  // namespace

uint64_t BatchesPerEpoch(uint64_t records, const PlanOptions& o) {
  uint64_t q = SamplesPerRank(records, o), b = static_cast<uint64_t>(o.batch_size);
  return o.remainder == Remainder::kDrop ? q / b : (q + b - 1) / b;
}

EpochPlan MakeEpochPlan(const std::vector<ReadUnit>& units, const PlanOptions& o,
                        uint64_t epoch) {
  EpochPlan plan;
  uint64_t records = 0;
  for (const ReadUnit& u : units) records += u.records;
  plan.samples_per_rank = SamplesPerRank(records, o);
  plan.batches = BatchesPerEpoch(records, o);
  if (records == 0 || plan.samples_per_rank == 0) return plan;

  std::vector<uint32_t> perm = UnitOrder(units.size(), o, epoch);
  const uint64_t share = plan.samples_per_rank;
  std::vector<Piece> pieces =
      SharePieces(units, perm, records, share, static_cast<uint64_t>(o.rank) * share);
  std::vector<SampleRef> base = ShareOrder(units, pieces, o, epoch, &plan.windowed);

  // Positions used: all full batches, plus the short one (kPartial) or a
  // padded one (kPad, wrapping to the start of the share's order). Wrapped
  // positions use copies of their pieces, loaded again when needed.
  uint64_t used = o.remainder == Remainder::kPartial
                      ? share
                      : plan.batches * static_cast<uint64_t>(o.batch_size);
  plan.order.resize(used);
  std::vector<uint32_t> copy_of(pieces.size(), UINT32_MAX);
  for (uint64_t p = 0; p < used; ++p) {
    SampleRef s = base[p % share];
    if (p >= share) {
      if (copy_of[s.piece] == UINT32_MAX) {
        copy_of[s.piece] = static_cast<uint32_t>(pieces.size());
        pieces.push_back(pieces[s.piece]);
      }
      s.piece = copy_of[s.piece];
    }
    plan.order[p] = s;
  }

  // First and last use of each piece; unused pieces are not loaded at all.
  for (uint64_t p = 0; p < used; ++p) {
    Piece& piece = pieces[plan.order[p].piece];
    if (piece.uses++ == 0) piece.first_use = p;
    piece.last_use = p;
  }
  std::vector<uint32_t> by_first;
  for (uint32_t i = 0; i < pieces.size(); ++i) {
    if (pieces[i].uses > 0) by_first.push_back(i);
  }
  std::sort(by_first.begin(), by_first.end(), [&](uint32_t a, uint32_t b) {
    return pieces[a].first_use < pieces[b].first_use;
  });
  std::vector<uint32_t> new_index(pieces.size(), UINT32_MAX);
  for (uint32_t i = 0; i < by_first.size(); ++i) {
    new_index[by_first[i]] = i;
    plan.pieces.push_back(pieces[by_first[i]]);
  }
  for (SampleRef& s : plan.order) s.piece = new_index[s.piece];
  return plan;
}

}  // namespace shardpack::internal
