// The resize's SIMD loops (SSE2 on any x86-64; SSSE3 and AVX2 compiled for
// their target alone and chosen at run time, so the build stays plain
// x86-64) and the choice between them and the portable loops of
// codec/resize_scalar.cc. Elsewhere than x86 only the choice is compiled:
// every pass is portable.
#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
// The SSSE3 and AVX2 loops are compiled for their instruction set alone
// (target attributes) and run only where the CPU has it.
#include <immintrin.h>
#define SHARDPACK_HAVE_SSSE3_PATH 1
#define SHARDPACK_HAVE_AVX2_PATH 1
#define SHARDPACK_AVX2 __attribute__((target("avx2")))
#define SHARDPACK_AVX2_INLINE __attribute__((target("avx2"), always_inline)) inline
// A lambda's body is a function of its own: it does not inherit the
// target of the function it is in.
#define SHARDPACK_AVX2_LAMBDA __attribute__((target("avx2"), always_inline))
#endif

#include "codec/resize_kernels.h"

namespace shardpack::codec {
namespace {

#if defined(__SSE2__)
// The RGB horizontal pass with SSE2: taps go in pairs, pixels k and k+1 as
// interleaved 16-bit lanes (R0 R1 G0 G1 B0 B1 . .) against (w0 w1) x 4, one
// pmaddwd per pair. PAIRS > 0 runs that many pairs for every pixel (the
// weights past a pixel's count are zero), 0 runs each pixel's own count.
// Reads up to 3 * (2 * pairs) + 1 bytes from the first tap: the caller keeps
// them inside the buffer. Output pixels are stored as 4-byte words in
// ascending address order (the fourth byte lands on the next pixel, written
// after), all but the row's last.
template <int PAIRS>
void HorizontalRowRgbSse2(const uint8_t* row, uint32_t width, bool mirror,
                          const ResizeScratch& s, uint8_t* out) {
  const __m128i zero = _mm_setzero_si128();
  for (uint32_t i = 0; i < width; ++i) {
    // Output column i reads filter x; mirrored, x runs backwards.
    const uint32_t x = mirror ? width - 1 - i : i;
    const uint8_t* in = row + size_t{s.x.bounds[2 * x]} * 3;
    const uint32_t pairs = PAIRS > 0 ? PAIRS : (s.x.bounds[2 * x + 1] + 1) / 2;
    const int16_t* w = s.x.weights.data() + size_t{x} * static_cast<size_t>(s.x.taps);
    __m128i sum = _mm_set1_epi32(kHalf);
    for (uint32_t p = 0; p < pairs; ++p) {
      int32_t a, b, pair;
      std::memcpy(&a, in + 6 * p, 4);
      std::memcpy(&b, in + 6 * p + 3, 4);
      std::memcpy(&pair, w + 2 * p, 4);
      const __m128i pix = _mm_unpacklo_epi8(
          _mm_unpacklo_epi8(_mm_cvtsi32_si128(a), _mm_cvtsi32_si128(b)), zero);
      sum = _mm_add_epi32(sum, _mm_madd_epi16(pix, _mm_set_epi32(0, pair, pair, pair)));
    }
    sum = _mm_srai_epi32(sum, kWeightBits);
    const __m128i packed = _mm_packus_epi16(_mm_packs_epi32(sum, sum), zero);
    const int32_t v = _mm_cvtsi128_si32(packed);
    uint8_t* px = out + size_t{i} * 3;
    if (i + 1 < width) {
      std::memcpy(px, &v, 4);
    } else {
      std::memcpy(px, &v, 3);  // little-endian: the low three bytes
    }
  }
}
#endif

#if defined(SHARDPACK_HAVE_SSSE3_PATH)
// The same with SSSE3 (every x86-64 CPU since 2006, checked at run time:
// the default build targets plain x86-64): one 8-byte load and one pshufb
// per pair of taps make the interleaved lanes (R0 R1 G0 G1 B0 B1 0 0)
// that SSE2 builds with five instructions. The same integers as the SSE2
// and portable paths. Reads up to 3 * (2 * PAIRS) + 2 bytes from the first
// tap.
template <int PAIRS>
__attribute__((target("ssse3"))) void HorizontalRowRgbSsse3(const uint8_t* row, uint32_t width,
                                                            bool mirror, const ResizeScratch& s,
                                                            uint8_t* out) {
  const __m128i shuffle = _mm_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
  const __m128i zero = _mm_setzero_si128();
  // Locals: the byte stores below may alias anything, so fields of `s`
  // would be reloaded on every pixel. Here taps_x is 2 * PAIRS.
  const uint32_t* bounds = s.x.bounds.data();
  const int16_t* weights = s.x.weights.data();
  for (uint32_t i = 0; i < width; ++i) {
    const uint32_t x = mirror ? width - 1 - i : i;
    const uint8_t* in = row + size_t{bounds[2 * x]} * 3;
    const int16_t* w = weights + size_t{x} * (2 * PAIRS);
    __m128i sum = _mm_set1_epi32(kHalf);
    for (int p = 0; p < PAIRS; ++p) {
      int64_t bytes;
      int32_t pair;
      std::memcpy(&bytes, in + 6 * p, 8);
      std::memcpy(&pair, w + 2 * p, 4);
      const __m128i pix = _mm_shuffle_epi8(_mm_cvtsi64_si128(bytes), shuffle);
      sum = _mm_add_epi32(sum, _mm_madd_epi16(pix, _mm_set1_epi32(pair)));
    }
    sum = _mm_srai_epi32(sum, kWeightBits);
    const int32_t v = _mm_cvtsi128_si32(_mm_packus_epi16(_mm_packs_epi32(sum, sum), zero));
    std::memcpy(out + size_t{i} * 3, &v, i + 1 < width ? 4 : 3);
  }
}
#endif

#if defined(SHARDPACK_HAVE_AVX2_PATH)
// The RGB horizontal pass with AVX2, source rows two to a register: the
// low 128-bit lane holds one row, the high one the next, so that both
// share each pixel's taps, and every step is the SSSE3 one on both lanes;
// N registers (2N rows) share the weights too. A 16-byte load (per row)
// holds two pairs of taps (12 bytes); an odd last pair is loaded so that
// it ends the load (byte 10 of it). The same integers as the other paths.
// Reads at most 3 * taps + 16 bytes from a pixel's first tap (see
// SimdReach).
SHARDPACK_AVX2_INLINE __m256i LoadTwoRows(const uint8_t* a, const uint8_t* b) {
  return _mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))),
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)), 1);
}

SHARDPACK_AVX2_INLINE __m256i BroadcastPair(const int16_t* w) {
  int32_t pair;
  std::memcpy(&pair, w, 4);
  return _mm256_set1_epi32(pair);
}

// Shuffles taking the pair of pixels at byte 0, 6 or 10 of a 16-byte load
// to (R0 R1 G0 G1 B0 B1 0 0), in both lanes.
#define SHARDPACK_PAIR_AT(b)                                                               \
  _mm256_setr_epi8(b, -1, b + 3, -1, b + 1, -1, b + 4, -1, b + 2, -1, b + 5, -1, -1, -1, -1, \
                   -1, b, -1, b + 3, -1, b + 1, -1, b + 4, -1, b + 2, -1, b + 5, -1, -1, -1, \
                   -1, -1)

// One output pixel of rows[0, 2N) (`first`: the byte of its first tap):
// sum[r] = R G B 0 as int32, rows 2r and 2r + 1 in the low and high lane.
// PAIRS > 0: that many pairs of taps, 0: `pairs`.
template <int PAIRS, int N>
SHARDPACK_AVX2_INLINE void PixelRowsAvx2(const uint8_t* const* rows, size_t first,
                                         const int16_t* w, int pairs, __m256i* sum) {
  if (PAIRS > 0) pairs = PAIRS;
  for (int r = 0; r < N; ++r) sum[r] = _mm256_set1_epi32(kHalf);
  int p = 0;
  for (; p + 2 <= pairs; p += 2) {
    const __m256i w0 = BroadcastPair(w + 2 * p), w1 = BroadcastPair(w + 2 * p + 2);
    const size_t at = first + 6 * static_cast<size_t>(p);
    for (int r = 0; r < N; ++r) {
      const __m256i bytes = LoadTwoRows(rows[2 * r] + at, rows[2 * r + 1] + at);
      sum[r] = _mm256_add_epi32(
          sum[r], _mm256_madd_epi16(_mm256_shuffle_epi8(bytes, SHARDPACK_PAIR_AT(0)), w0));
      sum[r] = _mm256_add_epi32(
          sum[r], _mm256_madd_epi16(_mm256_shuffle_epi8(bytes, SHARDPACK_PAIR_AT(6)), w1));
    }
  }
  if (p < pairs) {
    // The last pair at byte 6p - (6 * pairs - 16) = 10 of its load, or 0.
    const __m256i w0 = BroadcastPair(w + 2 * p);
    const size_t at = first + (pairs == 1 ? 0 : 6 * static_cast<size_t>(pairs) - 16);
    const __m256i shuffle = pairs == 1 ? SHARDPACK_PAIR_AT(0) : SHARDPACK_PAIR_AT(10);
    for (int r = 0; r < N; ++r) {
      const __m256i bytes = LoadTwoRows(rows[2 * r] + at, rows[2 * r + 1] + at);
      sum[r] = _mm256_add_epi32(sum[r], _mm256_madd_epi16(_mm256_shuffle_epi8(bytes, shuffle), w0));
    }
  }
  for (int r = 0; r < N; ++r) sum[r] = _mm256_srai_epi32(sum[r], kWeightBits);
}
#undef SHARDPACK_PAIR_AT

// Stores 12 bytes: as 16 when the 4 after them are written later.
SHARDPACK_AVX2_INLINE void StoreTwelve(uint8_t* out, __m128i v, bool spill) {
  if (spill) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), v);
  } else {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out), v);
    const int32_t last = _mm_extract_epi32(v, 2);
    std::memcpy(out + 8, &last, 4);
  }
}

// Rows rows[0, 2N) into outs[0, 2N) (outs[1] null with N = 1: row 0
// alone, rows[1] == rows[0]). Output pixels go four at a time: packed to
// bytes, squeezed to 12.
template <int PAIRS, int N>
SHARDPACK_AVX2 void HorizontalRowsRgbAvx2(const uint8_t* const* row_ptrs,
                                          uint8_t* const* out_ptrs, uint32_t width, bool mirror,
                                          const uint32_t* bounds, const int16_t* weights,
                                          int taps) {
  // Local copies: the byte stores below may alias the arrays, whose
  // entries would be reloaded on every pixel.
  const uint8_t* rows[2 * N];
  uint8_t* outs[2 * N];
  for (int r = 0; r < 2 * N; ++r) rows[r] = row_ptrs[r], outs[r] = out_ptrs[r];
  const int pairs = taps / 2;
  const __m256i squeeze = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1,
                                           -1, 0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1,
                                           -1, -1);
  // Output column i reads filter x = i, or width - 1 - i mirrored: the
  // filter's bounds and weights are walked forwards or backwards.
  const ptrdiff_t step = mirror ? -1 : 1;
  const uint32_t* b = bounds + (mirror ? 2 * size_t{width - 1} : 0);
  const int16_t* w = weights + (mirror ? size_t{width - 1} * static_cast<size_t>(taps) : 0);
  auto next = [&](__m256i* sum) SHARDPACK_AVX2_LAMBDA {
    PixelRowsAvx2<PAIRS, N>(rows, size_t{*b} * 3, w, pairs, sum);
    b += 2 * step;
    w += taps * step;
  };
  uint32_t i = 0;
  for (; i + 4 <= width; i += 4) {
    __m256i p0[N], p1[N], lo[N], hi[N];
    next(p0);
    next(p1);
    for (int r = 0; r < N; ++r) lo[r] = _mm256_packs_epi32(p0[r], p1[r]);
    next(p0);
    next(p1);
    for (int r = 0; r < N; ++r) hi[r] = _mm256_packs_epi32(p0[r], p1[r]);
    // 16-byte stores spill onto pixels i + 4 and i + 5, written next.
    const bool spill = i + 6 <= width;
    for (int r = 0; r < N; ++r) {
      const __m256i bytes = _mm256_shuffle_epi8(_mm256_packus_epi16(lo[r], hi[r]), squeeze);
      StoreTwelve(outs[2 * r] + size_t{i} * 3, _mm256_castsi256_si128(bytes), spill);
      if (outs[2 * r + 1] != nullptr) {
        StoreTwelve(outs[2 * r + 1] + size_t{i} * 3, _mm256_extracti128_si256(bytes, 1), spill);
      }
    }
  }
  for (; i < width; ++i) {
    __m256i px[N];
    next(px);
    for (int r = 0; r < N; ++r) {
      const __m256i v = _mm256_packus_epi16(_mm256_packs_epi32(px[r], px[r]), px[r]);
      // Little-endian: the low three bytes of each lane.
      const int32_t lo = _mm256_cvtsi256_si32(v);
      std::memcpy(outs[2 * r] + size_t{i} * 3, &lo, 3);
      if (outs[2 * r + 1] != nullptr) {
        const int32_t hi = _mm_cvtsi128_si32(_mm256_extracti128_si256(v, 1));
        std::memcpy(outs[2 * r + 1] + size_t{i} * 3, &hi, 3);
      }
    }
  }
}

template <int N>
SHARDPACK_AVX2 void HorizontalRowsRgbAvx2(const uint8_t* const* rows, uint8_t* const* outs,
                                          uint32_t width, bool mirror, const ResizeScratch& s) {
  const uint32_t* b = s.x.bounds.data();
  const int16_t* w = s.x.weights.data();
  switch (s.x.taps) {
    case 4: return HorizontalRowsRgbAvx2<2, N>(rows, outs, width, mirror, b, w, 4);
    case 6: return HorizontalRowsRgbAvx2<3, N>(rows, outs, width, mirror, b, w, 6);
    case 8: return HorizontalRowsRgbAvx2<4, N>(rows, outs, width, mirror, b, w, 8);
    default: return HorizontalRowsRgbAvx2<0, N>(rows, outs, width, mirror, b, w, s.x.taps);
  }
}

// YCbCr to RGB, 16 pixels at a time in 16-bit lanes (G's two terms as
// 32-bit pairs through one pmaddwd), then packed and shuffled to RGB. Lanes
// hold pixels 0-7 and 8-15. Returns the pixels done (a multiple of 16).
SHARDPACK_AVX2 size_t YccToRgbAvx2(const uint8_t* y, const uint8_t* cb, const uint8_t* cr,
                                   size_t n, uint8_t* rgb, bool stream) {
  // (Cb coefficient, Cr coefficient) as the low and high 16 bits.
  constexpr auto pair = [](int32_t lo, int32_t hi) {
    return static_cast<int32_t>((static_cast<uint32_t>(hi) << 16) |
                                (static_cast<uint32_t>(lo) & 0xFFFF));
  };
  const __m256i to_r = _mm256_set1_epi16(static_cast<int16_t>(kCrToR));
  const __m256i to_b = _mm256_set1_epi16(static_cast<int16_t>(kCbToB));
  const __m256i to_g = _mm256_set1_epi32(pair(kCbToG, kCrToG));
  const __m256i round = _mm256_set1_epi32(1 << 13), bias = _mm256_set1_epi16(128);
  // Bytes 0-15 of each lane's 8 pixels from (R0-7 G0-7) and (B0-7), then
  // bytes 16-23.
  const __m256i rg_a = _mm256_setr_epi8(0, 8, -1, 1, 9, -1, 2, 10, -1, 3, 11, -1, 4, 12, -1, 5,
                                        0, 8, -1, 1, 9, -1, 2, 10, -1, 3, 11, -1, 4, 12, -1, 5);
  const __m256i b_a = _mm256_setr_epi8(-1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1,
                                       -1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1);
  const __m256i rg_b = _mm256_setr_epi8(13, -1, 6, 14, -1, 7, 15, -1, -1, -1, -1, -1, -1, -1, -1,
                                        -1, 13, -1, 6, 14, -1, 7, 15, -1, -1, -1, -1, -1, -1, -1,
                                        -1, -1);
  const __m256i b_b = _mm256_setr_epi8(-1, 5, -1, -1, 6, -1, -1, 7, -1, -1, -1, -1, -1, -1, -1,
                                       -1, -1, 5, -1, -1, 6, -1, -1, 7, -1, -1, -1, -1, -1, -1,
                                       -1, -1);

  // Streaming stores need 16-byte alignment, which 48 bytes a step keep.
  stream = stream && reinterpret_cast<uintptr_t>(rgb) % 16 == 0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    auto load = [&](const uint8_t* p) SHARDPACK_AVX2_LAMBDA {
      return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i)));
    };
    const __m256i l = load(y), b = _mm256_sub_epi16(load(cb), bias),
                  r = _mm256_sub_epi16(load(cr), bias);
    // R and B have one term each: (k x + 2^13) >> 14 is pmulhrsw's
    // (2x k + 2^14) >> 15, exactly. G's two terms are summed before the
    // shift, as 32-bit pairs.
    const __m256i rr = _mm256_add_epi16(l, _mm256_mulhrs_epi16(_mm256_add_epi16(r, r), to_r));
    const __m256i bb = _mm256_add_epi16(l, _mm256_mulhrs_epi16(_mm256_add_epi16(b, b), to_b));
    const __m256i lo = _mm256_unpacklo_epi16(b, r), hi = _mm256_unpackhi_epi16(b, r);
    const __m256i g_lo =
        _mm256_srai_epi32(_mm256_add_epi32(_mm256_madd_epi16(lo, to_g), round), 14);
    const __m256i g_hi =
        _mm256_srai_epi32(_mm256_add_epi32(_mm256_madd_epi16(hi, to_g), round), 14);
    const __m256i gg = _mm256_add_epi16(l, _mm256_packs_epi32(g_lo, g_hi));
    const __m256i rg = _mm256_packus_epi16(rr, gg);  // lane: R0-7 G0-7
    const __m256i b8 = _mm256_packus_epi16(bb, bb);  // lane: B0-7 B0-7
    const __m256i first = _mm256_or_si256(_mm256_shuffle_epi8(rg, rg_a),
                                          _mm256_shuffle_epi8(b8, b_a));
    const __m256i rest = _mm256_or_si256(_mm256_shuffle_epi8(rg, rg_b),
                                         _mm256_shuffle_epi8(b8, b_b));
    // The 48 bytes as three 16-byte stores: lane 0's first 16 and its last
    // 8 with lane 1's first 8, then lane 1's other 16.
    const __m128i first0 = _mm256_castsi256_si128(first), rest0 = _mm256_castsi256_si128(rest);
    const __m128i first1 = _mm256_extracti128_si256(first, 1);
    const __m128i rest1 = _mm256_extracti128_si256(rest, 1);
    const __m128i part[3] = {first0, _mm_unpacklo_epi64(rest0, first1),
                             _mm_unpackhi_epi64(first1, _mm_slli_si128(rest1, 8))};
    auto* out = reinterpret_cast<__m128i*>(rgb + 3 * i);
    for (int k = 0; k < 3; ++k) {
      if (stream) {
        _mm_stream_si128(out + k, part[k]);
      } else {
        _mm_storeu_si128(out + k, part[k]);
      }
    }
  }
  if (stream) _mm_sfence();  // ordered before whatever publishes the pixels
  return i;
}

// Two 16 x 16 tiles of TransposeBytes side by side, one per 128-bit lane:
// rows in[0, 16) at columns [j, j + 32) to dst rows [j, j + 32) at column
// i. The SSE2 tile's rounds, in both lanes at once.
SHARDPACK_AVX2 void TransposeTwoTilesAvx2(const uint8_t* const* in, uint32_t j, uint8_t* dst,
                                          size_t dst_stride, uint32_t i) {
  __m256i v[16], t[16];
  for (int r = 0; r < 16; ++r) {
    v[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in[r] + j));
  }
  for (int round = 0; round < 4; ++round) {
    for (int k = 0; k < 8; ++k) {
      t[2 * k] = _mm256_unpacklo_epi8(v[k], v[k + 8]);
      t[2 * k + 1] = _mm256_unpackhi_epi8(v[k], v[k + 8]);
    }
    for (int k = 0; k < 16; ++k) v[k] = t[k];
  }
  for (int k = 0; k < 16; ++k) {
    uint8_t* low = dst + size_t{j + static_cast<uint32_t>(k)} * dst_stride + i;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(low), _mm256_castsi256_si128(v[k]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(low + 16 * dst_stride),
                     _mm256_extracti128_si256(v[k], 1));
  }
}

// One output row of the vertical pass (see ResizeColumns), 32 bytes at a
// time as the SSE2 loop does 16: the lanes come out of the in-lane unpacks
// and packs in order. COUNT > 0 is the tap count, unrolled, with the
// weights and row addresses held across chunks; 0 runs `count`. The last
// 32 bytes overlap the chunk before them rather than leaving a tail.
// Needs bytes >= 32.
template <int COUNT>
SHARDPACK_AVX2 void ColumnsRowAvx2(const uint8_t* first, size_t stride, size_t bytes,
                                   uint32_t count, const int16_t* w, uint8_t* out) {
  constexpr int kMaxPairs = COUNT > 0 ? (COUNT + 1) / 2 : 1;
  const int pairs = COUNT > 0 ? kMaxPairs : static_cast<int>(count + 1) / 2;
  __m256i weights[kMaxPairs];
  for (int p = 0; p < kMaxPairs; ++p) {
    int32_t pair;
    std::memcpy(&pair, w + 2 * p, 4);
    weights[p] = _mm256_set1_epi32(pair);
  }
  const __m256i zero = _mm256_setzero_si256();
  for (size_t chunk = 0; chunk < bytes; chunk += 32) {
    const size_t x = std::min(chunk, bytes - 32);
    __m256i acc0 = _mm256_set1_epi32(kHalf), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    for (int p = 0; p < pairs; ++p) {
      // Rows 2p and 2p + 1; an odd last tap pairs its row with itself at
      // weight 0.
      const uint8_t* ra = first + 2 * static_cast<size_t>(p) * stride + x;
      const uint8_t* rb = 2 * static_cast<uint32_t>(p) + 1 < (COUNT > 0 ? COUNT : count)
                              ? ra + stride : ra;
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ra));
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rb));
      __m256i wv;
      if (COUNT > 0) {
        wv = weights[p];
      } else {
        int32_t pair;
        std::memcpy(&pair, w + 2 * p, 4);
        wv = _mm256_set1_epi32(pair);
      }
      const __m256i lo = _mm256_unpacklo_epi8(a, b), hi = _mm256_unpackhi_epi8(a, b);
      acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(_mm256_unpacklo_epi8(lo, zero), wv));
      acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(_mm256_unpackhi_epi8(lo, zero), wv));
      acc2 = _mm256_add_epi32(acc2, _mm256_madd_epi16(_mm256_unpacklo_epi8(hi, zero), wv));
      acc3 = _mm256_add_epi32(acc3, _mm256_madd_epi16(_mm256_unpackhi_epi8(hi, zero), wv));
    }
    const __m256i p0 = _mm256_packs_epi32(_mm256_srai_epi32(acc0, kWeightBits),
                                          _mm256_srai_epi32(acc1, kWeightBits));
    const __m256i p1 = _mm256_packs_epi32(_mm256_srai_epi32(acc2, kWeightBits),
                                          _mm256_srai_epi32(acc3, kWeightBits));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + x), _mm256_packus_epi16(p0, p1));
  }
}

SHARDPACK_AVX2 void ColumnsRowAvx2(const uint8_t* first, size_t stride, size_t bytes,
                                   uint32_t count, const int16_t* w, uint8_t* out) {
  switch (count) {
    case 1: return ColumnsRowAvx2<1>(first, stride, bytes, count, w, out);
    case 2: return ColumnsRowAvx2<2>(first, stride, bytes, count, w, out);
    case 3: return ColumnsRowAvx2<3>(first, stride, bytes, count, w, out);
    case 4: return ColumnsRowAvx2<4>(first, stride, bytes, count, w, out);
    case 5: return ColumnsRowAvx2<5>(first, stride, bytes, count, w, out);
    case 6: return ColumnsRowAvx2<6>(first, stride, bytes, count, w, out);
    case 7: return ColumnsRowAvx2<7>(first, stride, bytes, count, w, out);
    default: return ColumnsRowAvx2<0>(first, stride, bytes, count, w, out);
  }
}
#endif

}  // namespace

// The RGB rows go through the widest SIMD loop `isa` allows; other channel
// counts, and builds without SSE2, through the portable loop.
void ResizeRows(const PixelView& src, uint32_t y0, uint32_t y1, uint32_t width, bool mirror,
                ResizeIsa isa, ResizeScratch& s, uint8_t* dst) {
#if defined(__SSE2__)
  if (src.channels == 3 && isa >= ResizeIsa::kSse2) {
    const size_t out_stride = size_t{width} * 3;
    // The SIMD loads of a row's last pixels read past the row: a row with
    // fewer than `reach` bytes from its start to the buffer's end (the last
    // one or few) is read from a copy padded to `reach` (up to four at a
    // time: pad rows 0 to 3). The padding only meets zero weights.
    const size_t stride = src.stride(), reach = stride + SimdReach(s.x.taps);
    GrowTo(&s.pad, 4 * reach);
    auto row_at = [&](uint32_t y, size_t pad_row) {
      const uint8_t* row = src.data + y * stride;
      if (size_t{src.height - y} * stride >= reach) return row;
      uint8_t* copy = s.pad.data() + pad_row * reach;
      std::memcpy(copy, row, stride);
      return static_cast<const uint8_t*>(copy);
    };
#if defined(SHARDPACK_HAVE_AVX2_PATH)
    if (isa >= ResizeIsa::kAvx2) {
      // Four rows at a time, then two, then one.
      const uint8_t* rows[4];
      uint8_t* outs[4];
      uint32_t y = y0;
      for (; y + 4 <= y1; y += 4) {
        for (uint32_t r = 0; r < 4; ++r) {
          rows[r] = row_at(y + r, r);
          outs[r] = dst + size_t{y + r - y0} * out_stride;
        }
        HorizontalRowsRgbAvx2<2>(rows, outs, width, mirror, s);
      }
      for (; y < y1; y += 2) {
        const bool two = y + 1 < y1;
        rows[0] = row_at(y, 0);
        rows[1] = two ? row_at(y + 1, 1) : rows[0];
        outs[0] = dst + size_t{y - y0} * out_stride;
        outs[1] = two ? outs[0] + out_stride : nullptr;
        HorizontalRowsRgbAvx2<1>(rows, outs, width, mirror, s);
      }
      return;
    }
#endif
    for (uint32_t y = y0; y < y1; ++y) {
      const uint8_t* row = row_at(y, 0);
      uint8_t* out = dst + size_t{y - y0} * out_stride;
#if defined(SHARDPACK_HAVE_SSSE3_PATH)
      if (isa >= ResizeIsa::kSsse3 && s.x.taps <= 6) {
        switch (s.x.taps) {
          case 2: HorizontalRowRgbSsse3<1>(row, width, mirror, s, out); break;
          case 4: HorizontalRowRgbSsse3<2>(row, width, mirror, s, out); break;
          default: HorizontalRowRgbSsse3<3>(row, width, mirror, s, out); break;
        }
        continue;
      }
#endif
      switch (s.x.taps) {
        case 2: HorizontalRowRgbSse2<1>(row, width, mirror, s, out); break;
        case 4: HorizontalRowRgbSse2<2>(row, width, mirror, s, out); break;
        case 6: HorizontalRowRgbSse2<3>(row, width, mirror, s, out); break;
        default: HorizontalRowRgbSse2<0>(row, width, mirror, s, out); break;
      }
    }
    return;
  }
#endif
  ResizeRowsScalar(src, y0, y1, width, mirror, s, dst);
}

void ResizeColumns(const uint8_t* rows, uint32_t row0, size_t stride, size_t bytes,
                   uint32_t height, ResizeIsa isa, const ResizeTaps& t, uint8_t* dst) {
  for (uint32_t y = 0; y < height; ++y) {
    const uint8_t* first = rows + (t.bounds[2 * y] - row0) * stride;
    const uint32_t count = t.bounds[2 * y + 1];
    const int16_t* w = t.weights.data() + size_t{y} * static_cast<size_t>(t.taps);
    uint8_t* out = dst + y * bytes;
    size_t x = 0;
#if defined(SHARDPACK_HAVE_AVX2_PATH)
    if (isa >= ResizeIsa::kAvx2 && bytes >= 32) {
      ColumnsRowAvx2(first, stride, bytes, count, w, out);
      continue;
    }
#endif
#if defined(__SSE2__)
    // 16 columns at a time, taps in pairs: rows k and k+1 interleaved as
    // 16-bit lanes against (w_k, w_k+1), one pmaddwd per 4 columns. An odd
    // last tap pairs its row with itself at weight 0.
    const __m128i zero = _mm_setzero_si128();
    for (; isa >= ResizeIsa::kSse2 && x + 16 <= bytes; x += 16) {
      __m128i acc0 = _mm_set1_epi32(kHalf), acc1 = acc0, acc2 = acc0, acc3 = acc0;
      for (uint32_t k = 0; k < count; k += 2) {
        const uint8_t* ra = first + k * stride + x;
        const uint8_t* rb = k + 1 < count ? ra + stride : ra;
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ra));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rb));
        int32_t pair;
        std::memcpy(&pair, w + k, 4);
        const __m128i wv = _mm_set1_epi32(pair);
        const __m128i lo = _mm_unpacklo_epi8(a, b), hi = _mm_unpackhi_epi8(a, b);
        acc0 = _mm_add_epi32(acc0, _mm_madd_epi16(_mm_unpacklo_epi8(lo, zero), wv));
        acc1 = _mm_add_epi32(acc1, _mm_madd_epi16(_mm_unpackhi_epi8(lo, zero), wv));
        acc2 = _mm_add_epi32(acc2, _mm_madd_epi16(_mm_unpacklo_epi8(hi, zero), wv));
        acc3 = _mm_add_epi32(acc3, _mm_madd_epi16(_mm_unpackhi_epi8(hi, zero), wv));
      }
      const __m128i p0 = _mm_packs_epi32(_mm_srai_epi32(acc0, kWeightBits),
                                         _mm_srai_epi32(acc1, kWeightBits));
      const __m128i p1 = _mm_packs_epi32(_mm_srai_epi32(acc2, kWeightBits),
                                         _mm_srai_epi32(acc3, kWeightBits));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + x), _mm_packus_epi16(p0, p1));
    }
#endif
    ResizeColumnsScalar(first, stride, x, bytes, count, w, out);
  }
}

void TransposeBytes(const uint8_t* src, size_t src_stride, uint32_t rows, uint32_t cols,
                    bool reverse, ResizeIsa isa, uint8_t* dst, size_t dst_stride) {
  uint32_t i0 = 0, j0 = 0;
#if defined(__SSE2__)
  if (isa >= ResizeIsa::kSse2) {
    i0 = rows / 16 * 16;
    j0 = cols / 16 * 16;
    for (uint32_t i = 0; i < i0; i += 16) {
      const uint8_t* in[16];
      for (uint32_t r = 0; r < 16; ++r) {
        in[r] = src + size_t{reverse ? rows - 1 - (i + r) : i + r} * src_stride;
      }
      uint32_t j = 0;
#if defined(SHARDPACK_HAVE_AVX2_PATH)
      if (isa >= ResizeIsa::kAvx2) {
        for (; j + 32 <= j0; j += 32) TransposeTwoTilesAvx2(in, j, dst, dst_stride, i);
      }
#endif
      for (; j < j0; j += 16) {
        // Four rounds of byte interleaves, register 2k + h of a round taking
        // half h of registers k and k + 8: each round rotates the 8 bits
        // (register, byte) that place a byte left by one, so after four the
        // byte of row r, column c is byte r of register c.
        __m128i v[16], t[16];
        for (int r = 0; r < 16; ++r) {
          v[r] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in[r] + j));
        }
        for (int round = 0; round < 4; ++round) {
          for (int k = 0; k < 8; ++k) {
            t[2 * k] = _mm_unpacklo_epi8(v[k], v[k + 8]);
            t[2 * k + 1] = _mm_unpackhi_epi8(v[k], v[k + 8]);
          }
          for (int k = 0; k < 16; ++k) v[k] = t[k];
        }
        for (int k = 0; k < 16; ++k) {
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + size_t{j + k} * dst_stride + i), v[k]);
        }
      }
    }
  }
#endif
  TransposeBytesScalar(src, src_stride, rows, cols, reverse, i0, j0, dst, dst_stride);
}

void YccToRgb(const uint8_t* y, const uint8_t* cb, const uint8_t* cr, size_t n, uint8_t* rgb,
              ResizeIsa max_isa, bool stream) {
  size_t i = 0;
#if defined(SHARDPACK_HAVE_AVX2_PATH)
  if (std::min(max_isa, WidestResizeIsa()) >= ResizeIsa::kAvx2) {
    i = YccToRgbAvx2(y, cb, cr, n, rgb, stream);
  }
#else
  (void)stream;
#endif
  YccToRgbScalar(y, cb, cr, i, n, rgb);
}

ResizeIsa WidestResizeIsa() {
#if defined(SHARDPACK_HAVE_AVX2_PATH)
  static const ResizeIsa isa = [] {
    __builtin_cpu_init();  // in case this runs before libgcc's constructor
    return __builtin_cpu_supports("avx2")    ? ResizeIsa::kAvx2
           : __builtin_cpu_supports("ssse3") ? ResizeIsa::kSsse3
                                             : ResizeIsa::kSse2;
  }();
  return isa;
#elif defined(__SSE2__)
  return ResizeIsa::kSse2;
#else
  return ResizeIsa::kPortable;
#endif
}

}  // namespace shardpack::codec
