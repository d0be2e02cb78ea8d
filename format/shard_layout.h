// Byte layout of the `.shard` format. docs/format.md is the specification;
// this file and that one change together.
//
//   offset 0      file header (32 bytes), zero padding to 4096
//   4096          block 0: block header (32 bytes) + stored payload,
//                 zero padding to the next multiple of 4096
//   ...           more blocks, each at a multiple of 4096
//   F (aligned)   footer: index of blocks and record offsets
//   F + size      trailer (32 bytes), the last bytes of the file
//
// All integers are little-endian. Every structure carries a CRC-32C.
#ifndef SHARDPACK_FORMAT_SHARD_LAYOUT_H_
#define SHARDPACK_FORMAT_SHARD_LAYOUT_H_

#include <array>
#include <cstddef>
#include <cstdint>

namespace shardpack::format {

// File magic, at the start (header) and the end (trailer) of every shard.
// Modelled on PNG's: a high-bit byte catches 7-bit transfers, CR LF catches
// newline translation.
inline constexpr std::array<uint8_t, 8> kShardMagic = {
    0x89, 'S', 'H', 'A', 'R', 'D', '\r', '\n'};

// File header, at offset 0.
//   0  u8[8] magic
//   8  u16   major version
//  10  u16   minor version
//  12  u32   alignment of blocks and footer (4096)
//  16  u32   flags, reserved, 0
//  20  u64   reserved, 0
//  28  u32   CRC-32C of bytes 0..27
inline constexpr size_t kFileHeaderSize = 32;
inline constexpr size_t kFileHeaderCrcOffset = 28;

// Block header, at each block's aligned offset.
//   0  u32   magic "SBLK"
//   4  u8    compression (0 none, 1 zstd)
//   5  u8[3] reserved, 0
//   8  u32   record count
//  12  u32   stored payload size (bytes after this header)
//  16  u32   raw payload size (after decompression)
//  20  u32   CRC-32C of the stored payload
//  24  u32   reserved, 0
//  28  u32   CRC-32C of bytes 0..27
inline constexpr size_t kBlockHeaderSize = 32;
inline constexpr size_t kBlockHeaderCrcOffset = 28;
inline constexpr uint32_t kBlockMagic = 0x4b4c4253;  // "SBLK" read as LE u32

// Record, inside a block's raw payload, at an 8-byte aligned offset.
//   0  u32   payload length
//   4  u32   extra length
//   8  u32   height
//  12  u32   width
//  16  u16   key length
//  18  u8    encoding (0 raw, 1 jpeg)
//  19  u8    layout (0 hwc, 1 chw)
//  20  u8    channels
//  21  u8    label count (0..8)
//  22  u16   reserved, 0
//  24  i64[label count] labels
//      key bytes, extra bytes, payload bytes
//      zero padding to a multiple of 8
inline constexpr size_t kRecordHeaderSize = 24;
inline constexpr size_t kRecordAlignment = 8;

// Field section, held in place of the extra bytes by a record of a dataset
// that declares fields (shardpack/fields.h; docs/format.md "Fields").
//   0  u32     record CRC-32C (RecordCrc: the record's bytes but these 4)
//   4  u64     presence: bit i set when field i of the schema is present;
//              bits of fields the schema does not have are 0
//  12  u32[F]  value lengths of the section fields (every field but the
//              first image field and the label fields), in schema order;
//              0 for an absent value
//      values, back to back, no padding
// An image value starts with its own header:
//   0  u32 height, 4 u32 width, 8 u8 encoding, 9 u8 layout, 10 u8 channels,
//  11  u8 reserved, 0; then the image's bytes.
inline constexpr size_t kFieldSectionHeadSize = 12;
inline constexpr size_t kFieldImageHeadSize = 12;

// Footer, at an aligned offset after the last block.
//   0  u32   magic "SIDX"
//   4  u32   block count B
//   8  u64   record count N
//  16  B x block entry (24 bytes each):
//        u64 offset, u32 stored size (header + stored payload),
//        u32 raw payload size, u32 record count, u32 payload CRC-32C
//      N x u32 record offset within its block's raw payload
inline constexpr size_t kFooterFixedSize = 16;
inline constexpr size_t kBlockEntrySize = 24;
inline constexpr uint32_t kFooterMagic = 0x58444953;  // "SIDX" read as LE u32

// Trailer, the last 32 bytes of the file.
//   0  u64   footer offset
//   8  u64   footer size
//  16  u32   CRC-32C of the footer
//  20  u32   CRC-32C of bytes 0..19
//  24  u8[8] magic (same as the header's)
inline constexpr size_t kTrailerSize = 32;
inline constexpr size_t kTrailerCrcOffset = 20;

static_assert(kFileHeaderCrcOffset + 4 == kFileHeaderSize);
static_assert(kBlockHeaderCrcOffset + 4 == kBlockHeaderSize);
static_assert(kTrailerCrcOffset + 4 + kShardMagic.size() == kTrailerSize);
static_assert(kRecordHeaderSize % kRecordAlignment == 0);

}  // namespace shardpack::format

#endif  // SHARDPACK_FORMAT_SHARD_LAYOUT_H_
