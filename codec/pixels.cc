#include "codec/pixels.h"

#include <cstddef>
#include <new>

#include "common/check.h"

namespace shardpack::codec {

uint8_t* GrowableBuffer::Get(size_t bytes) {
  if (bytes > capacity_) {
    // Freed first: the old and the new buffer are never held together.
    data_.reset();
    capacity_ = 0;
    data_.reset(new (std::nothrow) uint8_t[bytes]);
    if (data_ == nullptr) return nullptr;
    capacity_ = bytes;
  }
  return data_.get();
}

PixelView Orient(const PixelView& src, Orientation orientation, uint8_t* dst) {
  const int o = static_cast<int>(orientation);
  SP_DCHECK(o >= 1 && o <= 8);
  // Output pixel (x, y) comes from stored pixel (u, v): (x, y) or, for 5
  // to 8, (y, x); then mirrored along u and/or v.
  const bool swap = o >= 5;
  const bool flip_u = o == 2 || o == 3 || o == 7 || o == 8;
  const bool flip_v = o == 3 || o == 4 || o == 6 || o == 7;
  const uint32_t out_w = swap ? src.height : src.width;
  const uint32_t out_h = swap ? src.width : src.height;
  const auto ch = static_cast<ptrdiff_t>(src.channels);
  const auto stride = static_cast<ptrdiff_t>(src.stride());
  // The source offset of output pixel (0, 0), and the steps, in bytes, for
  // one output pixel across and one output row down (negative along a
  // mirrored axis).
  const ptrdiff_t origin = (flip_u ? (ptrdiff_t{src.width} - 1) * ch : 0) +
                           (flip_v ? (ptrdiff_t{src.height} - 1) * stride : 0);
  const ptrdiff_t du = flip_u ? -ch : ch, dv = flip_v ? -stride : stride;
  const ptrdiff_t across = swap ? dv : du, down = swap ? du : dv;
  uint8_t* out = dst;
  for (uint32_t y = 0; y < out_h; ++y) {
    ptrdiff_t at = origin + ptrdiff_t{y} * down;
    for (uint32_t x = 0; x < out_w; ++x, at += across, out += ch) {
      for (ptrdiff_t c = 0; c < ch; ++c) out[c] = src.data[at + c];
    }
  }
  return PixelView{dst, out_w, out_h, src.channels};
}

}  // namespace shardpack::codec
