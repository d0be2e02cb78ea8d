// The 8-byte big-endian record keys of LMDB shards (docs/format.md): big
// endian so that LMDB's byte order is index order and MDB_APPEND holds.
#ifndef SHARDPACK_BACKENDS_LMDB_KEY_H_
#define SHARDPACK_BACKENDS_LMDB_KEY_H_

#include <array>
#include <cstdint>

namespace shardpack::backends {

inline constexpr size_t kLmdbKeySize = 8;

inline std::array<uint8_t, kLmdbKeySize> LmdbKey(uint64_t index) {
  std::array<uint8_t, kLmdbKeySize> key;
  for (size_t i = 0; i < kLmdbKeySize; ++i) {
    key[i] = static_cast<uint8_t>(index >> (8 * (kLmdbKeySize - 1 - i)));
  }
  return key;
}

inline uint64_t LmdbKeyIndex(const uint8_t* key) {
  uint64_t index = 0;
  for (size_t i = 0; i < kLmdbKeySize; ++i) index = (index << 8) | key[i];
  return index;
}

}  // namespace shardpack::backends

#endif  // SHARDPACK_BACKENDS_LMDB_KEY_H_
