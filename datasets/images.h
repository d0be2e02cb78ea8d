// JPEG image folders (torchvision ImageFolder layout) and list files as a
// Source.
#ifndef SHARDPACK_DATASETS_IMAGES_H_
#define SHARDPACK_DATASETS_IMAGES_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "datasets/source.h"

namespace shardpack::datasets {

enum class ImageMode {
  // Default. The JPEG bytes stored untouched; the header is parsed for
  // height, width and channels (components: 1 gray, 3 YCbCr, 4 CMYK/YCCK).
  // An input that is not a JPEG by content goes as `non_jpeg` says.
  kPassthrough,
  // Decoded, downscaled so the longer side is at most max_side, re-encoded
  // as baseline RGB (or gray) JPEG at `quality`.
  kReencode,
  // Decoded, resized to exactly width x height, stored as raw RGB HWC pixels.
  kRaw,
};

// What passthrough does with an input whose content is not JPEG (a PNG,
// WebP, BMP, TIFF or PNM image, whatever its name).
enum class NonJpeg {
  // Default. Decoded and stored as a JPEG at full size, 4:4:4, at
  // ImageOptions::convert_quality: the closest a JPEG dataset comes to the
  // source's pixels (a JPEG cannot hold them exactly; --mode raw can).
  kConvert,
  // Left out, and listed in skipped.tsv with its format and the flag that
  // would convert it. A choice, not bad input: on_error does not apply.
  kSkip,
};

// "convert", "skip".
std::string_view NonJpegName(NonJpeg policy);

// "passthrough", "reencode", "raw".
std::string_view ImageModeName(ImageMode mode);
// InvalidArgumentError listing the names for any other name.
absl::StatusOr<ImageMode> ParseImageMode(std::string_view name);

struct ImageOptions {
  // ImageFolder layout: root/<class>/<...>/<file>. Classes are the
  // sub-directories of root, sorted by name (byte order, as Python's sorted()
  // of str) and indexed from 0, exactly as torchvision's ImageFolder does;
  // files are found recursively and sorted by path.
  std::string root;
  // If set, a list file of lines "relative/path label" (paths relative to
  // root; label a non-negative integer) replaces the folder walk. The label
  // is the last whitespace-separated field, so paths may hold spaces; blank
  // lines are ignored; any file named is an item, whatever its extension.
  // With a list file, an empty `root` means the list file's directory.
  std::string list_file;

  ImageMode mode = ImageMode::kPassthrough;
  int max_side = 0;           // reencode: 0 keeps the size
  int quality = 90;           // reencode: JPEG quality 1..100
  NonJpeg non_jpeg = NonJpeg::kConvert;  // passthrough: what to do with other formats
  int convert_quality = 100;  // passthrough: JPEG quality of converted inputs, 1..100
  uint32_t raw_width = 0;     // raw: output size, both required
  uint32_t raw_height = 0;
  // Passthrough: also decode every image fully to catch corrupt entropy
  // data (slower). Without it, passthrough checks the markers, the
  // dimensions and the end-of-image marker.
  bool validate_decode = false;
  // Passthrough and reencode: re-code each stored JPEG losslessly with a
  // restart marker after every MCU and optimized Huffman tables (the same
  // DCT coefficients, so the same pixels bit for bit: codec/jpeg_restart.h),
  // so that the reader's crops decode only the blocks they need. The stored
  // bytes are no longer the input file's. Every image's entropy data is
  // decoded on the way, so corrupt data is caught as with validate_decode.
  // Progressive JPEGs are stored as they are.
  bool restart_markers = false;
  // Images with more pixels, or a side over 65500, are bad input.
  // Default 2^28 (268 megapixels).
  uint64_t max_pixels = uint64_t{1} << 28;
  OnError on_error = OnError::kSkip;
};

// Walks the folder (or reads the list file). Files with torchvision's image
// extensions (IMG_EXTENSIONS: .jpg .jpeg .png .ppm .bmp .pgm .tif .tiff
// .webp), any case, are items; others are ignored as torchvision ignores
// them. An item's format is told by its content, never its name: a JPEG
// named .png is a JPEG. A missing root is NotFoundError. A class folder with no
// such file is InvalidArgumentError naming it, whatever on_error says, as
// torchvision's ImageFolder refuses it. So is a class folder whose name is
// not UTF-8 (a manifest holds UTF-8 text only; torchvision would take it as
// a str with surrogate escapes), naming it. A bad list-file line (naming the
// line number) is an open_problem in skip mode and the error in fail mode.
// Keys are paths relative to root.
//
// The walk follows torchvision (folder.py, find_classes and make_dataset):
// classes are the entries of root that are directories (symlinks followed,
// hidden ones included); under each class,
// directories are visited as sorted(os.walk(dir, followlinks=True)) visits
// them (ordered by directory path, so a folder's own files come before its
// sub-folders'), and files within a directory are sorted by name. Unlike
// os.walk, a symlink back to a directory being walked is not followed
// again (it would loop forever), and a directory that cannot be listed is an
// open_problem rather than silently empty. Other entries named *.jpg (a
// dangling symlink, a FIFO) are items and fail when prepared.
//
// Items fail in Prepare with an error naming the file: NotFoundError or
// PermissionDeniedError "open <path>: <strerror>" when it cannot be read,
// FailedPreconditionError "<path>: not a regular file", DataLossError
// "<path> @0: empty file" for zero bytes, then ProbeJpeg's, the decoders'
// (codec/decode.h) and the Transcoder's errors (a truncated or corrupt JPEG
// or PNG, absurd dimensions, a GIF or unknown content). Passthrough stores
// CMYK/YCCK JPEGs as they are with channels 4; reencode and raw convert them
// to RGB (see transcode.h). PreparedRecord::converted_from names the format
// of an input that was not a JPEG; left_out says why one was skipped by
// choice.
//
// Workers keep a Transcoder (two TurboJPEG handles) and read buffers for
// life; Prepare reuses the PreparedRecord's buffers. Workers borrow the
// Source's item list: the Source must outlive its workers.
absl::StatusOr<std::unique_ptr<Source>> OpenImages(const ImageOptions& options);

}  // namespace shardpack::datasets

#endif  // SHARDPACK_DATASETS_IMAGES_H_
