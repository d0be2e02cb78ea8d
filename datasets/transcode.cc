#include "datasets/transcode.h"

#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "format/errors.h"

namespace shardpack::datasets {
namespace {

using internal::AsAbsl;

// Fixed-point precision of the resize taps: 8-bit samples times 22-bit
// weights summed over a normalized kernel stay below 2^31 (Pillow uses the
// same budget, PRECISION_BITS in Resample.c).
constexpr int kWeightBits = 22;
constexpr int32_t kWeightOne = int32_t{1} << kWeightBits;

// libjpeg warnings that leave a complete, correct image: trailing bytes
// before EOI (common in camera and ImageNet files), an unknown JFIF minor
// version, and a JFIF thumbnail whose size does not match. Every other
// warning (premature end of data, bad Huffman code, ...) means the pixels
// are damaged.
bool IsBenignWarning(std::string_view message) {
  return message.find("extraneous bytes before marker 0xd9") != std::string_view::npos ||
         message.find("unknown JFIF revision") != std::string_view::npos ||
         message.find("thumbnail image size does not match") != std::string_view::npos;
}

uint8_t Clip8(int32_t v) { return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v)); }

double Triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// Taps of a triangle filter resampling `in` samples to `out` (Pillow's
// precompute_coeffs with the bilinear filter): for output i, taps
// weights[i * taps, +count) apply to inputs [first, first + count).
void ComputeTaps(uint32_t in, uint32_t out, std::vector<uint32_t>* bounds,
                 std::vector<int32_t>* weights, int* taps) {
  const double scale = static_cast<double>(in) / out;
  const double filter_scale = std::max(scale, 1.0);
  const double support = filter_scale;  // the triangle's support is 1
  *taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  bounds->resize(size_t{out} * 2);
  weights->assign(size_t{out} * static_cast<size_t>(*taps), 0);
  for (uint32_t i = 0; i < out; ++i) {
    const double center = (i + 0.5) * scale;
    const int first = std::max(static_cast<int>(center - support + 0.5), 0);
    const int last = std::min(static_cast<int>(center + support + 0.5), static_cast<int>(in));
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

void ResizeRows(const PixelView& src, uint32_t width, const ResizeScratch& s, uint8_t* dst) {
  const int ch = src.channels;
  for (uint32_t y = 0; y < src.height; ++y) {
    const uint8_t* row = src.data + y * src.stride();
    uint8_t* out = dst + size_t{y} * width * static_cast<size_t>(ch);
    for (uint32_t x = 0; x < width; ++x) {
      const uint8_t* in = row + size_t{s.bounds_x[2 * x]} * static_cast<size_t>(ch);
      const uint32_t count = s.bounds_x[2 * x + 1];
      const int32_t* w = s.weights_x.data() + size_t{x} * static_cast<size_t>(s.taps_x);
      for (int c = 0; c < ch; ++c) {
        int32_t sum = kWeightOne / 2;
        for (uint32_t k = 0; k < count; ++k) sum += in[k * static_cast<uint32_t>(ch) + c] * w[k];
        out[static_cast<size_t>(x) * static_cast<size_t>(ch) + static_cast<size_t>(c)] =
            Clip8(sum >> kWeightBits);
      }
    }
  }
}

void ResizeColumns(const PixelView& src, uint32_t height, ResizeScratch* s, uint8_t* dst) {
  const size_t stride = src.stride();
  s->accum.resize(stride);
  for (uint32_t y = 0; y < height; ++y) {
    std::fill(s->accum.begin(), s->accum.end(), kWeightOne / 2);
    const uint32_t first = s->bounds_y[2 * y];
    const uint32_t count = s->bounds_y[2 * y + 1];
    const int32_t* w = s->weights_y.data() + size_t{y} * static_cast<size_t>(s->taps_y);
    for (uint32_t k = 0; k < count; ++k) {
      const uint8_t* row = src.data + (first + k) * stride;
      const int32_t wk = w[k];
      for (size_t x = 0; x < stride; ++x) s->accum[x] += row[x] * wk;
    }
    uint8_t* out = dst + y * stride;
    for (size_t x = 0; x < stride; ++x) out[x] = Clip8(s->accum[x] >> kWeightBits);
  }
}

// The smallest DCT-scaled size of a width x height JPEG that is at least
// min_width x min_height (full size if none is smaller, or for 0 x 0).
void ChooseScaledSize(uint32_t width, uint32_t height, uint32_t min_width, uint32_t min_height,
                      uint32_t* out_width, uint32_t* out_height) {
  *out_width = width;
  *out_height = height;
  if (min_width == 0 && min_height == 0) return;  // full size asked for
  int n = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&n);
  for (int i = 0; factors != nullptr && i < n; ++i) {
    const tjscalingfactor f = factors[i];
    if (f.num > f.denom) continue;
    const auto w = static_cast<uint32_t>(TJSCALED(static_cast<int>(width), f));
    const auto h = static_cast<uint32_t>(TJSCALED(static_cast<int>(height), f));
    if (w >= min_width && h >= min_height && uint64_t{w} * h < uint64_t{*out_width} * *out_height) {
      *out_width = w;
      *out_height = h;
    }
  }
}

absl::Status DecodeError(void* handle, std::string_view name) {
  return absl::DataLossError(absl::StrCat(
      AsAbsl(name), ": corrupt JPEG data: ", tjGetErrorStr2(static_cast<tjhandle>(handle))));
}

}  // namespace

}  // namespace shardpack::datasets

namespace shardpack::internal {
uint8_t* GrowableBuffer::Get(size_t bytes) {
  if (bytes > capacity_) {
    data_.reset();
    capacity_ = 0;
    data_.reset(new (std::nothrow) uint8_t[bytes]);
    if (data_ == nullptr) return nullptr;
    capacity_ = bytes;
  }
  return data_.get();
}
}  // namespace shardpack::internal

namespace shardpack::datasets {

void FitLongerSide(uint32_t width, uint32_t height, int max_side, uint32_t* out_width,
                   uint32_t* out_height) {
  *out_width = width;
  *out_height = height;
  const uint32_t longer = std::max(width, height);
  if (max_side <= 0 || longer <= static_cast<uint32_t>(max_side)) return;
  const auto side = static_cast<uint64_t>(max_side);
  *out_width = static_cast<uint32_t>(std::max<uint64_t>(1, (width * side + longer / 2) / longer));
  *out_height = static_cast<uint32_t>(std::max<uint64_t>(1, (height * side + longer / 2) / longer));
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

void ResizeBilinearAA(const PixelView& src, uint32_t width, uint32_t height, uint8_t* dst,
                      ResizeScratch* scratch) {
  PixelView rows = src;
  if (width != src.width) {
    ComputeTaps(src.width, width, &scratch->bounds_x, &scratch->weights_x, &scratch->taps_x);
    // Without a vertical pass the rows go straight to dst.
    uint8_t* target = dst;
    if (height != src.height) {
      scratch->rows.resize(size_t{width} * src.height * static_cast<size_t>(src.channels));
      target = scratch->rows.data();
    }
    ResizeRows(src, width, *scratch, target);
    rows = PixelView{target, width, src.height, src.channels};
  }
  if (height != src.height) {
    ComputeTaps(src.height, height, &scratch->bounds_y, &scratch->weights_y, &scratch->taps_y);
    ResizeColumns(rows, height, scratch, dst);
  } else if (width == src.width) {
    std::memcpy(dst, src.data, src.bytes());
  }
}

absl::StatusOr<std::unique_ptr<Transcoder>> Transcoder::Create() {
  tjhandle decoder = tjInitDecompress();
  tjhandle encoder = tjInitCompress();
  if (decoder == nullptr || encoder == nullptr) {
    if (decoder != nullptr) tjDestroy(decoder);
    if (encoder != nullptr) tjDestroy(encoder);
    return absl::InternalError(absl::StrCat("cannot start TurboJPEG: ", tjGetErrorStr2(nullptr)));
  }
  return std::unique_ptr<Transcoder>(new Transcoder(decoder, encoder));
}

Transcoder::~Transcoder() {
  tjDestroy(static_cast<tjhandle>(decoder_));
  tjDestroy(static_cast<tjhandle>(encoder_));
}

absl::StatusOr<PixelView> Transcoder::DecodeProbed(ByteSpan jpeg, std::string_view name,
                                                   const JpegInfo& info, uint32_t min_width,
                                                   uint32_t min_height, bool keep_gray) {
  uint32_t width = 0, height = 0;
  ChooseScaledSize(info.width, info.height, min_width, min_height, &width, &height);
  const bool cmyk = info.components == 4;
  const bool gray = keep_gray && info.components == 1;
  const int format = cmyk ? TJPF_CMYK : (gray ? TJPF_GRAY : TJPF_RGB);
  const int in_channels = cmyk ? 4 : (gray ? 1 : 3);
  uint8_t* dst = decoded_.Get(size_t{width} * height * static_cast<size_t>(in_channels));
  if (dst == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("%s: no memory to decode a %ux%u image", AsAbsl(name), width, height));
  }
  tjhandle handle = static_cast<tjhandle>(decoder_);
  const int result = tjDecompress2(handle, jpeg.data(), static_cast<unsigned long>(jpeg.size()),
                                   dst, static_cast<int>(width), 0, static_cast<int>(height),
                                   format, TJFLAG_LIMITSCANS);
  if (result != 0 &&
      (tjGetErrorCode(handle) != TJERR_WARNING || !IsBenignWarning(tjGetErrorStr2(handle)))) {
    return DecodeError(handle, name);
  }
  if (cmyk) CmykToRgbInPlace(dst, size_t{width} * height, info.adobe);
  return PixelView{dst, width, height, cmyk ? 3 : in_channels};
}

absl::StatusOr<PixelView> Transcoder::Decode(ByteSpan jpeg, std::string_view name,
                                             const DecodeOptions& options, JpegInfo* info) {
  absl::StatusOr<JpegInfo> probed = ProbeJpeg(jpeg, name, options.probe);
  if (!probed.ok()) return probed.status();
  if (info != nullptr) *info = *probed;
  return DecodeProbed(jpeg, name, *probed, options.min_width, options.min_height,
                      options.keep_gray);
}

absl::Status Transcoder::Validate(ByteSpan jpeg, std::string_view name,
                                  const JpegProbeOptions& probe) {
  absl::StatusOr<JpegInfo> info = ProbeJpeg(jpeg, name, probe);
  if (!info.ok()) return info.status();
  // Gray output: the cheapest color conversion; 1x1: the smallest DCT scale.
  return DecodeProbed(jpeg, name, *info, 1, 1, /*keep_gray=*/true).status();
}

PixelView Transcoder::Resize(const PixelView& src, uint32_t width, uint32_t height) {
  if (src.width == width && src.height == height) return src;
  resized_.resize(size_t{width} * height * static_cast<size_t>(src.channels));
  ResizeBilinearAA(src, width, height, resized_.data(), &scratch_);
  return PixelView{resized_.data(), width, height, src.channels};
}

absl::Status Transcoder::Encode(const PixelView& src, int quality, std::vector<uint8_t>* out) {
  const bool gray = src.channels == 1;
  const int subsamp = gray ? TJSAMP_GRAY : TJSAMP_420;
  const unsigned long bound =
      tjBufSize(static_cast<int>(src.width), static_cast<int>(src.height), subsamp);
  uint8_t* buffer = bound == static_cast<unsigned long>(-1) ? nullptr : encoded_.Get(bound);
  if (buffer == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("no memory to encode a %ux%u JPEG", src.width, src.height));
  }
  unsigned long size = bound;
  tjhandle handle = static_cast<tjhandle>(encoder_);
  if (tjCompress2(handle, src.data, static_cast<int>(src.width), 0, static_cast<int>(src.height),
                  gray ? TJPF_GRAY : TJPF_RGB, &buffer, &size, subsamp, quality,
                  TJFLAG_NOREALLOC) != 0) {
    return absl::InternalError(absl::StrCat("JPEG encode failed: ", tjGetErrorStr2(handle)));
  }
  out->assign(buffer, buffer + size);
  return absl::OkStatus();
}

absl::StatusOr<ImageInfo> Transcoder::Reencode(ByteSpan jpeg, std::string_view name, int max_side,
                                               int quality, const JpegProbeOptions& probe,
                                               std::vector<uint8_t>* out) {
  absl::StatusOr<JpegInfo> info = ProbeJpeg(jpeg, name, probe);
  if (!info.ok()) return info.status();
  uint32_t width = 0, height = 0;
  FitLongerSide(info->width, info->height, max_side, &width, &height);
  absl::StatusOr<PixelView> decoded =
      DecodeProbed(jpeg, name, *info, width, height, /*keep_gray=*/true);
  if (!decoded.ok()) return decoded.status();
  const PixelView resized = Resize(*decoded, width, height);
  absl::Status s = Encode(resized, quality, out);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat(AsAbsl(name), ": ", s.message()));
  return ImageInfo{Encoding::kJpeg, Layout::kHWC, height, width,
                   static_cast<uint8_t>(resized.channels)};
}

absl::StatusOr<ImageInfo> Transcoder::DecodeToRaw(ByteSpan jpeg, std::string_view name,
                                                  uint32_t width, uint32_t height,
                                                  const JpegProbeOptions& probe,
                                                  std::vector<uint8_t>* out) {
  absl::StatusOr<JpegInfo> info = ProbeJpeg(jpeg, name, probe);
  if (!info.ok()) return info.status();
  absl::StatusOr<PixelView> decoded =
      DecodeProbed(jpeg, name, *info, width, height, /*keep_gray=*/false);
  if (!decoded.ok()) return decoded.status();
  out->resize(size_t{width} * height * 3);
  ResizeBilinearAA(*decoded, width, height, out->data(), &scratch_);
  return ImageInfo{Encoding::kRaw, Layout::kHWC, height, width, 3};
}

}  // namespace shardpack::datasets
