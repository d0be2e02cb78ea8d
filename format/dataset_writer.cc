// DatasetWriter: shard rotation, per-shard atomic commit, manifest last.
#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "format/errors.h"
#include "shardpack/dataset.h"
#include "shardpack/status.h"

namespace shardpack {

class DatasetWriter::Impl {
 public:
  explicit Impl(DatasetWriterOptions options) : options_(std::move(options)) {
    manifest_.backend = Backend::kShard;
    manifest_.schema = options_.schema;
    manifest_.pack_json = options_.pack_json;
  }

  absl::Status Add(const Record& record) {
    if (writer_ == nullptr) SP_RETURN_IF_ERROR(OpenShard());
    SP_RETURN_IF_ERROR(writer_->Add(record));
    ++records_;
    bool full = (options_.shard_max_records != 0 &&
                 writer_->records() >= options_.shard_max_records) ||
                (options_.shard_max_bytes != 0 &&
                 writer_->bytes_written() >= options_.shard_max_bytes);
    // bytes_written() advances a block at a time, so byte limits are met to
    // within one block.
    if (full) SP_RETURN_IF_ERROR(CloseShard());
    return absl::OkStatus();
  }

  absl::StatusOr<Manifest> Finish() {
    SP_RETURN_IF_ERROR(CloseShard());
    if (options_.write_manifest) SP_RETURN_IF_ERROR(WriteManifest(options_.directory, manifest_));
    return manifest_;
  }

  uint64_t records() const { return records_; }
  uint64_t bytes() const {
    return committed_bytes_ + (writer_ != nullptr ? writer_->bytes_written() : 0);
  }

 private:
  absl::Status OpenShard() {
    shard_path_ = ShardFileName(options_.shard_prefix, manifest_.shards.size());
    SP_ASSIGN_OR_RETURN(file_, AtomicFile::Create(
                                   (std::filesystem::path(options_.directory) / shard_path_)));
    SP_ASSIGN_OR_RETURN(writer_, ShardWriter::Create(file_.get(), options_.shard));
    return absl::OkStatus();
  }

  absl::Status CloseShard() {
    if (writer_ == nullptr) return absl::OkStatus();
    SP_RETURN_IF_ERROR(writer_->Finish());
    SP_RETURN_IF_ERROR(file_->Commit());
    ShardEntry entry;
    entry.path = shard_path_;
    entry.records = writer_->records();
    entry.bytes = writer_->bytes_written();
    entry.crc32c = writer_->file_crc32c();
    committed_bytes_ += entry.bytes;
    manifest_.shards.push_back(std::move(entry));
    writer_.reset();
    file_.reset();
    return absl::OkStatus();
  }

  DatasetWriterOptions options_;
  Manifest manifest_;
  std::unique_ptr<AtomicFile> file_;
  std::unique_ptr<ShardWriter> writer_;
  std::string shard_path_;
  uint64_t records_ = 0;
  uint64_t committed_bytes_ = 0;
};

std::string ShardFileName(std::string_view prefix, size_t index) {
  char digits[32];
  std::snprintf(digits, sizeof(digits), "-%05zu.shard", index);
  return absl::StrCat(internal::AsAbsl(prefix), digits);
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
  return std::unique_ptr<DatasetWriter>(new DatasetWriter(std::make_unique<Impl>(options)));
}

absl::Status DatasetWriter::Add(const Record& record) { return impl_->Add(record); }
absl::StatusOr<Manifest> DatasetWriter::Finish() { return impl_->Finish(); }
uint64_t DatasetWriter::records() const { return impl_->records(); }
uint64_t DatasetWriter::bytes() const { return impl_->bytes(); }

absl::StatusOr<Manifest> ReadManifest(const std::string& directory) {
  std::string path = (std::filesystem::path(directory) / kManifestFileName).string();
  auto text = ReadSmallFile(path);
  if (absl::IsNotFound(text.status())) {
    return absl::NotFoundError(absl::StrCat(directory, ": not a dataset (no ",
                                            kManifestFileName, ")"));
  }
  SP_RETURN_IF_ERROR(text.status());
  return ParseManifest(*text, path);
}

absl::Status WriteManifest(const std::string& directory, const Manifest& manifest) {
  return WriteFileAtomically((std::filesystem::path(directory) / kManifestFileName).string(),
                             SerializeManifest(manifest));
}

}  // namespace shardpack
