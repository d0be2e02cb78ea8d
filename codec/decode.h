// Decoders of the image formats beside JPEG: PNG, WebP, BMP, TIFF and PNM
// (PBM/PGM/PPM). The packer's reencode and raw modes, and passthrough's
// conversion of a non-JPEG item, decode through them; JPEG has its own path
// (codec/transcode.h) with DCT scaling.
//
// The contract every decoder keeps, so that a folder of mixed formats packs
// to the pixels torchvision's loader sees (PIL's Image.open(f).convert("RGB")):
//
// - Output: 8-bit samples, interleaved, rows packed (PixelView), 3 channels
//   RGB; or 1 channel when spec.keep_gray and the image is grayscale (gray,
//   gray + alpha, bilevel; a palette image is RGB even when its colors are
//   gray, as PIL's "P" mode is).
// - Alpha is dropped, not composited onto a background, as convert("RGB")
//   drops it. A palette is looked up; its transparency is ignored.
// - Samples of 1, 2 or 4 bits are scaled to 0..255 (v * 255 / (2^bits - 1));
//   a PNM maxval M < 255 scales as round(v * 255 / M); PBM's 1 is black.
// - 16-bit samples keep their high byte (v >> 8), as PIL does for 16-bit
//   color PNG and TIFF. (PIL opens 16-bit grayscale as mode "I" and
//   convert("RGB") clips it at 255, turning most of an image white; we scale
//   instead, and docs/cli.md says so.) A PNM maxval over 255 scales as
//   round(v * 255 / M).
// - The first image of a file with several (an animated WebP, a multi-page
//   TIFF), as Image.open shows it.
// - TIFF's Orientation tag is applied (PIL's TIFF plugin transposes the
//   image on load); EXIF orientation in a PNG or WebP is not (PIL leaves it
//   to ImageOps.exif_transpose), nor in a JPEG (codec/transcode.h).
//
// Untrusted bytes: the image size is checked (CheckImageSize) before
// anything is allocated for the pixels, every library call's failure is an
// error, and nothing ends in a signal, an abort or a hang. Errors start with
// `name` (usually the path):
// - DataLossError "<name>: corrupt PNG data: <what>" (or "truncated ...")
//   for damaged or cut bytes, with " @<offset>" after the name where the
//   offset is known;
// - InvalidArgumentError "<name>: unsupported <format>: <what>" for valid
//   files of a kind we do not decode, and CheckImageSize's errors;
// - ResourceExhaustedError when memory cannot be had.
//
// Thread-safe as long as each thread has its own DecodeBuffers: no decoder
// keeps global state (libtiff's handlers are per handle).
#ifndef SHARDPACK_CODEC_DECODE_H_
#define SHARDPACK_CODEC_DECODE_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/image_format.h"
#include "codec/pixels.h"
#include "shardpack/record.h"

namespace shardpack::codec {

struct DecodeSpec {
  // Images with more pixels are refused before any pixel memory is taken.
  // Default 2^28 (268 megapixels), the packer's --max-pixels default.
  uint64_t max_pixels = uint64_t{1} << 28;
  // Keep a grayscale image as 1 channel; default: every image comes out RGB.
  bool keep_gray = false;
};

// Memory a decoder keeps between images: one per thread, reused, so that
// decoding allocates only when an image is the largest seen (the libraries'
// own per-image state aside).
struct DecodeBuffers {
  codec::GrowableBuffer pixels;   // the output the PixelView points into
  codec::GrowableBuffer scratch;  // a decoder's work memory (a TIFF strip, BMP RLE indices)
};

using codec::PixelView;

// Each decodes the whole file `data` of its format into buffers->pixels; the
// view stays valid until the next decode with the same buffers.
absl::StatusOr<PixelView> DecodePng(ByteSpan data, std::string_view name, const DecodeSpec& spec,
                                    DecodeBuffers* buffers);
absl::StatusOr<PixelView> DecodeWebp(ByteSpan data, std::string_view name, const DecodeSpec& spec,
                                     DecodeBuffers* buffers);
absl::StatusOr<PixelView> DecodeBmp(ByteSpan data, std::string_view name, const DecodeSpec& spec,
                                    DecodeBuffers* buffers);
absl::StatusOr<PixelView> DecodeTiff(ByteSpan data, std::string_view name, const DecodeSpec& spec,
                                     DecodeBuffers* buffers);
absl::StatusOr<PixelView> DecodePnm(ByteSpan data, std::string_view name, const DecodeSpec& spec,
                                    DecodeBuffers* buffers);

// True for the formats above (not JPEG, whose decoder lives elsewhere).
bool HasDecoder(ImageFormat format);

// The decoder for `format`. For a format without one: DataLossError
// "<name> @0: empty file" for kEmpty, InvalidArgumentError "<name>: GIF
// image: not a format shardpack decodes (...)" (or "unknown content: ...")
// otherwise; JPEG is not decoded here.
absl::StatusOr<PixelView> DecodeImage(ImageFormat format, ByteSpan data, std::string_view name,
                                      const DecodeSpec& spec, DecodeBuffers* buffers);

// The size gate every decoder calls with its header's size, before it
// allocates: DataLossError "<name>: bad <format> image size WxH" for a zero
// side; InvalidArgumentError "<name>: image too large: WxH <format> (limit:
// N pixels)" above spec.max_pixels.
absl::Status CheckImageSize(std::string_view name, ImageFormat format, uint64_t width,
                            uint64_t height, const DecodeSpec& spec);

// buffers->pixels sized for width x height x channels (after
// CheckImageSize); ResourceExhaustedError naming `name` when memory cannot
// be had.
absl::StatusOr<uint8_t*> PixelMemory(std::string_view name, uint32_t width, uint32_t height,
                                     int channels, DecodeBuffers* buffers);

}  // namespace shardpack::codec

#endif  // SHARDPACK_CODEC_DECODE_H_
