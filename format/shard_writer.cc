// ShardWriter: records are encoded straight into one block buffer that has
// room for the block header in front and the alignment padding behind, so
// each block reaches the file in a single Append.
#include <zstd.h>

#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "format/record_codec.h"
#include "format/shard_layout.h"
#include "shardpack/crc32c.h"
#include "shardpack/shard.h"

namespace shardpack {

using common::AlignUp;
using common::StoreLE;

namespace {

// A growable byte buffer that does not zero what it reserves.
class ByteBuffer {
 public:
  uint8_t* data() { return data_.get(); }
  size_t capacity() const { return capacity_; }
  void Reserve(size_t n) {
    if (n <= capacity_) return;
    size_t grown = std::max(n, capacity_ + capacity_ / 2);
    auto bigger = std::make_unique_for_overwrite<uint8_t[]>(grown);
    if (capacity_ != 0) std::memcpy(bigger.get(), data_.get(), capacity_);
    data_ = std::move(bigger);
    capacity_ = grown;
  }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t capacity_ = 0;
};

void EncodeBlockHeader(uint8_t* h, Compression compression, uint32_t records,
                       uint32_t stored, uint32_t raw, uint32_t crc) {
  StoreLE<uint32_t>(h + 0, format::kBlockMagic);
  h[4] = static_cast<uint8_t>(compression);
  h[5] = h[6] = h[7] = 0;
  StoreLE<uint32_t>(h + 8, records);
  StoreLE<uint32_t>(h + 12, stored);
  StoreLE<uint32_t>(h + 16, raw);
  StoreLE<uint32_t>(h + 20, crc);
  StoreLE<uint32_t>(h + 24, 0);
  StoreLE<uint32_t>(h + 28, Crc32c({h, format::kBlockHeaderCrcOffset}));
}

}  // namespace

class ShardWriter::Impl {
 public:
  Impl(WritableFile* file, const ShardWriterOptions& options)
      : file_(file), options_(options) {}
  ~Impl() { ZSTD_freeCCtx(cctx_); }

  absl::Status Start();
  absl::Status Add(const Record& record);
  absl::Status Finish();

  uint64_t records() const { return records_; }
  uint64_t bytes_written() const { return bytes_written_; }
  uint32_t file_crc() const { return file_crc_; }

 private:
  absl::Status FlushBlock();
  // Appends bytes whose CRC-32C is `crc`, keeping the whole-file CRC.
  absl::Status Write(const uint8_t* data, size_t n, uint32_t crc);
  absl::Status Write(const uint8_t* data, size_t n) {
    return Write(data, n, Crc32c({data, n}));
  }

  WritableFile* file_;
  ShardWriterOptions options_;
  ZSTD_CCtx* cctx_ = nullptr;

  ByteBuffer block_;       // block header + raw payload being filled
  size_t used_ = 0;        // raw payload bytes in block_
  ByteBuffer compressed_;  // block header + zstd frame
  std::vector<uint32_t> record_offsets_;  // every record of the shard
  std::vector<BlockInfo> blocks_;
  uint32_t block_records_ = 0;

  uint64_t records_ = 0;
  uint64_t bytes_written_ = 0;
  uint32_t file_crc_ = 0;
  bool finished_ = false;
  absl::Status failed_;  // once a write fails, every later call reports it
};

absl::Status ShardWriter::Impl::Write(const uint8_t* data, size_t n, uint32_t crc) {
  absl::Status s = file_->Append({data, n});
  if (!s.ok()) {
    failed_ = s;
    return s;
  }
  file_crc_ = Crc32cCombine(file_crc_, crc, n);
  bytes_written_ += n;
  return absl::OkStatus();
}

absl::Status ShardWriter::Impl::Start() {
  if (options_.block_size == 0) {
    return absl::InvalidArgumentError("block size must be positive");
  }
  if (options_.compression == Compression::kZstd) {
    cctx_ = ZSTD_createCCtx();
    if (cctx_ == nullptr) return absl::ResourceExhaustedError("ZSTD_createCCtx failed");
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, options_.zstd_level);
  } else if (options_.compression != Compression::kNone) {
    return absl::InvalidArgumentError("unknown compression");
  }
  block_.Reserve(format::kBlockHeaderSize + options_.block_size + kShardAlignment);

  uint8_t header[kShardAlignment] = {};
  std::memcpy(header, format::kShardMagic.data(), format::kShardMagic.size());
  StoreLE<uint16_t>(header + 8, kShardMajorVersion);
  StoreLE<uint16_t>(header + 10, kShardMinorVersion);
  StoreLE<uint32_t>(header + 12, kShardAlignment);
  StoreLE<uint32_t>(header + format::kFileHeaderCrcOffset,
                    Crc32c({header, format::kFileHeaderCrcOffset}));
  return Write(header, sizeof(header));
}

absl::Status ShardWriter::Impl::Add(const Record& record) {
  SP_RETURN_IF_ERROR(failed_);
  if (finished_) return absl::FailedPreconditionError("Add after Finish");
  SP_ASSIGN_OR_RETURN(uint64_t size, format::EncodedRecordSize(record));
  if (block_records_ > 0 && used_ + size > options_.block_size) {
    SP_RETURN_IF_ERROR(FlushBlock());
  }
  // Sizes in a block header are u32; keep room for the header itself.
  constexpr uint64_t kMaxPayload =
      std::numeric_limits<uint32_t>::max() - format::kBlockHeaderSize;
  if (used_ + size > kMaxPayload) {
    return absl::InvalidArgumentError(
        absl::StrCat("record '", common::AsAbsl(record.key), "' of ", size,
                     " bytes does not fit a block (4 GiB at most)"));
  }
  block_.Reserve(format::kBlockHeaderSize + used_ + size + kShardAlignment);
  format::EncodeRecord(record, block_.data() + format::kBlockHeaderSize + used_, size);
  record_offsets_.push_back(static_cast<uint32_t>(used_));
  used_ += size;
  ++block_records_;
  ++records_;
  return absl::OkStatus();
}

absl::Status ShardWriter::Impl::FlushBlock() {
  if (block_records_ == 0) return absl::OkStatus();
  uint8_t* out = block_.data();
  size_t stored = used_;
  Compression compression = Compression::kNone;
  if (options_.compression == Compression::kZstd) {
    size_t bound = ZSTD_compressBound(used_);
    compressed_.Reserve(format::kBlockHeaderSize + bound + kShardAlignment);
    size_t n = ZSTD_compress2(cctx_, compressed_.data() + format::kBlockHeaderSize,
                              bound, block_.data() + format::kBlockHeaderSize, used_);
    if (ZSTD_isError(n)) {
      return absl::InternalError(absl::StrCat("zstd: ", ZSTD_getErrorName(n)));
    }
    // Incompressible blocks (JPEG bytes, noise) are stored as they are.
    if (n < used_) {
      out = compressed_.data();
      stored = n;
      compression = Compression::kZstd;
    }
  }
  uint8_t* payload = out + format::kBlockHeaderSize;
  uint32_t crc = Crc32c({payload, stored});
  EncodeBlockHeader(out, compression, block_records_, static_cast<uint32_t>(stored),
                    static_cast<uint32_t>(used_), crc);
  size_t total = format::kBlockHeaderSize + stored;
  size_t padded = AlignUp(total, kShardAlignment);
  std::memset(out + total, 0, padded - total);

  BlockInfo info;
  info.offset = bytes_written_;
  info.stored_size = static_cast<uint32_t>(total);
  info.raw_size = static_cast<uint32_t>(used_);
  info.record_count = block_records_;
  info.payload_crc32c = crc;
  info.first_record = records_ - block_records_;
  blocks_.push_back(info);

  used_ = 0;
  block_records_ = 0;
  // The block's CRC from its parts, so the payload is read only once.
  uint32_t block_crc = Crc32c({out, format::kBlockHeaderSize});
  block_crc = Crc32cCombine(block_crc, crc, stored);
  block_crc = Crc32cExtendZeros(block_crc, padded - total);
  return Write(out, padded, block_crc);
}

absl::Status ShardWriter::Impl::Finish() {
  SP_RETURN_IF_ERROR(failed_);
  if (finished_) return absl::FailedPreconditionError("Finish called twice");
  SP_RETURN_IF_ERROR(FlushBlock());
  finished_ = true;

  const uint64_t footer_offset = bytes_written_;
  const size_t footer_size = format::kFooterFixedSize +
                             format::kBlockEntrySize * blocks_.size() +
                             4 * record_offsets_.size();
  std::vector<uint8_t> tail(footer_size + format::kTrailerSize);
  uint8_t* f = tail.data();
  StoreLE<uint32_t>(f + 0, format::kFooterMagic);
  StoreLE<uint32_t>(f + 4, static_cast<uint32_t>(blocks_.size()));
  StoreLE<uint64_t>(f + 8, records_);
  uint8_t* p = f + format::kFooterFixedSize;
  for (const BlockInfo& b : blocks_) {
    StoreLE<uint64_t>(p + 0, b.offset);
    StoreLE<uint32_t>(p + 8, b.stored_size);
    StoreLE<uint32_t>(p + 12, b.raw_size);
    StoreLE<uint32_t>(p + 16, b.record_count);
    StoreLE<uint32_t>(p + 20, b.payload_crc32c);
    p += format::kBlockEntrySize;
  }
  for (uint32_t offset : record_offsets_) {
    StoreLE<uint32_t>(p, offset);
    p += 4;
  }
  uint8_t* t = f + footer_size;
  StoreLE<uint64_t>(t + 0, footer_offset);
  StoreLE<uint64_t>(t + 8, footer_size);
  StoreLE<uint32_t>(t + 16, Crc32c({f, footer_size}));
  StoreLE<uint32_t>(t + 20, Crc32c({t, format::kTrailerCrcOffset}));
  std::memcpy(t + 24, format::kShardMagic.data(), format::kShardMagic.size());
  return Write(tail.data(), tail.size());
}

ShardWriter::ShardWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ShardWriter::~ShardWriter() = default;

absl::StatusOr<std::unique_ptr<ShardWriter>> ShardWriter::Create(
    WritableFile* file, const ShardWriterOptions& options) {
  auto impl = std::make_unique<Impl>(file, options);
  SP_RETURN_IF_ERROR(impl->Start());
  return std::unique_ptr<ShardWriter>(new ShardWriter(std::move(impl)));
}

absl::Status ShardWriter::Add(const Record& record) { return impl_->Add(record); }
absl::Status ShardWriter::Finish() { return impl_->Finish(); }
uint64_t ShardWriter::records() const { return impl_->records(); }
uint64_t ShardWriter::bytes_written() const { return impl_->bytes_written(); }
uint32_t ShardWriter::file_crc32c() const { return impl_->file_crc(); }

}  // namespace shardpack
