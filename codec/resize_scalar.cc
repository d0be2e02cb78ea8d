// The resize's portable loops: any channel count, any CPU, and what the
// SIMD loops of codec/resize_x86.cc leave. Every path computes the same
// integers.
#include <cstddef>
#include <cstdint>

#include "codec/resize_kernels.h"

namespace shardpack::internal {
namespace {

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

template <int CH>
void RowsScalar(const PixelView& src, uint32_t y0, uint32_t y1, uint32_t width, bool mirror,
                const ResizeScratch& s, uint8_t* dst) {
  const int ch = CH > 0 ? CH : src.channels;
  const size_t out_stride = size_t{width} * static_cast<size_t>(ch);
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

}  // namespace

void ResizeRowsScalar(const PixelView& src, uint32_t y0, uint32_t y1, uint32_t width,
                      bool mirror, const ResizeScratch& s, uint8_t* dst) {
  if (src.channels == 3) {
    RowsScalar<3>(src, y0, y1, width, mirror, s, dst);
  } else {
    RowsScalar<0>(src, y0, y1, width, mirror, s, dst);
  }
}

void ResizeColumnsScalar(const uint8_t* first, size_t stride, size_t x, size_t bytes,
                         uint32_t count, const int16_t* w, uint8_t* out) {
  for (; x < bytes; ++x) {
    int32_t sum = kHalf;
    for (uint32_t k = 0; k < count; ++k) sum += first[k * stride + x] * w[k];
    out[x] = Clip8(sum >> kWeightBits);
  }
}

}  // namespace shardpack::internal
