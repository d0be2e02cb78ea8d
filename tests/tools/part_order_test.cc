// The pack order (tools/pack/part_order.h): a windowed external shuffle
// that is a permutation, a pure function of the seed, cut into parts that
// concatenate to the whole, and reads each window from few whole chunks.
#include "tools/pack/part_order.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace shardpack::pack {
namespace {

constexpr OrderShape kSmall{.chunk_items = 7, .window_chunks = 3};

bool IsPermutation(std::vector<size_t> order, size_t n) {
  std::sort(order.begin(), order.end());
  std::vector<size_t> all(n);
  std::iota(all.begin(), all.end(), size_t{0});
  return order == all;
}

TEST(PartOrderTest, IsAPermutationForEverySizeAndShape) {
  for (size_t n : {0, 1, 6, 7, 8, 20, 21, 22, 100, 1000}) {
    for (OrderShape shape : {kSmall, OrderShape{1, 1}, OrderShape{1000, 1}, OrderShape{0, 0}}) {
      for (bool shuffle : {false, true}) {
        EXPECT_TRUE(IsPermutation(PartOrder(n, shuffle, 9, 0, 1, shape), n))
            << "n " << n << " chunk " << shape.chunk_items << " window " << shape.window_chunks;
      }
    }
  }
}

TEST(PartOrderTest, NoShuffleIsTheInputOrder) {
  std::vector<size_t> all(100);
  std::iota(all.begin(), all.end(), size_t{0});
  EXPECT_EQ(PartOrder(100, false, 5, 0, 1, kSmall), all);
}

TEST(PartOrderTest, DependsOnTheSeedAlone) {
  EXPECT_EQ(PartOrder(1000, true, 3, 0, 1, kSmall), PartOrder(1000, true, 3, 0, 1, kSmall));
  EXPECT_NE(PartOrder(1000, true, 3, 0, 1, kSmall), PartOrder(1000, true, 4, 0, 1, kSmall));
  EXPECT_NE(PartOrder(1000, true, 3, 0, 1, kSmall), PartOrder(1000, true, 3, 0, 1, {}));
}

TEST(PartOrderTest, PartsConcatenateToTheWholeOrder) {
  for (size_t n : {0, 5, 100, 1001}) {
    for (uint32_t count : {1u, 2u, 3u, 7u, 64u}) {
      for (bool shuffle : {false, true}) {
        std::vector<size_t> joined;
        for (uint32_t i = 0; i < count; ++i) {
          PartPlan part = PlanPart(n, shuffle, 11, i, count, kSmall);
          EXPECT_EQ(part.order.size(), PartBegin(n, i + 1, count) - PartBegin(n, i, count));
          joined.insert(joined.end(), part.order.begin(), part.order.end());
        }
        EXPECT_EQ(joined, PartOrder(n, shuffle, 11, 0, 1, kSmall)) << n << " in " << count;
      }
    }
  }
}

// Each window's items come from its chunks alone, so a pack holds one
// window of input: the reads are whole chunks, never items all over.
TEST(PartOrderTest, WindowsHoldTheirChunksItemsAndEndWhereTheyClaim) {
  for (uint32_t count : {1u, 3u}) {
    for (uint32_t i = 0; i < count; ++i) {
      PartPlan part = PlanPart(200, true, 2, i, count, kSmall);
      size_t begin = 0;
      for (const PartPlan::Window& w : part.windows) {
        ASSERT_GT(w.end, begin);
        ASSERT_LE(w.end, part.order.size());
        EXPECT_LE(w.chunks.size(), kSmall.window_chunks);
        std::set<size_t> allowed;
        for (const auto& [first, last] : w.chunks) {
          EXPECT_EQ(first % kSmall.chunk_items, 0u);
          EXPECT_LE(last - first, kSmall.chunk_items);
          for (size_t k = first; k < last; ++k) allowed.insert(k);
        }
        for (size_t p = begin; p < w.end; ++p) EXPECT_TRUE(allowed.count(part.order[p])) << p;
        begin = w.end;
      }
      EXPECT_EQ(begin, part.order.size());
    }
  }
}

// Class-sorted input (10 classes of n/10 consecutive items) with windows
// much smaller than the input, as at scale: each batch of 256 still gets
// nearly the ideal label entropy, and pack position is uncorrelated with
// input position (docs/benchmarks.md measures the reader the same way).
TEST(PartOrderTest, ShufflesClassSortedInputWell) {
  const size_t n = 400000;
  // The default window of 128 chunks, in chunks of 256 items: 12 windows.
  const OrderShape shape{.chunk_items = 256, .window_chunks = OrderShape().window_chunks};
  const std::vector<size_t> order = PartOrder(n, true, 1, 0, 1, shape);
  double entropy = 0;
  const size_t batch = 256, batches = n / batch;
  for (size_t b = 0; b < batches; ++b) {
    int counts[10] = {};
    for (size_t k = 0; k < batch; ++k) ++counts[order[b * batch + k] * 10 / n];
    for (int c : counts) {
      if (c > 0) entropy -= c / double(batch) * std::log2(c / double(batch));
    }
  }
  EXPECT_GT(entropy / batches / std::log2(10.0), 0.95);
  double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
  for (size_t p = 0; p < n; ++p) {
    const double x = p, y = order[p];
    sx += x, sy += y, sxx += x * x, syy += y * y, sxy += x * y;
  }
  const double corr = (n * sxy - sx * sy) / std::sqrt((n * sxx - sx * sx) * (n * syy - sy * sy));
  EXPECT_LT(std::abs(corr), 0.05);
}

}  // namespace
}  // namespace shardpack::pack
