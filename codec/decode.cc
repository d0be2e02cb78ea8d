#include "codec/decode.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/errors.h"

namespace shardpack::codec {

using common::AsAbsl;

bool HasDecoder(ImageFormat format) {
  switch (format) {
    case ImageFormat::kPng:
    case ImageFormat::kWebp:
    case ImageFormat::kBmp:
    case ImageFormat::kTiff:
    case ImageFormat::kPnm:
      return true;
    default:
      return false;
  }
}

absl::StatusOr<PixelView> DecodeImage(ImageFormat format, ByteSpan data, std::string_view name,
                                      const DecodeSpec& spec, DecodeBuffers* buffers) {
  switch (format) {
    case ImageFormat::kPng:
      return DecodePng(data, name, spec, buffers);
    case ImageFormat::kWebp:
      return DecodeWebp(data, name, spec, buffers);
    case ImageFormat::kBmp:
      return DecodeBmp(data, name, spec, buffers);
    case ImageFormat::kTiff:
      return DecodeTiff(data, name, spec, buffers);
    case ImageFormat::kPnm:
      return DecodePnm(data, name, spec, buffers);
    case ImageFormat::kEmpty:
      return common::DataLossAt(name, 0, "empty file");
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(AsAbsl(name), ": ", AsAbsl(ImageContentName(format)),
                       ": not a format shardpack decodes (JPEG, PNG, WebP, BMP, TIFF, PNM)"));
  }
}

absl::Status CheckImageSize(std::string_view name, ImageFormat format, uint64_t width,
                            uint64_t height, const DecodeSpec& spec) {
  const std::string_view what = ImageFormatName(format);
  if (width == 0 || height == 0) {
    return absl::DataLossError(absl::StrFormat("%s: bad %s image size %ux%u", AsAbsl(name),
                                               AsAbsl(what), width, height));
  }
  // Each side fits 32 bits in every format we read, so the product cannot
  // wrap; a side alone over the limit is refused before the product.
  if (width > spec.max_pixels || height > spec.max_pixels || width * height > spec.max_pixels) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: image too large: %ux%u %s (limit: %u pixels)",
                                                      AsAbsl(name), width, height, AsAbsl(what),
                                                      spec.max_pixels));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint8_t*> PixelMemory(std::string_view name, uint32_t width, uint32_t height,
                                     int channels, DecodeBuffers* buffers) {
  uint8_t* p = buffers->pixels.Get(size_t{width} * height * static_cast<size_t>(channels));
  if (p == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("%s: no memory to decode a %ux%u image", AsAbsl(name), width, height));
  }
  return p;
}

}  // namespace shardpack::codec
