// Block decoding (header and CRC checks, zstd) and the ShardReader built on it.
#include <zstd.h>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "format/coding.h"
#include "format/errors.h"
#include "format/record_codec.h"
#include "format/shard_layout.h"
#include "shardpack/crc32c.h"
#include "shardpack/shard.h"
#include "shardpack/status.h"

namespace shardpack {

using internal::DataLossAt;
using internal::LoadLE;

struct BlockDecoder::Zstd {
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  ~Zstd() { ZSTD_freeDCtx(dctx); }
};

BlockDecoder::BlockDecoder() : zstd_(std::make_unique<Zstd>()) {}
BlockDecoder::~BlockDecoder() = default;

absl::StatusOr<BlockView> BlockDecoder::Decode(const ShardIndex& index, size_t b,
                                               std::span<const uint8_t> stored) {
  return DecodeImpl(index, b, stored, [this](size_t raw_size) {
    if (scratch_capacity_ < raw_size) {
      scratch_ = std::make_unique_for_overwrite<uint8_t[]>(raw_size);
      scratch_capacity_ = raw_size;
    }
    return scratch_.get();
  });
}

absl::StatusOr<BlockView> BlockDecoder::DecodeInto(const ShardIndex& index, size_t b,
                                                   std::span<const uint8_t> stored,
                                                   uint8_t* raw) {
  return DecodeImpl(index, b, stored, [raw](size_t) { return raw; });
}

absl::StatusOr<BlockView> BlockDecoder::DecodeImpl(
    const ShardIndex& index, size_t b, std::span<const uint8_t> stored,
    absl::FunctionRef<uint8_t*(size_t)> raw_buffer) {
  const BlockInfo& info = index.block(b);
  const std::string& name = index.name();
  if (stored.size() != info.stored_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": block ", b, " handed ", stored.size(), " bytes, expected ", info.stored_size));
  }
  const uint8_t* h = stored.data();
  if (LoadLE<uint32_t>(h) != internal::kBlockMagic) {
    return DataLossAt(name, info.offset, absl::StrCat("bad magic of block ", b));
  }
  if (LoadLE<uint32_t>(h + internal::kBlockHeaderCrcOffset) !=
      Crc32c({h, internal::kBlockHeaderCrcOffset})) {
    return DataLossAt(name, info.offset, absl::StrCat("header checksum mismatch in block ", b));
  }
  const uint8_t compression = h[4];
  const uint32_t stored_payload = LoadLE<uint32_t>(h + 12);
  if (compression > static_cast<uint8_t>(Compression::kZstd) || h[5] != 0 || h[6] != 0 ||
      h[7] != 0 || LoadLE<uint32_t>(h + 24) != 0 ||
      LoadLE<uint32_t>(h + 8) != info.record_count ||
      stored_payload != info.stored_size - internal::kBlockHeaderSize ||
      LoadLE<uint32_t>(h + 16) != info.raw_size ||
      LoadLE<uint32_t>(h + 20) != info.payload_crc32c ||
      (compression == 0 && stored_payload != info.raw_size)) {
    return DataLossAt(name, info.offset,
                      absl::StrCat("header of block ", b, " disagrees with the index"));
  }
  std::span<const uint8_t> payload = stored.subspan(internal::kBlockHeaderSize);
  if (Crc32c(payload) != info.payload_crc32c) {
    return DataLossAt(name, info.offset + internal::kBlockHeaderSize,
                      absl::StrCat("checksum mismatch in block ", b, " (records ",
                                   info.first_record, "..",
                                   info.first_record + info.record_count - 1, ")"));
  }
  if (compression == static_cast<uint8_t>(Compression::kZstd)) {
    // The CRC matched, so a bad frame here means a writer bug, not bit rot;
    // it is still reported as damage rather than trusted. A compressed block
    // is exactly one frame, and smaller than its raw payload (writers store
    // incompressible blocks raw), so there is one valid encoding per block.
    // The frame's own content size must match before anything is allocated,
    // or a forged index could claim gigabytes for a tiny frame.
    if (payload.size() >= info.raw_size ||
        ZSTD_findFrameCompressedSize(payload.data(), payload.size()) != payload.size() ||
        ZSTD_getFrameContentSize(payload.data(), payload.size()) != info.raw_size) {
      return DataLossAt(name, info.offset + internal::kBlockHeaderSize,
                        absl::StrCat("block ", b, " is not one zstd frame smaller than its ",
                                     info.raw_size, " raw bytes"));
    }
    uint8_t* raw = raw_buffer(info.raw_size);
    size_t n = ZSTD_decompressDCtx(zstd_->dctx, raw, info.raw_size,
                                   payload.data(), payload.size());
    if (ZSTD_isError(n) || n != info.raw_size) {
      return DataLossAt(name, info.offset + internal::kBlockHeaderSize,
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
  return internal::DecodeRecord(payload_.subspan(begin, end - begin), [&] {
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
