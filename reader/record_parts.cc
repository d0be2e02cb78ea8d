// One record of a `.shard`, LMDB or HDF5 shard, read by its index.
#include "reader/record_parts.h"

#include <array>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "backends/shard_gate.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "format/record_codec.h"
#include "format/shard_layout.h"

namespace shardpack::reader {
namespace {

absl::StatusOr<uint8_t*> Grow(codec::GrowableBuffer* buffer, size_t bytes) {
  uint8_t* p = buffer->Get(bytes == 0 ? 1 : bytes);
  if (p == nullptr) return absl::ResourceExhaustedError(absl::StrCat("no memory for ", bytes,
                                                                     " bytes of a record"));
  return p;
}

// A `.shard` file: the record's block from the footer index, then only its
// bytes when the block is stored uncompressed.
class ShardPart : public RecordPart {
 public:
  ShardPart(std::unique_ptr<RandomAccessFile> file, ShardIndex index)
      : file_(std::move(file)), index_(std::move(index)) {}
  uint64_t records() const override { return index_.num_records(); }

  absl::Status Read(uint64_t j, RecordScratch* s, Record* out) const override {
    const size_t b = index_.BlockOf(j);
    const BlockInfo& block = index_.block(b);
    const size_t k = static_cast<size_t>(j - block.first_record);
    if (block.compressed()) return ReadFromBlock(b, k, s, out);
    const std::span<const uint32_t> offsets = index_.record_offsets(b);
    const uint64_t begin = offsets[k];
    const uint64_t end = k + 1 < offsets.size() ? offsets[k + 1] : block.raw_size;
    const uint64_t at = block.offset + format::kBlockHeaderSize + begin;
    SP_ASSIGN_OR_RETURN(uint8_t * bytes, Grow(&s->bytes, end - begin));
    SP_RETURN_IF_ERROR(file_->ReadExact(at, {bytes, end - begin}));
    SP_ASSIGN_OR_RETURN(*out, format::DecodeRecord({bytes, end - begin}, [&] { return Where(j); }));
    return absl::OkStatus();
  }

  std::string Where(uint64_t j) const override {
    const size_t b = index_.BlockOf(j);
    const BlockInfo& block = index_.block(b);
    uint64_t at = block.offset;
    if (!block.compressed()) {
      at += format::kBlockHeaderSize + index_.record_offsets(b)[j - block.first_record];
    }
    return absl::StrCat(index_.name(), " @", at, ": record ", j);
  }

 private:
  // A compressed block is read and decompressed whole (its CRC checked).
  absl::Status ReadFromBlock(size_t b, size_t k, RecordScratch* s, Record* out) const {
    const BlockInfo& block = index_.block(b);
    SP_ASSIGN_OR_RETURN(uint8_t * stored, Grow(&s->bytes, block.stored_size));
    SP_RETURN_IF_ERROR(file_->ReadExact(block.offset, {stored, block.stored_size}));
    SP_ASSIGN_OR_RETURN(uint8_t * raw, Grow(&s->raw, block.raw_size));
    SP_ASSIGN_OR_RETURN(BlockView view,
                        s->blocks.DecodeInto(index_, b, {stored, block.stored_size}, raw));
    SP_ASSIGN_OR_RETURN(*out, view.record(k));
    return absl::OkStatus();
  }

  std::unique_ptr<RandomAccessFile> file_;
  ShardIndex index_;
};

// An LMDB shard: one key lookup under the part's mutex, the value copied out.
class LmdbPart : public RecordPart {
 public:
  explicit LmdbPart(std::unique_ptr<backends::LmdbShardReader> reader)
      : reader_(std::move(reader)) {}
  uint64_t records() const override { return reader_->size(); }

  absl::Status Read(uint64_t j, RecordScratch* s, Record* out) const override {
    uint8_t* bytes = nullptr;
    size_t size = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      SP_ASSIGN_OR_RETURN(ByteSpan value, reader_->Get(j));
      SP_ASSIGN_OR_RETURN(bytes, Grow(&s->bytes, value.size()));
      std::memcpy(bytes, value.data(), value.size());
      size = value.size();
      SP_RETURN_IF_ERROR(reader_->CheckIntact());
    }
    SP_ASSIGN_OR_RETURN(*out, backends::DecodeLmdbValue({bytes, size}, reader_->path(), j));
    return absl::OkStatus();
  }

  std::string Where(uint64_t j) const override {
    return absl::StrCat(reader_->path(), ": record ", j);
  }

 private:
  std::unique_ptr<backends::LmdbShardReader> reader_;
  mutable std::mutex mu_;
};

// An HDF5 shard: row j of every dataset the layout has, under the part's
// mutex (libhdf5 is serialized process-wide anyway).
class Hdf5Part : public RecordPart {
 public:
  explicit Hdf5Part(std::unique_ptr<backends::Hdf5ShardReader> reader)
      : reader_(std::move(reader)) {}
  uint64_t records() const override { return reader_->size(); }

  absl::Status Read(uint64_t j, RecordScratch* s, Record* out) const override {
    std::lock_guard<std::mutex> lock(mu_);
    absl::Status read = ReadRow(j, s, out);
    SP_RETURN_IF_ERROR(reader_->CheckSize());
    return read;
  }

  std::string Where(uint64_t j) const override {
    return absl::StrCat(reader_->path(), ": record ", j);
  }

 private:
  absl::Status ReadRow(uint64_t j, RecordScratch* s, Record* out) const {
    std::array<int64_t, kMaxLabels> labels{};
    std::array<int64_t*, kMaxLabels> columns{};
    for (int f = 0; f < reader_->num_labels(); ++f) columns[f] = &labels[f];
    *out = Record{};
    if (reader_->fixed_shape()) {
      out->image = reader_->image_info();
      SP_ASSIGN_OR_RETURN(uint8_t * pixels, Grow(&s->bytes, out->image.RawBytes()));
      SP_RETURN_IF_ERROR(reader_->ReadRows(j, j + 1, pixels, columns.data()));
      out->payload = {pixels, out->image.RawBytes()};
    } else {
      SP_RETURN_IF_ERROR(ReadFlatImage(j, s, out));
      SP_RETURN_IF_ERROR(reader_->ReadRows(j, j + 1, nullptr, columns.data()));
    }
    for (int f = 0; f < reader_->num_labels(); ++f) out->labels.push_back(labels[f]);
    SP_RETURN_IF_ERROR(reader_->ReadKeys(j, j + 1, &s->key_offsets, &s->keys));
    SP_RETURN_IF_ERROR(reader_->ReadExtra(j, j + 1, &s->extra_offsets, &s->extra));
    out->key = {reinterpret_cast<const char*>(s->keys.data()), s->keys.size()};
    out->extra = s->extra;
    return absl::OkStatus();
  }

  absl::Status ReadFlatImage(uint64_t j, RecordScratch* s, Record* out) const {
    int64_t offsets[2];
    SP_RETURN_IF_ERROR(reader_->ReadOffsets(j, j + 1, offsets));
    const uint64_t n = static_cast<uint64_t>(offsets[1] - offsets[0]);
    SP_ASSIGN_OR_RETURN(uint8_t * bytes, Grow(&s->bytes, n));
    SP_RETURN_IF_ERROR(reader_->ReadData(offsets[0], offsets[1], bytes));
    uint32_t info[5];
    SP_RETURN_IF_ERROR(reader_->ReadImageInfo(j, j + 1, info));
    if (info[0] > 1 || info[1] > 1 || info[4] > 255) {
      return absl::DataLossError(absl::StrCat(reader_->path(), " record ", j,
                                              ": image_info (", info[0], ", ", info[1], ", ",
                                              info[4], ") is no encoding, layout and channels"));
    }
    out->image = {static_cast<Encoding>(info[0]), static_cast<Layout>(info[1]), info[2], info[3],
                  static_cast<uint8_t>(info[4])};
    out->payload = {bytes, n};
    return absl::OkStatus();
  }

  std::unique_ptr<backends::Hdf5ShardReader> reader_;
  mutable std::mutex mu_;
};

absl::StatusOr<std::unique_ptr<RecordPart>> OpenShardPart(const std::string& path, bool mmap,
                                                          remote::Storage* storage) {
  std::unique_ptr<RandomAccessFile> file;
  if (remote::IsUrl(path)) {
    // A remote object is read through the cache, never mapped.
    SP_ASSIGN_OR_RETURN(file, backends::OpenShardBytes(path, storage));
  } else if (mmap) {
    SP_ASSIGN_OR_RETURN(file, OpenMappedFile(path));
  } else {
    SP_ASSIGN_OR_RETURN(file, OpenPosixFile(path));
  }
  SP_ASSIGN_OR_RETURN(ShardIndex index, ShardIndex::Load(*file));
  return std::unique_ptr<RecordPart>(new ShardPart(std::move(file), std::move(index)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<RecordPart>> OpenRecordPart(const std::string& path,
                                                           Backend backend,
                                                           const std::optional<ShardEntry>& expected,
                                                           std::optional<uint64_t> records,
                                                           bool mmap,
                                                           remote::Storage* storage) {
  std::unique_ptr<RecordPart> part;
  if (backend == Backend::kShard) {
    SP_ASSIGN_OR_RETURN(part, OpenShardPart(path, mmap, storage));
  } else if (backend == Backend::kLmdb) {
    SP_ASSIGN_OR_RETURN(auto reader, backends::OpenLmdbShard(path, expected, storage));
    part = std::make_unique<LmdbPart>(std::move(reader));
  } else {
    SP_ASSIGN_OR_RETURN(auto reader, backends::OpenHdf5Shard(path, expected, storage));
    part = std::make_unique<Hdf5Part>(std::move(reader));
  }
  if (records.has_value()) {
    SP_RETURN_IF_ERROR(common::CheckManifestRecords(path, part->records(), *records));
  }
  return part;
}

}  // namespace shardpack::reader
