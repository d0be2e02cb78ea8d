// Decoded pixels, the buffer they live in and their orientation, shared by
// every codec and the resize (color conversion: codec/color.h).
#ifndef SHARDPACK_CODEC_PIXELS_H_
#define SHARDPACK_CODEC_PIXELS_H_

#include <cstddef>
#include <cstdint>
#include <memory>

namespace shardpack::codec {

// Interleaved 8-bit pixels, rows packed (stride = width * channels). A view:
// see the function that returns one for how long it stays valid.
struct PixelView {
  const uint8_t* data = nullptr;
  uint32_t width = 0;
  uint32_t height = 0;
  int channels = 0;  // 1 (gray), 3 (RGB) or 4 (CMYK)

  size_t stride() const { return size_t{width} * static_cast<size_t>(channels); }
  size_t bytes() const { return stride() * height; }
};

// A byte buffer that grows and never shrinks, without zeroing what it adds,
// so a long-lived decoder allocates only when an image is its largest yet.
// Not thread-safe.
class GrowableBuffer {
 public:
  // At least `bytes` bytes, valid until the next Get; the contents are not
  // kept when it grows. Null when memory cannot be had (never throws).
  uint8_t* Get(size_t bytes);
  size_t capacity() const { return capacity_; }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t capacity_ = 0;
};

// The orientations of TIFF's Orientation tag (274, TIFF 6.0 section 8) and
// EXIF's: where the stored rows are to be shown. 1 shows them as stored;
// 5 to 8 swap width and height.
enum class Orientation : uint8_t {
  kTopLeft = 1,   // as stored
  kTopRight,      // mirrored left to right
  kBottomRight,   // turned 180 degrees
  kBottomLeft,    // mirrored top to bottom
  kLeftTop,       // transposed (rows become columns)
  kRightTop,      // turned 90 degrees clockwise
  kRightBottom,   // transversed (transposed, then turned 180 degrees)
  kLeftBottom,    // turned 90 degrees counter-clockwise
};

// Writes `src` shown as `orientation` says into `dst` (src.bytes() bytes,
// not overlapping `src`) and returns the view of `dst`: PIL's
// Image.transpose with FLIP_LEFT_RIGHT, ROTATE_180, FLIP_TOP_BOTTOM,
// TRANSPOSE, ROTATE_270, TRANSVERSE, ROTATE_90 for 2 to 8.
PixelView Orient(const PixelView& src, Orientation orientation, uint8_t* dst);

}  // namespace shardpack::codec

#endif  // SHARDPACK_CODEC_PIXELS_H_
