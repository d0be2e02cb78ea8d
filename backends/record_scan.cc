#include "backends/record_scan.h"

#include <algorithm>
#include <new>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/hdf5_store.h"
#include "backends/lmdb_store.h"
#include "backends/shard_gate.h"
#include "common/check.h"
#include "common/errors.h"
#include "common/posix_io.h"
#include "common/status_macros.h"
#include "shardpack/shard.h"

namespace shardpack::backends {
namespace {

// Byte 4 of a block header holds its compression (docs/format.md).
constexpr uint64_t kBlockCompressionByte = 4;
constexpr uint64_t kBlockHeaderSize = 32;

class ShardFileScanner : public ShardScanner {
 public:
  ShardFileScanner(std::string path, std::unique_ptr<RandomAccessFile> file,
                   std::unique_ptr<ShardReader> reader)
      : path_(std::move(path)), file_(std::move(file)), reader_(std::move(reader)) {}

  const std::string& path() const override { return path_; }
  uint64_t size() const override { return reader_->index().num_records(); }
  uint64_t file_bytes() const override { return file_->size(); }
  std::string format_version() const override {
    return absl::StrCat(kShardMajorVersion, ".", reader_->index().minor_version());
  }
  StorageStats storage() const override;
  absl::Status Scan(uint64_t begin, uint64_t end, RecordVisitor visit,
                    ScanReporter* reporter) override;

 private:
  // Whether block b is stored compressed, from its header's compression byte.
  bool BlockIsCompressed(const BlockInfo& info) const {
    uint8_t c = 0;
    if (!file_->ReadExact(info.offset + kBlockCompressionByte, {&c, 1}).ok()) return false;
    return c != 0;
  }
  // Tells `reporter` of `status` at `offset` (the error's own offset when it
  // carries one) and record `record`.
  void Report(ScanReporter* reporter, const absl::Status& status, uint64_t offset,
              uint64_t record) const {
    reporter->Corruption(
        {path_, ::shardpack::common::ErrorOffset(status).value_or(offset), record, status});
  }

  std::string path_;
  std::unique_ptr<RandomAccessFile> file_;
  std::unique_ptr<ShardReader> reader_;
};

StorageStats ShardFileScanner::storage() const {
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

absl::Status ShardFileScanner::Scan(uint64_t begin, uint64_t end, RecordVisitor visit,
                                    ScanReporter* reporter) {
  SP_DCHECK(begin <= end && end <= size());
  const ShardIndex& index = reader_->index();
  if (begin >= end) return absl::OkStatus();
  for (size_t b = index.BlockOf(begin); b < index.num_blocks(); ++b) {
    const BlockInfo& info = index.block(b);
    if (info.first_record >= end) break;
    auto view = reader_->ReadBlock(b);
    if (!view.ok()) {
      if (reporter == nullptr) return view.status();
      Report(reporter, view.status(), info.offset, info.first_record);
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
        if (reporter == nullptr) return record.status();
        Report(reporter, record.status(), info.offset, info.first_record + i);
        continue;
      }
      location.in_block = offsets[i];
      SP_RETURN_IF_ERROR(visit(info.first_record + i, *record, location));
      SP_RETURN_IF_ERROR(file_->CheckIntact());  // mapped bytes that were zeros
    }
  }
  return absl::OkStatus();
}

// What LMDB and HDF5 scanners share: the file size, no blocks, no offsets
// of their own, and damage that ends the scan (their libraries give no way
// to step past it).
class BackendScanner : public ShardScanner {
 public:
  BackendScanner(std::string path, uint64_t bytes) : path_(std::move(path)), bytes_(bytes) {}
  const std::string& path() const override { return path_; }
  uint64_t file_bytes() const override { return bytes_; }
  StorageStats storage() const override { return {0, 0, bytes_, bytes_}; }
  std::string format_version() const override { return "1.0"; }

  absl::Status Scan(uint64_t begin, uint64_t end, RecordVisitor visit,
                    ScanReporter* reporter) final {
    SP_DCHECK(begin <= end && end <= size());
    RecordLocation location;
    location.has_offset = false;
    uint64_t next = begin;
    absl::Status s = ScanRecords(begin, end, [&](uint64_t i, const Record& r) {
      next = i + 1;
      return visit(i, r, location);
    });
    if (!s.ok() && reporter != nullptr && absl::IsDataLoss(s)) {
      reporter->Corruption({path_, 0, next, s});
      return absl::OkStatus();
    }
    return s;
  }

 protected:
  virtual absl::Status ScanRecords(uint64_t begin, uint64_t end, ShardRecordVisitor visit) = 0;

 private:
  std::string path_;
  uint64_t bytes_;
};

class LmdbScanner : public BackendScanner {
 public:
  LmdbScanner(uint64_t bytes, std::unique_ptr<LmdbShardReader> reader)
      : BackendScanner(reader->path(), bytes), reader_(std::move(reader)) {}
  uint64_t size() const override { return reader_->size(); }

 protected:
  absl::Status ScanRecords(uint64_t begin, uint64_t end, ShardRecordVisitor visit) override {
    return reader_->Scan(begin, end, [&](uint64_t i, ByteSpan value) -> absl::Status {
      SP_ASSIGN_OR_RETURN(Record record, DecodeLmdbValue(value, reader_->path(), i));
      return visit(i, record);
    });
  }

 private:
  std::unique_ptr<LmdbShardReader> reader_;
};

// Reads a chunk of rows per step into buffers kept for the scanner's life.
class Hdf5Scanner : public BackendScanner {
 public:
  Hdf5Scanner(uint64_t bytes, std::unique_ptr<Hdf5ShardReader> reader)
      : BackendScanner(reader->path(), bytes), r_(std::move(reader)) {}
  uint64_t size() const override { return r_->size(); }
  std::string LayoutText() const override { return r_->LayoutText(); }

 protected:
  absl::Status ScanRecords(uint64_t begin, uint64_t end, ShardRecordVisitor visit) override {
    for (uint64_t at = begin; at < end;) {
      uint64_t step_end = std::min(end, (at / r_->chunk_rows() + 1) * r_->chunk_rows());
      // A step's buffers are sized by the file (up to a chunk of 4 GiB rows,
      // or the keys' bytes): not getting them is an error, not an abort.
      absl::Status s;
      try {
        s = ScanStep(at, step_end, visit);
      } catch (const std::bad_alloc&) {
        s = absl::ResourceExhaustedError(
            absl::StrCat(r_->path(), ": out of memory reading rows [", at, ", ", step_end, ")"));
      }
      SP_RETURN_IF_ERROR(s);
      at = step_end;
    }
    return absl::OkStatus();
  }

 private:
  absl::Status ScanStep(uint64_t begin, uint64_t end, ShardRecordVisitor visit);
  absl::Status ReadStep(uint64_t begin, uint64_t end);
  // Row i of the step read by ReadStep (starting at row `begin`).
  absl::StatusOr<Record> RowRecord(uint64_t begin, uint64_t i) const;

  std::unique_ptr<Hdf5ShardReader> r_;
  std::vector<uint8_t> images_;
  std::vector<int64_t> labels_[kMaxLabels];
  std::vector<int64_t> offsets_;
  std::vector<uint32_t> info_;
  std::vector<int64_t> key_offsets_, extra_offsets_;
  std::vector<uint8_t> keys_, extra_;
};

absl::Status Hdf5Scanner::ReadStep(uint64_t begin, uint64_t end) {
  const uint64_t n = end - begin;
  int64_t* label_ptrs[kMaxLabels] = {};
  for (int k = 0; k < r_->num_labels(); ++k) {
    labels_[k].resize(n);
    label_ptrs[k] = labels_[k].data();
  }
  if (r_->fixed_shape()) {
    images_.resize(n * r_->image_info().RawBytes());
    SP_RETURN_IF_ERROR(r_->ReadRows(begin, end, images_.data(), label_ptrs));
  } else {
    SP_RETURN_IF_ERROR(r_->ReadRows(begin, end, nullptr, label_ptrs));
    offsets_.resize(n + 1);
    info_.resize(n * kHdf5ImageInfoColumns);
    SP_RETURN_IF_ERROR(r_->ReadOffsets(begin, end, offsets_.data()));
    SP_RETURN_IF_ERROR(r_->ReadImageInfo(begin, end, info_.data()));
    for (uint64_t i = 0; i < n; ++i) {
      if (offsets_[i] < offsets_[0] || offsets_[i + 1] < offsets_[i]) {
        return absl::DataLossError(absl::StrCat(r_->path(), " record ", begin + i,
                                                ": 'offsets' out of order"));
      }
    }
    images_.resize(static_cast<size_t>(offsets_[n] - offsets_[0]));
    SP_RETURN_IF_ERROR(r_->ReadData(static_cast<uint64_t>(offsets_[0]),
                                    static_cast<uint64_t>(offsets_[n]), images_.data()));
  }
  SP_RETURN_IF_ERROR(r_->ReadKeys(begin, end, &key_offsets_, &keys_));
  SP_RETURN_IF_ERROR(r_->ReadExtra(begin, end, &extra_offsets_, &extra_));
  return r_->CheckSize();  // a lost tail read as zeros
}

absl::StatusOr<Record> Hdf5Scanner::RowRecord(uint64_t begin, uint64_t i) const {
  Record rec;
  for (int k = 0; k < r_->num_labels(); ++k) rec.labels.push_back(labels_[k][i]);
  rec.key = std::string_view(reinterpret_cast<const char*>(keys_.data()) + key_offsets_[i],
                             static_cast<size_t>(key_offsets_[i + 1] - key_offsets_[i]));
  rec.extra = ByteSpan(extra_.data() + extra_offsets_[i],
                       static_cast<size_t>(extra_offsets_[i + 1] - extra_offsets_[i]));
  if (r_->fixed_shape()) {
    const ImageInfo shape = r_->image_info();
    rec.image = shape;
    rec.payload = ByteSpan(images_.data() + i * shape.RawBytes(), shape.RawBytes());
    return rec;
  }
  const uint32_t* info = &info_[i * kHdf5ImageInfoColumns];
  if (info[0] > static_cast<uint32_t>(Encoding::kJpeg) ||
      info[1] > static_cast<uint32_t>(Layout::kCHW) || info[4] > 255) {
    return absl::DataLossError(absl::StrCat(r_->path(), " record ", begin + i,
                                            ": bad 'image_info' row"));
  }
  rec.image = ImageInfo{static_cast<Encoding>(info[0]), static_cast<Layout>(info[1]), info[2],
                        info[3], static_cast<uint8_t>(info[4])};
  rec.payload = ByteSpan(images_.data() + (offsets_[i] - offsets_[0]),
                         static_cast<size_t>(offsets_[i + 1] - offsets_[i]));
  if (rec.image.encoding == Encoding::kRaw && rec.image.RawBytes() != rec.payload.size()) {
    return absl::DataLossError(absl::StrCat(r_->path(), " record ", begin + i, ": raw payload of ",
                                            rec.payload.size(), " bytes does not match its shape"));
  }
  return rec;
}

absl::Status Hdf5Scanner::ScanStep(uint64_t begin, uint64_t end, ShardRecordVisitor visit) {
  SP_RETURN_IF_ERROR(ReadStep(begin, end));
  for (uint64_t i = 0; i < end - begin; ++i) {
    SP_ASSIGN_OR_RETURN(Record rec, RowRecord(begin, i));
    SP_RETURN_IF_ERROR(visit(begin + i, rec));
  }
  return absl::OkStatus();
}

}  // namespace

uint64_t RecordLocation::file_offset() const {
  return compressed ? block_offset : block_offset + kBlockHeaderSize + in_block;
}

std::string RecordLocation::Text() const {
  if (!has_offset) return "-";
  if (compressed) return absl::StrCat(block_offset, ":", in_block);
  return absl::StrCat(file_offset());
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenShardBytes(const std::string& path,
                                                                 format::FileSystem* files) {
  if (common::IsUrlPath(path)) {
    if (files == nullptr) return LocalPathOf(path, nullptr).status();
    return files->OpenFile(path, /*mmap=*/false);
  }
  auto mapped = OpenMappedFile(path);
  if (mapped.ok() || absl::IsNotFound(mapped.status()) ||
      absl::IsFailedPrecondition(mapped.status())) {
    return mapped;
  }
  return OpenPosixFile(path);
}

absl::StatusOr<std::unique_ptr<ShardScanner>> ShardScanner::Open(const std::string& path,
                                                                 Backend backend,
                                                                 format::FileSystem* files) {
  if (backend == Backend::kShard) {
    SP_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, OpenShardBytes(path, files));
    SP_ASSIGN_OR_RETURN(std::unique_ptr<ShardReader> reader, ShardReader::Open(file.get()));
    return std::unique_ptr<ShardScanner>(
        new ShardFileScanner(path, std::move(file), std::move(reader)));
  }
  // The file's size, through the checked opener, before the library opens it.
  SP_ASSIGN_OR_RETURN(const std::string local, LocalPathOf(path, files));
  SP_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, OpenPosixFile(local));
  const uint64_t bytes = file->size();
  if (backend == Backend::kLmdb) {
    SP_ASSIGN_OR_RETURN(auto reader, LmdbShardReader::Open(local));
    return std::unique_ptr<ShardScanner>(new LmdbScanner(bytes, std::move(reader)));
  }
  SP_ASSIGN_OR_RETURN(auto reader, Hdf5ShardReader::Open(local));
  return std::unique_ptr<ShardScanner>(new Hdf5Scanner(bytes, std::move(reader)));
}

}  // namespace shardpack::backends
