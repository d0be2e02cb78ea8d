#include "codec/interleave.h"

#include <array>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SHARDPACK_INTERLEAVE_X86 1
#endif

namespace shardpack::codec {

void InterleaveRgbScalar(const uint8_t* r, const uint8_t* g, const uint8_t* b, size_t n,
                         uint8_t* out) {
  for (size_t i = 0; i < n; ++i) {
    out[3 * i + 0] = r[i];
    out[3 * i + 1] = g[i];
    out[3 * i + 2] = b[i];
  }
}

#ifdef SHARDPACK_INTERLEAVE_X86
namespace {

// pshufb masks: output byte j of 16-byte chunk k is byte (16k + j) / 3 of
// plane (16k + j) % 3; 0x80 (zero) where another plane supplies it.
using Mask = std::array<int8_t, 16>;
constexpr Mask MaskFor(int chunk, int plane) {
  Mask m{};
  for (int j = 0; j < 16; ++j) {
    const int n = 16 * chunk + j;
    m[j] = n % 3 == plane ? static_cast<int8_t>(n / 3) : static_cast<int8_t>(0x80);
  }
  return m;
}
constexpr std::array<std::array<Mask, 3>, 3> kMasks = {{
    {MaskFor(0, 0), MaskFor(0, 1), MaskFor(0, 2)},
    {MaskFor(1, 0), MaskFor(1, 1), MaskFor(1, 2)},
    {MaskFor(2, 0), MaskFor(2, 1), MaskFor(2, 2)},
}};

__attribute__((target("ssse3"))) void InterleaveRgbSsse3(const uint8_t* r, const uint8_t* g,
                                                         const uint8_t* b, size_t n,
                                                         uint8_t* out) {
  __m128i m[3][3];
  for (int k = 0; k < 3; ++k) {
    for (int p = 0; p < 3; ++p) {
      m[k][p] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMasks[k][p].data()));
    }
  }
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i vr = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + i));
    const __m128i vg = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g + i));
    const __m128i vb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i));
    for (int k = 0; k < 3; ++k) {
      const __m128i v = _mm_or_si128(
          _mm_or_si128(_mm_shuffle_epi8(vr, m[k][0]), _mm_shuffle_epi8(vg, m[k][1])),
          _mm_shuffle_epi8(vb, m[k][2]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 3 * i + 16 * k), v);
    }
  }
  InterleaveRgbScalar(r + i, g + i, b + i, n - i, out + 3 * i);
}

const bool kHaveSsse3 = __builtin_cpu_supports("ssse3");

}  // namespace
#endif

void InterleaveRgb(const uint8_t* r, const uint8_t* g, const uint8_t* b, size_t n, uint8_t* out) {
#ifdef SHARDPACK_INTERLEAVE_X86
  if (kHaveSsse3) return InterleaveRgbSsse3(r, g, b, n, out);
#endif
  InterleaveRgbScalar(r, g, b, n, out);
}

void InterleavePlanes(const uint8_t* planes, size_t plane, size_t channels, uint8_t* out) {
  if (channels == 3) return InterleaveRgb(planes, planes + plane, planes + 2 * plane, plane, out);
  for (size_t c = 0; c < channels; ++c) {
    for (size_t i = 0; i < plane; ++i) out[i * channels + c] = planes[c * plane + i];
  }
}

}  // namespace shardpack::codec
