// The portable (table) CRC-32C, beside the hardware one in crc32c.cc: the
// tests compare the two at every length and alignment.
#ifndef SHARDPACK_FORMAT_CRC32C_PORTABLE_H_
#define SHARDPACK_FORMAT_CRC32C_PORTABLE_H_

#include <cstddef>
#include <cstdint>

namespace shardpack::format {

uint32_t Crc32cExtendPortable(uint32_t crc, const uint8_t* data, size_t n);

}  // namespace shardpack::format

#endif  // SHARDPACK_FORMAT_CRC32C_PORTABLE_H_
