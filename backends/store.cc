#include "backends/store.h"

#include <cassert>
#include <algorithm>
#include <new>
#include <vector>

#include "absl/strings/str_cat.h"
#include "shardpack/backends.h"
#include "shardpack/file.h"
#include "shardpack/shard.h"
#include "format/status_macros.h"

namespace shardpack::backends {
namespace {

class ShardFileScanner : public ShardScanner {
 public:
  ShardFileScanner(std::unique_ptr<RandomAccessFile> file, std::unique_ptr<ShardReader> reader)
      : file_(std::move(file)), reader_(std::move(reader)) {}
  uint64_t size() const override { return reader_->index().num_records(); }
  absl::Status Scan(uint64_t begin, uint64_t end, ShardRecordVisitor visit) override {
    assert(begin <= end && end <= size());
    const ShardIndex& index = reader_->index();
    if (begin >= end) return absl::OkStatus();
    for (size_t b = index.BlockOf(begin); b < index.num_blocks(); ++b) {
      const BlockInfo& info = index.block(b);
      if (info.first_record >= end) break;
      SP_ASSIGN_OR_RETURN(BlockView view, reader_->ReadBlock(b));
      uint64_t first = std::max(begin, info.first_record) - info.first_record;
      uint64_t last = std::min<uint64_t>(end - info.first_record, info.record_count);
      for (uint64_t i = first; i < last; ++i) {
        SP_ASSIGN_OR_RETURN(Record record, view.record(i));
        SP_RETURN_IF_ERROR(visit(info.first_record + i, record));
        SP_RETURN_IF_ERROR(file_->CheckIntact());  // mapped bytes that were zeros
      }
    }
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<RandomAccessFile> file_;
  std::unique_ptr<ShardReader> reader_;
};

class LmdbScanner : public ShardScanner {
 public:
  explicit LmdbScanner(std::unique_ptr<LmdbShardReader> reader) : reader_(std::move(reader)) {}
  uint64_t size() const override { return reader_->size(); }
  absl::Status Scan(uint64_t begin, uint64_t end, ShardRecordVisitor visit) override {
    assert(begin <= end && end <= size());
    return reader_->Scan(begin, end, [&](uint64_t i, ByteSpan value) -> absl::Status {
      SP_ASSIGN_OR_RETURN(Record record, DecodeLmdbValue(value, reader_->path(), i));
      return visit(i, record);
    });
  }

 private:
  std::unique_ptr<LmdbShardReader> reader_;
};

// Reads a chunk of rows per step into buffers kept for the scanner's life.
class Hdf5Scanner : public ShardScanner {
 public:
  explicit Hdf5Scanner(std::unique_ptr<Hdf5ShardReader> reader) : r_(std::move(reader)) {}
  uint64_t size() const override { return r_->size(); }
  std::string LayoutText() const override { return r_->LayoutText(); }
  absl::Status Scan(uint64_t begin, uint64_t end, ShardRecordVisitor visit) override {
    assert(begin <= end && end <= size());
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

  std::unique_ptr<Hdf5ShardReader> r_;
  std::vector<uint8_t> images_;
  std::vector<int64_t> labels_[kMaxLabels];
  std::vector<int64_t> offsets_;
  std::vector<uint32_t> info_;
  std::vector<int64_t> key_offsets_, extra_offsets_;
  std::vector<uint8_t> keys_, extra_;
};

absl::Status Hdf5Scanner::ScanStep(uint64_t begin, uint64_t end, ShardRecordVisitor visit) {
  const uint64_t n = end - begin;
  const int num_labels = r_->num_labels();
  int64_t* label_ptrs[kMaxLabels] = {};
  for (int k = 0; k < num_labels; ++k) {
    labels_[k].resize(n);
    label_ptrs[k] = labels_[k].data();
  }
  const ImageInfo shape = r_->image_info();
  if (r_->fixed_shape()) {
    images_.resize(n * shape.RawBytes());
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
  SP_RETURN_IF_ERROR(r_->CheckSize());  // a lost tail read as zeros
  for (uint64_t i = 0; i < n; ++i) {
    Record rec;
    for (int k = 0; k < num_labels; ++k) rec.labels.push_back(labels_[k][i]);
    rec.key = std::string_view(reinterpret_cast<const char*>(keys_.data()) + key_offsets_[i],
                               static_cast<size_t>(key_offsets_[i + 1] - key_offsets_[i]));
    rec.extra = ByteSpan(extra_.data() + extra_offsets_[i],
                         static_cast<size_t>(extra_offsets_[i + 1] - extra_offsets_[i]));
    if (r_->fixed_shape()) {
      rec.image = shape;
      rec.payload = ByteSpan(images_.data() + i * shape.RawBytes(), shape.RawBytes());
    } else {
      const uint32_t* info = &info_[i * kHdf5ImageInfoColumns];
      if (info[0] > static_cast<uint32_t>(Encoding::kJpeg) ||
          info[1] > static_cast<uint32_t>(Layout::kCHW) || info[4] > 255) {
        return absl::DataLossError(absl::StrCat(r_->path(), " record ", begin + i,
                                                ": bad 'image_info' row"));
      }
      rec.image = ImageInfo{static_cast<Encoding>(info[0]), static_cast<Layout>(info[1]),
                            info[2], info[3], static_cast<uint8_t>(info[4])};
      rec.payload = ByteSpan(images_.data() + (offsets_[i] - offsets_[0]),
                             static_cast<size_t>(offsets_[i + 1] - offsets_[i]));
      if (rec.image.encoding == Encoding::kRaw && rec.image.RawBytes() != rec.payload.size()) {
        return absl::DataLossError(absl::StrCat(r_->path(), " record ", begin + i, ": raw payload of ",
                                                rec.payload.size(), " bytes does not match its shape"));
      }
    }
    SP_RETURN_IF_ERROR(visit(begin + i, rec));
  }
  return absl::OkStatus();
}

}  // namespace

}  // namespace shardpack::backends

namespace shardpack {

void UseBackend(DatasetWriterOptions* options, Backend backend) {
  backends::UseBackend(options, backend, {});
}

}  // namespace shardpack

namespace shardpack::backends {

void UseBackend(DatasetWriterOptions* options, Backend backend,
                const BackendOptions& backend_options) {
  options->backend = backend;
  switch (backend) {
    case Backend::kLmdb:
      options->open_shard = [lmdb = backend_options.lmdb](const std::string& path,
                                                          const DatasetWriterOptions& o) {
        return OpenLmdbShardSink(path, o, lmdb);
      };
      break;
    case Backend::kHdf5:
      options->open_shard = [hdf5 = backend_options.hdf5](const std::string& path,
                                                          const DatasetWriterOptions& o) {
        return OpenHdf5ShardSink(path, o, hdf5);
      };
      break;
    case Backend::kShard:
      options->open_shard = nullptr;
      break;
  }
}

absl::StatusOr<std::unique_ptr<ShardScanner>> ShardScanner::Open(const std::string& path,
                                                                 Backend backend) {
  switch (backend) {
    case Backend::kLmdb: {
      SP_ASSIGN_OR_RETURN(auto reader, LmdbShardReader::Open(path));
      return std::unique_ptr<ShardScanner>(new LmdbScanner(std::move(reader)));
    }
    case Backend::kHdf5: {
      SP_ASSIGN_OR_RETURN(auto reader, Hdf5ShardReader::Open(path));
      return std::unique_ptr<ShardScanner>(new Hdf5Scanner(std::move(reader)));
    }
    case Backend::kShard:
      break;
  }
  auto file = OpenMappedFile(path);
  if (!file.ok() && !absl::IsNotFound(file.status())) file = OpenPosixFile(path);
  SP_RETURN_IF_ERROR(file.status());
  SP_ASSIGN_OR_RETURN(auto reader, ShardReader::Open(file->get()));
  return std::unique_ptr<ShardScanner>(new ShardFileScanner(*std::move(file), std::move(reader)));
}

}  // namespace shardpack::backends
