// The share of an epoch's records that a rank reads, before its order is
// built (reader/epoch_plan.cc): the epoch's unit order, and a share's
// pieces, contiguous runs of units or, after an elastic resume, the owed
// records among them. Pure integer work; the plan's helpers.
#ifndef SHARDPACK_READER_EPOCH_SHARE_H_
#define SHARDPACK_READER_EPOCH_SHARE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "reader/epoch_plan.h"

namespace shardpack::reader {

// Records a rank reads of `records`: rounded down, or up with kPad.
uint64_t SamplesPerRank(uint64_t records, const PlanOptions& o);

// The epoch's order of units: a seeded Fisher-Yates permutation.
std::vector<uint32_t> UnitOrder(size_t n, const PlanOptions& o, uint64_t epoch);

// A rank's share: its pieces in sequence order. A piece's records are all
// of [begin, end) or, with `rest`, the owed ones among them.
struct Share {
  std::vector<Piece> pieces;
  const EpochRest* rest = nullptr;
  uint64_t records = 0;
};

// Calls fn(index) for each record of the share's piece `i`.
template <typename Fn>
void ForEachInPiece(const std::vector<ReadUnit>& units, const Share& s, uint32_t i, Fn&& fn) {
  const Piece& p = s.pieces[i];
  const uint64_t first = units[p.unit].first_record;
  for (uint32_t r = p.begin; r < p.end; ++r) {
    if (s.rest == nullptr || s.rest->Owes(first + r)) fn(r);
  }
}


// Records before each position of `perm`: cum[k] counts those of units
// perm[0..k).
std::vector<uint64_t> RecordPrefix(const std::vector<ReadUnit>& units,
                                   const std::vector<uint32_t>& perm);

// The share of `share` records from position `start` of the epoch's whole
// sequence (`cum` from RecordPrefix): pieces are contiguous runs of units.
Share ContiguousShare(const std::vector<ReadUnit>& units, const std::vector<uint32_t>& perm,
                      const std::vector<uint64_t>& cum, uint64_t records, uint64_t share,
                      uint64_t start);

// Owed records before each position of `perm`: cum[k] counts those of
// units perm[0..k).
std::vector<uint64_t> OwedPrefix(const std::vector<ReadUnit>& units,
                                 const std::vector<uint32_t>& perm, const EpochRest& rest);

// The share of `share` owed records from position `start` of the sequence
// of owed records (in the epoch's unit order).
Share RestShare(const std::vector<ReadUnit>& units, const std::vector<uint32_t>& perm,
                const std::vector<uint64_t>& cum, const EpochRest& rest, uint64_t share,
                uint64_t start);

// The ramp of a share ordered by a full permutation (docs/reader.md,
// "Shuffle"): so that the first batch waits for a few blocks, not for all,
// piece i's records draw their sort keys uniformly from [floor[i], 2^64)
// instead of [0, 2^64). The pieces holding the first kRampBatches batches'
// records have floor 0; after them a piece is admitted where the records
// admitted reach twice as many every batch, the floors chosen so that the
// admission falls at that position of the order. Past the last floor every
// position draws from every record left alike. Empty (no ramp) when the
// first pieces hold the whole share.
inline constexpr uint64_t kRampBatches = 2;
std::vector<uint64_t> RampFloors(const std::vector<ReadUnit>& units, const Share& share,
                                 int batch_size);

// The most bytes of units a rank's share of `units` read by `world_size`
// ranks holds: its part of their bytes, and a unit at each end it may cut.
uint64_t ShareBytesBound(const std::vector<ReadUnit>& units, int world_size);

// kAutoShuffleBytes (shardpack/reader.h): ShareBytesBound when that is at
// most kWholeShareBytes, else kStreamWindowBytes. The window an
// engine is chosen for (BlockIo::Open) before the units are known:
// kWholeShareBytes, the most a reader holds whole.
inline constexpr uint64_t kWholeShareBytes = uint64_t{256} << 20;
inline constexpr uint64_t kStreamWindowBytes = uint64_t{32} << 20;
uint64_t ChosenShuffleBytes(const std::vector<ReadUnit>& units, int world_size);

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_EPOCH_SHARE_H_
