// Color conversion shared by the decoders: CMYK to RGB for the JPEG paths
// (the packer's TurboJPEG decode, codec/transcode.cc, and the reader's
// JpegDecoder, codec/jpeg_decoder.cc) and the TIFF decoder.
#ifndef SHARDPACK_CODEC_COLOR_H_
#define SHARDPACK_CODEC_COLOR_H_

#include <cstddef>
#include <cstdint>

namespace shardpack::codec {

// How 4-channel samples hold their ink.
enum class CmykInk : uint8_t {
  kPlain,     // 0 = no ink: R = (255-C)*(255-K)/255 (G from M, B from Y)
  kInverted,  // Adobe's, 255 = no ink: R = C*K/255
};

// CMYK samples to RGB, in place in `pixels` (4 bytes in, 3 out, front to
// back), rounded to the nearest integer: the integers of Pillow's cmyk2rgb
// (on samples inverted first for kInverted). No ICC profile is applied.
inline void CmykToRgbInPlace(uint8_t* pixels, size_t count, CmykInk ink) {
  // Writing 3 bytes per pixel behind reading 4 never overwrites unread input.
  for (size_t i = 0; i < count; ++i) {
    const uint32_t c = pixels[4 * i], m = pixels[4 * i + 1], y = pixels[4 * i + 2],
                   k = pixels[4 * i + 3];
    uint8_t* out = pixels + 3 * i;
    if (ink == CmykInk::kInverted) {
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

// The one rule for 4-component JPEGs, which every JPEG path calls on
// libjpeg's JCS_CMYK output (TurboJPEG's TJPF_CMYK is the same samples):
// Adobe's inverted samples, whatever the file's markers say. libjpeg
// returns a CMYK file's samples as stored and, for YCCK, the YCC->RGB
// result inverted; Photoshop writes inverted CMYK with an Adobe APP14
// marker (ImageNet's CMYK JPEGs are of this kind), and PIL (since 2009:
// JpegImagePlugin's "always use Adobe polarity", rawmode "CMYK;I") reads
// every CMYK and YCCK JPEG as inverted, with or without the marker, so
// torchvision's loader does too.
inline void JpegCmykToRgbInPlace(uint8_t* pixels, size_t count) {
  CmykToRgbInPlace(pixels, count, CmykInk::kInverted);
}

}  // namespace shardpack::codec

#endif  // SHARDPACK_CODEC_COLOR_H_
