// Bounds-unchecked byte readers shared by the codec parsers (BMP, the JPEG
// probe and restart cutter, format sniffing): the caller has checked that
// the bytes are there.
#ifndef SHARDPACK_CODEC_BYTES_H_
#define SHARDPACK_CODEC_BYTES_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "common/coding.h"
#include "shardpack/record.h"

namespace shardpack::codec {

// Little-endian 16 and 32 bits at d[at, at + 2) / d[at, at + 4) (BMP).
inline uint16_t Le16(ByteSpan d, size_t at) { return common::LoadLE<uint16_t>(d.data() + at); }
inline uint32_t Le32(ByteSpan d, size_t at) { return common::LoadLE<uint32_t>(d.data() + at); }

// Big-endian 16 bits at p[0, 2) (JPEG marker lengths and dimensions).
inline uint16_t Be16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }

// Whether `data` begins with `prefix`.
inline bool StartsWith(ByteSpan data, std::string_view prefix) {
  return data.size() >= prefix.size() &&
         std::memcmp(data.data(), prefix.data(), prefix.size()) == 0;
}

}  // namespace shardpack::codec

#endif  // SHARDPACK_CODEC_BYTES_H_
