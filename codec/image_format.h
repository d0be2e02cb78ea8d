// What an image file holds, told from its first bytes.
//
// The packer decides every file by its content, never by its name: a JPEG
// named .png is a JPEG, a PNG named .jpg is a PNG (ImageNet holds one).
#ifndef SHARDPACK_CODEC_IMAGE_FORMAT_H_
#define SHARDPACK_CODEC_IMAGE_FORMAT_H_

#include <cstdint>
#include <string_view>

#include "shardpack/record.h"

namespace shardpack::codec {

enum class ImageFormat : uint8_t {
  kEmpty,    // no bytes
  kUnknown,  // none of the below
  kJpeg,     // FF D8
  kPng,      // 89 'PNG' 0D 0A 1A 0A
  kWebp,     // 'RIFF' <size> 'WEBP'
  kBmp,      // 'BM', at least a file header long
  kTiff,     // 'II' 2A 00 or 'MM' 00 2A (and BigTIFF: 2B)
  kPnm,      // 'P1'..'P6' then whitespace (PBM, PGM, PPM; plain or raw)
  kGif,      // 'GIF87a' or 'GIF89a': recognised, not decoded
};

// The format of `data`, from its first bytes. Thread-safe; reads at most 16
// bytes.
ImageFormat SniffImageFormat(ByteSpan data);

// "JPEG", "PNG", "WebP", "BMP", "TIFF", "PNM", "GIF", "empty" or "unknown".
std::string_view ImageFormatName(ImageFormat format);

// What a message says the bytes are: "PNG image", "WebP image", ... "JPEG
// image", "an empty file" or "unknown content".
std::string_view ImageContentName(ImageFormat format);

}  // namespace shardpack::codec

#endif  // SHARDPACK_CODEC_IMAGE_FORMAT_H_
