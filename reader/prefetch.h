// Bringing a later sample's record into the cache while this one is made.
//
// A shuffled record lies anywhere in memory; its 48 cache lines (a CIFAR
// record) come from DRAM. Prefetched in one burst, the lines wait for the
// core's few line-fill buffers and the burst stalls the core: the reader's
// time was the sum of the fetch and the crop. Spread over the crop's rows, a
// few lines a row, the fetch of the next record runs under the crop of this
// one (docs/benchmarks.md, Reader).
#ifndef SHARDPACK_READER_PREFETCH_H_
#define SHARDPACK_READER_PREFETCH_H_

#include <cstddef>
#include <cstdint>

#include "shardpack/record.h"

namespace shardpack::reader {

inline constexpr uintptr_t kCacheLine = 64;

// The lines of `bytes` spread evenly over `steps` calls of Step(): after
// step k (from 1), ceil(k * lines / steps) of them are issued, so the
// line-fill buffers see a steady trickle (1 or 2 a row for a CIFAR record
// over 32 rows; 2 a row for 24 rows and none for 8 was 4% slower). None
// with no steps; Rest() issues what is left.
class SpreadPrefetch {
 public:
  SpreadPrefetch(ByteSpan bytes, int steps) {
    if (bytes.empty()) return;
    next_ = reinterpret_cast<uintptr_t>(bytes.data()) & ~(kCacheLine - 1);
    end_ = reinterpret_cast<uintptr_t>(bytes.data()) + bytes.size();
    if (steps <= 0) return;
    lines_ = (end_ - next_ + kCacheLine - 1) / kCacheLine;
    steps_ = static_cast<uintptr_t>(steps);
    owed_ = steps_ - 1;  // rounds each step's total up
  }

  void Step() {
    owed_ += lines_;
    for (; owed_ >= steps_ && next_ < end_; owed_ -= steps_, next_ += kCacheLine) {
      __builtin_prefetch(reinterpret_cast<const void*>(next_));
    }
  }

  void Rest() {
    for (; next_ < end_; next_ += kCacheLine) __builtin_prefetch(reinterpret_cast<const void*>(next_));
  }

  // Lines not yet issued.
  size_t lines_left() const {
    return next_ < end_ ? static_cast<size_t>((end_ - next_ + kCacheLine - 1) / kCacheLine) : 0;
  }

 private:
  uintptr_t next_ = 0, end_ = 0;
  uintptr_t lines_ = 0, steps_ = 1, owed_ = 0;  // owed_ / steps_: lines due
};

// Every line of `bytes`, now.
inline void PrefetchLines(ByteSpan bytes) { SpreadPrefetch(bytes, 0).Rest(); }

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_PREFETCH_H_
