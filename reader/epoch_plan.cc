#include "reader/epoch_plan.h"

#include <algorithm>
#include <bit>
#include <numeric>

#include "absl/strings/str_cat.h"
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

// A rank's share: its pieces in sequence order and one ref per record.
struct Share {
  std::vector<Piece> pieces;
  std::vector<SampleRef> refs;
};

// Records before each position of `perm`: cum[k] counts those of units
// perm[0..k).
std::vector<uint64_t> RecordPrefix(const std::vector<ReadUnit>& units,
                                   const std::vector<uint32_t>& perm) {
  std::vector<uint64_t> cum(perm.size() + 1, 0);
  for (size_t k = 0; k < perm.size(); ++k) cum[k + 1] = cum[k] + units[perm[k]].records;
  return cum;
}

// The share of `share` records from position `start` of the epoch's whole
// sequence (`cum` from RecordPrefix): pieces are contiguous runs of units.
Share ContiguousShare(const std::vector<ReadUnit>& units, const std::vector<uint32_t>& perm,
                      const std::vector<uint64_t>& cum, uint64_t records, uint64_t share,
                      uint64_t start) {
  Share s;
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
  // Exactly `share` refs: grown by push_back the vector would peak at up to
  // twice that (16 bytes a record) at 10^7 records and more.
  s.refs.reserve(share);
  for (uint32_t i = 0; i < s.pieces.size(); ++i) {
    for (uint32_t r = s.pieces[i].begin; r < s.pieces[i].end; ++r) s.refs.push_back({i, r});
  }
  return s;
}

// Owed records before each position of `perm`: cum[k] counts those of
// units perm[0..k).
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

// The share of `share` owed records from position `start` of the sequence
// of owed records (in the epoch's unit order): a piece per unit visited.
Share RestShare(const std::vector<ReadUnit>& units, const std::vector<uint32_t>& perm,
                const std::vector<uint64_t>& cum, const EpochRest& rest, uint64_t share,
                uint64_t start) {
  Share s;
  s.refs.reserve(share);
  uint64_t g = start % rest.count;
  for (uint64_t remaining = share; remaining > 0;) {
    // The unit holding owed record g: cum[k] <= g < cum[k + 1].
    size_t k = std::upper_bound(cum.begin(), cum.end(), g) - cum.begin() - 1;
    const ReadUnit& u = units[perm[k]];
    const uint32_t piece = static_cast<uint32_t>(s.pieces.size());
    Piece p{perm[k], UINT32_MAX, 0, 0, 0, 0};
    uint64_t skip = g - cum[k], taken = 0;
    for (uint32_t r = 0; r < u.records && remaining > 0; ++r) {
      if (!rest.Owes(u.first_record + r) || (skip > 0 && skip-- > 0)) continue;
      p.begin = std::min(p.begin, r);
      p.end = r + 1;
      s.refs.push_back({piece, r});
      --remaining;
      ++taken;
    }
    s.pieces.push_back(p);
    g = (g + taken) % rest.count;
  }
  return s;
}

// What a share's order draws from: Draw(a, b, c, record).
struct OrderKey {
  uint64_t a, b, c;
};

OrderKey KeyOf(const PlanOptions& o, uint64_t epoch, const EpochRest* rest) {
  if (rest == nullptr) return {o.seed, kStreamSamples, epoch};
  return {Draw(o.seed, kStreamElastic, epoch, rest->segment), kStreamElastic, epoch};
}

using Keyed = std::pair<uint64_t, SampleRef>;

bool KeyedLess(const Keyed& a, const Keyed& b) {
  if (a.first != b.first) return a.first < b.first;
  return a.second.piece != b.second.piece ? a.second.piece < b.second.piece
                                          : a.second.index < b.second.index;
}

// The share's sort keys (see the file comment of epoch_plan.h).
std::vector<Keyed> KeyedRefs(const std::vector<ReadUnit>& units, const Share& share,
                             const PlanOptions& o, OrderKey key, bool* windowed) {
  uint64_t total = 0, largest = 1;
  for (const Piece& p : share.pieces) {
    total += units[p.unit].bytes;
    largest = std::max(largest, units[p.unit].bytes);
  }
  // Pieces the budget holds while the next ones load.
  uint64_t k = o.budget_bytes / largest;
  *windowed = total > o.budget_bytes;
  k = k > 2 ? k - 2 : 1;
  std::vector<Keyed> keyed(share.refs.size());
  for (size_t i = 0; i < share.refs.size(); ++i) {
    const SampleRef& s = share.refs[i];
    uint64_t draw = Draw(key.a, key.b, key.c, units[share.pieces[s.piece].unit].first_record + s.index);
    keyed[i] = {*windowed ? (uint64_t{s.piece} << 32) + Below(draw, k << 32) : draw, s};
  }
  return keyed;
}

// Sorts `keyed` exactly as std::sort with KeyedLess does: an in-place
// counting sort (American flag sort) on the key's top bits, which are
// monotone in the key, then a sort of each bucket. Buckets of ~16,384 keys:
// with 10^7 jittered keys (the windowed plan) this took 0.70 s against
// std::sort's 0.93 s on the 2-core machine (and 0.83 s against 1.04 s with
// uniform keys); buckets of ~64 keys took 4 s, their swaps all cache misses.
// Returns the bytes of its bucket tables.
uint64_t SortKeyed(std::vector<Keyed>& keyed) {
  const size_t n = keyed.size();
  uint64_t max_key = 0;
  for (const Keyed& k : keyed) max_key = std::max(max_key, k.first);
  const int target_bits = std::max(1, static_cast<int>(std::bit_width(n / 16384)));
  const int shift = std::max(0, static_cast<int>(std::bit_width(max_key)) - target_bits);
  const size_t buckets = static_cast<size_t>(max_key >> shift) + 1;
  std::vector<size_t> next(buckets + 1, 0);
  for (const Keyed& k : keyed) ++next[(k.first >> shift) + 1];
  for (size_t b = 1; b <= buckets; ++b) next[b] += next[b - 1];
  std::vector<size_t> end(next.begin() + 1, next.end());
  for (size_t b = 0; b < buckets; ++b) {
    while (next[b] < end[b]) {
      Keyed v = keyed[next[b]];
      for (size_t t = v.first >> shift; t != b; t = v.first >> shift)
        std::swap(v, keyed[next[t]++]);
      keyed[next[b]++] = v;
    }
  }
  for (size_t b = 0, begin = 0; b < buckets; begin = end[b++]) {
    std::sort(keyed.begin() + static_cast<ptrdiff_t>(begin),
              keyed.begin() + static_cast<ptrdiff_t>(end[b]), KeyedLess);
  }
  return (next.capacity() + end.capacity()) * sizeof(size_t);
}

// Orders the share's samples in place. The sort keys (16 bytes a record)
// are the plan's one transient: the sorted refs go back into share.refs, so
// the build peaks at 24 bytes a record (refs and keys), not 32.
void OrderShare(const std::vector<ReadUnit>& units, Share& share, const PlanOptions& o,
                OrderKey key, bool* windowed, uint64_t* build_bytes) {
  *windowed = false;
  *build_bytes = share.refs.capacity() * sizeof(SampleRef);
  if (!o.shuffle) return;
  std::vector<Keyed> keyed = KeyedRefs(units, share, o, key, windowed);
  *build_bytes += keyed.capacity() * sizeof(Keyed);
  *build_bytes += SortKeyed(keyed);
  for (size_t i = 0; i < keyed.size(); ++i) share.refs[i] = keyed[i].second;
}

void SetBit(std::vector<uint64_t>& bits, uint64_t i) { bits[i >> 6] |= uint64_t{1} << (i & 63); }

// Marks the records of the first `delivered` positions of the share's order
// in `done`: a selection, not a sort, O(share). Positions past the share
// (kPad) repeat its first records, so `delivered` <= the share's size.
void MarkDelivered(const std::vector<ReadUnit>& units, const Share& share, const PlanOptions& o,
                   OrderKey key, uint64_t delivered, std::vector<uint64_t>& done) {
  auto record = [&](const SampleRef& s) {
    return units[share.pieces[s.piece].unit].first_record + s.index;
  };
  if (!o.shuffle) {
    for (uint64_t p = 0; p < delivered; ++p) SetBit(done, record(share.refs[p]));
    return;
  }
  bool windowed = false;
  std::vector<Keyed> keyed = KeyedRefs(units, share, o, key, &windowed);
  std::nth_element(keyed.begin(), keyed.begin() + delivered, keyed.end(), KeyedLess);
  for (uint64_t p = 0; p < delivered; ++p) SetBit(done, record(keyed[p].second));
}

absl::Status CheckSegment(const PlanSegment& s, size_t i, uint64_t records) {
  const PlanOptions& o = s.options;
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("segment ", i, " of the epoch: ", what));
  };
  if (o.world_size < 1 || o.world_size > kMaxWorldSize) {
    return bad(absl::StrCat("world size ", o.world_size, " is not 1..", kMaxWorldSize));
  }
  if (o.batch_size < 1 || o.batch_size > kMaxBatchSize) {
    return bad(absl::StrCat("batch size ", o.batch_size, " is not 1..", kMaxBatchSize));
  }
  if (o.remainder != Remainder::kDrop && o.remainder != Remainder::kPartial &&
      o.remainder != Remainder::kPad) {
    return bad(absl::StrCat("remainder ", static_cast<int>(o.remainder), " is not drop, partial or pad"));
  }
  const uint64_t batches = BatchesPerEpoch(records, o);
  if (s.batches > batches) {
    return bad(absl::StrCat(s.batches, " batches delivered, but its plan (world size ",
                            o.world_size, ", batch size ", o.batch_size, ", ", records,
                            " records to read) has ", batches));
  }
  return absl::OkStatus();
}

// Extends `order` (the share's `share` refs) to `used` positions, wrapping
// to its start; wrapped positions use copies of their pieces.
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

}  // namespace

uint64_t PlanBytes(const EpochPlan& plan) {
  return plan.order.capacity() * sizeof(SampleRef) + plan.pieces.capacity() * sizeof(Piece);
}

uint64_t PlanMemoryBound(uint64_t records, size_t units, const PlanOptions& o) {
  const uint64_t share = SamplesPerRank(records, o);
  const uint64_t positions = BatchesPerEpoch(records, o) * static_cast<uint64_t>(o.batch_size);
  // Pieces: a unit each, two cut at the share's ends, and a copy each of
  // those kPad wraps to; each also has a ready flag in the pipeline.
  const uint64_t pieces = 2 * (static_cast<uint64_t>(units) + 2);
  const uint64_t at_rest = positions * sizeof(SampleRef) + pieces * (sizeof(Piece) + 4);
  // Building: the refs and sort keys (24 bytes a record, the bucket tables at
  // most half a byte more) or, unshuffled, the refs and their cut copy.
  const uint64_t build = o.shuffle ? share * 49 / 2 : share * 2 * sizeof(SampleRef);
  return at_rest + std::max(build, positions * sizeof(SampleRef)) + pieces * sizeof(Piece);
}

uint64_t BatchesPerEpoch(uint64_t records, const PlanOptions& o) {
  uint64_t q = SamplesPerRank(records, o), b = static_cast<uint64_t>(o.batch_size);
  return o.remainder == Remainder::kDrop ? q / b : (q + b - 1) / b;
}

absl::StatusOr<EpochRest> RestOfEpoch(const std::vector<ReadUnit>& units,
                                      const std::vector<PlanSegment>& segments, uint64_t epoch) {
  uint64_t n = 0;
  for (const ReadUnit& u : units) n += u.records;
  // Before the first segment every record is owed.
  EpochRest rest;
  rest.owed.assign((n + 63) / 64, ~uint64_t{0});
  if (n % 64 != 0) rest.owed.back() = (uint64_t{1} << (n % 64)) - 1;
  rest.count = n;
  for (size_t i = 0; i < segments.size(); ++i) {
    const PlanOptions& o = segments[i].options;
    const bool whole = i == 0;  // segment 0 is an ordinary epoch plan
    if (absl::Status s = CheckSegment(segments[i], i, rest.count); !s.ok()) return s;
    const uint64_t share = SamplesPerRank(rest.count, o);
    const uint64_t delivered =
        std::min(share, segments[i].batches * static_cast<uint64_t>(o.batch_size));
    std::vector<uint64_t> done((n + 63) / 64, 0);
    if (delivered > 0) {
      const std::vector<uint32_t> perm = UnitOrder(units.size(), o, epoch);
      const std::vector<uint64_t> cum =
          whole ? RecordPrefix(units, perm) : OwedPrefix(units, perm, rest);
      const OrderKey key = KeyOf(o, epoch, whole ? nullptr : &rest);
      for (int r = 0; r < o.world_size; ++r) {
        const uint64_t start = static_cast<uint64_t>(r) * share;
        Share s = whole ? ContiguousShare(units, perm, cum, n, share, start)
                        : RestShare(units, perm, cum, rest, share, start);
        MarkDelivered(units, s, o, key, delivered, done);
      }
    }
    // What was owed and not delivered, including what this segment's
    // remainder rule left out, is owed still.
    rest.count = 0;
    for (size_t w = 0; w < done.size(); ++w) {
      rest.owed[w] &= ~done[w];
      rest.count += std::popcount(rest.owed[w]);
    }
    rest.segment = static_cast<uint32_t>(i + 1);
  }
  return rest;
}

EpochPlan MakeEpochPlan(const std::vector<ReadUnit>& units, const PlanOptions& o,
                        uint64_t epoch, const EpochRest* rest) {
  EpochPlan plan;
  uint64_t records = 0;
  for (const ReadUnit& u : units) records += u.records;
  if (rest != nullptr) records = rest->count;
  plan.samples_per_rank = SamplesPerRank(records, o);
  plan.batches = BatchesPerEpoch(records, o);
  if (records == 0 || plan.samples_per_rank == 0) return plan;

  std::vector<uint32_t> perm = UnitOrder(units.size(), o, epoch);
  const uint64_t share = plan.samples_per_rank;
  const uint64_t start = static_cast<uint64_t>(o.rank) * share;
  Share mine = rest == nullptr
                   ? ContiguousShare(units, perm, RecordPrefix(units, perm), records, share, start)
                   : RestShare(units, perm, OwedPrefix(units, perm, *rest), *rest, share, start);
  OrderShare(units, mine, o, KeyOf(o, epoch, rest), &plan.windowed, &plan.build_bytes);
  std::vector<Piece>& pieces = mine.pieces;

  // Positions used: all full batches, plus the short one (kPartial) or a
  // padded one (kPad, wrapping to the start of the share's order). Wrapped
  // positions use copies of their pieces, loaded again when needed. The
  // order is the share's refs themselves, cut or extended: no second copy.
  uint64_t used = o.remainder == Remainder::kPartial
                      ? share
                      : plan.batches * static_cast<uint64_t>(o.batch_size);
  plan.order = std::move(mine.refs);
  if (used < share) {
    plan.order.resize(used);
    plan.order.shrink_to_fit();  // kDrop's last partial batch: a copy of used refs
  } else if (used > share) {
    PadOrder(plan.order, pieces, used, share);
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
  plan.build_bytes = std::max(plan.build_bytes, PlanBytes(plan));
  return plan;
}

}  // namespace shardpack::internal
