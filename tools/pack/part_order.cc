#include "tools/pack/part_order.h"

#include <algorithm>
#include <numeric>
#include <span>

#include "common/rng.h"

namespace shardpack::pack {

uint64_t PartBegin(uint64_t n, uint64_t index, uint32_t count) {
  // n * index / count without n * index, which may pass 2^64 for a huge
  // input cut into many parts: (n % count) * index < count^2 fits.
  return n / count * index + n % count * index / count;
}

namespace {

// The whole input's windows: each its chunks' item ranges, in read order.
// A window's items are its chunks' items, permuted (with shuffle) by the
// window's own counter, so each window depends on the seed alone.
std::vector<PartPlan::Window> PlanWindows(size_t n, bool shuffle, uint64_t seed,
                                          size_t chunk_items, size_t window_chunks) {
  const size_t chunks = n / chunk_items + (n % chunk_items != 0);
  std::vector<size_t> chunk_order(chunks);
  std::iota(chunk_order.begin(), chunk_order.end(), size_t{0});
  // Counter 0 permutes the chunks; window w's items use counter w + 1.
  if (shuffle) common::Shuffle(std::span<size_t>(chunk_order), seed, common::kStreamPack, 0);
  std::vector<PartPlan::Window> windows;
  size_t end = 0;
  for (size_t first = 0; first < chunks; first += window_chunks) {
    PartPlan::Window w;
    for (size_t c = first; c < std::min(chunks, first + window_chunks); ++c) {
      const size_t begin = chunk_order[c] * chunk_items;
      w.chunks.emplace_back(begin, std::min(n, begin + chunk_items));
      end += w.chunks.back().second - begin;
    }
    w.end = end;
    windows.push_back(std::move(w));
  }
  return windows;
}

}  // namespace

PartPlan PlanPart(size_t n, bool shuffle, uint64_t seed, uint32_t index, uint32_t count,
                  const OrderShape& shape) {
  const size_t chunk_items = std::max<size_t>(shape.chunk_items, 1);
  const size_t window_chunks = std::max<size_t>(shape.window_chunks, 1);
  const size_t begin = PartBegin(n, index, count), end = PartBegin(n, index + 1, count);
  std::vector<PartPlan::Window> windows =
      PlanWindows(n, shuffle, seed, chunk_items, window_chunks);
  PartPlan plan;
  plan.order.reserve(end - begin);
  std::vector<size_t> items;
  size_t at = 0;  // position in the whole order of window w's first item
  for (size_t w = 0; w < windows.size(); ++w) {
    const size_t first_pos = at, last_pos = windows[w].end;
    at = last_pos;
    if (last_pos <= begin || first_pos >= end) continue;  // not this part's
    // A window the part needs only some of is still permuted whole: its
    // permutation depends on all of its items.
    items.clear();
    for (const auto& [first, last] : windows[w].chunks) {
      for (size_t i = first; i < last; ++i) items.push_back(i);
    }
    if (shuffle) common::Shuffle(std::span<size_t>(items), seed, common::kStreamPack, w + 1);
    const size_t from = std::max(begin, first_pos) - first_pos;
    const size_t to = std::min(end, last_pos) - first_pos;
    plan.order.insert(plan.order.end(), items.begin() + from, items.begin() + to);
    windows[w].end = plan.order.size();
    plan.windows.push_back(std::move(windows[w]));
  }
  return plan;
}

std::vector<size_t> PartOrder(size_t n, bool shuffle, uint64_t seed, uint32_t index,
                              uint32_t count, const OrderShape& shape) {
  return PlanPart(n, shuffle, seed, index, count, shape).order;
}

}  // namespace shardpack::pack
