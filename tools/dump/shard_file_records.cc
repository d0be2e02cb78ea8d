#include "tools/dump/shard_file_records.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "format/status_macros.h"

namespace shardpack::dump {
namespace {

// Byte 4 of a block header holds its compression (docs/format.md).
constexpr uint64_t kBlockCompressionByte = 4;
constexpr uint64_t kBlockHeaderSize = 32;

class ShardFileRecords : public ShardRecords {
 public:
  ShardFileRecords(std::string path, std::unique_ptr<RandomAccessFile> file,
                   std::unique_ptr<ShardReader> reader)
      : path_(std::move(path)), file_(std::move(file)), reader_(std::move(reader)) {}

  const std::string& path() const override { return path_; }
  uint64_t size() const override { return reader_->index().num_records(); }
  uint64_t file_bytes() const override { return file_->size(); }
  std::string format_version() const override {
    return absl::StrCat(kShardMajorVersion, ".", reader_->index().minor_version());
  }

  StorageStats storage() const override {
    StorageStats s;
    for (const BlockInfo& b : reader_->index().blocks()) {
      ++s.blocks;
      s.raw_bytes += b.raw_size;
      s.stored_bytes += b.stored_size - kBlockHeaderSize;
      // The writer stores a block compressed only when that makes it
      // smaller, and an uncompressed block's sizes must agree.
      if (b.compressed()) ++s.compressed_blocks;
    }
    return s;
  }

  absl::Status Scan(uint64_t begin, uint64_t end, RecordVisitor visit,
                    const DamageHandler* on_damage) override;

 private:
  // Whether block b is stored compressed, from its header's compression byte.
  bool BlockIsCompressed(const BlockInfo& info) const {
    uint8_t c = 0;
    if (!file_->ReadExact(info.offset + kBlockCompressionByte, {&c, 1}).ok()) return false;
    return c != 0;
  }

  std::string path_;
  std::unique_ptr<RandomAccessFile> file_;
  std::unique_ptr<ShardReader> reader_;
};

absl::Status ShardFileRecords::Scan(uint64_t begin, uint64_t end, RecordVisitor visit,
                                    const DamageHandler* on_damage) {
  const ShardIndex& index = reader_->index();
  if (begin >= end) return absl::OkStatus();
  for (size_t b = index.BlockOf(begin); b < index.num_blocks(); ++b) {
    const BlockInfo& info = index.block(b);
    if (info.first_record >= end) break;
    auto view = reader_->ReadBlock(b);
    if (!view.ok()) {
      if (on_damage == nullptr) return view.status();
      (*on_damage)(view.status(), info.first_record);
      continue;
    }
    RecordLocation location;
    location.block_offset = info.offset;
    location.compressed = BlockIsCompressed(info);
    std::span<const uint32_t> offsets = index.record_offsets(b);
    const uint64_t first = std::max(begin, info.first_record) - info.first_record;
    const uint64_t last = std::min<uint64_t>(end - info.first_record, info.record_count);
    for (uint64_t i = first; i < last; ++i) {
      auto record = view->record(i);
      if (!record.ok()) {
        if (on_damage == nullptr) return record.status();
        (*on_damage)(record.status(), info.first_record + i);
        continue;
      }
      location.in_block = offsets[i];
      SP_RETURN_IF_ERROR(visit(info.first_record + i, *record, location));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenShardBytes(const std::string& path) {
  auto mapped = OpenMappedFile(path);
  if (mapped.ok() || absl::IsNotFound(mapped.status()) ||
      absl::IsFailedPrecondition(mapped.status())) {
    return mapped;
  }
  return OpenPosixFile(path);
}

absl::StatusOr<std::unique_ptr<ShardRecords>> OpenShardFile(const std::string& path) {
  SP_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, OpenShardBytes(path));
  SP_ASSIGN_OR_RETURN(std::unique_ptr<ShardReader> reader, ShardReader::Open(file.get()));
  return std::unique_ptr<ShardRecords>(
      new ShardFileRecords(path, std::move(file), std::move(reader)));
}

ShardCheck CheckShardFile(const std::string& path, const Schema* schema) {
  ShardCheck check;
  auto file = OpenShardBytes(path);
  if (!file.ok()) {
    check.problems.push_back({path, 0, std::nullopt, file.status()});
    return check;
  }
  check.opened = true;
  check.bytes = (*file)->size();
  ShardVerifyResult result = VerifyShard(**file, schema);
  // VerifyShard leaves bytes at 0 when it could not load the index; it
  // reported why.
  if (result.bytes != 0) {
    auto index = ShardIndex::Load(**file);
    if (index.ok()) {
      check.index_ok = true;
      check.records = index->num_records();
      // The footer's record count: u64 at footer + 8 (docs/format.md).
      check.records_offset = index->footer_offset() + 8;
      check.crc_valid = true;
      check.file_crc32c = result.file_crc32c;
    }
  }
  check.problems = std::move(result.problems);
  return check;
}

}  // namespace shardpack::dump
