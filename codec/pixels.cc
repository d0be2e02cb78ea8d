#include "codec/pixels.h"

#include <new>

namespace shardpack::internal {

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

}  // namespace shardpack::internal
