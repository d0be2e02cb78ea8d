// Counter-based random numbers: a value is a pure function of a key
// (seed, stream, counter...), so any draw can be made in any order, on any
// thread, and made again after a restore. No generator state is shared.
#ifndef SHARDPACK_COMMON_RNG_H_
#define SHARDPACK_COMMON_RNG_H_

#include <cstdint>
#include <span>
#include <utility>

namespace shardpack::common {

// splitmix64's finalizer: a bijective 64-bit mix with full avalanche.
inline uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// A 64-bit random value keyed by up to four words.
inline uint64_t Draw(uint64_t a, uint64_t b, uint64_t c = 0, uint64_t d = 0) {
  uint64_t h = Mix64(a + 0x9e3779b97f4a7c15ULL);
  h = Mix64(h ^ (b + 0x632be59bd9b4e019ULL));
  h = Mix64(h ^ (c + 0x8cb92ba72f3d8dd7ULL));
  return Mix64(h ^ (d + 0xd1b54a32d192ed03ULL));
}

// Uniform in [0, bound) from a 64-bit draw (multiply-shift; the bias is at
// most bound / 2^64, far below anything measurable).
inline uint64_t Below(uint64_t draw, uint64_t bound) {
  return static_cast<uint64_t>((static_cast<__uint128_t>(draw) * bound) >> 64);
}

// Streams: what a draw is for, so different uses never share values.
enum Stream : uint64_t {
  kStreamUnits = 1,     // permutation of read units per epoch
  kStreamSamples = 2,   // order of samples within a rank's epoch
  kStreamAugment = 3,   // per-record augmentation parameters
  kStreamReplace = 4,   // replacement of damaged samples
  kStreamPack = 5,      // the packer's permutation of its inputs
  kStreamElastic = 6,   // order of an epoch's rest after an elastic resume
  kStreamViewSplit = 7, // a view's seeded split (dataset/view.h)
  kStreamMixSource = 8, // a mixture source's own seed
  kStreamMixDraw = 9,   // a mixture source's epoch, when an epoch draws part of it
};

// Fisher-Yates shuffle of `items` where step i draws Draw(a, b, c, i): the
// permutation is a pure function of (a, b, c) and the length.
template <typename T>
void Shuffle(std::span<T> items, uint64_t a, uint64_t b, uint64_t c) {
  for (size_t i = items.size(); i > 1; --i) {
    std::swap(items[i - 1], items[Below(Draw(a, b, c, i), i)]);
  }
}

}  // namespace shardpack::common

#endif  // SHARDPACK_COMMON_RNG_H_
