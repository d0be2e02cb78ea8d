// shardpack::Writer: samples in, a published dataset out (or nothing).
//
// The flow is Pack()'s (tools/pack/pack.cc) with the caller's loop in place
// of the source: the output folder (writer/output_dir.h) takes OUT.partial,
// a DatasetWriter fills it with shards, records are built from field values
// by RecordFields, and Finish() writes skipped.tsv and publishes, the
// manifest last. What a Writer records in its manifest's "pack" object is
// its identity (writer/pack_identity.h): for a part, what `merge` compares.
#include "shardpack/writer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "common/utf8.h"
#include "format/json_text.h"
#include "shardpack/backends.h"
#include "shardpack/dataset.h"
#include "writer/compression.h"
#include "writer/output_dir.h"
#include "writer/pack_identity.h"
#include "writer/skipped_list.h"

namespace shardpack {
namespace {

using common::AsAbsl;

// A job names the write on every machine: short, and JSON-safe.
constexpr size_t kMaxJobBytes = 256;

absl::Status Invalid(std::string_view option, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("Writer: ", AsAbsl(option), " ", AsAbsl(why)));
}

// A JSON object given as option `option`, held to the manifest's limits.
absl::StatusOr<writer::PackJson> JsonObjectOption(std::string_view option,
                                                  std::string_view text) {
  const format::JsonLimits limits{
      .what = "a pack record", .max_bytes = kMaxManifestBytes, .max_values = kMaxManifestValues};
  absl::StatusOr<writer::PackJson> j = format::ParseJsonText(text, option, limits);
  if (!j.ok()) return absl::InvalidArgumentError(j.status().message());
  if (!j->is_object()) return Invalid(option, "is not a JSON object");
  return j;
}

absl::Status CheckOptions(const WriterOptions& o) {
  if (o.shard.block_size == 0 || o.shard.block_size > kMaxBlockSize) {
    return Invalid("block_size", absl::StrCat(o.shard.block_size, " is not in 1..", kMaxBlockSize));
  }
  if (o.backend != Backend::kShard && (o.shard.compression != Compression::kNone)) {
    return Invalid("compression", absl::StrCat("applies to the shard format only, not ",
                                               AsAbsl(BackendName(o.backend))));
  }
  if (o.part.has_value()) {
    const WriterPart& p = *o.part;
    if (p.index == 0 || (p.count != kOpenPartCount && p.index > p.count)) {
      return Invalid("part", absl::StrCat(p.index, "/", p.count,
                                          " is not a part I/N with 1 <= I <= N <= ", kMaxParts,
                                          " (or I/", kOpenPartCount, ": N not known)"));
    }
    if (o.job.empty()) {
      return Invalid("job", "is required with part: the name every part of one write gives, "
                            "which merge checks");
    }
  }
  if (o.job.size() > kMaxJobBytes || !common::IsValidUtf8(o.job)) {
    return Invalid("job", absl::StrCat("must be 1 to ", kMaxJobBytes, " bytes of UTF-8"));
  }
  return absl::OkStatus();
}

// What a Writer records in "pack": everything that decides its records'
// form, and for a part what merge compares (docs/format.md 12.1).
absl::StatusOr<writer::PackIdentity> IdentityOf(const WriterOptions& o) {
  writer::PackIdentity p;
  p.tool = "shardpack " SHARDPACK_VERSION;
  SP_ASSIGN_OR_RETURN(p.source, JsonObjectOption("source_json", o.source_json));
  if (o.part.has_value()) p.part = writer::PackPart{o.part->index, o.part->count};
  if (!o.job.empty()) p.job = o.job;
  p.shard_max_bytes = o.shard_max_bytes;
  p.shard_max_records = o.shard_max_records;
  p.format = o.backend;
  if (o.backend == Backend::kShard) {
    p.block_size = o.shard.block_size;
    p.compression = writer::CompressionName(o.shard);
  }
  p.on_error = o.on_error;
  if (!o.metadata_json.empty()) {
    SP_ASSIGN_OR_RETURN(writer::PackJson metadata,
                        JsonObjectOption("metadata_json", o.metadata_json));
    if (!metadata.empty()) p.metadata = std::move(metadata);
  }
  return p;
}

// HDF5's `images` dataset (docs/format.md 14.1) holds one raw shape, so a
// first image field of a fixed raw shape cannot be absent there.
absl::Status CheckBackendHolds(const Schema& schema, Backend backend) {
  if (backend != Backend::kHdf5) return absl::OkStatus();
  for (const Field& f : FieldsOf(schema)) {
    if (f.type != FieldType::kImage) continue;
    const ImageInfo& i = f.image;
    if (f.optional && i.encoding == Encoding::kRaw && i.height != 0 && i.width != 0 &&
        i.channels != 0) {
      return Invalid("format", absl::StrCat(
          "hdf5 holds the first image field's fixed shape in one dataset, which cannot record "
          "an absent image: make field '", f.name, "' required, or give it no fixed shape"));
    }
    return absl::OkStatus();
  }
  return absl::OkStatus();
}

}  // namespace

class Writer::Impl {
 public:
  Impl(std::string out, Schema schema, const WriterOptions& o)
      : path_(std::move(out)), schema_(std::move(schema)), fields_(schema_), options_(o) {}

  absl::Status Open(const writer::PackIdentity& identity) {
    // A part may be retried: its own earlier output goes (as `pack --part`).
    SP_ASSIGN_OR_RETURN(out_, writer::OutputDir::Create(path_, options_.overwrite,
                                                        options_.part ? &identity : nullptr));
    DatasetWriterOptions w;
    UseBackend(&w, options_.backend);
    w.directory = out_->staging();
    w.shard_max_bytes = options_.shard_max_bytes;
    w.shard_max_records = options_.shard_max_records;
    w.shard = options_.shard;
    w.schema = schema_;
    w.pack_json = identity.ToJson();
    w.write_manifest = false;  // the output folder publishes it, last
    w.record_table = options_.record_table;
    SP_ASSIGN_OR_RETURN(writer_, DatasetWriter::Create(w));
    return absl::OkStatus();
  }

  absl::Status Write(std::string_view key, std::span<const FieldValue> values) {
    SP_RETURN_IF_ERROR(Usable());
    const uint64_t sample = samples_++;
    absl::StatusOr<Record> record = fields_.Build(key, values);
    if (!record.ok()) return Bad(sample, key, record.status());
    if (absl::Status added = writer_->Add(*record); !added.ok()) {
      failed_ = added;
      return added;
    }
    return absl::OkStatus();
  }

  absl::Status Reject(std::string_view key, const absl::Status& reason) {
    SP_RETURN_IF_ERROR(Usable());
    return Bad(samples_++, key, reason);
  }

  absl::StatusOr<Manifest> Finish() {
    SP_RETURN_IF_ERROR(Usable());
    finished_ = true;
    absl::StatusOr<Manifest> manifest = writer_->Finish();
    absl::Status s = manifest.status();
    if (s.ok()) s = writer::WriteSkippedList(out_->staging(), skipped_);
    if (s.ok()) s = out_->Publish(*manifest);
    if (!s.ok()) {
      failed_ = s;
      return s;
    }
    records_ = manifest->records();
    writer_.reset();
    out_.reset();
    return manifest;
  }

  const std::vector<Field>& fields() const { return fields_.fields(); }
  int Find(std::string_view name) const { return fields_.Find(name); }
  const Schema& schema() const { return schema_; }
  const std::string& path() const { return path_; }
  uint64_t samples() const { return samples_; }
  uint64_t records() const { return writer_ != nullptr ? writer_->records() : records_; }
  const std::vector<Skipped>& skipped() const { return skipped_; }

 private:
  absl::Status Usable() const {
    if (!failed_.ok()) {
      return common::WithMessage(failed_, absl::StrCat(path_, ": the writer failed earlier: ",
                                                       failed_.message()));
    }
    if (finished_) return absl::FailedPreconditionError(absl::StrCat(path_, ": already finished"));
    return absl::OkStatus();
  }

  // A bad sample: its error, or (skip) its line in skipped.tsv.
  absl::Status Bad(uint64_t sample, std::string_view key, const absl::Status& reason) {
    if (options_.on_error == OnError::kFail) {
      return common::WithMessage(reason, absl::StrCat("sample ", sample, " ('",
                                                      common::Excerpt(key), "'): ",
                                                      reason.message()));
    }
    skipped_.push_back({std::string(key), std::string(reason.message())});
    if (options_.on_skip) options_.on_skip(key, reason);
    return absl::OkStatus();
  }

  std::string path_;
  Schema schema_;
  RecordFields fields_;
  WriterOptions options_;
  // out_ outlives writer_: the shards' sinks go before their folder.
  std::unique_ptr<writer::OutputDir> out_;
  std::unique_ptr<DatasetWriter> writer_;
  std::vector<Skipped> skipped_;
  uint64_t samples_ = 0;
  uint64_t records_ = 0;  // once published
  absl::Status failed_;
  bool finished_ = false;
};

absl::StatusOr<std::unique_ptr<Writer>> Writer::Create(std::string out,
                                                       std::vector<Field> fields,
                                                       const WriterOptions& options) {
  SP_RETURN_IF_ERROR(CheckOptions(options));
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  SP_ASSIGN_OR_RETURN(Schema schema, MakeSchema(std::move(fields)));
  SP_RETURN_IF_ERROR(CheckBackendHolds(schema, options.backend));
  SP_ASSIGN_OR_RETURN(const writer::PackIdentity identity, IdentityOf(options));
  auto impl = std::make_unique<Impl>(std::move(out), std::move(schema), options);
  SP_RETURN_IF_ERROR(impl->Open(identity));
  return std::unique_ptr<Writer>(new Writer(std::move(impl)));
}

Writer::Writer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Writer::~Writer() = default;

absl::Status Writer::Write(std::string_view key, std::span<const FieldValue> values) {
  return impl_->Write(key, values);
}
absl::Status Writer::Reject(std::string_view key, const absl::Status& reason) {
  return impl_->Reject(key, reason);
}
absl::StatusOr<Manifest> Writer::Finish() { return impl_->Finish(); }
const std::vector<Field>& Writer::fields() const { return impl_->fields(); }
int Writer::Find(std::string_view name) const { return impl_->Find(name); }
const Schema& Writer::schema() const { return impl_->schema(); }
const std::string& Writer::path() const { return impl_->path(); }
uint64_t Writer::samples() const { return impl_->samples(); }
uint64_t Writer::records() const { return impl_->records(); }
const std::vector<Skipped>& Writer::skipped() const { return impl_->skipped(); }

}  // namespace shardpack
