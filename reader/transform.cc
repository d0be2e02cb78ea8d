#include "reader/transform.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/jpeg_decoder.h"
#include "codec/resize.h"
#include "common/rng.h"
#include "reader/prefetch.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace shardpack::reader {

namespace {

bool IsJpegKind(Transform::Kind k) {
  return k == Transform::Kind::kRandomResizedCrop || k == Transform::Kind::kCenterCrop;
}

// Rows of a few dozen pixels (up to 256 bytes) go in 16-byte moves, the
// last one overlapping: too short for memcpy's and memset's calls to pay.
constexpr size_t kShortRow = 256;

void CopyRow(uint8_t* d, const uint8_t* s, size_t n) {
  if (n < 16 || n > kShortRow) {
    std::memcpy(d, s, n);
    return;
  }
  for (size_t i = 0; i + 16 < n; i += 16) std::memcpy(d + i, s + i, 16);
  std::memcpy(d + n - 16, s + n - 16, 16);
}

void ZeroRow(uint8_t* d, size_t n) {
#if defined(__x86_64__)
  if (n >= 16 && n <= kShortRow) {
    __m128i zero = _mm_setzero_si128();
    // Hidden from the compiler, which turns a loop of stores of a known zero
    // back into a call to memset.
    asm("" : "+x"(zero));
    for (size_t i = 0; i + 16 < n; i += 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), zero);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + n - 16), zero);
    return;
  }
#endif
  std::memset(d, 0, n);
}

// d[i] = the c-byte pixel at last - c i, for i in [0, n): a row mirrored.
void MirrorPixels(const uint8_t* last, uint8_t* d, int n, int c) {
  for (int i = 0; i < n; ++i) std::memcpy(d + size_t(c) * i, last - size_t(c) * i, size_t(c));
}

#if defined(__x86_64__)
// The same for c = 3, five pixels a shuffle. Reads only the n pixels; the
// 16th byte of each store lands on the next pixel, written after it.
[[gnu::target("ssse3")]] void MirrorRgbSsse3(const uint8_t* last, uint8_t* d, int n) {
  const __m128i reverse5 = _mm_setr_epi8(12, 13, 14, 9, 10, 11, 6, 7, 8, 3, 4, 5, 0, 1, 2, -1);
  if (n < 7) return MirrorPixels(last, d, n, 3);
  std::memcpy(d, last, 3);  // its 16-byte load would read past `last`'s pixel
  int i = 1;
  for (; i + 6 <= n; i += 5) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(last - 3 * (i + 4)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 3 * i), _mm_shuffle_epi8(v, reverse5));
  }
  MirrorPixels(last - 3 * i, d + 3 * i, n - i, 3);
}
#endif

// SSSE3's row mirror for 3-byte pixels where the CPU has it, else null.
using MirrorFn = void (*)(const uint8_t* last, uint8_t* d, int n);
MirrorFn FastMirror(int c) {
#if defined(__x86_64__)
  static const bool ssse3 = __builtin_cpu_supports("ssse3");
  if (c == 3 && ssse3) return MirrorRgbSsse3;
#endif
  return nullptr;
}

// mean and std of a float32 output: finite, std not 0.
absl::Status CheckNormalization(const ReaderOptions& o) {
  for (int c = 0; c < 3; ++c) {
    if (!std::isfinite(o.mean[c])) {
      return absl::InvalidArgumentError(
          absl::StrCat("mean[", c, "] ", o.mean[c], " is out of range: a finite number"));
    }
    if (!std::isfinite(o.std[c]) || o.std[c] == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("std[", c, "] ", o.std[c], " is out of range: a finite number, not 0"));
    }
  }
  return absl::OkStatus();
}

// The size, scale and ratio of a RandomResizedCrop or CenterCrop.
absl::Status CheckJpegTransform(const Transform& tr) {
  const int out = tr.size;
  if (out <= 0 || out > kMaxTransformSize) {
    return absl::InvalidArgumentError(absl::StrCat("transform size ", out,
                                                   " is out of range: 1 to ",
                                                   kMaxTransformSize));
  }
  // Finite: an infinite ratio would make an infinite crop side.
  auto finite = [](const std::array<double, 2>& r) {
    return std::isfinite(r[0]) && std::isfinite(r[1]);
  };
  if (!(finite(tr.scale) && tr.scale[0] > 0 && tr.scale[0] <= tr.scale[1])) {
    return absl::InvalidArgumentError(
        absl::StrCat("RandomResizedCrop scale (", tr.scale[0], ", ", tr.scale[1],
                     ") is out of range: finite, 0 < scale[0] <= scale[1]"));
  }
  if (!(finite(tr.ratio) && tr.ratio[0] > 0 && tr.ratio[1] > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("RandomResizedCrop ratio (", tr.ratio[0], ", ", tr.ratio[1],
                     ") is out of range: finite and above 0"));
  }
  return absl::OkStatus();
}

// Whether `t` can make anything of images stored as `stored`.
absl::Status CheckStored(const Transform& t, const ImageInfo& stored) {
  const bool jpeg_kind = IsJpegKind(t.kind);
  if (stored.encoding == Encoding::kJpeg && !jpeg_kind) {
    return absl::InvalidArgumentError(
        "a JPEG dataset needs a decoding transform (rrc:SIZE or center:SIZE)");
  }
  if (stored.encoding != Encoding::kJpeg && jpeg_kind &&
      (stored.layout != Layout::kHWC || stored.channels == 0)) {
    return absl::InvalidArgumentError(
        "rrc and center transforms need JPEG images, or raw HWC images of a fixed channel count");
  }
  if (!jpeg_kind && (stored.height == 0 || stored.width == 0 || stored.channels == 0)) {
    return absl::InvalidArgumentError("the dataset's images have no fixed shape");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SampleTransform> SampleTransform::Make(const ReaderOptions& o,
                                                      const ImageInfo& stored,
                                                      Interpolation interpolation) {
  if (absl::Status s = CheckStored(o.transform, stored); !s.ok()) return s;
  SampleTransform t;
  t.transform_ = o.transform;
  t.stored_ = stored;
  t.interpolation_ = interpolation;
  t.layout_ = o.layout;
  t.dtype_ = o.dtype;
  t.seed_ = o.seed;
  if (absl::Status s = CheckNormalization(o); !s.ok()) return s;
  for (int c = 0; c < 3; ++c) {
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
    case Transform::Kind::kRandomResizedCrop:
    case Transform::Kind::kCenterCrop: {
      if (absl::Status s = CheckJpegTransform(o.transform); !s.ok()) return s;
      t.shape_ = {out, out, stored.encoding == Encoding::kJpeg ? 3 : int{stored.channels}, 0};
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
  uint64_t r = common::Draw(seed_, common::kStreamAugment, epoch, record_index);
  uint64_t span = static_cast<uint64_t>(range_) + 1;
  return {static_cast<int>(common::Below(r, span)), static_cast<int>(common::Below(r << 21, span)),
          ((r >> 63) & 1) != 0};
}

// Rows of the padded image outside the stored one, and columns likewise,
// read as zero.
void SampleTransform::CropHwc(const uint8_t* src, Crop crop, uint8_t* dst,
                              ByteSpan ahead) const {
  const int h = static_cast<int>(stored_.height), w = static_cast<int>(stored_.width);
  const int c = stored_.channels, out_h = shape_.height, out_w = shape_.width;
  const size_t row_bytes = size_t(out_w) * c, stored_row_bytes = size_t(w) * c;
  // Output columns [lo, hi) read stored pixels, the same in every row:
  // output column x reads stored column x0 + x, or x0 + out_w - 1 - x mirrored.
  const int x0 = crop.x - pad_;
  const int lo = crop.flip ? std::clamp(x0 + out_w - w, 0, out_w) : std::max(0, -x0);
  const int hi = std::max(lo, crop.flip ? std::clamp(x0 + out_w, 0, out_w) : std::min(out_w, w - x0));
  // Where output column lo reads in stored row 0 (the mirror reads leftwards
  // from there).
  const size_t from = size_t(crop.flip ? x0 + out_w - 1 - lo : x0 + lo) * c;
  const MirrorFn fast_mirror = crop.flip ? FastMirror(c) : nullptr;
  const bool edges = lo > 0 || hi < out_w;
  SpreadPrefetch prefetch(ahead, out_h);
  // Zeros first where the window reaches the padding, then the stored
  // pixels, straight from the record.
  for (int y = 0; y < out_h; ++y) {
    prefetch.Step();
    uint8_t* row = dst + size_t(y) * row_bytes;
    const int sy = y + crop.y - pad_;
    if (sy < 0 || sy >= h || hi == lo) {
      ZeroRow(row, row_bytes);
      continue;
    }
    if (edges) ZeroRow(row, row_bytes);
    const uint8_t* s = src + size_t(sy) * stored_row_bytes + from;
    if (fast_mirror != nullptr) {
      fast_mirror(s, row + size_t(lo) * c, hi - lo);
    } else if (crop.flip) {
      MirrorPixels(s, row + size_t(lo) * c, hi - lo, c);
    } else {
      CopyRow(row + size_t(lo) * c, s, size_t(hi - lo) * c);
    }
  }
  prefetch.Rest();
}

// The same from planar storage, producing HWC.
void SampleTransform::CropChw(const uint8_t* src, Crop crop, uint8_t* dst,
                              ByteSpan ahead) const {
  const int h = static_cast<int>(stored_.height), w = static_cast<int>(stored_.width);
  const int c = stored_.channels, out_h = shape_.height, out_w = shape_.width;
  SpreadPrefetch prefetch(ahead, out_h);
  for (int y = 0; y < out_h; ++y) {
    prefetch.Step();
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
  prefetch.Rest();
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

absl::Status SampleTransform::ApplyJpeg(const SourceImage& src, uint64_t epoch, uint8_t* dst,
                                        TransformScratch& scratch, const CropWindow* follow,
                                        CropWindow* window) const {
  if (scratch.decoder == nullptr) scratch.decoder = std::make_unique<codec::JpegDecoder>();
  codec::JpegDecoder& decoder = *scratch.decoder;
  std::vector<uint8_t>& staging = scratch.staging;
  absl::StatusOr<codec::JpegHeader> header = decoder.Start(src.bytes);
  if (!header.ok()) return Damaged(src, absl::StrCat(": ", header.status().message()));
  const bool train = transform_.kind == Transform::Kind::kRandomResizedCrop;
  const JpegCrop c = BoxFor(header->width, header->height, epoch, src.record_index, follow);
  if (window != nullptr) *window = WindowOf(c, header->width, header->height);
  const auto out = static_cast<uint32_t>(transform_.size);
  const codec::JpegRect rect{uint32_t(c.x0), uint32_t(c.y0),
                             uint32_t(std::ceil(c.x1)) - uint32_t(c.x0),
                             uint32_t(std::ceil(c.y1)) - uint32_t(c.y0)};
  // The eval resize reads beyond the crop as a resize of the whole image
  // would: its filter reaches (crop / out) source pixels past the edges.
  const uint32_t grow = train ? 0 : uint32_t(std::ceil((c.x1 - c.x0) / out)) + 1;
  // Fancy (smooth) chroma upsampling (DecodeRegion's only kind), not the
  // cheaper replicated chroma: with do_fancy_upsampling = FALSE,
  // libjpeg-turbo 2.1.5 on this crop + skip path made batches differ now and
  // then between 1 and 3 worker threads (JpegReaderTest, BackendReaderTest
  // under load: 6 failures in ~100 runs, none in ~140 after), so the output
  // depended on more than the record. The exact cause inside libjpeg was not
  // pinned down.
  // YCbCr JPEGs come back as planes: resized first and converted to RGB
  // after, there are fewer pixels to convert and no chroma to upsample
  // (the resize's filter does it).
  absl::StatusOr<codec::DecodedRegion> region =
      decoder.DecodeRegion(rect, out, out, grow, codec::RegionPixels::kYccPlanesWhenPossible);
  if (!region.ok()) return Damaged(src, absl::StrCat(": ", region.status().message()));
  // The decoded box is the integer rect; move it to the exact crop.
  const double f = region->scale_num / 8.0;
  codec::ResizeBox box = region->box;
  box.x0 += (c.x0 - rect.x) * f;
  box.y0 += (c.y0 - rect.y) * f;
  box.x1 = box.x0 + (c.x1 - c.x0) * f;
  box.y1 = box.y0 + (c.y1 - c.y0) * f;
  box.x1 = std::min<double>(box.x1, region->pixels.width);
  box.y1 = std::min<double>(box.y1, region->pixels.height);
  const bool direct = dtype_ == DType::kUint8 && layout_ == OutputLayout::kNHWC;
  const size_t hwc_bytes = size_t{out} * out * 3;
  if (!direct && staging.size() < hwc_bytes) staging.resize(hwc_bytes);
  uint8_t* hwc = direct ? dst : staging.data();
  // Straight into the slot: streamed past this core's cache (the consumer
  // or the GPU copy reads the batch from memory).
  codec::ResizeOptions options{train, c.flip};
  options.stream_output = direct;
  codec::ResizeRegion(*region, box, out, out, options, hwc, &scratch.resize);
  if (!direct) Finish(hwc, dst);
  return absl::OkStatus();
}

absl::Status SampleTransform::Damaged(const SourceImage& src, absl::string_view what) {
  return absl::DataLossError(
      absl::StrCat("record ", src.record_index, " ('", std::string(src.key), "')", what));
}

absl::Status SampleTransform::Apply(const SourceImage& src, uint64_t epoch, uint8_t* dst,
                                    TransformScratch& scratch, ByteSpan ahead,
                                    const CropWindow* follow, CropWindow* window) const {
  if (stored_.encoding == Encoding::kJpeg) {
    PrefetchLines(ahead);
    if (src.image.encoding != Encoding::kJpeg) return Damaged(src, " is not a JPEG");
    return ApplyJpeg(src, epoch, dst, scratch, follow, window);
  }
  if (IsJpegKind(transform_.kind)) {
    PrefetchLines(ahead);
    return ApplyRawResize(src, epoch, dst, scratch, follow, window);
  }
  // The raw crop (none, CIFAR's) here: the classic path, a call fewer.
  const ImageInfo& im = src.image;
  if (im.encoding != stored_.encoding || im.height != stored_.height ||
      im.width != stored_.width || im.channels != stored_.channels) {
    return Damaged(src, absl::StrCat(" is ", im.height, "x", im.width, "x", int{im.channels},
                                     ", the dataset's images are ", stored_.height, "x",
                                     stored_.width, "x", int{stored_.channels}));
  }
  // A follower has the leader's stored size (the opener checks): the same
  // offsets and flip.
  Crop crop = follow == nullptr
                  ? Choose(epoch, src.record_index)
                  : Crop{int(follow->y) + pad_, int(follow->x) + pad_, follow->flip};
  if (window != nullptr) {
    *window = {float(crop.y - pad_), float(crop.x - pad_), float(shape_.height),
               float(shape_.width),  int32_t(im.height),    int32_t(im.width), crop.flip};
  }
  const size_t hwc_bytes = size_t(shape_.height) * shape_.width * shape_.channels;
  // uint8 NHWC output is written in place; other outputs go through a small
  // small staging buffer of the worker's (one sample, reused).
  bool direct = dtype_ == DType::kUint8 && layout_ == OutputLayout::kNHWC;
  std::vector<uint8_t>& staging = scratch.staging;
  if (!direct && staging.size() < hwc_bytes) staging.resize(hwc_bytes);
  uint8_t* hwc = direct ? dst : staging.data();
  if (im.layout == Layout::kHWC) {
    CropHwc(src.bytes.data(), crop, hwc, ahead);
  } else {
    CropChw(src.bytes.data(), crop, hwc, ahead);
  }
  if (!direct) Finish(hwc, dst);
  return absl::OkStatus();
}

}  // namespace shardpack::reader
