// DatasetWriter: shard rotation, per-shard atomic commit, manifest last.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "format/record_table.h"
#include "shardpack/dataset.h"

namespace shardpack {

namespace {

// The `.shard` backend as a ShardSink: a ShardWriter over an AtomicFile.
class ShardFileSink : public ShardSink {
 public:
  static absl::StatusOr<std::unique_ptr<ShardSink>> Open(const std::string& path,
                                                         const DatasetWriterOptions& options) {
    auto sink = std::make_unique<ShardFileSink>();
    SP_ASSIGN_OR_RETURN(sink->file_, AtomicFile::Create(path));
    SP_ASSIGN_OR_RETURN(sink->writer_, ShardWriter::Create(sink->file_.get(), options.shard));
    return std::unique_ptr<ShardSink>(std::move(sink));
  }

  absl::Status Add(const Record& record) override { return writer_->Add(record); }
  uint64_t records() const override { return writer_->records(); }
  // bytes_written() advances a block at a time, so byte limits are met to
  // within one block.
  uint64_t bytes() const override { return writer_->bytes_written(); }

  absl::StatusOr<ShardEntry> Commit() override {
    SP_RETURN_IF_ERROR(writer_->Finish());
    SP_RETURN_IF_ERROR(file_->Commit());
    ShardEntry entry;
    entry.records = writer_->records();
    entry.bytes = writer_->bytes_written();
    entry.crc32c = writer_->file_crc32c();
    return entry;
  }

 private:
  std::unique_ptr<AtomicFile> file_;
  std::unique_ptr<ShardWriter> writer_;
};

}  // namespace

class DatasetWriter::Impl {
 public:
  explicit Impl(DatasetWriterOptions options)
      : options_(std::move(options)),
        table_(static_cast<int>(options_.schema.labels.size()), options_.directory) {
    manifest_.backend = options_.backend;
    manifest_.schema = options_.schema;
    manifest_.pack_json = options_.pack_json;
  }

  absl::Status Add(const Record& record) {
    // What the reader and `sharddump verify` would call damage is never
    // written: a source that hands over such a record has a bug.
    if (absl::Status agrees = CheckRecordAgainstSchema(record, options_.schema); !agrees.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("record ", records_, " '",
                                                     common::AsAbsl(record.key), "' ",
                                                     agrees.message()));
    }
    if (sink_ == nullptr) SP_RETURN_IF_ERROR(OpenShard());
    SP_RETURN_IF_ERROR(sink_->Add(record));
    if (options_.record_table) {
      SP_RETURN_IF_ERROR(table_.Add({record.labels.begin(), record.labels.end()}, record.key));
    }
    ++records_;
    bool full = (options_.shard_max_records != 0 &&
                 sink_->records() >= options_.shard_max_records) ||
                (options_.shard_max_bytes != 0 && sink_->bytes() >= options_.shard_max_bytes);
    if (full) SP_RETURN_IF_ERROR(CloseShard());
    return absl::OkStatus();
  }

  absl::StatusOr<Manifest> Finish() {
    SP_RETURN_IF_ERROR(CloseShard());
    if (options_.record_table) {
      SP_ASSIGN_OR_RETURN(manifest_.record_table,
                          format::WriteRecordTable(table_, options_.directory));
    }
    if (options_.write_manifest) SP_RETURN_IF_ERROR(WriteManifest(options_.directory, manifest_));
    return manifest_;
  }

  absl::Status CloseShard() {
    if (sink_ == nullptr) return absl::OkStatus();
    SP_ASSIGN_OR_RETURN(ShardEntry entry, sink_->Commit());
    entry.path = shard_path_;
    committed_bytes_ += entry.bytes;
    manifest_.shards.push_back(std::move(entry));
    sink_.reset();
    return absl::OkStatus();
  }

  uint64_t records() const { return records_; }
  uint64_t bytes() const { return committed_bytes_ + (sink_ != nullptr ? sink_->bytes() : 0); }

 private:
  absl::Status OpenShard() {
    shard_path_ = ShardFileName(options_.shard_prefix, manifest_.shards.size(), options_.backend);
    std::string path = (std::filesystem::path(options_.directory) / shard_path_).string();
    if (options_.backend == Backend::kShard) {
      SP_ASSIGN_OR_RETURN(sink_, ShardFileSink::Open(path, options_));
    } else {
      SP_ASSIGN_OR_RETURN(sink_, options_.open_shard(path, options_));
    }
    return absl::OkStatus();
  }

  DatasetWriterOptions options_;
  Manifest manifest_;
  format::RecordTableBuilder table_;
  std::unique_ptr<ShardSink> sink_;
  std::string shard_path_;
  uint64_t records_ = 0;
  uint64_t committed_bytes_ = 0;
};

std::string_view ShardExtension(Backend backend) {
  switch (backend) {
    case Backend::kLmdb:
      return ".lmdb";
    case Backend::kHdf5:
      return ".h5";
    case Backend::kShard:
      break;
  }
  return ".shard";
}

std::string ShardFileName(std::string_view prefix, size_t index, Backend backend) {
  char digits[32];
  std::snprintf(digits, sizeof(digits), "-%05zu", index);
  return absl::StrCat(common::AsAbsl(prefix), digits, common::AsAbsl(ShardExtension(backend)));
}

DatasetWriter::DatasetWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DatasetWriter::~DatasetWriter() = default;

absl::StatusOr<std::unique_ptr<DatasetWriter>> DatasetWriter::Create(
    const DatasetWriterOptions& options) {
  std::error_code ec;
  if (!std::filesystem::is_directory(options.directory, ec)) {
    return absl::NotFoundError(absl::StrCat(options.directory, ": not a directory"));
  }
  if (options.schema.labels.size() > kMaxLabels) {
    return absl::InvalidArgumentError("too many label fields");
  }
  SP_RETURN_IF_ERROR(CheckSchemaNames(options.schema));
  if (options.backend != Backend::kShard && !options.open_shard) {
    return absl::InvalidArgumentError(absl::StrCat(
        "backend ", common::AsAbsl(BackendName(options.backend)),
        ": no shard writer given (link shardpack::backends and call UseBackend of shardpack/backends.h)"));
  }
  return std::unique_ptr<DatasetWriter>(new DatasetWriter(std::make_unique<Impl>(options)));
}

absl::Status DatasetWriter::Add(const Record& record) { return impl_->Add(record); }
absl::Status DatasetWriter::FinishShard() { return impl_->CloseShard(); }
absl::StatusOr<Manifest> DatasetWriter::Finish() { return impl_->Finish(); }
uint64_t DatasetWriter::records() const { return impl_->records(); }
uint64_t DatasetWriter::bytes() const { return impl_->bytes(); }

namespace {

// Every backend spends more than a byte per record (a .shard at least 28, an
// LMDB entry 16, our HDF5 files 8 in `labels` or `key_offsets`), so a shard
// holds at most as many records as bytes: its recorded size, and its real
// size when the file is there (a missing one is reported by whoever opens
// it). Tools size tables by these counts before they open a shard.
absl::Status CheckShardSizes(const std::string& directory, const std::string& path,
                             const Manifest& m) {
  for (size_t i = 0; i < m.shards.size(); ++i) {
    const ShardEntry& e = m.shards[i];
    std::error_code ec;
    const std::filesystem::path shard = std::filesystem::path(directory) / e.path;
    const bool regular = std::filesystem::is_regular_file(shard, ec);
    const uint64_t real = regular ? std::filesystem::file_size(shard, ec) : 0;
    const uint64_t limit = regular && !ec ? std::min(real, e.bytes) : e.bytes;
    if (e.records > limit) {
      return absl::DataLossError(
          absl::StrCat(path, ".shards[", i, "].records: ", e.records, " records cannot fit in ",
                       limit, " bytes (",
                       regular && !ec ? absl::StrCat(e.path, " has ", real, ", the manifest says ")
                                      : std::string("the manifest says "),
                       e.bytes, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Manifest> ReadManifest(const std::string& directory) {
  std::string path = (std::filesystem::path(directory) / kManifestFileName).string();
  auto text = ReadSmallFile(path);
  if (absl::IsNotFound(text.status())) {
    return absl::NotFoundError(absl::StrCat(directory, ": not a dataset (no ",
                                            kManifestFileName, ")"));
  }
  SP_RETURN_IF_ERROR(text.status());
  SP_ASSIGN_OR_RETURN(Manifest m, ParseManifest(*text, path));
  SP_RETURN_IF_ERROR(CheckShardSizes(directory, path, m));
  return m;
}

absl::Status WriteManifest(const std::string& directory, const Manifest& manifest) {
  return WriteFileAtomically((std::filesystem::path(directory) / kManifestFileName).string(),
                             SerializeManifest(manifest));
}

}  // namespace shardpack
