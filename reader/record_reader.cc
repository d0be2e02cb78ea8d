// RecordReader: the shard of a record by the prefix sums of the shards'
// record counts, then the shard's own O(1) read (reader/record_parts.h);
// keys through the record table (format/record_table.h). A record with
// fields is split and checked (its CRC-32C, its section, its values'
// content) under the schema it was written with, before a view maps its
// labels: the CRC covers the stored labels.
#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "codec/interleave.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "dataset/open_path.h"
#include "dataset/record_meta.h"
#include "dataset/view.h"
#include "format/record_table.h"
#include "reader/options.h"
#include "reader/record_parts.h"
#include "reader/storage_handle.h"
#include "remote/storage.h"
#include "shardpack/fields.h"
#include "shardpack/records.h"

namespace shardpack {

struct RecordBuffer::Impl : reader::RecordScratch {
  // Per field: its decoded image when it is not the first image field (the
  // JPEG decoder's own buffer holds that one), or its CHW planes interleaved.
  std::vector<codec::GrowableBuffer> field_pixels;
};

RecordBuffer::RecordBuffer() : impl_(std::make_unique<Impl>()) {}
RecordBuffer::~RecordBuffer() = default;
RecordBuffer::RecordBuffer(RecordBuffer&&) noexcept = default;
RecordBuffer& RecordBuffer::operator=(RecordBuffer&&) noexcept = default;

struct RecordReader::Impl {
  // What the parts were opened through: a remote dataset's objects (and the
  // local copies LMDB and HDF5 parts read) stay held while it lives.
  std::shared_ptr<remote::Storage> storage;
  std::string path;
  Schema schema;
  std::vector<std::unique_ptr<reader::RecordPart>> parts;
  std::vector<uint64_t> starts;  // starts[k]: index of part k's first record; back(): size
  std::vector<std::string> part_paths;
  // Per dataset (a view's are several): its record table, if it has one,
  // its first record in the concatenation and its path.
  std::vector<std::optional<format::RecordTable>> tables;
  std::vector<uint64_t> dataset_first;
  std::vector<std::string> dataset_paths;
  // A view: its selection and label map (view.datasets emptied); the
  // selection's rank per 64-bit word (rank[w]: records selected in words
  // before w), so that view record i is found in O(log n).
  dataset::DatasetView view;
  std::vector<uint64_t> rank;
  // A dataset with fields: its records split under the stored schema (the
  // datasets', whose classes the CRC-checked labels index), the fields as
  // the view gives them, and the field index of each label field.
  std::optional<RecordFields> stored_fields;
  std::vector<Field> fields;
  std::vector<int> label_fields;
  int first_image = -1;  // the field held as the record's payload

  absl::Status OpenParts(const dataset::NamedPath& named, const RecordReaderOptions& options);
  void SetFields(const Schema& stored);
  // Splits and checks the record just read from part k (record j there).
  absl::Status CheckFields(size_t k, uint64_t j, RecordBuffer* out) const;
  void MapLabels(RecordBuffer* out) const;
  absl::Status Decode(RecordBuffer* out) const;
  absl::Status DecodeFields(RecordBuffer* out) const;
  absl::StatusOr<DecodedImage> DecodeImage(const RecordBuffer& out, const ImageInfo& info,
                                           ByteSpan bytes, codec::GrowableBuffer* pixels,
                                           bool copy) const;
  uint64_t size() const { return view.selected.empty() ? starts.back() : view.records; }
  // The concatenation's index of view record i (i itself with no selection).
  uint64_t BaseOf(uint64_t i) const;
  // The view index of selected base record b.
  uint64_t RankOf(uint64_t b) const {
    const uint64_t below = b % 64 == 0 ? 0 : view.selected[b / 64] << (64 - b % 64);
    return rank[b / 64] + static_cast<uint64_t>(std::popcount(below));
  }
};

uint64_t RecordReader::Impl::BaseOf(uint64_t i) const {
  if (view.selected.empty()) return i;
  const size_t w = static_cast<size_t>(std::upper_bound(rank.begin(), rank.end(), i) -
                                       rank.begin()) - 1;
  uint64_t bits = view.selected[w];
  for (uint64_t k = i - rank[w]; k > 0; --k) bits &= bits - 1;  // drop the k lowest
  return uint64_t{w} * 64 + static_cast<uint64_t>(std::countr_zero(bits));
}

namespace {

}  // namespace

absl::Status RecordReader::Impl::OpenParts(const dataset::NamedPath& named,
                                           const RecordReaderOptions& options) {
  Impl* impl = this;
  if (starts.empty()) starts.push_back(0);
  dataset_first.push_back(starts.back());
  dataset_paths.push_back(named.path);
  tables.emplace_back();
  if (named.has_manifest() && named.manifest.record_table.has_value()) {
    SP_ASSIGN_OR_RETURN(tables.back(), dataset::LoadRecordTable(named));
  }
  for (size_t k = 0; k < named.shard_paths.size(); ++k) {
    std::optional<uint64_t> records;
    if (k < named.manifest.shards.size()) records = named.manifest.shards[k].records;
    SP_ASSIGN_OR_RETURN(auto part,
                        reader::OpenRecordPart(named.shard_paths[k], named.backend(),
                                               named.ExpectedEntry(k), records, options.mmap,
                                               named.storage.get()));
    impl->starts.push_back(impl->starts.back() + part->records());
    impl->parts.push_back(std::move(part));
    impl->part_paths.push_back(named.shard_paths[k]);
  }
  return absl::OkStatus();
}

void RecordReader::Impl::SetFields(const Schema& stored) {
  if (stored.fields.empty()) return;
  stored_fields.emplace(stored);
  fields = schema.fields;  // a view's: its relabelled field with the kept classes
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].type == FieldType::kLabel) label_fields.push_back(static_cast<int>(i));
    if (fields[i].type == FieldType::kImage && first_image < 0) first_image = static_cast<int>(i);
  }
}

absl::Status RecordReader::Impl::CheckFields(size_t k, uint64_t j, RecordBuffer* out) const {
  out->fields_.resize(fields.size());
  std::span<FieldValue> values(out->fields_);
  absl::Status s = stored_fields->Decode(out->record_, values, /*check_crc=*/true);
  if (s.ok()) s = stored_fields->CheckValues(values);
  if (s.ok()) return s;
  return absl::DataLossError(absl::StrCat(parts[k]->Where(j), " (index ", out->index_, "): ",
                                          s.message()));
}

void RecordReader::Impl::MapLabels(RecordBuffer* out) const {
  out->record_.labels = view.MapLabels(out->record_.labels);
  for (size_t f = 0; f < label_fields.size() && !out->fields_.empty(); ++f) {
    FieldValue& v = out->fields_[static_cast<size_t>(label_fields[f])];
    if (v.present) v.label = view.MapLabel(static_cast<int>(f), v.label);
  }
}

// One image as HWC pixels: a JPEG decoded (copied out of the decoder into
// `pixels` when `copy`, so that the next decode leaves it be), a raw HWC
// image as it is stored, CHW planes interleaved into `pixels`.
absl::StatusOr<DecodedImage> RecordReader::Impl::DecodeImage(const RecordBuffer& out,
                                                             const ImageInfo& info, ByteSpan bytes,
                                                             codec::GrowableBuffer* pixels,
                                                             bool copy) const {
  reader::RecordScratch& s = *out.impl_;
  const std::string_view key = out.record_.key;
  if (info.encoding == Encoding::kJpeg) {
    if (s.jpeg == nullptr) s.jpeg = std::make_unique<codec::JpegDecoder>();
    absl::StatusOr<codec::PixelView> decoded = s.jpeg->Decode(bytes);
    if (!decoded.ok()) {
      return common::WithMessage(
          decoded.status(), absl::StrCat(path, " record ", out.index_, " '",
                                         common::AsAbsl(common::Excerpt(key)), "': ",
                                         decoded.status().message()));
    }
    DecodedImage image{decoded->data, decoded->height, decoded->width, decoded->channels};
    if (!copy) return image;
    uint8_t* dst = pixels->Get(decoded->bytes());
    if (dst == nullptr) return absl::ResourceExhaustedError("no memory for an image");
    std::memcpy(dst, decoded->data, decoded->bytes());
    image.data = dst;
    return image;
  }
  if (info.RawBytes() != bytes.size() || info.channels == 0) {
    return absl::DataLossError(absl::StrCat(path, " record ", out.index_, ": raw payload of ",
                                            bytes.size(), " bytes does not match its shape"));
  }
  const uint8_t* data = bytes.data();
  if (info.layout == Layout::kCHW && info.channels > 1) {
    uint8_t* dst = pixels->Get(bytes.size());
    if (dst == nullptr) return absl::ResourceExhaustedError("no memory for an image");
    codec::InterleavePlanes(data, size_t{info.height} * info.width, info.channels, dst);
    data = dst;
  }
  return DecodedImage{data, info.height, info.width, info.channels};
}

absl::Status RecordReader::Impl::Decode(RecordBuffer* out) const {
  if (stored_fields.has_value()) return DecodeFields(out);
  const Record& r = out->record_;
  SP_ASSIGN_OR_RETURN(out->image_,
                      DecodeImage(*out, r.image, r.payload, &out->impl_->pixels, /*copy=*/false));
  return absl::OkStatus();
}

// Every image field that is present; the first image field (the payload)
// last, so that its pixels may stay in the JPEG decoder's buffer.
absl::Status RecordReader::Impl::DecodeFields(RecordBuffer* out) const {
  std::vector<codec::GrowableBuffer>& buffers = out->impl_->field_pixels;
  if (buffers.size() < fields.size()) buffers.resize(fields.size());
  out->images_.assign(fields.size(), DecodedImage{});
  for (size_t i = 0; i < fields.size(); ++i) {
    const FieldValue& v = out->fields_[i];
    if (fields[i].type != FieldType::kImage || !v.present ||
        static_cast<int>(i) == first_image) {
      continue;
    }
    SP_ASSIGN_OR_RETURN(out->images_[i], DecodeImage(*out, v.image, v.bytes, &buffers[i], true));
  }
  if (first_image >= 0 && out->fields_[static_cast<size_t>(first_image)].present) {
    const FieldValue& v = out->fields_[static_cast<size_t>(first_image)];
    SP_ASSIGN_OR_RETURN(out->image_,
                        DecodeImage(*out, v.image, v.bytes, &out->impl_->pixels, false));
    out->images_[static_cast<size_t>(first_image)] = out->image_;
  }
  return absl::OkStatus();
}

RecordReader::RecordReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RecordReader::~RecordReader() = default;

absl::StatusOr<std::unique_ptr<RecordReader>> RecordReader::Open(
    const std::string& path, const RecordReaderOptions& options) {
  SP_RETURN_IF_ERROR(reader::CheckPathOption("path", path));
  SP_RETURN_IF_ERROR(reader::CheckPathOption("cache_dir", options.cache_dir));
  auto impl = std::make_unique<Impl>();
  SP_ASSIGN_OR_RETURN(
      std::shared_ptr<remote::Storage> storage,
      reader::ResolveStorage(options.storage, options.cache_dir, options.cache_bytes));
  impl->storage = storage;
  SP_ASSIGN_OR_RETURN(impl->view, dataset::OpenView(path, std::move(storage)));
  impl->path = path;
  const dataset::NamedPath& first = *impl->view.datasets[0];
  impl->schema = impl->view.is_view ? impl->view.schema
                 : first.schema_known() ? first.manifest.schema
                                        : Schema{};
  for (const auto& named : impl->view.datasets) {
    SP_RETURN_IF_ERROR(impl->OpenParts(*named, options));
  }
  impl->SetFields(first.schema_known() ? first.manifest.schema : Schema{});
  impl->view.datasets.clear();
  const std::vector<uint64_t>& bits = impl->view.selected;
  if (!bits.empty() && impl->starts.back() != impl->view.base_records) {
    return absl::DataLossError(absl::StrCat(path, ": its datasets hold ", impl->starts.back(),
                                            " records, but the view counted ",
                                            impl->view.base_records));
  }
  impl->rank.reserve(bits.size() + 1);
  impl->rank.push_back(0);
  for (uint64_t word : bits) impl->rank.push_back(impl->rank.back() + std::popcount(word));
  return std::unique_ptr<RecordReader>(new RecordReader(std::move(impl)));
}

const std::string& RecordReader::path() const { return impl_->path; }
uint64_t RecordReader::size() const { return impl_->size(); }
const Schema& RecordReader::schema() const { return impl_->schema; }
const std::vector<Field>& RecordReader::fields() const { return impl_->fields; }
bool RecordReader::has_record_table() const {
  for (const auto& t : impl_->tables) {
    if (!t.has_value()) return false;
  }
  return !impl_->tables.empty();
}

absl::Status RecordReader::Read(uint64_t index, RecordBuffer* out, bool decode) const {
  out->record_ = Record{};
  out->image_ = DecodedImage{};
  out->fields_.clear();
  out->images_.clear();
  if (index >= size()) {
    return absl::OutOfRangeError(absl::StrCat(impl_->path, ": record ", index,
                                              " is past the end (", size(), " records)"));
  }
  const std::vector<uint64_t>& starts = impl_->starts;
  const uint64_t base = impl_->BaseOf(index);
  const size_t k =
      static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), base) - starts.begin()) -
      1;
  out->index_ = index;
  const uint64_t j = base - starts[k];
  absl::Status read = impl_->parts[k]->Read(j, out->impl_.get(), &out->record_);
  if (read.ok() && impl_->stored_fields.has_value()) read = impl_->CheckFields(k, j, out);
  if (read.ok() && !impl_->view.label_map.empty()) impl_->MapLabels(out);
  if (read.ok() && decode) read = impl_->Decode(out);
  if (!read.ok()) {
    out->record_ = Record{};
    out->image_ = DecodedImage{};
    out->fields_.clear();
    out->images_.clear();
  }
  return read;
}

absl::StatusOr<uint64_t> RecordReader::Find(std::string_view key) const {
  const Impl& m = *impl_;
  for (size_t d = 0; d < m.tables.size(); ++d) {
    if (!m.tables[d].has_value()) {
      return absl::FailedPreconditionError(absl::StrCat(
          m.dataset_paths[d], ": no record table to find a key in (`shardpack index ",
          m.dataset_paths[d], "` writes one)"));
    }
  }
  // The first dataset whose record of that key the view selects; a key
  // left out in one dataset may be selected in a later one.
  std::string left_out;
  for (size_t d = 0; d < m.tables.size(); ++d) {
    const std::optional<uint64_t> found = m.tables[d]->Find(key);
    if (!found.has_value()) continue;
    const uint64_t base = m.dataset_first[d] + *found;
    if (m.view.selected.empty()) return base;
    if (m.view.Selected(base)) return m.RankOf(base);
    if (left_out.empty()) {
      left_out = absl::StrCat(" (record ", *found, " of ", m.dataset_paths[d],
                              ") is one the view leaves out");
    }
  }
  if (!left_out.empty()) {
    return absl::NotFoundError(absl::StrCat(m.path, ": the record of key '",
                                            common::AsAbsl(common::Excerpt(key)), "'", left_out));
  }
  return absl::NotFoundError(absl::StrCat(m.path, ": no record has the key '",
                                          common::AsAbsl(common::Excerpt(key)), "'"));
}

}  // namespace shardpack
