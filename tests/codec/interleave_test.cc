// Planar to interleaved RGB: the SIMD path gives the scalar loop's bytes at
// every length (whole 16-pixel steps and the tail) and alignment.
#include "codec/interleave.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace shardpack::codec {
namespace {

TEST(InterleaveTest, EveryLengthAndAlignmentGivesTheScalarBytes) {
  std::vector<uint8_t> planes(3 * 1100);
  for (size_t i = 0; i < planes.size(); ++i) planes[i] = static_cast<uint8_t>(i * 131 + 7);
  for (size_t n : {0, 1, 15, 16, 17, 31, 32, 33, 47, 48, 100, 1024}) {
    for (size_t shift : {0, 1, 5}) {
      const uint8_t* r = planes.data() + shift;
      const uint8_t* g = r + 1100;
      const uint8_t* b = g + 1050;  // planes need not be evenly spaced
      std::vector<uint8_t> want(3 * n + 1, 0xEE), got(3 * n + 1 + shift, 0xEE);
      InterleaveRgbScalar(r, g, b, n, want.data());
      InterleaveRgb(r, g, b, n, got.data() + shift);
      EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin() + shift))
          << n << " pixels, shift " << shift;
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(want[3 * i], r[i]);
        ASSERT_EQ(want[3 * i + 1], g[i]);
        ASSERT_EQ(want[3 * i + 2], b[i]);
      }
      EXPECT_EQ(got[shift + 3 * n], 0xEE) << "wrote past the end";
    }
  }
}

}  // namespace
}  // namespace shardpack::codec
