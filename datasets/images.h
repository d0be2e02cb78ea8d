// JPEG image folders (torchvision ImageFolder layout) and list files as a
// Source.
#ifndef SHARDPACK_DATASETS_IMAGES_H_
#define SHARDPACK_DATASETS_IMAGES_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "datasets/source.h"

namespace shardpack::datasets {

enum class ImageMode {
  // Default. The JPEG bytes stored untouched; the header is parsed for
  // height, width and channels (components: 1 gray, 3 YCbCr, 4 CMYK/YCCK).
  kPassthrough,
  // Decoded, downscaled so the longer side is at most max_side, re-encoded
  // as baseline RGB (or gray) JPEG at `quality`.
  kReencode,
  // Decoded, resized to exactly width x height, stored as raw RGB HWC pixels.
  kRaw,
};

struct ImageOptions {
  // ImageFolder layout: root/<class>/<...>/<file>. Classes are the
  // sub-directories of root, sorted by name (byte order, as Python's sorted()
  // of str) and indexed from 0, exactly as torchvision's ImageFolder does;
  // files are found recursively and sorted by path.
  std::string root;
  // If set, a list file of lines "relative/path label" (paths relative to
  // root; label a non-negative integer) replaces the folder walk.
  std::string list_file;

  ImageMode mode = ImageMode::kPassthrough;
  int max_side = 0;           // reencode: 0 keeps the size
  int quality = 90;           // reencode: JPEG quality 1..100
  uint32_t raw_width = 0;     // raw: output size, both required
  uint32_t raw_height = 0;
  // Passthrough: also decode every image fully to catch corrupt entropy
  // data (slower). Without it, passthrough checks the markers, the
  // dimensions and the end-of-image marker.
  bool validate_decode = false;
  // Images with more pixels, or a side over 65500, are bad input.
  // Default 2^28 (268 megapixels).
  uint64_t max_pixels = uint64_t{1} << 28;
  OnError on_error = OnError::kSkip;
};

// Walks the folder (or reads the list file). Only files with a .jpg or
// .jpeg extension, any case, are items; others are ignored as torchvision
// ignores them. A missing root is NotFoundError. An empty class folder, or a
// bad list-file line (naming the line number), is an open_problem in skip
// mode and the error in fail mode. Keys are paths relative to root.
absl::StatusOr<std::unique_ptr<Source>> OpenImages(const ImageOptions& options);

}  // namespace shardpack::datasets

#endif  // SHARDPACK_DATASETS_IMAGES_H_
