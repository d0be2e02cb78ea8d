#include "reader/transform.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "reader/rng.h"

namespace shardpack::internal {

absl::StatusOr<SampleTransform> SampleTransform::Make(const ReaderOptions& o,
                                                      const ImageInfo& stored) {
  if (stored.encoding != Encoding::kRaw) {
    return absl::UnimplementedError("JPEG datasets need the decoding transforms (not yet)");
  }
  if (stored.height == 0 || stored.width == 0 || stored.channels == 0) {
    return absl::InvalidArgumentError("the dataset's images have no fixed shape");
  }
  SampleTransform t;
  t.transform_ = o.transform;
  t.stored_ = stored;
  t.layout_ = o.layout;
  t.dtype_ = o.dtype;
  t.seed_ = o.seed;
  for (int c = 0; c < 3; ++c) {
    if (o.std[c] == 0) return absl::InvalidArgumentError("std must not be 0");
    t.scale_[c] = 1.f / (255.f * o.std[c]);
    t.bias_[c] = -o.mean[c] / o.std[c];
  }
  const int h = static_cast<int>(stored.height), w = static_cast<int>(stored.width);
  int out = o.transform.size;
  switch (o.transform.kind) {
    case Transform::Kind::kNone:
      t.shape_ = {h, w, stored.channels, 0};
      break;
    case Transform::Kind::kCifarTrain:
    case Transform::Kind::kCifarEval: {
      if (h != w) return absl::InvalidArgumentError("CIFAR transforms need square images");
      // A dataset packed with --pad holds (out + 2 stored_pad) squares; only
      // the rest of the requested padding is added here.
      int stored_pad = std::max(0, (h - out) / 2);
      bool train = o.transform.kind == Transform::Kind::kCifarTrain;
      t.pad_ = train ? std::max(0, o.transform.pad - stored_pad) : 0;
      t.range_ = train ? h + 2 * t.pad_ - out : 0;
      t.center_ = (h + 2 * t.pad_ - out) / 2;
      if (out <= 0 || t.range_ < 0 || h + 2 * t.pad_ < out) {
        return absl::InvalidArgumentError(
            absl::StrCat("crop of ", out, " does not fit stored images of ", h, "x", w));
      }
      t.shape_ = {out, out, stored.channels, 0};
      break;
    }
  }
  size_t elem = o.dtype == DType::kFloat32 ? sizeof(float) : 1;
  t.shape_.sample_bytes = size_t(t.shape_.height) * t.shape_.width * t.shape_.channels * elem;
  return t;
}

SampleTransform::Crop SampleTransform::Choose(uint64_t epoch, uint64_t record_index) const {
  if (transform_.kind != Transform::Kind::kCifarTrain) {
    int c = transform_.kind == Transform::Kind::kNone ? 0 : center_;
    return {c, c, false};
  }
  // One draw per sample: offsets and flip from disjoint bits.
  uint64_t r = Draw(seed_, kStreamAugment, epoch, record_index);
  uint64_t span = static_cast<uint64_t>(range_) + 1;
  return {static_cast<int>(Below(r, span)), static_cast<int>(Below(r << 21, span)),
          ((r >> 63) & 1) != 0};
}

// Rows of the padded image outside the stored one, and columns likewise,
// read as zero.
void SampleTransform::CropHwc(const uint8_t* src, Crop crop, uint8_t* dst) const {
  const int h = static_cast<int>(stored_.height), w = static_cast<int>(stored_.width);
  const int c = stored_.channels, out_h = shape_.height, out_w = shape_.width;
  for (int y = 0; y < out_h; ++y) {
    uint8_t* row = dst + size_t(y) * out_w * c;
    int sy = y + crop.y - pad_;
    if (sy < 0 || sy >= h) {
      std::memset(row, 0, size_t(out_w) * c);
      continue;
    }
    const uint8_t* srow = src + size_t(sy) * w * c;
    int x0 = crop.x - pad_;  // stored column of output column 0
    int lo = std::max(0, -x0), hi = std::min(out_w, w - x0);
    if (!crop.flip) {
      std::memset(row, 0, size_t(std::max(lo, 0)) * c);
      if (hi > lo) std::memcpy(row + size_t(lo) * c, srow + size_t(lo + x0) * c, size_t(hi - lo) * c);
      if (hi < out_w) std::memset(row + size_t(std::max(hi, 0)) * c, 0, size_t(out_w - std::max(hi, 0)) * c);
      continue;
    }
    for (int x = 0; x < out_w; ++x) {
      int sx = x0 + (out_w - 1 - x);  // mirror within the crop window
      uint8_t* px = row + size_t(x) * c;
      if (sx < 0 || sx >= w) {
        std::memset(px, 0, c);
      } else {
        std::memcpy(px, srow + size_t(sx) * c, c);
      }
    }
  }
}

// The same from planar storage, producing HWC.
void SampleTransform::CropChw(const uint8_t* src, Crop crop, uint8_t* dst) const {
  const int h = static_cast<int>(stored_.height), w = static_cast<int>(stored_.width);
  const int c = stored_.channels, out_h = shape_.height, out_w = shape_.width;
  for (int y = 0; y < out_h; ++y) {
    int sy = y + crop.y - pad_;
    for (int x = 0; x < out_w; ++x) {
      int sx = crop.x - pad_ + (crop.flip ? out_w - 1 - x : x);
      bool inside = sy >= 0 && sy < h && sx >= 0 && sx < w;
      for (int k = 0; k < c; ++k) {
        dst[(size_t(y) * out_w + x) * c + k] =
            inside ? src[(size_t(k) * h + sy) * w + sx] : 0;
      }
    }
  }
}

// HWC uint8 to the configured layout and dtype.
void SampleTransform::Finish(const uint8_t* hwc, uint8_t* dst) const {
  const int hw = shape_.height * shape_.width, c = shape_.channels;
  if (dtype_ == DType::kUint8) {
    if (layout_ == OutputLayout::kNHWC) {
      if (hwc != dst) std::memcpy(dst, hwc, size_t(hw) * c);
      return;
    }
    for (int k = 0; k < c; ++k)
      for (int i = 0; i < hw; ++i) dst[size_t(k) * hw + i] = hwc[size_t(i) * c + k];
    return;
  }
  float* f = reinterpret_cast<float*>(dst);
  for (int i = 0; i < hw; ++i) {
    for (int k = 0; k < c; ++k) {
      float v = hwc[size_t(i) * c + k] * scale_[k % 3] + bias_[k % 3];
      if (layout_ == OutputLayout::kNHWC) {
        f[size_t(i) * c + k] = v;
      } else {
        f[size_t(k) * hw + i] = v;
      }
    }
  }
}

absl::Status SampleTransform::Apply(const Record& record, uint64_t epoch,
                                    uint64_t record_index, uint8_t* dst) const {
  const ImageInfo& im = record.image;
  if (im.encoding != stored_.encoding || im.height != stored_.height ||
      im.width != stored_.width || im.channels != stored_.channels) {
    return absl::DataLossError(absl::StrCat(
        "record ", record_index, " ('", std::string(record.key), "') is ", im.height, "x",
        im.width, "x", int{im.channels}, ", the dataset's images are ", stored_.height, "x",
        stored_.width, "x", int{stored_.channels}));
  }
  Crop crop = Choose(epoch, record_index);
  const size_t hwc_bytes = size_t(shape_.height) * shape_.width * shape_.channels;
  // uint8 NHWC output is written in place; other outputs go through a small
  // per-thread staging buffer (one sample, reused).
  bool direct = dtype_ == DType::kUint8 && layout_ == OutputLayout::kNHWC;
  thread_local std::vector<uint8_t> staging;
  if (!direct && staging.size() < hwc_bytes) staging.resize(hwc_bytes);
  uint8_t* hwc = direct ? dst : staging.data();
  if (im.layout == Layout::kHWC) {
    CropHwc(record.payload.data(), crop, hwc);
  } else {
    CropChw(record.payload.data(), crop, hwc);
  }
  if (!direct) Finish(hwc, dst);
  return absl::OkStatus();
}

}  // namespace shardpack::internal
