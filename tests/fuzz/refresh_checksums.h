// Recomputes every checksum of a shard in place, so that a test or the fuzzer
// can damage a field and still reach the checks that lie behind the CRCs: the
// index consistency checks, the block header checks, zstd and record parsing.
//
// Header-only, shared by tests/format/shard_corruption_test.cc and the shard
// fuzzer. Works on garbage too: it follows the trailer and the footer only as
// far as they point inside `bytes`, and never reads or writes outside it.
#ifndef SHARDPACK_TESTS_FUZZ_REFRESH_CHECKSUMS_H_
#define SHARDPACK_TESTS_FUZZ_REFRESH_CHECKSUMS_H_

#include <algorithm>
#include <cstdint>
#include <span>

#include "common/coding.h"
#include "format/shard_layout.h"
#include "shardpack/crc32c.h"

namespace shardpack::testing {

// Rewrites, in this order: each block's payload CRC (in the footer entry and
// the block header) and block header CRC, the footer CRC in the trailer, the
// trailer CRC and the file header CRC. Fields other than checksums are left
// as they are.
inline void RefreshChecksums(std::span<uint8_t> bytes) {
  using common::LoadLE;
  using common::StoreLE;
  uint8_t* d = bytes.data();
  const uint64_t size = bytes.size();
  if (size >= format::kFileHeaderSize) {
    StoreLE<uint32_t>(d + format::kFileHeaderCrcOffset, Crc32c({d, format::kFileHeaderCrcOffset}));
  }
  if (size < format::kTrailerSize) return;
  const uint64_t trailer_at = size - format::kTrailerSize;
  uint8_t* t = d + trailer_at;
  const uint64_t footer_offset = LoadLE<uint64_t>(t);
  const uint64_t footer_size = LoadLE<uint64_t>(t + 8);
  if (footer_offset <= trailer_at && footer_size <= trailer_at - footer_offset &&
      footer_size >= format::kFooterFixedSize) {
    uint8_t* f = d + footer_offset;
    const uint64_t entries = std::min<uint64_t>(
        LoadLE<uint32_t>(f + 4),
        (footer_size - format::kFooterFixedSize) / format::kBlockEntrySize);
    for (uint64_t b = 0; b < entries; ++b) {
      uint8_t* e = f + format::kFooterFixedSize + b * format::kBlockEntrySize;
      const uint64_t offset = LoadLE<uint64_t>(e);
      const uint64_t stored = LoadLE<uint32_t>(e + 8);
      if (stored < format::kBlockHeaderSize || offset > size || stored > size - offset) continue;
      uint8_t* h = d + offset;
      const uint32_t crc =
          Crc32c({h + format::kBlockHeaderSize, stored - format::kBlockHeaderSize});
      StoreLE<uint32_t>(e + 20, crc);
      StoreLE<uint32_t>(h + 20, crc);
      StoreLE<uint32_t>(h + format::kBlockHeaderCrcOffset,
                        Crc32c({h, format::kBlockHeaderCrcOffset}));
    }
    StoreLE<uint32_t>(t + 16, Crc32c({f, footer_size}));
  }
  StoreLE<uint32_t>(t + format::kTrailerCrcOffset, Crc32c({t, format::kTrailerCrcOffset}));
}

}  // namespace shardpack::testing

#endif  // SHARDPACK_TESTS_FUZZ_REFRESH_CHECKSUMS_H_
