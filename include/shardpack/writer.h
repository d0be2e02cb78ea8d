// Writing datasets: what a writer and the packer share (what to do with a
// bad sample or input, what was left out, the limits of blocks and parts),
// a field's type as text, and the ImageConverter, which turns image files
// (JPEG, PNG, WebP, BMP, TIFF, PNM) and pixels into values of image fields.
#ifndef SHARDPACK_WRITER_H_
#define SHARDPACK_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shardpack/fields.h"
#include "shardpack/record.h"

namespace shardpack {

// What a writer does with a bad sample (a value its field refuses, or one
// the caller could not make: Writer::Reject), and a packer with a bad input.
enum class OnError {
  kSkip,  // leave it out, list it (skipped.tsv, the on_skip callback), go on
  kFail,  // return the error
};

// A sample or input left out, and why. `path` is the input file for a
// packer, the sample's key for a Writer.
struct Skipped {
  std::string path;
  std::string reason;
};

// The largest block a `.shard` writer takes (ShardWriterOptions::block_size).
inline constexpr uint32_t kMaxBlockSize = uint32_t{1} << 30;

// The most parts a multi-machine write may have.
inline constexpr uint64_t kMaxParts = UINT32_MAX;

// A field from its type as text, the form of shardpack.Writer's schema:
//   "jpeg"                       image, JPEG
//   "raw", "raw:HxWxC",          raw image (uint8 HWC): any shape, a fixed one,
//   "raw:gray", "raw:rgb"        or 1 / 3 channels of any height and width
//   "label"                      integer label (class names: Field::classes)
//   "string", "bytes", "json"    UTF-8 text, opaque bytes, JSON text
//   "DTYPE[D0,D1,...]"           array: DTYPE u8 i32 i64 f16 f32 f64; D0 a
//                                whole number or n (the first dimension
//                                varies), the others whole numbers >= 1
// with a trailing "?" for an optional field ("f32[n,4]?"). Spaces are
// allowed around dimensions. InvalidArgumentError "field 'NAME': ..."
// naming the forms otherwise. `name` is not checked here (MakeSchema does).
absl::StatusOr<Field> ParseFieldText(std::string_view name, std::string_view text);

// The text form of `field`'s type, as ParseFieldText takes it ("f32[n,4]?",
// "raw:32x32x3"). Fields the text cannot say (a CHW raw image, a raw image
// with a fixed height but not width, channels other than 1 and 3 without a
// fixed shape, a JPEG field with a shape) are written as the nearest form
// followed by " (...)" describing the rest.
std::string FieldText(const Field& field);

struct ImageConverterOptions {
  // The JPEG quality (1..100) of images stored into a JPEG field from other
  // formats or pixels, at full size and full chroma (4:4:4): what `shardpack
  // images --mode passthrough` does with a PNG (--convert-quality). Default
  // 100.
  int jpeg_quality = 100;
  // Images with more pixels are refused before they are decoded. Default 2^28.
  uint64_t max_pixels = uint64_t{1} << 28;
};

// Turns image files and pixels into values of an image field, in the
// field's encoding. Not thread-safe: one per thread. Keeps its decoders and
// buffers for life.
//
// - JPEG field: a JPEG file is stored as it is (its header probed for the
//   shape; channels as in the file: 1, 3, or 4 for CMYK); a PNG, WebP, BMP,
//   TIFF or PNM file, or pixels (1 or 3 channels), is encoded as a JPEG of
//   the same size, as passthrough mode converts it.
// - Raw field: a file of any of those formats is decoded at its own size,
//   losslessly but for a JPEG's own loss (a PNG mask stays exact, 16-bit
//   samples keep their high byte, alpha is dropped, a palette is looked up:
//   codec/decode.h), to the field's channels: 1 keeps a grayscale image
//   gray, 3 makes it RGB, 0 (any) keeps what the file holds; pixels are
//   taken as they are. A channel count the field does not hold, or a shape
//   other than the field's fixed one, is an error: nothing is resized.
//   A CHW field gets its pixels transposed from HWC.
// Errors name the field: InvalidArgumentError "field 'mask': a 3-channel
// (RGB) image, the field holds 1-channel images", the decoders' DataLossError
// for a damaged file ("field 'photo': corrupt PNG data: ...").
class ImageConverter {
 public:
  static absl::StatusOr<std::unique_ptr<ImageConverter>> Create(
      const ImageConverterOptions& options = {});
  ~ImageConverter();
  ImageConverter(const ImageConverter&) = delete;
  ImageConverter& operator=(const ImageConverter&) = delete;

  // `file`: the bytes of an image file, its format told by its content.
  // The value's bytes view `file` (a JPEG into a JPEG field) or `storage`
  // (resized to what it holds; its capacity is reused), valid as long as
  // those are. `field` must be an image field.
  absl::StatusOr<FieldValue> FromFile(const Field& field, ByteSpan file,
                                      std::vector<uint8_t>* storage);
  // `pixels`: height x width x channels uint8, HWC, rows packed. The value's
  // bytes view `pixels` (a HWC raw field) or `storage`.
  absl::StatusOr<FieldValue> FromPixels(const Field& field, ByteSpan pixels, uint32_t height,
                                        uint32_t width, uint32_t channels,
                                        std::vector<uint8_t>* storage);

 private:
  class Impl;
  explicit ImageConverter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardpack

#endif  // SHARDPACK_WRITER_H_
