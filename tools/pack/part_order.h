// The order in which a pack reads and writes its input's items, and how
// it is cut into parts: a pure function of the item count, the seed and the
// shape, computed alike on every machine that packs a part.
#ifndef SHARDPACK_TOOLS_PACK_PART_ORDER_H_
#define SHARDPACK_TOOLS_PACK_PART_ORDER_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace shardpack::pack {

// The shape of the pack-time shuffle, an external shuffle that reads the
// input in large sequential pieces: the items are cut into chunks of
// `chunk_items` consecutive items, the chunks are permuted, and each run of
// `window_chunks` consecutive chunks of that permutation (a window) has its
// items permuted together. A pack then holds one window of input in memory
// and reads each chunk whole, at disk speed, instead of one item at a time
// from all over the input. An input of at most chunk_items * window_chunks
// items is one window: a uniform permutation. Without shuffle the windows
// are consecutive runs of chunks in input order. Tests make them small.
struct OrderShape {
  size_t chunk_items = 512;    // CIFAR: 1.5 MiB of input per chunk
  size_t window_chunks = 128;  // CIFAR: 192 MiB of input per window
};

// The first item of part `index` (0-based; index == count gives n) of a
// source of n items cut into `count` parts: n * index / count, exactly.
uint64_t PartBegin(uint64_t n, uint64_t index, uint32_t count);

// A part's pack order, and the input it reads window by window.
struct PartPlan {
  std::vector<size_t> order;  // the items, in pack order
  struct Window {
    size_t end = 0;  // the window's items end at order[end - 1]
    // The item ranges [first, second) of its chunks, in the order read.
    std::vector<std::pair<size_t, size_t>> chunks;
  };
  std::vector<Window> windows;  // the windows the part's items come from
};

// Part `index` of `count` of a source of `n` items: the windowed seeded
// permutation of 0..n-1 described at OrderShape (identity without shuffle),
// cut into `count` contiguous ranges, with the windows each range reads. The
// order is a pure function of (n, shuffle, seed, shape). Concatenating the
// parts in order gives the order of a single-part pack, which is what makes
// `merge` of the parts equal to one pack of the whole input. An empty
// chunk_items or window_chunks counts as 1.
PartPlan PlanPart(size_t n, bool shuffle, uint64_t seed, uint32_t index, uint32_t count,
                  const OrderShape& shape = {});

// PlanPart(...).order.
std::vector<size_t> PartOrder(size_t n, bool shuffle, uint64_t seed, uint32_t index,
                              uint32_t count, const OrderShape& shape = {});

}  // namespace shardpack::pack

#endif  // SHARDPACK_TOOLS_PACK_PART_ORDER_H_
