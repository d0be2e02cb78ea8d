// CRC-32C. The hardware path follows the well-known three-stream scheme
// (as in Mark Adler's crc32c.c): the crc32 instruction has a latency of three
// cycles and a throughput of one, so three independent streams over
// neighbouring chunks keep it busy, and the partial CRCs are combined by
// multiplying by x^(8*chunk) with precomputed tables.
#include "shardpack/crc32c.h"

#include "format/crc32c_portable.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace shardpack {
namespace {

constexpr uint32_t kPoly = 0x82f63b78;  // CRC-32C, reflected

// Slice-by-8 tables for the portable path.
struct PortableTables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  constexpr PortableTables() {
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; ++n) {
      for (int k = 1; k < 8; ++k) t[k][n] = (t[k - 1][n] >> 8) ^ t[0][t[k - 1][n] & 0xff];
    }
  }
};
constexpr PortableTables kPortable;

// GF(2) 32x32 matrices as 32 column vectors.
using Matrix = std::array<uint32_t, 32>;

constexpr uint32_t MatrixTimes(const Matrix& m, uint32_t v) {
  uint32_t sum = 0;
  for (int i = 0; v != 0; ++i, v >>= 1) {
    if (v & 1) sum ^= m[i];
  }
  return sum;
}

constexpr Matrix MatrixSquare(const Matrix& m) {
  Matrix r{};
  for (int i = 0; i < 32; ++i) r[i] = MatrixTimes(m, m[i]);
  return r;
}

// The operator that appends `bytes` zero bytes (a power of two) to a CRC.
constexpr Matrix ZerosOperator(size_t bytes) {
  Matrix op{};  // one zero bit
  op[0] = kPoly;
  for (int i = 1; i < 32; ++i) op[i] = uint32_t{1} << (i - 1);
  for (size_t bits = 1; bits < 8 * bytes; bits <<= 1) op = MatrixSquare(op);
  return op;
}

// Byte-wise tables for applying a zeros operator to a 32-bit CRC.
struct ShiftTable {
  std::array<std::array<uint32_t, 256>, 4> t{};
  constexpr explicit ShiftTable(size_t bytes) {
    Matrix op = ZerosOperator(bytes);
    for (uint32_t n = 0; n < 256; ++n) {
      for (int k = 0; k < 4; ++k) t[k][n] = MatrixTimes(op, n << (8 * k));
    }
  }
  uint32_t Shift(uint32_t crc) const {
    return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^
           t[2][(crc >> 16) & 0xff] ^ t[3][crc >> 24];
  }
};

[[maybe_unused]] constexpr size_t kLong = 8192;
[[maybe_unused]] constexpr size_t kShort = 256;

#if defined(__x86_64__)
const ShiftTable kLongShift(kLong);
const ShiftTable kShortShift(kShort);

inline uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Three streams over chunks of `chunk` bytes; consumes multiples of 3*chunk.
__attribute__((target("sse4.2"))) inline uint64_t ThreeWay(
    uint64_t crc0, const uint8_t*& p, size_t& n, size_t chunk,
    const ShiftTable& shift) {
  while (n >= 3 * chunk) {
    uint64_t crc1 = 0, crc2 = 0;
    const uint8_t* end = p + chunk;
    do {
      crc0 = _mm_crc32_u64(crc0, Load64(p));
      crc1 = _mm_crc32_u64(crc1, Load64(p + chunk));
      crc2 = _mm_crc32_u64(crc2, Load64(p + 2 * chunk));
      p += 8;
    } while (p < end);
    crc0 = shift.Shift(static_cast<uint32_t>(crc0)) ^ crc1;
    crc0 = shift.Shift(static_cast<uint32_t>(crc0)) ^ crc2;
    p += 2 * chunk;
    n -= 3 * chunk;
  }
  return crc0;
}

__attribute__((target("sse4.2"))) uint32_t ExtendHardware(
    uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = ~crc;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
    --n;
  }
  c = ThreeWay(c, p, n, kLong, kLongShift);
  c = ThreeWay(c, p, n, kShort, kShortShift);
  for (; n >= 8; n -= 8, p += 8) c = _mm_crc32_u64(c, Load64(p));
  for (; n > 0; --n) c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
  return ~static_cast<uint32_t>(c);
}

bool HasSse42() { return __builtin_cpu_supports("sse4.2"); }
#else
bool HasSse42() { return false; }
uint32_t ExtendHardware(uint32_t crc, const uint8_t* p, size_t n) {
  return format::Crc32cExtendPortable(crc, p, n);
}
#endif

const bool kHardware = HasSse42();

}  // namespace

namespace format {
uint32_t Crc32cExtendPortable(uint32_t crc, const uint8_t* p, size_t n) {
  const auto& t = kPortable.t;
  uint32_t c = ~crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint32_t lo = c ^ (uint32_t{p[0]} | uint32_t{p[1]} << 8 |
                       uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24);
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^
        t[4][lo >> 24] ^ t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
  }
  for (; n > 0; --n) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
  return ~c;
}
}  // namespace format

uint32_t Crc32cExtend(uint32_t crc, const uint8_t* data, size_t n) {
  if (kHardware) return ExtendHardware(crc, data, n);
  return format::Crc32cExtendPortable(crc, data, n);
}

namespace {
// operators[k] appends 2^k zero bytes.
struct ZeroOperators {
  std::array<Matrix, 64> op{};
  ZeroOperators() {
    op[0] = ZerosOperator(1);
    for (int k = 1; k < 64; ++k) op[k] = MatrixSquare(op[k - 1]);
  }
};
const ZeroOperators& Operators() {
  static const ZeroOperators* ops = new ZeroOperators();
  return *ops;
}
}  // namespace

uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  const ZeroOperators& ops = Operators();
  // Appending zero bytes to the *register* (the CRC without its final
  // inversion) is linear, so: combine = shift(crc_a) ^ crc_b, exactly as in
  // zlib, because the inversions of a and of b's start cancel.
  for (int k = 0; len_b != 0; ++k, len_b >>= 1) {
    if (len_b & 1) crc_a = MatrixTimes(ops.op[k], crc_a);
  }
  return crc_a ^ crc_b;
}

uint32_t Crc32cExtendZeros(uint32_t crc, uint64_t n) {
  static constexpr uint8_t kZeros[4096] = {};
  while (n > 0) {
    size_t step = n < sizeof(kZeros) ? n : sizeof(kZeros);
    crc = Crc32cExtend(crc, kZeros, step);
    n -= step;
  }
  return crc;
}

bool Crc32cIsHardwareAccelerated() { return kHardware; }

}  // namespace shardpack
