#include "reader/image_ops.h"

#include <algorithm>
#include <cmath>
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

namespace shardpack::internal {
namespace {

// Fixed-point precision of the resize taps: 16-bit weights, as Pillow-SIMD,
// so that pairs of taps go through one multiply-add of 16-bit lanes
// (pmaddwd). 14 bits keeps a weight of 1.0 (upscaling) inside int16 and
// 255 * 2^14 summed over a normalized kernel far inside int32.
constexpr int kWeightBits = 14;
constexpr int32_t kWeightOne = int32_t{1} << kWeightBits;
constexpr int32_t kHalf = kWeightOne / 2;

uint8_t Clip8(int32_t v) { return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v)); }

// 1 - |x| for |x| < 1, else 0 (+0: 1 - 1 is +0 too), without a branch.
double Triangle(double x) { return std::max(1.0 - std::fabs(x), 0.0); }

// std::lround (halves away from zero) of v in [0, 2^31), inline: the
// library call costs more than the rest of a tap's arithmetic. v minus its
// truncation is exact.
int32_t RoundNonNegative(double v) {
  const auto t = static_cast<int32_t>(v);
  return v - t >= 0.5 ? t + 1 : t;
}

// Rounds taps[0, count) (summing to 1) to fixed point summing to exactly
// kWeightOne: the rounding error goes to the largest tap, so a flat image
// stays exactly flat.
void Quantize(const double* taps, int count, int16_t* w) {
  int32_t sum = 0, max = -1;
  int largest = 0;
  for (int x = 0; x < count; ++x) {
    const int32_t v = RoundNonNegative(taps[x] * kWeightOne);
    w[x] = static_cast<int16_t>(v);
    sum += v;
    if (v > max) largest = x, max = v;  // the first of equals
  }
  w[largest] = static_cast<int16_t>(max + (kWeightOne - sum));
}

// Taps of a triangle filter resampling [in0, in1) of `in` samples to `out`
// (Pillow's precompute_coeffs with the bilinear filter): for output i, taps
// weights[i * taps, +count) apply to inputs [first, first + count). With
// `clamp` the taps stay inside [floor(in0), ceil(in1)). `taps` is even; the
// weights past `count` are zero.
void ComputeTaps(uint32_t in, double in0, double in1, uint32_t out, bool clamp,
                 std::vector<uint32_t>* bounds, std::vector<int16_t>* weights, int* taps) {
  const double scale = (in1 - in0) / out;
  const double filter_scale = std::max(scale, 1.0);
  const double support = filter_scale;  // the triangle's support is 1
  const int lo = clamp ? std::max(static_cast<int>(std::floor(in0)), 0) : 0;
  const int hi = clamp ? std::min(static_cast<int>(std::ceil(in1)), static_cast<int>(in))
                       : static_cast<int>(in);
  const int max_taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  *taps = max_taps + 1;  // even
  bounds->resize(size_t{out} * 2);
  weights->assign(size_t{out} * static_cast<size_t>(*taps), 0);
  // Outputs go in blocks, each step for the whole block before the next:
  // one output's taps are a chain of dependent divisions, sums and
  // roundings, and a block's chains overlap. Each output's arithmetic, and
  // its order, is that of one output at a time.
  constexpr uint32_t kBlock = 8;
  double stack[kBlock * 64];
  std::vector<double> big;
  double* t = stack;
  if (max_taps > 64) {
    big.resize(size_t{kBlock} * static_cast<size_t>(max_taps));
    t = big.data();
  }
  for (uint32_t i0 = 0; i0 < out; i0 += kBlock) {
    const uint32_t n = std::min(kBlock, out - i0);
    double center[kBlock], sum[kBlock];
    int first[kBlock], count[kBlock];
    for (uint32_t j = 0; j < n; ++j) {
      center[j] = in0 + (i0 + j + 0.5) * scale;
      first[j] = std::min(std::max(static_cast<int>(center[j] - support + 0.5), lo), hi - 1);
      const int last = std::min(static_cast<int>(center[j] + support + 0.5), hi);
      count[j] = std::min(std::max(last - first[j], 1), max_taps);
    }
    for (uint32_t j = 0; j < n; ++j) {
      double* tj = t + j * static_cast<size_t>(max_taps);
      for (int x = 0; x < count[j]; ++x) {
        tj[x] = Triangle((x + first[j] - center[j] + 0.5) / filter_scale);
      }
    }
    for (uint32_t j = 0; j < n; ++j) {
      const double* tj = t + j * static_cast<size_t>(max_taps);
      double s = 0;
      for (int x = 0; x < count[j]; ++x) s += tj[x];
      sum[j] = s;
    }
    for (uint32_t j = 0; j < n; ++j) {
      double* tj = t + j * static_cast<size_t>(max_taps);
      if (sum[j] > 0) {
        for (int x = 0; x < count[j]; ++x) tj[x] /= sum[j];
      }
    }
    for (uint32_t j = 0; j < n; ++j) {
      const uint32_t i = i0 + j;
      int16_t* w = weights->data() + size_t{i} * static_cast<size_t>(*taps);
      if (sum[j] > 0) {
        Quantize(t + j * static_cast<size_t>(max_taps), count[j], w);
      } else {
        w[0] = static_cast<int16_t>(kWeightOne);
        count[j] = 1;
      }
      (*bounds)[2 * i] = static_cast<uint32_t>(first[j]);
      (*bounds)[2 * i + 1] = static_cast<uint32_t>(count[j]);
    }
  }
}

// One output pixel of the horizontal pass, portable: `in` is its first tap.
template <int CH>
void HorizontalPixel(const uint8_t* in, uint32_t count, const int16_t* w, int ch, uint8_t* px) {
  for (int c = 0; c < (CH > 0 ? CH : ch); ++c) {
    int32_t sum = kHalf;
    for (uint32_t k = 0; k < count; ++k)
      sum += in[k * static_cast<uint32_t>(CH > 0 ? CH : ch) + static_cast<uint32_t>(c)] * w[k];
    px[c] = Clip8(sum >> kWeightBits);
  }
}

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
    const uint8_t* in = row + size_t{s.bounds_x[2 * x]} * 3;
    const uint32_t pairs = PAIRS > 0 ? PAIRS : (s.bounds_x[2 * x + 1] + 1) / 2;
    const int16_t* w = s.weights_x.data() + size_t{x} * static_cast<size_t>(s.taps_x);
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
  const uint32_t* bounds = s.bounds_x.data();
  const int16_t* weights = s.weights_x.data();
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
  const uint32_t* b = s.bounds_x.data();
  const int16_t* w = s.weights_x.data();
  switch (s.taps_x) {
    case 4: return HorizontalRowsRgbAvx2<2, N>(rows, outs, width, mirror, b, w, 4);
    case 6: return HorizontalRowsRgbAvx2<3, N>(rows, outs, width, mirror, b, w, 6);
    case 8: return HorizontalRowsRgbAvx2<4, N>(rows, outs, width, mirror, b, w, 8);
    default: return HorizontalRowsRgbAvx2<0, N>(rows, outs, width, mirror, b, w, s.taps_x);
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

// A bound on how far past a pixel's first tap the SIMD horizontal loops
// read (SSE2 3 * taps + 1, SSSE3 3 * taps + 2, AVX2 3 * taps + 4 or 16).
size_t SimdReach(int taps) { return 3 * static_cast<size_t>(taps) + 16; }

// At least n bytes in *v. Never shrinks it: resize zeroes what it adds,
// which would be again and again as image sizes go up and down.
void GrowTo(std::vector<uint8_t>* v, size_t n) {
  if (v->size() < n) v->resize(n);
}

// Horizontal pass over source rows [y0, y1) into `dst` (rows packed, width
// columns), mirrored when asked, with the instructions `isa` allows. CH is
// the channel count (0: any).
template <int CH>
void ResizeRows(const PixelView& src, uint32_t y0, uint32_t y1, uint32_t width, bool mirror,
                ResizeIsa isa, ResizeScratch& s, uint8_t* dst) {
  const int ch = CH > 0 ? CH : src.channels;
  const size_t out_stride = size_t{width} * static_cast<size_t>(ch);
#if defined(__SSE2__)
  if (CH == 3 && isa >= ResizeIsa::kSse2) {
    // The SIMD loads of a row's last pixels read past the row: a row with
    // fewer than `reach` bytes from its start to the buffer's end (the last
    // one or few) is read from a copy padded to `reach` (up to four at a
    // time: pad rows 0 to 3). The padding only meets zero weights.
    const size_t stride = src.stride(), reach = stride + SimdReach(s.taps_x);
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
      if (isa >= ResizeIsa::kSsse3 && s.taps_x <= 6) {
        switch (s.taps_x) {
          case 2: HorizontalRowRgbSsse3<1>(row, width, mirror, s, out); break;
          case 4: HorizontalRowRgbSsse3<2>(row, width, mirror, s, out); break;
          default: HorizontalRowRgbSsse3<3>(row, width, mirror, s, out); break;
        }
        continue;
      }
#endif
      switch (s.taps_x) {
        case 2: HorizontalRowRgbSse2<1>(row, width, mirror, s, out); break;
        case 4: HorizontalRowRgbSse2<2>(row, width, mirror, s, out); break;
        case 6: HorizontalRowRgbSse2<3>(row, width, mirror, s, out); break;
        default: HorizontalRowRgbSse2<0>(row, width, mirror, s, out); break;
      }
    }
    return;
  }
#endif
  for (uint32_t y = y0; y < y1; ++y) {
    const uint8_t* row = src.data + y * src.stride();
    uint8_t* out = dst + size_t{y - y0} * out_stride;
    for (uint32_t x = 0; x < width; ++x) {
      const uint8_t* in = row + size_t{s.bounds_x[2 * x]} * static_cast<size_t>(ch);
      const uint32_t count = s.bounds_x[2 * x + 1];
      const int16_t* w = s.weights_x.data() + size_t{x} * static_cast<size_t>(s.taps_x);
      uint8_t* px = out + size_t{mirror ? width - 1 - x : x} * static_cast<size_t>(ch);
      HorizontalPixel<CH>(in, count, w, ch, px);
    }
  }
}

// Vertical pass: `rows` holds source rows [row0, ...), `stride` bytes
// apart, of which the first `bytes` are resized into `dst` (rows packed).
void ResizeColumns(const uint8_t* rows, uint32_t row0, size_t stride, size_t bytes,
                   uint32_t height, ResizeIsa isa, const ResizeScratch& s, uint8_t* dst) {
  for (uint32_t y = 0; y < height; ++y) {
    const uint8_t* first = rows + (s.bounds_y[2 * y] - row0) * stride;
    const uint32_t count = s.bounds_y[2 * y + 1];
    const int16_t* w = s.weights_y.data() + size_t{y} * static_cast<size_t>(s.taps_y);
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
    for (; x < bytes; ++x) {
      int32_t sum = kHalf;
      for (uint32_t k = 0; k < count; ++k) sum += first[k * stride + x] * w[k];
      out[x] = Clip8(sum >> kWeightBits);
    }
  }
}

// [lo, hi) of the inputs any output's taps read.
void TapRange(const std::vector<uint32_t>& bounds, uint32_t out, uint32_t* lo, uint32_t* hi) {
  *lo = bounds[0];
  *hi = 0;
  for (uint32_t i = 0; i < out; ++i) {
    *lo = std::min(*lo, bounds[2 * i]);
    *hi = std::max(*hi, bounds[2 * i] + bounds[2 * i + 1]);
  }
}

// Rough cost of each pass, in instructions of the SSE2 loops: a horizontal
// output pixel costs ~12 plus ~10 per pair of taps, a vertical 16-byte
// chunk ~10 plus ~10 per pair of taps.
double HorizontalCost(uint32_t rows, uint32_t width, int taps) {
  return double(rows) * width * (12 + 5 * taps);
}
double VerticalCost(uint32_t height, size_t bytes, int taps) {
  return double(height) * double(bytes) / 16 * (10 + 5 * taps);
}

}  // namespace

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

void ResizeBoxAA(const PixelView& src, const ResizeBox& box, uint32_t width, uint32_t height,
                 const ResizeOptions& options, uint8_t* dst, ResizeScratch* scratch) {
  const bool same_x = !options.mirror && box.x0 == 0 && box.x1 == src.width && width == src.width;
  const bool same_y = box.y0 == 0 && box.y1 == src.height && height == src.height;
  const auto ch = static_cast<size_t>(src.channels);
  const size_t out_stride = size_t{width} * ch;
  if (same_x && same_y) {
    std::memcpy(dst, src.data, src.bytes());
    return;
  }
  ResizeScratch& s = *scratch;
  const ResizeIsa isa = std::min(options.max_isa, WidestResizeIsa());
  uint32_t row0 = 0, row1 = src.height, col0 = 0, col1 = src.width;
  if (!same_y) {
    ComputeTaps(src.height, box.y0, box.y1, height, options.clamp_to_box, &s.bounds_y,
                &s.weights_y, &s.taps_y);
    TapRange(s.bounds_y, height, &row0, &row1);
  }
  if (!same_x) {
    ComputeTaps(src.width, box.x0, box.x1, width, options.clamp_to_box, &s.bounds_x,
                &s.weights_x, &s.taps_x);
    TapRange(s.bounds_x, width, &col0, &col1);
  }
  auto horizontal = [&](const PixelView& in, uint32_t y0, uint32_t y1, uint8_t* out) {
    if (in.channels == 3) {
      ResizeRows<3>(in, y0, y1, width, options.mirror, isa, s, out);
    } else {
      ResizeRows<0>(in, y0, y1, width, options.mirror, isa, s, out);
    }
  };
  if (same_y) return horizontal(src, 0, src.height, dst);
  if (same_x) return ResizeColumns(src.data, 0, src.stride(), src.stride(), height, isa, s, dst);
  // Both passes. Horizontal first resizes only the rows the vertical taps
  // read; vertical first only the columns the horizontal taps read, so the
  // horizontal pass (the costlier per byte) runs on `height` rows. The
  // choice depends on the taps alone, never on the thread or the machine.
  const double h_first = HorizontalCost(row1 - row0, width, s.taps_x) +
                         VerticalCost(height, out_stride, s.taps_y);
  const double v_first = VerticalCost(height, (col1 - col0) * ch, s.taps_y) +
                         HorizontalCost(height, width, s.taps_x);
  if (h_first <= v_first) {
    GrowTo(&s.rows, out_stride * (row1 - row0));
    horizontal(src, row0, row1, s.rows.data());
    ResizeColumns(s.rows.data(), row0, out_stride, out_stride, height, isa, s, dst);
    return;
  }
  const size_t bytes = (col1 - col0) * ch;
  GrowTo(&s.rows, bytes * height);
  ResizeColumns(src.data + col0 * ch, 0, src.stride(), bytes, height, isa, s, s.rows.data());
  for (uint32_t x = 0; x < width; ++x) s.bounds_x[2 * x] -= col0;
  horizontal(PixelView{s.rows.data(), col1 - col0, height, src.channels}, 0, height, dst);
}

void ResizeBilinearAA(const PixelView& src, uint32_t width, uint32_t height, uint8_t* dst,
                      ResizeScratch* scratch) {
  ResizeBoxAA(src, ResizeBox{0, 0, double(src.width), double(src.height)}, width, height,
              ResizeOptions{}, dst, scratch);
}

bool IsBenignJpegWarning(std::string_view message) {
  return message.find("extraneous bytes before marker 0xd9") != std::string_view::npos ||
         message.find("unknown JFIF revision") != std::string_view::npos ||
         message.find("thumbnail image size does not match") != std::string_view::npos;
}

}  // namespace shardpack::internal
