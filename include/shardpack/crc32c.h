// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of
// every shard structure and of whole shards in the manifest.
//
// Uses the SSE4.2 crc32 instruction on three interleaved streams when the CPU
// has it, and a slice-by-8 table otherwise. Thread-safe.
#ifndef SHARDPACK_CRC32C_H_
#define SHARDPACK_CRC32C_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace shardpack {

// Continues a CRC: Crc32cExtend(Crc32c(a), b) == Crc32c(a + b).
// Crc32cExtend(0, data) == Crc32c(data).
uint32_t Crc32cExtend(uint32_t crc, const uint8_t* data, size_t n);

inline uint32_t Crc32c(std::span<const uint8_t> data) {
  return Crc32cExtend(0, data.data(), data.size());
}

// The CRC of a + b from crc_a = Crc32c(a), crc_b = Crc32c(b) and len_b =
// b.size(), in O(log len_b) without touching the bytes (zlib's
// crc32_combine). Lets a writer or verifier fold a block's payload CRC into
// the whole-file CRC without a second pass over the payload.
uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

// The CRC of `n` zero bytes appended to data whose CRC is `crc`.
uint32_t Crc32cExtendZeros(uint32_t crc, uint64_t n);

// True when the hardware path is in use (for benchmarks and logs).
bool Crc32cIsHardwareAccelerated();

}  // namespace shardpack

#endif  // SHARDPACK_CRC32C_H_
