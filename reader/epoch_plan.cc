#include "reader/epoch_plan.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <span>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "reader/epoch_share.h"
#include "reader/planner.h"

namespace shardpack::reader {
namespace {

// What a share's order draws from: Draw(a, b, c, record).
struct OrderKey {
  uint64_t a, b, c;
};

// An epoch's first segment, also one that starts from a selection (segment
// 0), draws as a whole epoch does; an elastic rest draws its own.
OrderKey KeyOf(const PlanOptions& o, uint64_t epoch, const EpochRest* rest) {
  if (rest == nullptr || rest->segment == 0) return {o.seed, common::kStreamSamples, epoch};
  return {common::Draw(o.seed, common::kStreamElastic, epoch, rest->segment),
          common::kStreamElastic, epoch};
}

using Keyed = std::pair<uint64_t, SampleRef>;

// A type, not a function pointer, so that std::sort inlines it.
struct KeyedLess {
  bool operator()(const Keyed& a, const Keyed& b) const {
    if (a.first != b.first) return a.first < b.first;
    return a.second.piece != b.second.piece ? a.second.piece < b.second.piece
                                            : a.second.index < b.second.index;
  }
};

// How a shuffled share is keyed (see the file comment of epoch_plan.h):
// uniform draws when its pieces fit the budget, else piece << 32 plus a
// uniform offset in [0, k << 32).
struct Keying {
  bool windowed = false;
  uint64_t k = 0;  // pieces held while the next ones load (windowed)
};

Keying KeyingOf(const std::vector<ReadUnit>& units, const std::vector<Piece>& pieces,
                uint64_t budget) {
  uint64_t total = 0, largest = 1;
  for (const Piece& p : pieces) {
    total += units[p.unit].bytes;
    largest = std::max(largest, units[p.unit].bytes);
  }
  const uint64_t k = budget / largest;
  return {total > budget, k > 2 ? k - 2 : 1};
}

// Sorts `in` by KeyedLess into `out` (the same size), given that every key
// lies in [lo, hi]: a counting sort on ~8-key buckets of the key range,
// then a sort of each bucket. Linear for keys spread evenly over the range
// (both keyings are), and cache-friendly when `in` is a window's records.
// `counts` is reused scratch.
void SortKeyed(std::span<Keyed> in, std::span<Keyed> out, uint64_t lo, uint64_t hi,
               std::vector<uint32_t>& counts) {
  const size_t n = in.size();
  if (n == 0) return;
  const int bits = std::max(1, static_cast<int>(std::bit_width(n / 8)));
  const int shift = std::max(0, static_cast<int>(std::bit_width(hi - lo)) - bits);
  const size_t buckets = static_cast<size_t>((hi - lo) >> shift) + 1;
  counts.assign(buckets + 1, 0);
  for (const Keyed& k : in) ++counts[((k.first - lo) >> shift) + 1];
  for (size_t b = 1; b <= buckets; ++b) counts[b] += counts[b - 1];
  for (const Keyed& k : in) out[counts[(k.first - lo) >> shift]++] = k;
  // counts[b] is now the end of bucket b.
  for (size_t b = 0, begin = 0; b < buckets; begin = counts[b++]) {
    if (counts[b] - begin > 1) std::sort(out.begin() + begin, out.begin() + counts[b], KeyedLess());
  }
}

// Builds a share's order position by position: emit(ref) for each position
// until it returns false. Returns the bytes of scratch held at once.
class OrderBuilder {
 public:
  OrderBuilder(const std::vector<ReadUnit>& units, const Share& share, const PlanOptions& o,
               OrderKey key)
      : units_(units), share_(share), o_(o), key_(key) {}

  bool windowed() const { return keying_.windowed; }

  template <typename Emit>
  uint64_t Build(Emit&& emit) {
    if (!o_.shuffle) {
      bool more = true;
      for (uint32_t i = 0; i < share_.pieces.size() && more; ++i) {
        ForEachInPiece(units_, share_, i, [&](uint32_t r) { more = more && emit(SampleRef{i, r}); });
      }
      return 0;
    }
    keying_ = KeyingOf(units_, share_.pieces, o_.budget_bytes);
    return keying_.windowed ? Windowed(emit) : Uniform(emit);
  }

 private:
  uint64_t DrawFor(uint32_t piece, uint32_t r) const {
    return shardpack::common::Draw(key_.a, key_.b, key_.c,
                                     units_[share_.pieces[piece].unit].first_record + r);
  }

  // Pieces that fit the budget: a uniform permutation (after the ramp,
  // RampFloors). A counting sort of the refs on ~8-key buckets of the key's
  // top bits, then each bucket sorted by its keys, drawn again: 10 bytes a
  // record of scratch (the refs and the counts), not 16-byte keys.
  template <typename Emit>
  uint64_t Uniform(Emit& emit) {
    const uint32_t pieces = static_cast<uint32_t>(share_.pieces.size());
    const int bits = std::max(1, static_cast<int>(std::bit_width(share_.records / 8)));
    const int shift = 64 - bits;
    // The ramp: piece i's keys uniform in [floor[i], 2^64).
    const std::vector<uint64_t> floors = RampFloors(units_, share_, o_.batch_size);
    auto key_of = [&](uint32_t i, uint32_t r) {
      const uint64_t u = DrawFor(i, r);
      return floors.empty() || floors[i] == 0 ? u : floors[i] + common::Below(u, -floors[i]);
    };
    std::vector<uint64_t> next((size_t{1} << bits) + 1, 0);
    for (uint32_t i = 0; i < pieces; ++i) {
      ForEachInPiece(units_, share_, i, [&](uint32_t r) { ++next[(key_of(i, r) >> shift) + 1]; });
    }
    for (size_t b = 1; b < next.size(); ++b) next[b] += next[b - 1];
    std::vector<SampleRef> refs(share_.records);
    for (uint32_t i = 0; i < pieces; ++i) {
      ForEachInPiece(units_, share_, i,
                     [&](uint32_t r) { refs[next[key_of(i, r) >> shift]++] = {i, r}; });
    }
    // next[b] is now the end of bucket b.
    std::vector<Keyed> bucket;
    auto emit_sorted = [&](size_t begin, size_t end) {
      bucket.clear();
      for (size_t p = begin; p < end; ++p) {
        bucket.push_back({key_of(refs[p].piece, refs[p].index), refs[p]});
      }
      std::sort(bucket.begin(), bucket.end(), KeyedLess());
      for (const Keyed& k : bucket) {
        if (!emit(k.second)) return false;
      }
      return true;
    };
    for (size_t b = 0, begin = 0; b + 1 < next.size(); begin = next[b++]) {
      if (!emit_sorted(begin, next[b])) break;
    }
    return refs.capacity() * sizeof(SampleRef) + next.capacity() * sizeof(uint64_t) +
           bucket.capacity() * sizeof(Keyed) + floors.capacity() * sizeof(uint64_t);
  }

  // The jittered sort, k pieces at a time: piece i's keys lie in
  // [i, i + k) << 32, so once pieces [0, c) are keyed, every key below
  // c << 32 is known and those positions are final. Holds the keys of at
  // most 2k pieces (those of the window just keyed and the ones the window
  // before left for later), whatever the share's size.
  template <typename Emit>
  uint64_t Windowed(Emit& emit) {
    const uint64_t k = keying_.k, pieces = share_.pieces.size();
    // The most records two consecutive windows hold: the scratch's size.
    uint64_t most = 0;
    for (uint64_t c0 = 0, before = 0; c0 < pieces; c0 += k) {
      uint64_t in_window = 0;
      for (uint64_t i = c0; i < std::min(pieces, c0 + k); ++i) {
        in_window += share_.pieces[i].end - share_.pieces[i].begin;
      }
      most = std::max(most, before + in_window);
      before = in_window;
    }
    most = std::min(most, share_.records);
    std::vector<Keyed> pending, sorted;
    pending.reserve(most);
    sorted.reserve(most);
    std::vector<uint32_t> counts;
    uint64_t scratch = 0;
    for (uint64_t c0 = 0; c0 < pieces; c0 += k) {
      const uint64_t c1 = std::min(pieces, c0 + k);
      for (uint32_t i = static_cast<uint32_t>(c0); i < c1; ++i) {
        ForEachInPiece(units_, share_, i, [&](uint32_t r) {
          pending.push_back({(uint64_t{i} << 32) + common::Below(DrawFor(i, r), k << 32), {i, r}});
        });
      }
      const uint64_t lo = c0 << 32, limit = c1 == pieces ? UINT64_MAX : c1 << 32;
      auto later = std::partition(pending.begin(), pending.end(),
                                  [&](const Keyed& x) { return x.first < limit; });
      const size_t now = static_cast<size_t>(later - pending.begin());
      sorted.resize(now);
      SortKeyed(std::span(pending.data(), now), sorted, lo,
                c1 == pieces ? (pieces - 1 + k) << 32 : limit - 1, counts);
      scratch = std::max<uint64_t>(scratch, (pending.capacity() + sorted.capacity()) * sizeof(Keyed) +
                                                counts.capacity() * sizeof(uint32_t));
      for (const Keyed& x : sorted) {
        if (!emit(x.second)) return scratch;
      }
      pending.erase(pending.begin(), later);
    }
    return scratch;
  }

  const std::vector<ReadUnit>& units_;
  const Share& share_;
  const PlanOptions& o_;
  const OrderKey key_;
  Keying keying_;
};

void SetBit(std::vector<uint64_t>& bits, uint64_t i) { bits[i >> 6] |= uint64_t{1} << (i & 63); }

// Marks the records of the first `delivered` positions of the share's order
// in `done`: the order built up to there, no further. Positions past the
// share (kPad) repeat its first records, so `delivered` <= the share's size.
void MarkDelivered(const std::vector<ReadUnit>& units, const Share& share, const PlanOptions& o,
                   OrderKey key, uint64_t delivered, std::vector<uint64_t>& done) {
  uint64_t p = 0;
  OrderBuilder(units, share, o, key).Build([&](SampleRef s) {
    if (p == delivered) return false;  // none delivered
    SetBit(done, units[share.pieces[s.piece].unit].first_record + s.index);
    return ++p < delivered;
  });
}

absl::Status CheckSegment(const ReadSegment& s, const PlanOptions& o, size_t i,
                          uint64_t records) {
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

}  // namespace

uint64_t PlanBytes(const EpochPlan& plan) {
  return plan.order.capacity() * sizeof(SampleRef) + plan.pieces.capacity() * sizeof(Piece);
}

uint64_t PlanMemoryBound(const std::vector<ReadUnit>& units, const PlanOptions& o) {
  uint64_t records = 0;
  double density = 0;  // the most records a byte of a unit holds
  for (const ReadUnit& u : units) {
    records += u.records;
    density = std::max(density, u.bytes > 0 ? double(u.records) / double(u.bytes) : HUGE_VAL);
  }
  const uint64_t share = SamplesPerRank(records, o);
  const uint64_t used = o.remainder == Remainder::kPartial
                            ? share
                            : BatchesPerEpoch(records, o) * static_cast<uint64_t>(o.batch_size);
  // Pieces: a unit each, two cut at the share's ends, and a copy each of
  // those kPad wraps to; each also has a ready flag in the pipeline.
  const uint64_t pieces = 2 * (static_cast<uint64_t>(units.size()) + 2);
  const uint64_t at_rest = used * sizeof(SampleRef) + pieces * (sizeof(Piece) + 4);
  // The builder's scratch, for at most the records the budget holds (two
  // windows' worth when windowed: a share's pieces hold more than the
  // budget; a share within it, also an elastic rest's, is uniform).
  // Uniform: refs and counts, 10 bytes a record, and one bucket's keys (~8
  // drawn; 4,096 allowed). Windowed: the keys of two windows of k pieces,
  // 33 bytes a record (two copies and the counts).
  uint64_t scratch = 0;
  if (o.shuffle) {
    auto at_most = [&](double n) { return n < double(share) ? static_cast<uint64_t>(n) : share; };
    const double fits = double(o.budget_bytes) * density + 1;
    scratch = 10 * at_most(fits) + 16 + 4096 * 16;
    if (ShareBytesBound(units, o.world_size) > o.budget_bytes) {
      scratch = std::max(scratch, 33 * at_most(2 * fits) + 12);
    }
  }
  // And per piece: the ramp's floor, the load order's index tables.
  const uint64_t build = used * sizeof(SampleRef) + scratch + pieces * (2 * sizeof(Piece) + 16);
  return at_rest + build;
}

PlanOptions PlanOf(const ReadSegment& segment, uint64_t seed, int rank) {
  return {segment.shuffle,    seed,      rank, segment.world_size, segment.batch_size,
          segment.remainder, segment.shuffle_bytes};
}

ReadSegment SegmentOf(const ReaderOptions& o, uint64_t batches) {
  SP_DCHECK(o.world_size >= 1 && o.rank >= 0);  // resolved
  return {o.world_size, o.batch_size, o.remainder, o.shuffle, o.shuffle_bytes, batches};
}

uint64_t BatchesPerEpoch(uint64_t records, const PlanOptions& o) {
  uint64_t q = SamplesPerRank(records, o), b = static_cast<uint64_t>(o.batch_size);
  return o.remainder == Remainder::kDrop ? q / b : (q + b - 1) / b;
}

EpochRest AllOwed(const std::vector<ReadUnit>& units) {
  uint64_t n = 0;
  for (const ReadUnit& u : units) n += u.records;
  EpochRest rest;
  rest.owed.assign((n + 63) / 64, ~uint64_t{0});
  if (n % 64 != 0) rest.owed.back() = (uint64_t{1} << (n % 64)) - 1;
  rest.count = n;
  return rest;
}

absl::StatusOr<EpochRest> RestOfEpoch(const std::vector<ReadUnit>& units,
                                      const std::vector<ReadSegment>& segments, uint64_t seed,
                                      uint64_t epoch, const EpochRest* base) {
  uint64_t n = 0;
  for (const ReadUnit& u : units) n += u.records;
  // Before the first segment every record (of `base`) is owed.
  EpochRest rest = base != nullptr ? *base : AllOwed(units);
  rest.segment = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    const PlanOptions o = PlanOf(segments[i], seed, 0);
    // Segment 0 is an ordinary epoch plan (of base's records, when given).
    const bool whole = i == 0 && base == nullptr;
    if (absl::Status s = CheckSegment(segments[i], o, i, rest.count); !s.ok()) return s;
    const uint64_t share = SamplesPerRank(rest.count, o);
    const uint64_t delivered =
        std::min(share, segments[i].batches * static_cast<uint64_t>(o.batch_size));
    std::vector<uint64_t> done((n + 63) / 64, 0);
    if (delivered > 0) {
      const std::vector<uint32_t> perm = UnitOrder(units.size(), o, epoch);
      const std::vector<uint64_t> cum =
          whole ? RecordPrefix(units, perm) : OwedPrefix(units, perm, rest);
      const OrderKey key = KeyOf(o, epoch, &rest);
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

void OrderPieces(std::vector<Piece> pieces, EpochPlan* plan) {
  const uint64_t used = plan->order.size();
  // First and last use of each piece; unused pieces are not loaded at all.
  for (uint64_t p = 0; p < used; ++p) {
    Piece& piece = pieces[plan->order[p].piece];
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
    plan->pieces.push_back(pieces[by_first[i]]);
  }
  for (SampleRef& s : plan->order) s.piece = new_index[s.piece];
}

EpochPlan MakeEpochPlan(const std::vector<ReadUnit>& units, const PlanOptions& o,
                        uint64_t epoch, const EpochRest* rest, bool load_order) {
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
  std::vector<Piece>& pieces = mine.pieces;

  // Positions used: all full batches, plus the short one (kPartial) or a
  // padded one (kPad, wrapping to the start of the share's order). Wrapped
  // positions use copies of their pieces, loaded again when needed. The
  // order is built straight into its final size: no copy, no spare room.
  const uint64_t used = o.remainder == Remainder::kPartial
                            ? share
                            : plan.batches * static_cast<uint64_t>(o.batch_size);
  plan.order.reserve(used);
  OrderBuilder builder(units, mine, o, KeyOf(o, epoch, rest));
  const uint64_t scratch = builder.Build([&](SampleRef s) {
    if (plan.order.size() == used) return false;  // kDrop with no full batch
    plan.order.push_back(s);
    return plan.order.size() < used;
  });
  plan.windowed = builder.windowed();
  if (used > share) PadOrder(plan.order, pieces, used, share);

  const size_t piece_capacity = pieces.capacity();
  if (load_order) {
    OrderPieces(std::move(pieces), &plan);
  } else {
    plan.pieces = std::move(pieces);
  }
  // Held at once at most: the order, the builder's scratch (the ramp's
  // floors among it), both piece lists and their index tables.
  plan.build_bytes = plan.order.capacity() * sizeof(SampleRef) + scratch +
                     piece_capacity * (2 * sizeof(Piece) + 8);
  return plan;
}

absl::StatusOr<std::shared_ptr<const EpochRests>> DatasetPlanner::RestOf(
    uint64_t epoch, const std::vector<ReadSegment>& earlier) const {
  auto out = std::make_shared<EpochRests>();
  SP_ASSIGN_OR_RETURN(EpochRest rest, RestOfEpoch(units_, earlier, options_.seed, epoch));
  out->batches = BatchesPerEpoch(rest.count, options_);
  out->rests.push_back(std::move(rest));
  return out;
}

}  // namespace shardpack::reader
