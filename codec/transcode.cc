#include "codec/transcode.h"

#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "codec/color.h"
#include "codec/image_format.h"
#include "codec/jpeg_error.h"
#include "common/errors.h"

namespace shardpack::codec {
namespace {

using common::AsAbsl;

using codec::IsBenignJpegWarning;

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
      (tjGetErrorCode(handle) != TJERR_WARNING || !IsBenignJpegWarning(tjGetErrorStr2(handle)))) {
    return DecodeError(handle, name);
  }
  if (cmyk) JpegCmykToRgbInPlace(dst, size_t{width} * height);
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

absl::StatusOr<PixelView> Transcoder::DecodeFull(ByteSpan image, std::string_view name,
                                                 const JpegProbeOptions& probe, bool keep_gray) {
  uint32_t width = 0, height = 0;
  return DecodeAny(
      image, name, probe, keep_gray,
      [](uint32_t w, uint32_t h, uint32_t* out_w, uint32_t* out_h) {
        *out_w = w;
        *out_h = h;
      },
      &width, &height);
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

absl::Status Transcoder::Encode(const PixelView& src, int quality, bool full_chroma,
                               std::vector<uint8_t>* out) {
  if (src.width > kMaxJpegSide || src.height > kMaxJpegSide) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%ux%u is too large to store as a JPEG (at most %u per side): give --max-side, or "
        "--mode raw",
        src.width, src.height, kMaxJpegSide));
  }
  const bool gray = src.channels == 1;
  const int subsamp = gray ? TJSAMP_GRAY : (full_chroma ? TJSAMP_444 : TJSAMP_420);
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

absl::StatusOr<PixelView> Transcoder::DecodeAny(ByteSpan image, std::string_view name,
                                                const JpegProbeOptions& probe, bool keep_gray,
                                                SizeFor size_for, uint32_t* width,
                                                uint32_t* height) {
  const codec::ImageFormat format = codec::SniffImageFormat(image);
  if (format != codec::ImageFormat::kJpeg) {
    // Decoded at full size (only JPEG has DCT scaling), then resized.
    const codec::DecodeSpec spec{probe.max_pixels, keep_gray};
    absl::StatusOr<PixelView> decoded =
        codec::DecodeImage(format, image, name, spec, &codec_buffers_);
    if (decoded.ok()) size_for(decoded->width, decoded->height, width, height);
    return decoded;
  }
  absl::StatusOr<JpegInfo> info = ProbeJpeg(image, name, probe);
  if (!info.ok()) return info.status();
  size_for(info->width, info->height, width, height);
  return DecodeProbed(image, name, *info, *width, *height, keep_gray);
}

absl::StatusOr<ImageInfo> Transcoder::Reencode(ByteSpan image, std::string_view name,
                                               const ReencodeOptions& options,
                                               const JpegProbeOptions& probe,
                                               std::vector<uint8_t>* out) {
  uint32_t width = 0, height = 0;
  absl::StatusOr<PixelView> decoded = DecodeAny(
      image, name, probe, /*keep_gray=*/true,
      [&](uint32_t w, uint32_t h, uint32_t* fit_w, uint32_t* fit_h) {
        FitLongerSide(w, h, options.max_side, fit_w, fit_h);
      },
      &width, &height);
  if (!decoded.ok()) return decoded.status();
  const PixelView resized = Resize(*decoded, width, height);
  absl::Status s = Encode(resized, options.quality, options.full_chroma, out);
  if (!s.ok()) return common::WithMessage(s, absl::StrCat(AsAbsl(name), ": ", s.message()));
  return ImageInfo{Encoding::kJpeg, Layout::kHWC, height, width,
                   static_cast<uint8_t>(resized.channels)};
}

absl::StatusOr<ImageInfo> Transcoder::DecodeToRaw(ByteSpan image, std::string_view name,
                                                  uint32_t width, uint32_t height,
                                                  const JpegProbeOptions& probe,
                                                  std::vector<uint8_t>* out) {
  uint32_t scaled_w = 0, scaled_h = 0;  // the JPEG DCT scale's lower bound
  absl::StatusOr<PixelView> decoded = DecodeAny(
      image, name, probe, /*keep_gray=*/false,
      [&](uint32_t, uint32_t, uint32_t* w, uint32_t* h) {
        *w = width;
        *h = height;
      },
      &scaled_w, &scaled_h);
  if (!decoded.ok()) return decoded.status();
  out->resize(size_t{width} * height * 3);
  ResizeBilinearAA(*decoded, width, height, out->data(), &scratch_);
  return ImageInfo{Encoding::kRaw, Layout::kHWC, height, width, 3};
}

}  // namespace shardpack::codec
