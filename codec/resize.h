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

namespace shardpack::codec {

// The filter taps of one direction: for output i, `taps` weights at
// weights[i * taps] (zero past its count) for the inputs from bounds[2i],
// bounds[2i + 1] of them.
struct ResizeTaps {
  std::vector<uint32_t> bounds;
  std::vector<int16_t> weights;
  int taps = 0;
};

// Work memory of the resize: filter taps and the intermediate image. Keeps
// its capacity between calls. Not shared between threads.
struct ResizeScratch {
  ResizeTaps x, y;  // per output column / row; `taps` even: a zero tap pads odd counts
  std::vector<uint8_t> rows;                  // the intermediate image
  std::vector<uint8_t> pad;                   // last rows, padded for the SIMD loads
  // ResizeYccToRgb: the taps of luma [0] and chroma [1], the resized
  // planes, and the transposed intermediate.
  ResizeTaps plane_x[2], plane_y[2];
  std::vector<uint8_t> ycc;
  std::vector<uint8_t> transposed;
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
  // ResizeYccToRgb: write the output with non-temporal stores where the
  // AVX2 path runs and `dst` is 16-byte aligned, for an output this core
  // will not read again soon (a batch slot's sample): each line is not read
  // in before it is overwritten. The bytes are the same.
  bool stream_output = false;
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

// One plane of an image whose planes have different resolutions (JPEG's
// YCbCr before chroma upsampling): its samples (1 channel), and how many
// image pixels each spans across and down. Sample j spans image pixels
// [j * factor, (j + 1) * factor): the plane's coordinates are the image's
// divided by the factor (JPEG's centered chroma siting).
struct SubsampledPlane {
  PixelView pixels;
  int factor_x = 1, factor_y = 1;
};

// Resizes box `box` (in image pixels) of a YCbCr image held as three planes
// (Y, Cb, Cr) to width x height RGB in `dst` (width * height * 3 bytes):
// each plane is resized as ResizeBoxAA does, from its own resolution (the
// box divided by its factors, so chroma's filter also does the upsampling),
// then the width x height output is converted to RGB (YccToRgb). The same
// integers on every path.
void ResizeYccToRgb(const SubsampledPlane planes[3], const ResizeBox& box, uint32_t width,
                    uint32_t height, const ResizeOptions& options, uint8_t* dst,
                    ResizeScratch* scratch);

// JFIF's YCbCr to RGB for n pixels of three planes, in 14-bit fixed point:
// R = Y + 1.402 (Cr - 128), G = Y - 0.344136 (Cb - 128) - 0.714136 (Cr - 128),
// B = Y + 1.772 (Cb - 128), each term's coefficient rounded to 1/2^14, the
// sum of the chroma terms plus 2^13 shifted down 14 bits (towards minus
// infinity), then clamped. libjpeg rounds its 16-bit coefficients per term;
// the two differ by at most one level.
// `stream`: non-temporal stores, as ResizeOptions::stream_output.
void YccToRgb(const uint8_t* y, const uint8_t* cb, const uint8_t* cr, size_t n, uint8_t* rgb,
              ResizeIsa max_isa = ResizeIsa::kBest, bool stream = false);

// The widest path ResizeBoxAA takes in this build on this CPU.
ResizeIsa WidestResizeIsa();

// The whole of `src` to width x height (clamped taps, no mirror).
void ResizeBilinearAA(const PixelView& src, uint32_t width, uint32_t height, uint8_t* dst,
                      ResizeScratch* scratch);

}  // namespace shardpack::codec

#endif  // SHARDPACK_CODEC_RESIZE_H_
