#include "shardpack/crc32c.h"

#include <cstring>
#include <string>
#include <vector>

#include "format/crc32c_portable.h"
#include "gtest/gtest.h"
#include "tests/testing/shard_fixtures.h"

namespace shardpack {
namespace {

uint32_t CrcOf(std::string_view s) {
  return Crc32c({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}

// Bit-at-a-time reference, the definition itself.
uint32_t Reference(const uint8_t* p, size_t n) {
  uint32_t c = ~0u;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78 : c >> 1;
  }
  return ~c;
}

TEST(Crc32cTest, KnownVectors) {
  // RFC 3720 (iSCSI) B.4 and the common check value.
  EXPECT_EQ(CrcOf("123456789"), 0xe3069283u);
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xff), inc(32);
  for (int i = 0; i < 32; ++i) inc[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(Crc32c(zeros), 0x8a9136aau);
  EXPECT_EQ(Crc32c(ones), 0x62a8ab43u);
  EXPECT_EQ(Crc32c(inc), 0x46dd794eu);
  EXPECT_EQ(CrcOf(""), 0u);
}

TEST(Crc32cTest, HardwareMatchesReferenceAtEveryLengthAndAlignment) {
  // Long enough to exercise the 3 x 8192 and 3 x 256 interleaved paths.
  std::vector<uint8_t> data = testing::PatternBytes(42, 3 * 8192 * 2 + 3 * 256 + 77);
  for (size_t offset = 0; offset < 9; ++offset) {
    for (size_t n : {0ul, 1ul, 7ul, 8ul, 255ul, 256ul, 767ul, 768ul, 769ul, 24575ul,
                     24576ul, 24577ul, 40000ul, data.size() - offset}) {
      if (offset + n > data.size()) continue;
      uint32_t want = Reference(data.data() + offset, n);
      EXPECT_EQ(Crc32cExtend(0, data.data() + offset, n), want) << offset << " " << n;
      EXPECT_EQ(format::Crc32cExtendPortable(0, data.data() + offset, n), want);
    }
  }
}

TEST(Crc32cTest, ExtendAndCombineAgreeWithOnePass) {
  std::vector<uint8_t> data = testing::PatternBytes(7, 100000);
  uint32_t whole = Crc32c(data);
  for (size_t split : {0ul, 1ul, 4096ul, 33333ul, 99999ul, 100000ul}) {
    std::span<const uint8_t> a(data.data(), split), b(data.data() + split, data.size() - split);
    EXPECT_EQ(Crc32cExtend(Crc32c(a), b.data(), b.size()), whole) << split;
    EXPECT_EQ(Crc32cCombine(Crc32c(a), Crc32c(b), b.size()), whole) << split;
  }
  std::vector<uint8_t> zeros(5000, 0);
  EXPECT_EQ(Crc32cExtendZeros(Crc32c(data), zeros.size()),
            Crc32cExtend(Crc32c(data), zeros.data(), zeros.size()));
}

}  // namespace
}  // namespace shardpack
