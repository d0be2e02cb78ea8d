#include "codec/image_format.h"

#include <cstring>

#include "codec/bytes.h"
#include "common/enum_names.h"

namespace shardpack::codec {
namespace {

using codec::StartsWith;

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

namespace {
using common::EnumName;
constexpr EnumName<ImageFormat> kFormatNames[] = {
    {ImageFormat::kEmpty, "empty"}, {ImageFormat::kUnknown, "unknown"},
    {ImageFormat::kJpeg, "JPEG"},   {ImageFormat::kPng, "PNG"},
    {ImageFormat::kWebp, "WebP"},   {ImageFormat::kBmp, "BMP"},
    {ImageFormat::kTiff, "TIFF"},   {ImageFormat::kPnm, "PNM"},
    {ImageFormat::kGif, "GIF"}};
// What a message calls a file of each format.
constexpr EnumName<ImageFormat> kContentNames[] = {
    {ImageFormat::kEmpty, "an empty file"}, {ImageFormat::kUnknown, "unknown content"},
    {ImageFormat::kJpeg, "JPEG image"},     {ImageFormat::kPng, "PNG image"},
    {ImageFormat::kWebp, "WebP image"},     {ImageFormat::kBmp, "BMP image"},
    {ImageFormat::kTiff, "TIFF image"},     {ImageFormat::kPnm, "PNM image"},
    {ImageFormat::kGif, "GIF image"}};
}  // namespace

std::string_view ImageFormatName(ImageFormat format) {
  return common::NameIn(kFormatNames, format);
}

std::string_view ImageContentName(ImageFormat format) {
  const std::string_view name = common::NameIn(kContentNames, format);
  return name == "unknown" ? "unknown content" : name;
}

}  // namespace shardpack::codec
