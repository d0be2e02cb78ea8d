// Little-endian integer encoding, the only way integers reach the disk.
#ifndef SHARDPACK_COMMON_CODING_H_
#define SHARDPACK_COMMON_CODING_H_

#include <bit>
#include <cstdint>
#include <cstring>

namespace shardpack::common {

template <typename T>
inline T ToLittleEndian(T v) {
  if constexpr (std::endian::native == std::endian::big) {
    T r = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      r = static_cast<T>((r << 8) | ((v >> (8 * i)) & 0xff));
    }
    return r;
  }
  return v;
}

template <typename T>
inline void StoreLE(uint8_t* dst, T v) {
  v = ToLittleEndian(v);
  std::memcpy(dst, &v, sizeof(T));
}

template <typename T>
inline T LoadLE(const uint8_t* src) {
  T v;
  std::memcpy(&v, src, sizeof(T));
  return ToLittleEndian(v);  // the swap is its own inverse
}

inline uint64_t AlignUp(uint64_t n, uint64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

}  // namespace shardpack::common

#endif  // SHARDPACK_COMMON_CODING_H_
