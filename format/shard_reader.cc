// Block decoding (header and CRC checks, zstd) and the ShardReader built on it.
#include <zstd.h>

#include <algorithm>
#include <new>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "format/record_codec.h"
#include "format/shard_layout.h"
#include "shardpack/crc32c.h"
#include "shardpack/shard.h"

namespace shardpack {

using common::DataLossAt;
using common::LoadLE;

struct BlockDecoder::Zstd {
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  ~Zstd() { ZSTD_freeDCtx(dctx); }
};

namespace {

// The most bytes one zstd frame can decompress to, from its block headers
// (RFC 8878, 3.1.1): raw and RLE blocks give their size, a compressed block
// at most Block_Maximum_Size = min(Window_Size, 128 KiB). 0 when the frame
// is malformed. `frame` is exactly one frame (ZSTD_findFrameCompressedSize
// said so), so the walk stays inside it. Unlike the Frame_Content_Size
// field, which a frame may omit or a forger may set to anything, this bound
// is what the frame's own bytes can produce.
uint64_t ZstdFrameBound(std::span<const uint8_t> frame) {
  constexpr uint64_t kMaxBlock = uint64_t{128} << 10;
  if (frame.size() < 6 || LoadLE<uint32_t>(frame.data()) != 0xFD2FB528u) return 0;
  const uint8_t fhd = frame[4];
  const bool single_segment = (fhd & 0x20) != 0;
  const size_t fcs_bytes[] = {single_segment ? 1u : 0u, 2, 4, 8};
  const size_t did_bytes[] = {0, 1, 2, 4};
  size_t at = 5;
  uint64_t block_max = kMaxBlock;
  if (!single_segment) {
    const uint8_t wd = frame[at++];
    const uint64_t base = uint64_t{1} << (10 + (wd >> 3));
    block_max = std::min(kMaxBlock, base + base / 8 * (wd & 7));
  }  // single segment: the window is the content size, at most kMaxBlock a block
  at += did_bytes[fhd & 3] + fcs_bytes[fhd >> 6];
  uint64_t bound = 0;
  for (bool last = false; !last;) {
    if (at + 3 > frame.size()) return 0;
    const uint32_t header = frame[at] | frame[at + 1] << 8 | uint32_t{frame[at + 2]} << 16;
    at += 3;
    last = (header & 1) != 0;
    const uint32_t type = (header >> 1) & 3, size = header >> 3;
    if (type == 3) return 0;                // reserved
    bound += type == 2 ? block_max : size;  // compressed : raw, RLE
    at += type == 1 ? 1 : size;             // RLE stores one byte
  }
  return bound;
}

// A compressed block is exactly one zstd frame, smaller than its raw
// payload (writers store incompressible blocks raw), so there is one valid
// encoding per block. The frame may leave out its content size
// (docs/format.md); if it has one it must be the index's raw size. Either
// way the frame's blocks must be able to produce the raw size before it is
// allocated, or a forged index could claim gigabytes for a tiny frame. The
// CRC matched, so a bad frame here means a writer bug or a forgery, not bit
// rot; it is still reported as damage rather than trusted.
absl::Status CheckZstdFrame(const std::string& name, const BlockInfo& info, size_t b,
                            std::span<const uint8_t> payload) {
  const uint64_t at = info.offset + format::kBlockHeaderSize;
  const unsigned long long content = ZSTD_getFrameContentSize(payload.data(), payload.size());
  if (payload.size() >= info.raw_size ||
      ZSTD_findFrameCompressedSize(payload.data(), payload.size()) != payload.size() ||
      content == ZSTD_CONTENTSIZE_ERROR ||
      (content != ZSTD_CONTENTSIZE_UNKNOWN && content != info.raw_size)) {
    return DataLossAt(name, at,
                      absl::StrCat("block ", b, " is not one zstd frame of ", info.raw_size,
                                   " raw bytes, smaller than that"));
  }
  const uint64_t bound = ZstdFrameBound(payload);
  if (bound < info.raw_size) {
    return DataLossAt(
        name, at,
        absl::StrCat("block ", b, " claims ", info.raw_size, " raw bytes, but its zstd frame of ",
                     payload.size(), " bytes can hold at most ", bound));
  }
  return absl::OkStatus();
}

}  // namespace

BlockDecoder::BlockDecoder() : zstd_(std::make_unique<Zstd>()) {}
BlockDecoder::~BlockDecoder() = default;

absl::StatusOr<BlockView> BlockDecoder::Decode(const ShardIndex& index, size_t b,
                                               std::span<const uint8_t> stored) {
  return DecodeImpl(index, b, stored, [this](size_t raw_size) -> uint8_t* {
    if (scratch_capacity_ < raw_size) {
      // Up to 4 GiB that the file asks for: failing is an error, not an abort.
      scratch_.reset(new (std::nothrow) uint8_t[raw_size]);
      scratch_capacity_ = scratch_ != nullptr ? raw_size : 0;
    }
    return scratch_.get();
  });
}

absl::StatusOr<BlockView> BlockDecoder::DecodeInto(const ShardIndex& index, size_t b,
                                                   std::span<const uint8_t> stored,
                                                   uint8_t* raw, bool payload_checked) {
  return DecodeImpl(index, b, stored, [raw](size_t) { return raw; }, payload_checked);
}

absl::StatusOr<BlockView> BlockDecoder::DecodeImpl(
    const ShardIndex& index, size_t b, std::span<const uint8_t> stored,
    absl::FunctionRef<uint8_t*(size_t)> raw_buffer, bool payload_checked) {
  const BlockInfo& info = index.block(b);
  const std::string& name = index.name();
  if (stored.size() != info.stored_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": block ", b, " handed ", stored.size(), " bytes, expected ", info.stored_size));
  }
  const uint8_t* h = stored.data();
  if (LoadLE<uint32_t>(h) != format::kBlockMagic) {
    return DataLossAt(name, info.offset, absl::StrCat("bad magic of block ", b));
  }
  if (LoadLE<uint32_t>(h + format::kBlockHeaderCrcOffset) !=
      Crc32c({h, format::kBlockHeaderCrcOffset})) {
    return DataLossAt(name, info.offset, absl::StrCat("header checksum mismatch in block ", b));
  }
  const uint8_t compression = h[4];
  const uint32_t stored_payload = LoadLE<uint32_t>(h + 12);
  if (compression > static_cast<uint8_t>(Compression::kZstd) || h[5] != 0 || h[6] != 0 ||
      h[7] != 0 || LoadLE<uint32_t>(h + 24) != 0 ||
      LoadLE<uint32_t>(h + 8) != info.record_count ||
      stored_payload != info.stored_size - format::kBlockHeaderSize ||
      LoadLE<uint32_t>(h + 16) != info.raw_size ||
      LoadLE<uint32_t>(h + 20) != info.payload_crc32c ||
      (compression == 0 && stored_payload != info.raw_size)) {
    return DataLossAt(name, info.offset,
                      absl::StrCat("header of block ", b, " disagrees with the index"));
  }
  std::span<const uint8_t> payload = stored.subspan(format::kBlockHeaderSize);
  if (!payload_checked && Crc32c(payload) != info.payload_crc32c) {
    return DataLossAt(name, info.offset + format::kBlockHeaderSize,
                      absl::StrCat("checksum mismatch in block ", b, " (records ",
                                   info.first_record, "..",
                                   info.first_record + info.record_count - 1, ")"));
  }
  if (compression == static_cast<uint8_t>(Compression::kZstd)) {
    SP_RETURN_IF_ERROR(CheckZstdFrame(name, info, b, payload));
    uint8_t* raw = raw_buffer(info.raw_size);
    if (raw == nullptr) {
      return absl::ResourceExhaustedError(absl::StrCat(name, " @", info.offset,
                                                       ": out of memory for the ", info.raw_size,
                                                       " raw bytes of block ", b));
    }
    // The capacity is the index's raw size: a frame never writes past it.
    size_t n = ZSTD_decompressDCtx(zstd_->dctx, raw, info.raw_size,
                                   payload.data(), payload.size());
    if (ZSTD_isError(n) || n != info.raw_size) {
      return DataLossAt(name, info.offset + format::kBlockHeaderSize,
                        absl::StrCat("block ", b, " does not decompress to ", info.raw_size,
                                     " bytes", ZSTD_isError(n) ? ": " : "",
                                     ZSTD_isError(n) ? ZSTD_getErrorName(n) : ""));
    }
    payload = {raw, info.raw_size};
  }
  BlockView view;
  view.shard_name_ = &index.name();
  view.block_offset_ = info.offset;
  view.first_record_ = info.first_record;
  view.payload_ = payload;
  view.offsets_ = index.record_offsets(b);
  return view;
}

absl::StatusOr<Record> BlockView::record(size_t i) const {
  const uint32_t begin = offsets_[i];
  const uint32_t end = i + 1 < offsets_.size() ? offsets_[i + 1]
                                               : static_cast<uint32_t>(payload_.size());
  return format::DecodeRecord(payload_.subspan(begin, end - begin), [&] {
    return absl::StrCat(*shard_name_, " @", block_offset_, " record ", first_record_ + i,
                        " (+", begin, " in the block)");
  });
}

absl::StatusOr<std::unique_ptr<ShardReader>> ShardReader::Open(const RandomAccessFile* file) {
  SP_ASSIGN_OR_RETURN(ShardIndex index, ShardIndex::Load(*file));
  return std::unique_ptr<ShardReader>(new ShardReader(file, std::move(index)));
}

absl::StatusOr<BlockView> ShardReader::ReadBlock(size_t b) {
  if (b >= index_.num_blocks()) {
    return absl::OutOfRangeError(absl::StrCat(index_.name(), ": no block ", b));
  }
  current_block_ = SIZE_MAX;
  const BlockInfo& info = index_.block(b);
  std::span<const uint8_t> stored;
  if (const uint8_t* base = file_->data()) {
    stored = {base + info.offset, info.stored_size};
  } else {
    if (buffer_.size() < info.stored_size) buffer_.resize(info.stored_size);
    SP_RETURN_IF_ERROR(file_->ReadExact(info.offset, {buffer_.data(), info.stored_size}));
    stored = {buffer_.data(), info.stored_size};
  }
  // A mapped file truncated under us reads as zeros: say so rather than
  // report the checksum mismatch that follows.
  auto view = decoder_.Decode(index_, b, stored);
  SP_RETURN_IF_ERROR(file_->CheckIntact());
  SP_ASSIGN_OR_RETURN(current_, std::move(view));
  current_block_ = b;
  return current_;
}

absl::StatusOr<Record> ShardReader::ReadRecord(uint64_t r) {
  if (r >= index_.num_records()) {
    return absl::OutOfRangeError(absl::StrCat(index_.name(), ": no record ", r, " (",
                                              index_.num_records(), " records)"));
  }
  size_t b = index_.BlockOf(r);
  if (b != current_block_) {
    SP_RETURN_IF_ERROR(ReadBlock(b).status());
  }
  return current_.record(r - current_.first_record());
}

}  // namespace shardpack
