// RecordReader: the shard of a record by the prefix sums of the shards'
// record counts, then the shard's own O(1) read (reader/record_parts.h);
// keys through the record table (format/record_table.h).
#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "backends/open_path.h"
#include "codec/interleave.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "format/record_table.h"
#include "reader/record_parts.h"
#include "shardpack/records.h"

namespace shardpack {

struct RecordBuffer::Impl : reader::RecordScratch {};

RecordBuffer::RecordBuffer() : impl_(std::make_unique<Impl>()) {}
RecordBuffer::~RecordBuffer() = default;
RecordBuffer::RecordBuffer(RecordBuffer&&) noexcept = default;
RecordBuffer& RecordBuffer::operator=(RecordBuffer&&) noexcept = default;

struct RecordReader::Impl {
  std::string path;
  Schema schema;
  std::vector<std::unique_ptr<reader::RecordPart>> parts;
  std::vector<uint64_t> starts;  // starts[k]: index of part k's first record; back(): size
  std::vector<std::string> part_paths;
  std::optional<format::RecordTable> table;

  static absl::StatusOr<std::unique_ptr<Impl>> OpenParts(const backends::NamedPath& named,
                                                         const RecordReaderOptions& options);
  absl::Status Decode(RecordBuffer* out) const;
};

namespace {

}  // namespace

absl::StatusOr<std::unique_ptr<RecordReader::Impl>> RecordReader::Impl::OpenParts(
    const backends::NamedPath& named, const RecordReaderOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->path = named.path;
  impl->schema = named.schema_known() ? named.manifest.schema : Schema{};
  impl->starts.push_back(0);
  for (size_t k = 0; k < named.shard_paths.size(); ++k) {
    std::optional<uint64_t> records;
    if (k < named.manifest.shards.size()) records = named.manifest.shards[k].records;
    SP_ASSIGN_OR_RETURN(auto part,
                        reader::OpenRecordPart(named.shard_paths[k], named.backend(),
                                               named.ExpectedEntry(k), records, options.mmap));
    impl->starts.push_back(impl->starts.back() + part->records());
    impl->parts.push_back(std::move(part));
    impl->part_paths.push_back(named.shard_paths[k]);
  }
  return impl;
}

namespace {

// CHW planes to HWC pixels (three planes by codec's SIMD interleave).
void Interleave(const Record& r, uint8_t* dst) {
  const size_t plane = size_t{r.image.height} * r.image.width;
  const size_t c = r.image.channels;
  const uint8_t* src = r.payload.data();
  if (c == 3) return codec::InterleaveRgb(src, src + plane, src + 2 * plane, plane, dst);
  for (size_t ch = 0; ch < c; ++ch) {
    for (size_t i = 0; i < plane; ++i) dst[i * c + ch] = src[ch * plane + i];
  }
}

}  // namespace

absl::Status RecordReader::Impl::Decode(RecordBuffer* out) const {
  const Record& r = out->record_;
  reader::RecordScratch& s = *out->impl_;
  if (r.image.encoding == Encoding::kJpeg) {
    if (s.jpeg == nullptr) s.jpeg = std::make_unique<codec::JpegDecoder>();
    absl::StatusOr<codec::PixelView> pixels = s.jpeg->Decode(r.payload);
    if (!pixels.ok()) {
      return absl::Status(pixels.status().code(),
                          absl::StrCat(path, " record ", out->index_, " '",
                                       common::AsAbsl(common::Excerpt(r.key)), "': ",
                                       pixels.status().message()));
    }
    out->image_ = {pixels->data, pixels->height, pixels->width, pixels->channels};
    return absl::OkStatus();
  }
  if (r.image.RawBytes() != r.payload.size() || r.image.channels == 0) {
    return absl::DataLossError(absl::StrCat(path, " record ", out->index_, ": raw payload of ",
                                            r.payload.size(), " bytes does not match its shape"));
  }
  const uint8_t* data = r.payload.data();
  if (r.image.layout == Layout::kCHW && r.image.channels > 1) {
    uint8_t* dst = s.pixels.Get(r.payload.size());
    if (dst == nullptr) return absl::ResourceExhaustedError("no memory for an image");
    Interleave(r, dst);
    data = dst;
  }
  out->image_ = {data, r.image.height, r.image.width, r.image.channels};
  return absl::OkStatus();
}

RecordReader::RecordReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RecordReader::~RecordReader() = default;

absl::StatusOr<std::unique_ptr<RecordReader>> RecordReader::Open(
    const std::string& path, const RecordReaderOptions& options) {
  SP_ASSIGN_OR_RETURN(backends::NamedPath named, backends::OpenNamedPath(path));
  SP_ASSIGN_OR_RETURN(std::unique_ptr<Impl> impl, Impl::OpenParts(named, options));
  if (named.has_manifest() && named.manifest.record_table.has_value()) {
    SP_ASSIGN_OR_RETURN(impl->table, format::RecordTable::Load(named.directory, named.manifest));
  }
  return std::unique_ptr<RecordReader>(new RecordReader(std::move(impl)));
}

const std::string& RecordReader::path() const { return impl_->path; }
uint64_t RecordReader::size() const { return impl_->starts.back(); }
const Schema& RecordReader::schema() const { return impl_->schema; }
bool RecordReader::has_record_table() const { return impl_->table.has_value(); }

absl::Status RecordReader::Read(uint64_t index, RecordBuffer* out, bool decode) const {
  out->record_ = Record{};
  out->image_ = DecodedImage{};
  if (index >= size()) {
    return absl::OutOfRangeError(absl::StrCat(impl_->path, ": record ", index,
                                              " is past the end (", size(), " records)"));
  }
  const std::vector<uint64_t>& starts = impl_->starts;
  const size_t k =
      static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), index) - starts.begin()) -
      1;
  out->index_ = index;
  absl::Status read = impl_->parts[k]->Read(index - starts[k], out->impl_.get(), &out->record_);
  if (read.ok() && decode) read = impl_->Decode(out);
  if (!read.ok()) out->record_ = Record{};
  return read;
}

absl::StatusOr<uint64_t> RecordReader::Find(std::string_view key) const {
  if (!impl_->table.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        impl_->path, ": no record table to find a key in (`shardpack index ", impl_->path,
        "` writes one)"));
  }
  std::optional<uint64_t> found = impl_->table->Find(key);
  if (!found.has_value()) {
    return absl::NotFoundError(absl::StrCat(impl_->path, ": no record has the key '",
                                            common::AsAbsl(common::Excerpt(key)), "'"));
  }
  return *found;
}

}  // namespace shardpack
