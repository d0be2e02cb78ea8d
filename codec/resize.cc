#include "codec/resize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "codec/resize_kernels.h"

namespace shardpack::codec {
namespace {

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
// `clamp` the taps stay inside [floor(in0), ceil(in1)). taps->taps is even;
// the weights past `count` are zero.
void ComputeTaps(uint32_t in, double in0, double in1, uint32_t out, bool clamp,
                 ResizeTaps* taps) {
  const double scale = (in1 - in0) / out;
  const double filter_scale = std::max(scale, 1.0);
  const double support = filter_scale;  // the triangle's support is 1
  const int lo = clamp ? std::max(static_cast<int>(std::floor(in0)), 0) : 0;
  const int hi = clamp ? std::min(static_cast<int>(std::ceil(in1)), static_cast<int>(in))
                       : static_cast<int>(in);
  const int max_taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  taps->taps = max_taps + 1;  // even
  taps->bounds.resize(size_t{out} * 2);
  taps->weights.assign(size_t{out} * static_cast<size_t>(taps->taps), 0);
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
      int16_t* w = taps->weights.data() + size_t{i} * static_cast<size_t>(taps->taps);
      if (sum[j] > 0) {
        Quantize(t + j * static_cast<size_t>(max_taps), count[j], w);
      } else {
        w[0] = static_cast<int16_t>(kWeightOne);
        count[j] = 1;
      }
      taps->bounds[2 * i] = static_cast<uint32_t>(first[j]);
      taps->bounds[2 * i + 1] = static_cast<uint32_t>(count[j]);
    }
  }
}

// [lo, hi) of the inputs any output's taps read.
void TapRange(const ResizeTaps& t, uint32_t out, uint32_t* lo, uint32_t* hi) {
  *lo = t.bounds[0];
  *hi = 0;
  for (uint32_t i = 0; i < out; ++i) {
    *lo = std::min(*lo, t.bounds[2 * i]);
    *hi = std::max(*hi, t.bounds[2 * i] + t.bounds[2 * i + 1]);
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
    ComputeTaps(src.height, box.y0, box.y1, height, options.clamp_to_box, &s.y);
    TapRange(s.y, height, &row0, &row1);
  }
  if (!same_x) {
    ComputeTaps(src.width, box.x0, box.x1, width, options.clamp_to_box, &s.x);
    TapRange(s.x, width, &col0, &col1);
  }
  auto horizontal = [&](const PixelView& in, uint32_t y0, uint32_t y1, uint8_t* out) {
    ResizeRows(in, y0, y1, width, options.mirror, isa, s, out);
  };
  if (same_y) return horizontal(src, 0, src.height, dst);
  if (same_x) return ResizeColumns(src.data, 0, src.stride(), src.stride(), height, isa, s.y, dst);
  // Both passes. Horizontal first resizes only the rows the vertical taps
  // read; vertical first only the columns the horizontal taps read, so the
  // horizontal pass (the costlier per byte) runs on `height` rows. The
  // choice depends on the taps alone, never on the thread or the machine.
  const double h_first = HorizontalCost(row1 - row0, width, s.x.taps) +
                         VerticalCost(height, out_stride, s.y.taps);
  const double v_first = VerticalCost(height, (col1 - col0) * ch, s.y.taps) +
                         HorizontalCost(height, width, s.x.taps);
  if (h_first <= v_first) {
    GrowTo(&s.rows, out_stride * (row1 - row0));
    horizontal(src, row0, row1, s.rows.data());
    ResizeColumns(s.rows.data(), row0, out_stride, out_stride, height, isa, s.y, dst);
    return;
  }
  const size_t bytes = (col1 - col0) * ch;
  GrowTo(&s.rows, bytes * height);
  ResizeColumns(src.data + col0 * ch, 0, src.stride(), bytes, height, isa, s.y,
                s.rows.data());
  for (uint32_t x = 0; x < width; ++x) s.x.bounds[2 * x] -= col0;
  horizontal(PixelView{s.rows.data(), col1 - col0, height, src.channels}, 0, height, dst);
}

void ResizeYccToRgb(const SubsampledPlane planes[3], const ResizeBox& box, uint32_t width,
                    uint32_t height, const ResizeOptions& options, uint8_t* dst,
                    ResizeScratch* scratch) {
  ResizeScratch& s = *scratch;
  const ResizeIsa isa = std::min(options.max_isa, WidestResizeIsa());
  const size_t plane_bytes = size_t{width} * height;
  GrowTo(&s.ycc, 3 * plane_bytes);
  uint8_t* out = s.ycc.data();
  for (int c = 0; c < 3; ++c) {
    const SubsampledPlane& p = planes[c];
    // Cb's taps serve Cr when the two have the same factors, as they do in
    // every JPEG this is given in practice.
    ResizeTaps& tx = s.plane_x[c == 0 ? 0 : 1];
    ResizeTaps& ty = s.plane_y[c == 0 ? 0 : 1];
    if (c != 2 || p.factor_x != planes[1].factor_x || p.factor_y != planes[1].factor_y) {
      ComputeTaps(p.pixels.width, box.x0 / p.factor_x, box.x1 / p.factor_x, width,
                  options.clamp_to_box, &tx);
      ComputeTaps(p.pixels.height, box.y0 / p.factor_y, box.y1 / p.factor_y, height,
                  options.clamp_to_box, &ty);
    }
    uint32_t row0 = 0, row1 = 0, col0 = 0, col1 = 0;
    TapRange(ty, height, &row0, &row1);
    TapRange(tx, width, &col0, &col1);
    // Vertical pass first, then the horizontal one as a vertical pass over
    // the transpose (the vertical loops take 32 outputs per step, the
    // horizontal ones of one channel one), and the result transposed back
    // (mirrored there when asked). The integers are those of a vertical
    // then horizontal pass on every path.
    const uint32_t cols = col1 - col0;
    GrowTo(&s.rows, std::max<size_t>(size_t{cols}, width) * height);
    GrowTo(&s.transposed, size_t{cols} * height);
    ResizeColumns(p.pixels.data + col0, 0, p.pixels.stride(), cols, height, isa, ty,
                  s.rows.data());
    TransposeBytes(s.rows.data(), cols, height, cols, false, isa, s.transposed.data(), height);
    ResizeColumns(s.transposed.data(), col0, height, height, width, isa, tx, s.rows.data());
    TransposeBytes(s.rows.data(), height, width, height, options.mirror, isa,
                   out + c * plane_bytes, width);
  }
  YccToRgb(out, out + plane_bytes, out + 2 * plane_bytes, plane_bytes, dst, isa,
           options.stream_output);
}

void ResizeBilinearAA(const PixelView& src, uint32_t width, uint32_t height, uint8_t* dst,
                      ResizeScratch* scratch) {
  ResizeBoxAA(src, ResizeBox{0, 0, double(src.width), double(src.height)}, width, height,
              ResizeOptions{}, dst, scratch);
}

}  // namespace shardpack::codec
