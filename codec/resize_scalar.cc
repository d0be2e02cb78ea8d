// The resize's portable loops: any channel count, any CPU, and what the
// SIMD loops of codec/resize_x86.cc leave. Every path computes the same
// integers.
#include <cstddef>
#include <cstdint>

#include "codec/resize_kernels.h"

namespace shardpack::codec {
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
      const uint8_t* in = row + size_t{s.x.bounds[2 * x]} * static_cast<size_t>(ch);
      const uint32_t count = s.x.bounds[2 * x + 1];
      const int16_t* w = s.x.weights.data() + size_t{x} * static_cast<size_t>(s.x.taps);
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

void YccToRgbScalar(const uint8_t* y, const uint8_t* cb, const uint8_t* cr, size_t i, size_t n,
                    uint8_t* rgb) {
  constexpr int32_t kRound = 1 << 13;
  for (; i < n; ++i) {
    const int32_t l = y[i], b = cb[i] - 128, r = cr[i] - 128;
    rgb[3 * i] = Clip8(l + ((kCrToR * r + kRound) >> 14));
    rgb[3 * i + 1] = Clip8(l + ((kCbToG * b + kCrToG * r + kRound) >> 14));
    rgb[3 * i + 2] = Clip8(l + ((kCbToB * b + kRound) >> 14));
  }
}

void TransposeBytesScalar(const uint8_t* src, size_t src_stride, uint32_t rows, uint32_t cols,
                          bool reverse, uint32_t i0, uint32_t j0, uint8_t* dst,
                          size_t dst_stride) {
  auto one = [&](uint32_t i, uint32_t j) {
    const uint32_t from = reverse ? rows - 1 - i : i;
    dst[size_t{j} * dst_stride + i] = src[size_t{from} * src_stride + j];
  };
  for (uint32_t i = i0; i < rows; ++i)
    for (uint32_t j = 0; j < cols; ++j) one(i, j);
  for (uint32_t i = 0; i < i0; ++i)
    for (uint32_t j = j0; j < cols; ++j) one(i, j);
}

void ResizeColumnsScalar(const uint8_t* first, size_t stride, size_t x, size_t bytes,
                         uint32_t count, const int16_t* w, uint8_t* out) {
  for (; x < bytes; ++x) {
    int32_t sum = kHalf;
    for (uint32_t k = 0; k < count; ++k) sum += first[k * stride + x] * w[k];
    out[x] = Clip8(sum >> kWeightBits);
  }
}

}  // namespace shardpack::codec
