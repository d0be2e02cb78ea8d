// A rank's share of an epoch's records: reader/epoch_share.h.
#include "reader/epoch_share.h"

#include <algorithm>
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

}  // namespace shardpack::reader
