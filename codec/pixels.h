// Decoded pixels and the buffer they live in, shared by every codec and the
// resize (color conversion: codec/color.h).
#ifndef SHARDPACK_CODEC_PIXELS_H_
#define SHARDPACK_CODEC_PIXELS_H_

#include <cstddef>
#include <cstdint>
#include <memory>

namespace shardpack::internal {

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

}  // namespace shardpack::internal

#endif  // SHARDPACK_CODEC_PIXELS_H_
