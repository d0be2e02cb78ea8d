// The `.shard` format: writer, index, block decoding and verification.
//
// A shard holds a contiguous range of a dataset's records packed into blocks
// that start at 4 KiB-aligned offsets, followed by a footer index and a fixed
// trailer. docs/format.md specifies every byte; format/shard_layout.h holds
// the constants.
//
// Nothing here opens a path: the writer appends to a WritableFile and the
// reading side reads through a RandomAccessFile or parses bytes it is handed.
#ifndef SHARDPACK_SHARD_H_
#define SHARDPACK_SHARD_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shardpack/damage.h"
#include "shardpack/file.h"
#include "shardpack/record.h"

namespace shardpack {

struct Schema;  // shardpack/manifest.h

// Format version this build writes. A reader accepts any minor version of
// the same major version and rejects other majors with an error naming both.
inline constexpr uint16_t kShardMajorVersion = 1;
inline constexpr uint16_t kShardMinorVersion = 0;

// Alignment of the first block, every later block and the footer.
inline constexpr uint32_t kShardAlignment = 4096;

enum class Compression : uint8_t {
  kNone = 0,
  kZstd = 1,  // each block compressed on its own, as one zstd frame
};

struct ShardWriterOptions {
  // Target bytes of records per block (before compression). A block is closed
  // when the next record would take it past this size; a record larger than
  // a block gets a block of its own. Default 4 MiB. Must be > 0.
  uint32_t block_size = 4 << 20;
  // Default: none.
  Compression compression = Compression::kNone;
  // zstd level when compression is kZstd. Default 3.
  int zstd_level = 3;
};

// Writes one shard. Not thread-safe; one writer per shard.
//
// Usage: Create, Add every record, Finish. The shard is complete only after
// Finish() returns OK; to make that atomic on disk, write through an
// AtomicFile and Commit() it after Finish().
class ShardWriter {
 public:
  // `file` is borrowed and must outlive the writer. Writes the header.
  static absl::StatusOr<std::unique_ptr<ShardWriter>> Create(
      WritableFile* file, const ShardWriterOptions& options);
  ~ShardWriter();

  // Copies the record into the current block. InvalidArgumentError for a
  // record the format cannot hold (more than kMaxLabels labels, a key over
  // 65535 bytes, a raw payload whose size does not match its shape, a block
  // over 4 GiB).
  absl::Status Add(const Record& record);

  // Writes the last block, the footer and the trailer. Call once.
  absl::Status Finish();

  uint64_t records() const;
  // Bytes written to the file so far (the whole shard after Finish()).
  uint64_t bytes_written() const;
  // CRC-32C of every byte written so far (the manifest's shard checksum).
  uint32_t file_crc32c() const;

 private:
  class Impl;
  explicit ShardWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Where a block lives and what it holds, from the footer index.
struct BlockInfo {
  uint64_t offset = 0;        // file offset of the block header (aligned)
  uint32_t stored_size = 0;   // block header + stored payload, no padding
  uint32_t raw_size = 0;      // payload bytes after decompression
  uint32_t record_count = 0;
  uint32_t payload_crc32c = 0;
  uint64_t first_record = 0;  // index of the block's first record in the shard

  // Whether the block is zstd-compressed: a compressed block's stored payload
  // is always smaller than its raw payload, an uncompressed one's equal.
  bool compressed() const;
};

// The footer index of a shard: block table and record offsets.
// Immutable after Load; thread-safe to share.
class ShardIndex {
 public:
  // Reads and validates the header, trailer and footer of `file` (three
  // small reads). DataLossError naming the file and byte offset for damage;
  // FailedPreconditionError for an unsupported major version.
  static absl::StatusOr<ShardIndex> Load(const RandomAccessFile& file);

  const std::string& name() const { return name_; }
  uint64_t file_size() const { return file_size_; }
  uint64_t footer_offset() const { return footer_offset_; }
  uint16_t minor_version() const { return minor_version_; }
  uint64_t num_records() const { return num_records_; }
  size_t num_blocks() const { return blocks_.size(); }
  const BlockInfo& block(size_t i) const { return blocks_[i]; }
  const std::vector<BlockInfo>& blocks() const { return blocks_; }

  // Offsets of block b's records within its raw payload.
  std::span<const uint32_t> record_offsets(size_t b) const;

  // The block holding record `r`. Precondition: r < num_records().
  size_t BlockOf(uint64_t r) const;

 private:
  std::string name_;
  uint64_t file_size_ = 0;
  uint64_t footer_offset_ = 0;
  uint16_t minor_version_ = 0;
  uint64_t num_records_ = 0;
  std::vector<BlockInfo> blocks_;
  std::vector<uint32_t> record_offsets_;  // all blocks, concatenated
};

// A decoded block: its raw payload and record offsets.
// Views stay valid while the bytes handed to BlockDecoder::Decode and the
// decoder itself are unchanged (until the decoder's next Decode call when the
// block was compressed).
class BlockView {
 public:
  BlockView() = default;
  size_t size() const { return offsets_.size(); }
  uint64_t first_record() const { return first_record_; }
  // Parses record i (relative to the block). Validates the record header;
  // DataLossError naming the shard, block offset and record for damage.
  absl::StatusOr<Record> record(size_t i) const;
  // The raw payload (records back to back).
  std::span<const uint8_t> payload() const { return payload_; }
  // Where the records start in payload() (for prefetching).
  std::span<const uint32_t> record_offsets() const { return offsets_; }
  // Bytes of record i, unparsed (for prefetching; no checks).
  std::span<const uint8_t> record_bytes(size_t i) const {
    size_t end = i + 1 < offsets_.size() ? offsets_[i + 1] : payload_.size();
    return payload_.subspan(offsets_[i], end - offsets_[i]);
  }

 private:
  friend class BlockDecoder;
  const std::string* shard_name_ = nullptr;
  uint64_t block_offset_ = 0;
  uint64_t first_record_ = 0;
  std::span<const uint8_t> payload_;
  std::span<const uint32_t> offsets_;
};

// Turns a block's stored bytes into a BlockView: checks the block header
// against the index, verifies the payload CRC-32C and decompresses.
// Keep one per thread for the life of the thread; not thread-safe.
class BlockDecoder {
 public:
  BlockDecoder();
  ~BlockDecoder();
  BlockDecoder(const BlockDecoder&) = delete;
  BlockDecoder& operator=(const BlockDecoder&) = delete;

  // `stored` holds block b's stored_size bytes, starting at its header.
  absl::StatusOr<BlockView> Decode(const ShardIndex& index, size_t b,
                                   std::span<const uint8_t> stored);

  // As Decode, but a compressed block is decompressed into `raw`
  // (index.block(b).raw_size bytes, owned by the caller), so the view stays
  // valid for as long as `stored` and `raw` do, whatever the decoder does
  // next. `raw` is not touched for an uncompressed block. `payload_checked`:
  // the caller has checked the payload's CRC-32C against this index's
  // (a remote dataset's blocks are, as they are fetched or taken from the
  // cache), so it is not computed again; the header is checked all the same.
  absl::StatusOr<BlockView> DecodeInto(const ShardIndex& index, size_t b,
                                       std::span<const uint8_t> stored, uint8_t* raw,
                                       bool payload_checked = false);

 private:
  absl::StatusOr<BlockView> DecodeImpl(const ShardIndex& index, size_t b,
                                       std::span<const uint8_t> stored,
                                       absl::FunctionRef<uint8_t*(size_t)> raw_buffer,
                                       bool payload_checked = false);
  struct Zstd;
  std::unique_ptr<Zstd> zstd_;
  std::unique_ptr<uint8_t[]> scratch_;  // Decode's output for zstd blocks
  size_t scratch_capacity_ = 0;
};

// Random and sequential access to one shard through a RandomAccessFile:
// reads a whole block per request and keeps the last one.
// Not thread-safe; open one per thread.
class ShardReader {
 public:
  // `file` is borrowed and must outlive the reader.
  static absl::StatusOr<std::unique_ptr<ShardReader>> Open(
      const RandomAccessFile* file);

  const ShardIndex& index() const { return index_; }

  // Reads and decodes block b. The view is valid until the next call.
  absl::StatusOr<BlockView> ReadBlock(size_t b);

  // Record r of the shard (reads its block unless it is the current one).
  // The views are valid until the next call.
  absl::StatusOr<Record> ReadRecord(uint64_t r);

 private:
  ShardReader(const RandomAccessFile* file, ShardIndex index)
      : file_(file), index_(std::move(index)) {}
  const RandomAccessFile* file_;
  ShardIndex index_;
  BlockDecoder decoder_;
  std::vector<uint8_t> buffer_;
  size_t current_block_ = SIZE_MAX;
  BlockView current_;
};

// Checks every byte of a shard: header, padding, each block's header and
// CRC-32C, every record against the index, footer and trailer, and, when
// `schema` is given, every record against it (CheckRecordAgainstSchema; for
// a schema with fields also each record's own CRC-32C and its fields'
// content, shardpack/fields.h).
// Reports every problem it can find (damage to one block does not hide
// damage to another) and returns the number of records checked. Reads block
// by block. Each problem is a Damage (shardpack/damage.h): path the file's
// name, record its index in the shard, status's message "<shard> @<offset>:
// ..." as in every error.
struct ShardVerifyResult {
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint32_t file_crc32c = 0;  // CRC-32C of the whole file
  std::vector<Damage> problems;
  bool ok() const { return problems.empty(); }
};
ShardVerifyResult VerifyShard(const RandomAccessFile& file, const Schema* schema = nullptr);
// The same, handing each record that passed its checks to `on_record`
// (its index in the shard, the record) in the same pass, in order: a record
// table is compared with the records there (sharddump verify) without a
// second read of the shard. The record's views live for the call.
ShardVerifyResult VerifyShard(const RandomAccessFile& file, const Schema* schema,
                              absl::FunctionRef<void(uint64_t, const Record&)> on_record);

}  // namespace shardpack

#endif  // SHARDPACK_SHARD_H_
