// Crop windows: the boxes RandomResizedCrop and CenterCrop draw, the window
// an image field that follows the first takes (scaled to its own size), and
// those crops of raw images (resized antialiased, or nearest-neighbour for
// label maps).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/resize.h"
#include "common/rng.h"
#include "reader/transform.h"

namespace shardpack::reader {
namespace {

// Uniform in [0, 1) from 32 bits of a draw.
double Unit32(uint64_t bits) { return static_cast<double>(bits & 0xffffffffu) * 0x1p-32; }

// Python's round(): halves to even (the default rounding mode).
int RoundHalfEven(double v) { return static_cast<int>(std::nearbyint(v)); }

// Writes box `box` of `src` (HWC) resized to out_w x out_h into `dst`, each
// output pixel the source pixel under its centre: no value is made up, so a
// label map stays one. `mirror`: output column x from column out_w - 1 - x.
void ResizeNearest(const codec::PixelView& src, const codec::ResizeBox& box, int out_w,
                   int out_h, bool mirror, uint8_t* dst, std::vector<uint32_t>& columns) {
  const size_t c = static_cast<size_t>(src.channels);
  auto source = [](double lo, double span, int i, int out, uint32_t size) {
    const double v = std::floor(lo + (i + 0.5) * span / out);
    return static_cast<uint32_t>(std::clamp<double>(v, 0, double(size) - 1));
  };
  columns.resize(static_cast<size_t>(out_w));
  for (int x = 0; x < out_w; ++x) {
    const int from = mirror ? out_w - 1 - x : x;
    columns[size_t(x)] = source(box.x0, box.x1 - box.x0, from, out_w, src.width) * uint32_t(c);
  }
  for (int y = 0; y < out_h; ++y) {
    const uint8_t* row = src.data + size_t{source(box.y0, box.y1 - box.y0, y, out_h, src.height)} *
                                        src.stride();
    uint8_t* d = dst + size_t(y) * size_t(out_w) * c;
    if (c == 1) {
      for (int x = 0; x < out_w; ++x) d[x] = row[columns[size_t(x)]];
    } else {
      for (int x = 0; x < out_w; ++x) std::memcpy(d + size_t(x) * c, row + columns[size_t(x)], c);
    }
  }
}

}  // namespace

JpegCrop SampleRandomResizedCrop(uint32_t width, uint32_t height, const Transform& t,
                                 uint64_t seed, uint64_t epoch, uint64_t record_index) {
  const uint64_t base = common::Draw(seed, common::kStreamAugment, epoch, record_index);
  const bool flip = (base >> 63) != 0;
  const double area = double(width) * height;
  const double log_lo = std::log(t.ratio[0]), log_hi = std::log(t.ratio[1]);
  for (uint64_t k = 0; k < 10; ++k) {
    const uint64_t r = common::Draw(base, k, 0);
    const double target = area * (t.scale[0] + (t.scale[1] - t.scale[0]) * Unit32(r >> 32));
    const double aspect = std::exp(log_lo + (log_hi - log_lo) * Unit32(r));
    // Compared as doubles: with a scale or ratio far from 1 a side may not
    // fit an int.
    const double wd = std::nearbyint(std::sqrt(target * aspect));
    const double hd = std::nearbyint(std::sqrt(target / aspect));
    if (wd > 0 && hd > 0 && wd <= width && hd <= height) {
      const int w = static_cast<int>(wd), h = static_cast<int>(hd);
      const auto y = double(common::Below(common::Draw(base, k, 1), height - uint32_t(h) + 1));
      const auto x = double(common::Below(common::Draw(base, k, 2), width - uint32_t(w) + 1));
      return {x, y, x + w, y + h, flip, false};
    }
  }
  // torchvision's fallback: the central crop, its ratio clamped to `ratio`.
  const double in_ratio = double(width) / height;
  int w = int(width), h = int(height);
  if (in_ratio < std::min(t.ratio[0], t.ratio[1])) {
    h = RoundHalfEven(w / std::min(t.ratio[0], t.ratio[1]));
  } else if (in_ratio > std::max(t.ratio[0], t.ratio[1])) {
    w = RoundHalfEven(h * std::max(t.ratio[0], t.ratio[1]));
  }
  const double y = (int(height) - h) / 2, x = (int(width) - w) / 2;
  return {x, y, x + w, y + h, flip, true};
}

JpegCrop CenterCropBox(uint32_t width, uint32_t height, int size) {
  // Resize(s): the shorter side to s, the longer truncated as torchvision's
  // _compute_resized_output_size does; CenterCrop: offsets rounded.
  const int s = size * 256 / 224;
  const bool wide = width > height;
  const int short_side = int(wide ? height : width), long_side = int(wide ? width : height);
  const int new_long = int(int64_t{s} * long_side / short_side);
  const int new_w = wide ? new_long : s, new_h = wide ? s : new_long;
  const int top = RoundHalfEven((new_h - size) / 2.0), left = RoundHalfEven((new_w - size) / 2.0);
  const double fx = double(width) / new_w, fy = double(height) / new_h;
  return {left * fx, top * fy, (left + size) * fx, (top + size) * fy, false, false};
}

CropWindow WindowOf(const JpegCrop& c, uint32_t width, uint32_t height) {
  return {float(c.y0),        float(c.x0),       float(c.y1 - c.y0), float(c.x1 - c.x0),
          int32_t(height), int32_t(width), c.flip};
}

JpegCrop SampleTransform::BoxFor(uint32_t width, uint32_t height, uint64_t epoch,
                                 uint64_t record_index, const CropWindow* follow) const {
  if (follow == nullptr) {
    if (transform_.kind == Transform::Kind::kRandomResizedCrop) {
      return SampleRandomResizedCrop(width, height, transform_, seed_, epoch, record_index);
    }
    return CenterCropBox(width, height, transform_.size);
  }
  // The leader's window, in this image's pixels: the same part of the scene
  // when the two cover it alike (a mask of its photo, at any resolution).
  const double sx = follow->width > 0 ? double(width) / follow->width : 1;
  const double sy = follow->height > 0 ? double(height) / follow->height : 1;
  JpegCrop c;
  c.x0 = std::clamp<double>(follow->x * sx, 0, width);
  c.y0 = std::clamp<double>(follow->y * sy, 0, height);
  c.x1 = std::clamp<double>((follow->x + follow->w) * sx, c.x0, width);
  c.y1 = std::clamp<double>((follow->y + follow->h) * sy, c.y0, height);
  // A window of no pixel (a degenerate leader) takes one.
  if (c.x1 - c.x0 < 1) c.x1 = std::min<double>(width, c.x0 + 1), c.x0 = c.x1 - 1;
  if (c.y1 - c.y0 < 1) c.y1 = std::min<double>(height, c.y0 + 1), c.y0 = c.y1 - 1;
  c.flip = follow->flip;
  return c;
}

absl::Status SampleTransform::ApplyRawResize(const SourceImage& src, uint64_t epoch,
                                             uint8_t* dst, TransformScratch& scratch,
                                             const CropWindow* follow, CropWindow* window) const {
  const ImageInfo& im = src.image;
  if (im.encoding != Encoding::kRaw || im.layout != Layout::kHWC ||
      im.channels != stored_.channels || im.height == 0 || im.width == 0 ||
      im.RawBytes() != src.bytes.size()) {
    return Damaged(src, absl::StrCat(" is ", im.height, "x", im.width, "x", int{im.channels},
                                     ", not raw HWC of ", int{stored_.channels}, " channels"));
  }
  const JpegCrop c = BoxFor(im.width, im.height, epoch, src.record_index, follow);
  if (window != nullptr) *window = WindowOf(c, im.width, im.height);
  const codec::PixelView pixels{src.bytes.data(), im.width, im.height, int{im.channels}};
  const codec::ResizeBox box{c.x0, c.y0, c.x1, c.y1};
  const bool direct = dtype_ == DType::kUint8 && layout_ == OutputLayout::kNHWC;
  const size_t hwc_bytes = size_t(shape_.height) * shape_.width * shape_.channels;
  if (!direct && scratch.staging.size() < hwc_bytes) scratch.staging.resize(hwc_bytes);
  uint8_t* hwc = direct ? dst : scratch.staging.data();
  const auto out = static_cast<uint32_t>(transform_.size);
  if (interpolation_ == Interpolation::kNearest) {
    ResizeNearest(pixels, box, int(out), int(out), c.flip, hwc, scratch.columns);
  } else {
    const bool train = transform_.kind == Transform::Kind::kRandomResizedCrop;
    codec::ResizeBoxAA(pixels, box, out, out, codec::ResizeOptions{train, c.flip}, hwc,
                       &scratch.resize);
  }
  if (!direct) Finish(hwc, dst);
  return absl::OkStatus();
}

}  // namespace shardpack::reader
