// ImageConverter: image files and pixels into values of an image field, in
// the field's encoding (the rules are in shardpack/writer.h). The codecs are
// those of `shardpack images` (codec/): the JPEG header probe, the decoders
// of the other formats and the TurboJPEG transcoder, so that a PNG becomes
// the JPEG passthrough mode makes of it, and a raw field holds what the
// reader's decoders would give.
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "codec/image_format.h"
#include "codec/jpeg_probe.h"
#include "codec/transcode.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "shardpack/writer.h"

namespace shardpack {
namespace {

using common::AsAbsl;

std::string FieldName(const Field& f) { return absl::StrCat("field '", f.name, "'"); }

absl::Status Refused(const Field& f, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(FieldName(f), ": ", AsAbsl(why)));
}

std::string ChannelsText(int channels) {
  const char* kind = channels == 1 ? " (gray)" : channels == 3 ? " (RGB)" : "";
  return absl::StrCat(channels, "-channel", kind);
}

FieldValue ValueOf(const ImageInfo& image, ByteSpan bytes) {
  FieldValue v;
  v.present = true;
  v.image = image;
  v.bytes = bytes;
  return v;
}

// HWC pixels into `out` as CHW.
void ToPlanar(const uint8_t* hwc, uint32_t height, uint32_t width, uint32_t channels,
              uint8_t* out) {
  const size_t plane = size_t{height} * width;
  for (size_t p = 0; p < plane; ++p) {
    for (uint32_t c = 0; c < channels; ++c) out[c * plane + p] = hwc[p * channels + c];
  }
}

}  // namespace

class ImageConverter::Impl {
 public:
  Impl(const ImageConverterOptions& o, std::unique_ptr<codec::Transcoder> transcoder)
      : options_(o), transcoder_(std::move(transcoder)) {
    probe_.max_pixels = o.max_pixels;
  }

  absl::StatusOr<FieldValue> FromFile(const Field& f, ByteSpan file,
                                      std::vector<uint8_t>* storage) {
    SP_RETURN_IF_ERROR(CheckField(f));
    const std::string name = FieldName(f);
    const codec::ImageFormat format = codec::SniffImageFormat(file);
    if (f.image.encoding == Encoding::kJpeg) {
      if (format == codec::ImageFormat::kJpeg) {  // stored as it is
        SP_ASSIGN_OR_RETURN(const codec::JpegInfo info, codec::ProbeJpeg(file, name, probe_));
        return ValueOf({Encoding::kJpeg, Layout::kHWC, info.height, info.width,
                        static_cast<uint8_t>(info.components)},
                       file);
      }
      // Passthrough's conversion: full size, full chroma.
      const codec::ReencodeOptions convert{
          .max_side = 0, .quality = options_.jpeg_quality, .full_chroma = true};
      SP_ASSIGN_OR_RETURN(const ImageInfo image,
                          transcoder_->Reencode(file, name, convert, probe_, storage));
      return ValueOf(image, *storage);
    }
    // Gray stays gray unless the field holds RGB; what else a field holds
    // (4 channels) no file decodes to, which the channel check says.
    const bool keep_gray = f.image.channels != 3;
    SP_ASSIGN_OR_RETURN(const codec::PixelView pixels,
                        transcoder_->DecodeFull(file, name, probe_, keep_gray));
    const std::string what = absl::StrCat(AsAbsl(codec::ImageFormatName(format)), " image");
    SP_RETURN_IF_ERROR(CheckRaw(f, pixels.height, pixels.width,
                                static_cast<uint32_t>(pixels.channels), what));
    return Raw(f, pixels.data, pixels.height, pixels.width,
               static_cast<uint32_t>(pixels.channels), /*copy=*/true, storage);
  }

  absl::StatusOr<FieldValue> FromPixels(const Field& f, ByteSpan pixels, uint32_t height,
                                        uint32_t width, uint32_t channels,
                                        std::vector<uint8_t>* storage) {
    SP_RETURN_IF_ERROR(CheckField(f));
    if (height == 0 || width == 0 || channels == 0 || channels > 255) {
      return Refused(f, absl::StrCat("pixels of shape ", height, "x", width, "x", channels,
                                     ": each side at least 1, channels at most 255"));
    }
    const ImageInfo shape{Encoding::kRaw, Layout::kHWC, height, width,
                          static_cast<uint8_t>(channels)};
    if (shape.RawBytes() != pixels.size()) {
      return Refused(f, absl::StrCat(pixels.size(), " bytes of pixels for ", height, "x", width,
                                     "x", channels));
    }
    if (f.image.encoding == Encoding::kJpeg) return Encode(f, pixels, shape, storage);
    SP_RETURN_IF_ERROR(CheckRaw(f, height, width, channels, "image"));
    return Raw(f, pixels.data(), height, width, channels, /*copy=*/false, storage);
  }

 private:
  static absl::Status CheckField(const Field& f) {
    if (f.type != FieldType::kImage) {
      return Refused(f, absl::StrCat("a ", AsAbsl(FieldTypeName(f.type)),
                                     " field, not an image field"));
    }
    return absl::OkStatus();
  }

  // The field's channels and fixed shape, never resized.
  static absl::Status CheckRaw(const Field& f, uint32_t height, uint32_t width,
                               uint32_t channels, std::string_view what) {
    const ImageInfo& want = f.image;
    if (want.channels != 0 && channels != want.channels) {
      return Refused(f, absl::StrCat("a ", ChannelsText(static_cast<int>(channels)), " ",
                                     AsAbsl(what), ", the field holds ",
                                     ChannelsText(want.channels), " images"));
    }
    if ((want.height != 0 && height != want.height) || (want.width != 0 && width != want.width)) {
      const bool vowel = !what.empty() && std::string_view("aeiou").find(what[0]) != what.npos;
      return Refused(f, absl::StrFormat(
                            "%s %s of %ux%u (HxW), the field holds %ux%u: images are not resized",
                            vowel ? "an" : "a", AsAbsl(what), height, width, want.height,
                            want.width));
    }
    return absl::OkStatus();
  }

  // HWC pixels as a raw value of `f`'s layout: a view of them when they
  // need no copy, else in `storage`.
  static FieldValue Raw(const Field& f, const uint8_t* hwc, uint32_t height, uint32_t width,
                        uint32_t channels, bool copy, std::vector<uint8_t>* storage) {
    const ImageInfo image{Encoding::kRaw, f.image.layout, height, width,
                          static_cast<uint8_t>(channels)};
    const size_t bytes = image.RawBytes();
    if (f.image.layout == Layout::kCHW) {
      storage->resize(bytes);
      ToPlanar(hwc, height, width, channels, storage->data());
    } else if (copy) {
      storage->assign(hwc, hwc + bytes);
    } else {
      return ValueOf(image, ByteSpan(hwc, bytes));
    }
    return ValueOf(image, *storage);
  }

  absl::StatusOr<FieldValue> Encode(const Field& f, ByteSpan pixels, const ImageInfo& shape,
                                    std::vector<uint8_t>* storage) {
    if (shape.channels != 1 && shape.channels != 3) {
      return Refused(f, absl::StrCat("a JPEG holds 1 (gray) or 3 (RGB) channels, not ",
                                     shape.channels));
    }
    if (shape.height > codec::kMaxJpegSide || shape.width > codec::kMaxJpegSide) {
      return Refused(f, absl::StrCat(shape.height, "x", shape.width,
                                     " is too large for a JPEG (at most ", codec::kMaxJpegSide,
                                     " per side)"));
    }
    const codec::PixelView view{pixels.data(), shape.width, shape.height, shape.channels};
    absl::Status encoded =
        transcoder_->Encode(view, options_.jpeg_quality, /*full_chroma=*/true, storage);
    if (!encoded.ok()) return Refused(f, std::string(encoded.message()));
    ImageInfo image = shape;
    image.encoding = Encoding::kJpeg;
    return ValueOf(image, *storage);
  }

  ImageConverterOptions options_;
  codec::JpegProbeOptions probe_;
  std::unique_ptr<codec::Transcoder> transcoder_;
};

absl::StatusOr<std::unique_ptr<ImageConverter>> ImageConverter::Create(
    const ImageConverterOptions& options) {
  if (options.jpeg_quality < 1 || options.jpeg_quality > 100) {
    return absl::InvalidArgumentError(
        absl::StrCat("ImageConverter: jpeg_quality ", options.jpeg_quality, " is not in 1..100"));
  }
  SP_ASSIGN_OR_RETURN(std::unique_ptr<codec::Transcoder> transcoder, codec::Transcoder::Create());
  return std::unique_ptr<ImageConverter>(
      new ImageConverter(std::make_unique<Impl>(options, std::move(transcoder))));
}

ImageConverter::ImageConverter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ImageConverter::~ImageConverter() = default;

absl::StatusOr<FieldValue> ImageConverter::FromFile(const Field& field, ByteSpan file,
                                                    std::vector<uint8_t>* storage) {
  return impl_->FromFile(field, file, storage);
}

absl::StatusOr<FieldValue> ImageConverter::FromPixels(const Field& field, ByteSpan pixels,
                                                      uint32_t height, uint32_t width,
                                                      uint32_t channels,
                                                      std::vector<uint8_t>* storage) {
  return impl_->FromPixels(field, pixels, height, width, channels, storage);
}

}  // namespace shardpack
