#include "codec/image_format.h"

#include <cstring>

#include "codec/bytes.h"

namespace shardpack::codec {
namespace {

using internal::StartsWith;

bool IsPnmSpace(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

ImageFormat SniffImageFormat(ByteSpan data) {
  using std::string_view_literals::operator""sv;
  if (data.empty()) return ImageFormat::kEmpty;
  if (data.size() >= 2 && data[0] == 0xFF && data[1] == 0xD8) return ImageFormat::kJpeg;
  if (StartsWith(data, "\x89PNG\r\n\x1a\n"sv)) return ImageFormat::kPng;
  if (data.size() >= 12 && StartsWith(data, "RIFF"sv) &&
      std::memcmp(data.data() + 8, "WEBP", 4) == 0) {
    return ImageFormat::kWebp;
  }
  // A BMP file header is 14 bytes; anything shorter starting "BM" is text.
  if (data.size() >= 14 && StartsWith(data, "BM"sv)) return ImageFormat::kBmp;
  if (StartsWith(data, "II*\0"sv) || StartsWith(data, "MM\0*"sv) || StartsWith(data, "II+\0"sv) ||
      StartsWith(data, "MM\0+"sv)) {
    return ImageFormat::kTiff;
  }
  if (data.size() >= 3 && data[0] == 'P' && data[1] >= '1' && data[1] <= '6' &&
      IsPnmSpace(data[2])) {
    return ImageFormat::kPnm;
  }
  if (StartsWith(data, "GIF87a"sv) || StartsWith(data, "GIF89a"sv)) return ImageFormat::kGif;
  return ImageFormat::kUnknown;
}

std::string_view ImageFormatName(ImageFormat format) {
  switch (format) {
    case ImageFormat::kEmpty:
      return "empty";
    case ImageFormat::kUnknown:
      return "unknown";
    case ImageFormat::kJpeg:
      return "JPEG";
    case ImageFormat::kPng:
      return "PNG";
    case ImageFormat::kWebp:
      return "WebP";
    case ImageFormat::kBmp:
      return "BMP";
    case ImageFormat::kTiff:
      return "TIFF";
    case ImageFormat::kPnm:
      return "PNM";
    case ImageFormat::kGif:
      return "GIF";
  }
  return "unknown";
}

std::string_view ImageContentName(ImageFormat format) {
  switch (format) {
    case ImageFormat::kEmpty:
      return "an empty file";
    case ImageFormat::kUnknown:
      return "unknown content";
    case ImageFormat::kJpeg:
      return "JPEG image";
    case ImageFormat::kPng:
      return "PNG image";
    case ImageFormat::kWebp:
      return "WebP image";
    case ImageFormat::kBmp:
      return "BMP image";
    case ImageFormat::kTiff:
      return "TIFF image";
    case ImageFormat::kPnm:
      return "PNM image";
    case ImageFormat::kGif:
      return "GIF image";
  }
  return "unknown content";
}

}  // namespace shardpack::codec
