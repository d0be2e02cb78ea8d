// Color conversion shared by the decoders: the JPEG decoder and transcode
// (libjpeg-turbo's CMYK output) and the TIFF decoder (plain-ink CMYK).
#ifndef SHARDPACK_CODEC_COLOR_H_
#define SHARDPACK_CODEC_COLOR_H_

#include <cstddef>
#include <cstdint>

namespace shardpack::internal {

// CMYK samples as libjpeg-turbo returns them (JCS_CMYK output, for CMYK and
// YCCK files alike) to RGB, in place in `pixels` (4 bytes in, 3 out, front
// to back). libjpeg-turbo hands back CMYK samples as stored and, for YCCK,
// inverts the YCC->RGB result, so files with an Adobe APP14 marker (every
// YCCK file, and Photoshop's CMYK files: ImageNet's CMYK JPEGs are of this
// kind) hold Adobe's inverted samples (255 = no ink): R = C*K/255 (G from
// M, B from Y), `adobe_inverted` = true. Without the marker the plain ink
// convention R = (255-C)*(255-K)/255 applies, as Pillow does. No ICC
// profile is applied. The TIFF decoder's CMYK (plain ink) uses it too:
// Pillow's cmyk2rgb gives the same integers.
inline void CmykToRgbInPlace(uint8_t* pixels, size_t count, bool adobe_inverted) {
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

}  // namespace shardpack::internal

#endif  // SHARDPACK_CODEC_COLOR_H_
