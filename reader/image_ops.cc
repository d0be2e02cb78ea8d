#include "reader/image_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace shardpack::internal {
namespace {

// Fixed-point precision of the resize taps: 8-bit samples times 22-bit
// weights summed over a normalized kernel stay below 2^31 (Pillow uses the
// same budget, PRECISION_BITS in Resample.c).
constexpr int kWeightBits = 22;
constexpr int32_t kWeightOne = int32_t{1} << kWeightBits;

uint8_t Clip8(int32_t v) { return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v)); }

double Triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// Taps of a triangle filter resampling [in0, in1) of `in` samples to `out`
// (Pillow's precompute_coeffs with the bilinear filter): for output i, taps
// weights[i * taps, +count) apply to inputs [first, first + count). With
// `clamp` the taps stay inside [floor(in0), ceil(in1)).
void ComputeTaps(uint32_t in, double in0, double in1, uint32_t out, bool clamp,
                 std::vector<uint32_t>* bounds, std::vector<int32_t>* weights, int* taps) {
  const double scale = (in1 - in0) / out;
  const double filter_scale = std::max(scale, 1.0);
  const double support = filter_scale;  // the triangle's support is 1
  const int lo = clamp ? std::max(static_cast<int>(std::floor(in0)), 0) : 0;
  const int hi = clamp ? std::min(static_cast<int>(std::ceil(in1)), static_cast<int>(in))
                       : static_cast<int>(in);
  *taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  bounds->resize(size_t{out} * 2);
  weights->assign(size_t{out} * static_cast<size_t>(*taps), 0);
  for (uint32_t i = 0; i < out; ++i) {
    const double center = in0 + (i + 0.5) * scale;
    const int first = std::min(std::max(static_cast<int>(center - support + 0.5), lo), hi - 1);
    const int last = std::min(static_cast<int>(center + support + 0.5), hi);
    int count = std::min(std::max(last - first, 1), *taps);
    auto tap = [&](int x) { return Triangle((x + first - center + 0.5) / filter_scale); };
    double sum = 0;
    for (int x = 0; x < count; ++x) sum += tap(x);
    int32_t* w = weights->data() + size_t{i} * static_cast<size_t>(*taps);
    if (sum > 0) {
      for (int x = 0; x < count; ++x)
        w[x] = static_cast<int32_t>(std::lround(tap(x) / sum * kWeightOne));
    } else {
      w[0] = kWeightOne;
      count = 1;
    }
    (*bounds)[2 * i] = static_cast<uint32_t>(first);
    (*bounds)[2 * i + 1] = static_cast<uint32_t>(count);
  }
}

// Horizontal pass over source rows [y0, y1) into `dst` (rows packed, width
// columns), mirrored when asked. CH is the channel count (0: any).
template <int CH>
void ResizeRows(const PixelView& src, uint32_t y0, uint32_t y1, uint32_t width, bool mirror,
                const ResizeScratch& s, uint8_t* dst) {
  const int ch = CH > 0 ? CH : src.channels;
  for (uint32_t y = y0; y < y1; ++y) {
    const uint8_t* row = src.data + y * src.stride();
    uint8_t* out = dst + size_t{y - y0} * width * static_cast<size_t>(ch);
    for (uint32_t x = 0; x < width; ++x) {
      const uint8_t* in = row + size_t{s.bounds_x[2 * x]} * static_cast<size_t>(ch);
      const uint32_t count = s.bounds_x[2 * x + 1];
      const int32_t* w = s.weights_x.data() + size_t{x} * static_cast<size_t>(s.taps_x);
      uint8_t* px = out + size_t{mirror ? width - 1 - x : x} * static_cast<size_t>(ch);
      if constexpr (CH == 3) {  // the hot case: three sums side by side
        int32_t s0 = kWeightOne / 2, s1 = kWeightOne / 2, s2 = kWeightOne / 2;
        for (uint32_t k = 0; k < count; ++k) {
          s0 += in[3 * k] * w[k];
          s1 += in[3 * k + 1] * w[k];
          s2 += in[3 * k + 2] * w[k];
        }
        px[0] = Clip8(s0 >> kWeightBits);
        px[1] = Clip8(s1 >> kWeightBits);
        px[2] = Clip8(s2 >> kWeightBits);
        continue;
      }
      for (int c = 0; c < ch; ++c) {
        int32_t sum = kWeightOne / 2;
        for (uint32_t k = 0; k < count; ++k) sum += in[k * static_cast<uint32_t>(ch) + c] * w[k];
        px[c] = Clip8(sum >> kWeightBits);
      }
    }
  }
}

// Vertical pass: `rows` holds source rows [row0, ...) of `stride` bytes.
void ResizeColumns(const uint8_t* rows, uint32_t row0, size_t stride, uint32_t height,
                   ResizeScratch* s, uint8_t* dst) {
  s->accum.resize(stride);
  int32_t* __restrict accum = s->accum.data();
  for (uint32_t y = 0; y < height; ++y) {
    std::fill(accum, accum + stride, kWeightOne / 2);
    const uint32_t first = s->bounds_y[2 * y] - row0;
    const uint32_t count = s->bounds_y[2 * y + 1];
    const int32_t* w = s->weights_y.data() + size_t{y} * static_cast<size_t>(s->taps_y);
    for (uint32_t k = 0; k < count; ++k) {
      const uint8_t* __restrict row = rows + (first + k) * stride;
      const int32_t wk = w[k];
      for (size_t x = 0; x < stride; ++x) accum[x] += row[x] * wk;
    }
    uint8_t* out = dst + y * stride;
    for (size_t x = 0; x < stride; ++x) out[x] = Clip8(accum[x] >> kWeightBits);
  }
}

}  // namespace

void ResizeBoxAA(const PixelView& src, const ResizeBox& box, uint32_t width, uint32_t height,
                 const ResizeOptions& options, uint8_t* dst, ResizeScratch* scratch) {
  const bool same_x = !options.mirror && box.x0 == 0 && box.x1 == src.width && width == src.width;
  const bool same_y = box.y0 == 0 && box.y1 == src.height && height == src.height;
  const size_t out_stride = size_t{width} * static_cast<size_t>(src.channels);
  // Source rows the vertical pass reads: only those go through the
  // horizontal pass.
  uint32_t row0 = 0, row1 = src.height;
  if (!same_y) {
    ComputeTaps(src.height, box.y0, box.y1, height, options.clamp_to_box, &scratch->bounds_y,
                &scratch->weights_y, &scratch->taps_y);
    row0 = scratch->bounds_y[0];
    row1 = 0;
    for (uint32_t y = 0; y < height; ++y) {
      row0 = std::min(row0, scratch->bounds_y[2 * y]);
      row1 = std::max(row1, scratch->bounds_y[2 * y] + scratch->bounds_y[2 * y + 1]);
    }
  }
  const uint8_t* rows = src.data + size_t{row0} * src.stride();
  size_t rows_stride = src.stride();
  if (!same_x) {
    ComputeTaps(src.width, box.x0, box.x1, width, options.clamp_to_box, &scratch->bounds_x,
                &scratch->weights_x, &scratch->taps_x);
    uint8_t* target = dst;
    if (!same_y) {
      scratch->rows.resize(out_stride * (row1 - row0));
      target = scratch->rows.data();
    }
    if (src.channels == 3) {
      ResizeRows<3>(src, row0, row1, width, options.mirror, *scratch, target);
    } else {
      ResizeRows<0>(src, row0, row1, width, options.mirror, *scratch, target);
    }
    rows = target;
    rows_stride = out_stride;
  }
  if (!same_y) {
    ResizeColumns(rows, row0, rows_stride, height, scratch, dst);
  } else if (same_x) {
    std::memcpy(dst, src.data, src.bytes());
  }
}

void ResizeBilinearAA(const PixelView& src, uint32_t width, uint32_t height, uint8_t* dst,
                      ResizeScratch* scratch) {
  ResizeBoxAA(src, ResizeBox{0, 0, double(src.width), double(src.height)}, width, height,
              ResizeOptions{}, dst, scratch);
}

void CmykToRgbInPlace(uint8_t* pixels, size_t count, bool adobe_inverted) {
  // Writing 3 bytes per pixel behind reading 4 never overwrites unread input.
  for (size_t i = 0; i < count; ++i) {
    const uint32_t c = pixels[4 * i], m = pixels[4 * i + 1], y = pixels[4 * i + 2],
                   k = pixels[4 * i + 3];
    uint8_t* out = pixels + 3 * i;
    if (adobe_inverted) {
      out[0] = static_cast<uint8_t>((c * k + 127) / 255);
      out[1] = static_cast<uint8_t>((m * k + 127) / 255);
      out[2] = static_cast<uint8_t>((y * k + 127) / 255);
    } else {
      out[0] = static_cast<uint8_t>(((255 - c) * (255 - k) + 127) / 255);
      out[1] = static_cast<uint8_t>(((255 - m) * (255 - k) + 127) / 255);
      out[2] = static_cast<uint8_t>(((255 - y) * (255 - k) + 127) / 255);
    }
  }
}

bool IsBenignJpegWarning(std::string_view message) {
  return message.find("extraneous bytes before marker 0xd9") != std::string_view::npos ||
         message.find("unknown JFIF revision") != std::string_view::npos ||
         message.find("thumbnail image size does not match") != std::string_view::npos;
}

}  // namespace shardpack::internal
