// The interface between the resize's driver (codec/resize.cc: the taps and
// the order of the passes) and its kernels: the portable loops
// (codec/resize_scalar.cc) and the x86 SIMD loops with the run-time choice
// between them (codec/resize_x86.cc). Internal to codec/.
#ifndef SHARDPACK_CODEC_RESIZE_KERNELS_H_
#define SHARDPACK_CODEC_RESIZE_KERNELS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/pixels.h"
#include "codec/resize.h"

namespace shardpack::codec {


// Fixed-point precision of the resize taps: 16-bit weights, as Pillow-SIMD,
// so that pairs of taps go through one multiply-add of 16-bit lanes
// (pmaddwd). 14 bits keeps a weight of 1.0 (upscaling) inside int16 and
// 255 * 2^14 summed over a normalized kernel far inside int32.
constexpr int kWeightBits = 14;
constexpr int32_t kWeightOne = int32_t{1} << kWeightBits;
constexpr int32_t kHalf = kWeightOne / 2;

inline uint8_t Clip8(int32_t v) { return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v)); }

// A bound on how far past a pixel's first tap the SIMD horizontal loops
// read (SSE2 3 * taps + 1, SSSE3 3 * taps + 2, AVX2 3 * taps + 4 or 16).
inline size_t SimdReach(int taps) { return 3 * static_cast<size_t>(taps) + 16; }

// At least n bytes in *v. Never shrinks it: resize zeroes what it adds,
// which would be again and again as image sizes go up and down.
inline void GrowTo(std::vector<uint8_t>* v, size_t n) {
  if (v->size() < n) v->resize(n);
}

// Horizontal pass over source rows [y0, y1) into `dst` (rows packed, width
// columns), mirrored when asked, with the instructions `isa` allows.
void ResizeRows(const PixelView& src, uint32_t y0, uint32_t y1, uint32_t width, bool mirror,
                ResizeIsa isa, ResizeScratch& s, uint8_t* dst);

// Vertical pass with taps `t`: `rows` holds source rows [row0, ...),
// `stride` bytes apart, of which the first `bytes` are resized into `dst`
// (rows packed).
void ResizeColumns(const uint8_t* rows, uint32_t row0, size_t stride, size_t bytes,
                   uint32_t height, ResizeIsa isa, const ResizeTaps& t, uint8_t* dst);

// dst[j * dst_stride + i] = src[i' * src_stride + j] for i in [0, rows), j in
// [0, cols), where i' = i, or rows - 1 - i with `reverse`: a transpose,
// optionally of the rows in reverse order. 16 x 16 tiles with SSE2.
void TransposeBytes(const uint8_t* src, size_t src_stride, uint32_t rows, uint32_t cols,
                    bool reverse, ResizeIsa isa, uint8_t* dst, size_t dst_stride);

// The portable transpose of rows [i0, rows) x cols [0, cols) and rows
// [0, i0) x cols [j0, cols) (what the tiles leave).
void TransposeBytesScalar(const uint8_t* src, size_t src_stride, uint32_t rows, uint32_t cols,
                          bool reverse, uint32_t i0, uint32_t j0, uint8_t* dst,
                          size_t dst_stride);

// The portable horizontal pass (any channel count; RGB specialized).
void ResizeRowsScalar(const PixelView& src, uint32_t y0, uint32_t y1, uint32_t width,
                      bool mirror, const ResizeScratch& s, uint8_t* dst);

// YCbCr to RGB (codec/resize.h, YccToRgb) for pixels [i, n), portable.
constexpr int32_t kCrToR = 22970, kCbToG = -5638, kCrToG = -11700, kCbToB = 29032;
void YccToRgbScalar(const uint8_t* y, const uint8_t* cb, const uint8_t* cr, size_t i, size_t n,
                    uint8_t* rgb);

// The portable vertical pass of one output row, bytes [x, bytes): `first`
// is the row of its first tap, `count` taps `w`.
void ResizeColumnsScalar(const uint8_t* first, size_t stride, size_t x, size_t bytes,
                         uint32_t count, const int16_t* w, uint8_t* out);

}  // namespace shardpack::codec

#endif  // SHARDPACK_CODEC_RESIZE_KERNELS_H_
