// The antialiased separable resize, with an optional source box and mirror,
// shared by the reader's JPEG transforms and the packer (codec/transcode).
// The driver is codec/resize.cc, its loops codec/resize_scalar.cc and
// codec/resize_x86.cc.
//
// Everything is a pure function of its arguments plus a caller-owned scratch
// that keeps its capacity, so a long-lived caller allocates nothing per image.
#ifndef SHARDPACK_CODEC_RESIZE_H_
#define SHARDPACK_CODEC_RESIZE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/pixels.h"

namespace shardpack::internal {

// Work memory of the resize: filter taps and the intermediate image. Keeps
// its capacity between calls. Not shared between threads.
struct ResizeScratch {
  std::vector<uint32_t> bounds_x, bounds_y;   // first tap, tap count per output column/row
  std::vector<int16_t> weights_x, weights_y;  // fixed-point taps, `taps_*` per output
  int taps_x = 0, taps_y = 0;                 // even: a zero tap pads odd counts
  std::vector<uint8_t> rows;                  // the intermediate image
  std::vector<uint8_t> pad;                   // last rows, padded for the SIMD loads
};

// A source rectangle in (possibly fractional) pixel coordinates of the
// source: [x0, x1) x [y0, y1).
struct ResizeBox {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

// The code paths of the resize, narrowest first; each adds to the one
// before. Every path computes the same integers; a cap lets tests compare
// them.
enum class ResizeIsa : uint8_t {
  kPortable,  // plain C++: any channel count, and what the SIMD loops leave
  kSse2,      // any x86-64: both passes (the horizontal one for RGB)
  kSsse3,     // where the CPU has it: the RGB horizontal pass up to 6 taps
  kAvx2,      // where the CPU has it: both passes (RGB rows four at a time)
  kBest,      // the widest this build and CPU run
};

struct ResizeOptions {
  // Taps stay inside the box (rounded outwards to whole pixels), as if the
  // box had been cropped out first (torchvision's crop-then-resize). When
  // false, taps near the box's edges may read source pixels outside it, as
  // a resize of the whole image followed by a crop would.
  bool clamp_to_box = true;
  bool mirror = false;  // output column x comes from column width-1-x
  ResizeIsa max_isa = ResizeIsa::kBest;  // the widest path used (tests)
};

// Resizes box `box` of `src` to width x height into `dst` (width * height *
// src.channels bytes, rows packed, not overlapping src) with a separable
// triangle filter whose support widens with the downscale factor: Pillow's
// antialiased BILINEAR (its precompute_coeffs with a box), the filter of
// torchvision's antialiased bilinear resize. A flat image stays flat.
// Weights are 14-bit fixed point (each output's taps sum to exactly 2^14),
// intermediate rows 8-bit; every path (ResizeIsa: portable, SSE2, SSSE3,
// AVX2, the widest the CPU has chosen at run time) computes the same
// integers, so the output does not depend on the machine.
void ResizeBoxAA(const PixelView& src, const ResizeBox& box, uint32_t width, uint32_t height,
                 const ResizeOptions& options, uint8_t* dst, ResizeScratch* scratch);

// The widest path ResizeBoxAA takes in this build on this CPU.
ResizeIsa WidestResizeIsa();

// The whole of `src` to width x height (clamped taps, no mirror).
void ResizeBilinearAA(const PixelView& src, uint32_t width, uint32_t height, uint8_t* dst,
                      ResizeScratch* scratch);

}  // namespace shardpack::internal

#endif  // SHARDPACK_CODEC_RESIZE_H_
