// A rank's share of an epoch's records: reader/epoch_share.h.
#include "reader/epoch_share.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>

#include "common/rng.h"

namespace shardpack::reader {

uint64_t SamplesPerRank(uint64_t records, const PlanOptions& o) {
  uint64_t w = static_cast<uint64_t>(o.world_size);
  return o.remainder == Remainder::kPad ? (records + w - 1) / w : records / w;
}

std::vector<uint32_t> UnitOrder(size_t n, const PlanOptions& o, uint64_t epoch) {
  std::vector<uint32_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0u);
  if (o.shuffle) common::Shuffle(std::span<uint32_t>(perm), o.seed, common::kStreamUnits, epoch);
  return perm;
}

std::vector<uint64_t> RecordPrefix(const std::vector<ReadUnit>& units,
                                   const std::vector<uint32_t>& perm) {
  std::vector<uint64_t> cum(perm.size() + 1, 0);
  for (size_t k = 0; k < perm.size(); ++k) cum[k + 1] = cum[k] + units[perm[k]].records;
  return cum;
}

Share ContiguousShare(const std::vector<ReadUnit>& units, const std::vector<uint32_t>& perm,
                      const std::vector<uint64_t>& cum, uint64_t records, uint64_t share,
                      uint64_t start) {
  Share s;
  s.records = share;
  uint64_t g = start % records;
  for (uint64_t remaining = share; remaining > 0;) {
    size_t k = std::upper_bound(cum.begin(), cum.end(), g) - cum.begin() - 1;
    uint32_t offset = static_cast<uint32_t>(g - cum[k]);
    uint32_t take = static_cast<uint32_t>(
        std::min<uint64_t>(units[perm[k]].records - offset, remaining));
    s.pieces.push_back({perm[k], offset, offset + take, 0, 0, 0});
    remaining -= take;
    g = (g + take) % records;
  }
  return s;
}

std::vector<uint64_t> OwedPrefix(const std::vector<ReadUnit>& units,
                                 const std::vector<uint32_t>& perm, const EpochRest& rest) {
  std::vector<uint64_t> cum(perm.size() + 1, 0);
  for (size_t k = 0; k < perm.size(); ++k) {
    const ReadUnit& u = units[perm[k]];
    uint64_t n = 0;
    for (uint32_t r = 0; r < u.records; ++r) n += rest.Owes(u.first_record + r);
    cum[k + 1] = cum[k] + n;
  }
  return cum;
}

// A piece per unit visited, spanning the owed records it takes (all the
// owed ones in its span).
Share RestShare(const std::vector<ReadUnit>& units, const std::vector<uint32_t>& perm,
                const std::vector<uint64_t>& cum, const EpochRest& rest, uint64_t share,
                uint64_t start) {
  Share s;
  s.rest = &rest;
  s.records = share;
  uint64_t g = start % rest.count;
  for (uint64_t remaining = share; remaining > 0;) {
    // The unit holding owed record g: cum[k] <= g < cum[k + 1].
    size_t k = std::upper_bound(cum.begin(), cum.end(), g) - cum.begin() - 1;
    const ReadUnit& u = units[perm[k]];
    Piece p{perm[k], UINT32_MAX, 0, 0, 0, 0};
    uint64_t skip = g - cum[k], taken = 0;
    for (uint32_t r = 0; r < u.records && remaining > 0; ++r) {
      if (!rest.Owes(u.first_record + r) || (skip > 0 && skip-- > 0)) continue;
      p.begin = std::min(p.begin, r);
      p.end = r + 1;
      --remaining;
      ++taken;
    }
    s.pieces.push_back(p);
    g = (g + taken) % rest.count;
  }
  return s;
}

void PadOrder(std::vector<SampleRef>& order, std::vector<Piece>& pieces, uint64_t used,
              uint64_t share) {
  order.reserve(used);
  std::vector<uint32_t> copy_of(pieces.size(), UINT32_MAX);
  for (uint64_t p = share; p < used; ++p) {
    SampleRef s = order[p % share];
    if (copy_of[s.piece] == UINT32_MAX) {
      copy_of[s.piece] = static_cast<uint32_t>(pieces.size());
      pieces.push_back(pieces[s.piece]);
    }
    s.piece = copy_of[s.piece];
    order.push_back(s);
  }
}

std::vector<uint64_t> RampFloors(const std::vector<ReadUnit>& units, const Share& share,
                                 int batch_size) {
  const double batch = batch_size, first = double(kRampBatches) * batch;
  if (double(share.records) <= first) return {};
  // In the fraction x of the key range, the keys below x are
  // C(x) = sum over admitted pieces j of n_j (x - x_j) / (1 - x_j): piecewise
  // linear, its slope growing by n_j / (1 - x_j) at each admission. Piece i
  // is admitted at position p_i = batch * log2(S_i / first), S_i the records
  // before it (0 while S_i <= first); its floor x_i solves C(x_i) = p_i.
  std::vector<uint64_t> floors(share.pieces.size(), 0);
  double before = 0, x = 0, c = 0, slope = 0;
  for (uint32_t i = 0; i < share.pieces.size(); ++i) {
    // A piece of a contiguous share holds [begin, end); of a rest, the owed
    // records among them, counted.
    uint64_t n = share.pieces[i].end - share.pieces[i].begin;
    if (share.rest != nullptr) {
      n = 0;
      ForEachInPiece(units, share, i, [&](uint32_t) { ++n; });
    }
    if (before > first && slope > 0) {
      const double p = batch * std::log2(before / first);
      // At most half the key range: every piece keeps most of the epoch.
      const double next = std::min(0.5, x + std::max(0.0, p - c) / slope);
      c += (next - x) * slope;
      x = next;
      floors[i] = static_cast<uint64_t>(std::ldexp(x, 64));
    }
    slope += double(n) / (1 - x);
    before += double(n);
  }
  return floors;
}

uint64_t ShareBytesBound(const std::vector<ReadUnit>& units, int world_size) {
  uint64_t bytes = 0, largest = 0;
  for (const ReadUnit& u : units) {
    bytes += u.bytes;
    largest = std::max(largest, u.bytes);
  }
  return bytes / static_cast<uint64_t>(std::max(world_size, 1)) + 2 * largest;
}

uint64_t ChosenShuffleBytes(const std::vector<ReadUnit>& units, int world_size) {
  const uint64_t share = ShareBytesBound(units, world_size);
  return share <= kWholeShareBytes ? std::max<uint64_t>(share, 1) : kStreamWindowBytes;
}

}  // namespace shardpack::reader
