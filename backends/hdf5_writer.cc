// The HDF5 shard sink: every dataset grows by whole chunks, buffered here,
// so a record costs memcpys and HDF5 is called once per chunk.
#include <cstring>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/hdf5_store.h"
#include "backends/hdf5_util.h"
#include "backends/publish.h"
#include "common/status_macros.h"

namespace shardpack::backends {
namespace {

using backends::Hid;

// Chunk size of the keys and extra datasets.
constexpr uint64_t kSmallChunkBytes = 64 << 10;

// An extendible dataset [rows, inner...] written a chunk of rows at a time.
// Lock held for every call.
class Appender {
 public:
  absl::Status Create(hid_t file, const std::string& path, const char* name, hid_t file_type,
                      hid_t mem_type, size_t element_bytes, std::vector<hsize_t> inner,
                      uint64_t chunk_rows) {
    name_ = name;
    path_ = &path;
    mem_type_ = mem_type;
    dims_.assign(1, 0);
    dims_.insert(dims_.end(), inner.begin(), inner.end());
    row_bytes_ = element_bytes;
    for (hsize_t d : inner) row_bytes_ *= d;
    chunk_rows_ = chunk_rows;
    std::vector<hsize_t> max = dims_, chunk = dims_;
    max[0] = H5S_UNLIMITED;
    chunk[0] = chunk_rows;
    Hid space(H5Screate_simple(static_cast<int>(dims_.size()), dims_.data(), max.data()), H5Sclose);
    Hid dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    if (!space.valid() || !dcpl.valid() ||
        H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()) < 0 ||
        H5Pset_obj_track_times(dcpl.get(), false) < 0) {
      return backends::Hdf5Error(path, absl::StrCat("creating dataset '", name, "'"));
    }
    dataset_ = Hid(H5Dcreate2(file, name, file_type, space.get(), H5P_DEFAULT, dcpl.get(),
                              H5P_DEFAULT),
                   H5Dclose);
    if (!dataset_.valid()) return backends::Hdf5Error(path, absl::StrCat("creating '", name, "'"));
    buffer_.reserve(chunk_rows_ * row_bytes_);
    return absl::OkStatus();
  }

  // Appends `n` rows (n * row bytes at `rows`).
  absl::Status Append(const void* rows, uint64_t n) {
    const uint8_t* p = static_cast<const uint8_t*>(rows);
    uint64_t bytes = n * row_bytes_;
    while (bytes > 0) {
      uint64_t room = chunk_rows_ * row_bytes_ - buffer_.size();
      uint64_t take = std::min(room, bytes);
      buffer_.insert(buffer_.end(), p, p + take);
      p += take;
      bytes -= take;
      if (buffer_.size() == chunk_rows_ * row_bytes_) SP_RETURN_IF_ERROR(Flush());
    }
    return absl::OkStatus();
  }

  // Writes the buffered rows.
  absl::Status Flush() {
    hsize_t n = buffer_.size() / row_bytes_;
    if (n == 0) return absl::OkStatus();
    std::vector<hsize_t> start(dims_.size(), 0), count = dims_;
    start[0] = dims_[0];
    count[0] = n;
    dims_[0] += n;
    if (H5Dset_extent(dataset_.get(), dims_.data()) < 0) {
      return backends::Hdf5Error(*path_, absl::StrCat("growing '", name_, "'"));
    }
    Hid file_space(H5Dget_space(dataset_.get()), H5Sclose);
    Hid mem_space(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr),
                  H5Sclose);
    if (!file_space.valid() || !mem_space.valid() ||
        H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr,
                            count.data(), nullptr) < 0 ||
        H5Dwrite(dataset_.get(), mem_type_, mem_space.get(), file_space.get(), H5P_DEFAULT,
                 buffer_.data()) < 0) {
      return backends::Hdf5Error(*path_, absl::StrCat("writing '", name_, "'"));
    }
    buffer_.clear();
    return absl::OkStatus();
  }

  // Closing writes the chunks HDF5 still caches: an error is lost rows.
  absl::Status Close() {
    if (dataset_.Reset()) return absl::OkStatus();
    return backends::Hdf5Error(*path_, absl::StrCat("closing '", name_, "'"));
  }
  hid_t id() const { return dataset_.get(); }

 private:
  const char* name_ = "";
  const std::string* path_ = nullptr;
  hid_t mem_type_ = -1;
  std::vector<hsize_t> dims_;
  uint64_t row_bytes_ = 1;
  uint64_t chunk_rows_ = 1;
  Hid dataset_;
  std::vector<uint8_t> buffer_;
};

// A flat byte dataset and its int64 [N+1] offsets.
struct VarBytes {
  Appender bytes;
  Appender offsets;
  int64_t end = 0;

  absl::Status Create(hid_t file, const std::string& path, const char* bytes_name,
                      const char* offsets_name, uint64_t chunk_bytes, const Hdf5WriterOptions& o) {
    SP_RETURN_IF_ERROR(bytes.Create(file, path, bytes_name, H5T_STD_U8LE, H5T_NATIVE_UINT8, 1,
                                    {}, chunk_bytes));
    SP_RETURN_IF_ERROR(offsets.Create(file, path, offsets_name, H5T_STD_I64LE,
                                      H5T_NATIVE_INT64, 8, {}, o.row_chunk));
    return offsets.Append(&end, 1);
  }
  absl::Status Add(const void* data, size_t n) {
    SP_RETURN_IF_ERROR(bytes.Append(data, n));
    end += static_cast<int64_t>(n);
    return offsets.Append(&end, 1);
  }
  absl::Status Flush() {
    SP_RETURN_IF_ERROR(bytes.Flush());
    return offsets.Flush();
  }
  absl::Status Close() {
    absl::Status s = bytes.Close();
    s.Update(offsets.Close());
    return s;
  }
};

std::string LabelDatasetName(size_t k) {
  if (k == 0) return "labels";
  if (k == 1) return "coarse_labels";
  return absl::StrCat("labels_", k);
}

class Hdf5ShardSink : public ShardSink {
 public:
  Hdf5ShardSink(std::string path, const DatasetWriterOptions& options, Hdf5WriterOptions hdf5)
      : path_(std::move(path)), partial_(backends::PartialPath(path_)), options_(hdf5) {
    meta_.backend = Backend::kHdf5;
    meta_.schema = options.schema;
    meta_.pack_json = options.pack_json;
    shard_max_records_ = options.shard_max_records;
    const ImageInfo& image = meta_.schema.image;
    fixed_ = image.encoding == Encoding::kRaw && image.height != 0 && image.width != 0 &&
             image.channels != 0;
  }

  // An uncommitted file is abandoned: what libhdf5 still has to write goes
  // nowhere (it may be what failed), every id is closed once, the file
  // removed.
  ~Hdf5ShardSink() override {
    auto lock = backends::LockHdf5();
    if (file_.valid()) backends::DiscardFurtherWrites(file_.get());
    CloseDatasets().IgnoreError();
    file_.Reset();
    if (!committed_) backends::RemoveIfExists(partial_);
  }

  absl::Status Open();

  absl::Status Add(const Record& record) override {
    SP_RETURN_IF_ERROR(Check(record));
    auto lock = backends::LockHdf5();
    if (fixed_) {
      SP_RETURN_IF_ERROR(images_.Append(record.payload.data(), 1));
    } else {
      SP_RETURN_IF_ERROR(data_.Add(record.payload.data(), record.payload.size()));
      const ImageInfo& i = record.image;
      uint32_t info[kHdf5ImageInfoColumns] = {static_cast<uint32_t>(i.encoding),
                                              static_cast<uint32_t>(i.layout), i.height, i.width,
                                              i.channels};
      SP_RETURN_IF_ERROR(image_info_.Append(info, 1));
    }
    for (size_t k = 0; k < labels_.size(); ++k) {
      int64_t label = record.labels[static_cast<int>(k)];
      SP_RETURN_IF_ERROR(labels_[k].Append(&label, 1));
    }
    SP_RETURN_IF_ERROR(keys_.Add(record.key.data(), record.key.size()));
    SP_RETURN_IF_ERROR(extra_.Add(record.extra.data(), record.extra.size()));
    ++records_;
    bytes_ += record.payload.size() + record.key.size() + record.extra.size() +
              8 * labels_.size();
    return absl::OkStatus();
  }

  uint64_t records() const override { return records_; }
  uint64_t bytes() const override { return bytes_; }

  absl::StatusOr<ShardEntry> Commit() override;

 private:
  absl::Status Check(const Record& r) const {
    if (static_cast<size_t>(r.labels.size()) != meta_.schema.labels.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path_, ": record '", absl::string_view(r.key.data(), r.key.size()), "' has ",
          r.labels.size(), " labels, the schema ", meta_.schema.labels.size()));
    }
    if (fixed_ && !(r.image == meta_.schema.image && r.payload.size() == r.image.RawBytes())) {
      return absl::InvalidArgumentError(absl::StrCat(
          path_, ": record '", absl::string_view(r.key.data(), r.key.size()),
          "' is not a raw image of the schema's shape (HDF5 `images` holds one shape)"));
    }
    return absl::OkStatus();
  }

  absl::Status WriteMeta();
  absl::Status WriteStringsAttribute(hid_t object, const char* name,
                                     const std::vector<std::string>& values, bool scalar);
  // Closes every dataset (each once, whatever fails); the first error.
  absl::Status CloseDatasets() {
    absl::Status s = images_.Close();
    s.Update(data_.Close());
    s.Update(image_info_.Close());
    for (Appender& a : labels_) s.Update(a.Close());
    s.Update(keys_.Close());
    s.Update(extra_.Close());
    return s;
  }

  std::string path_;
  std::string partial_;
  Hdf5WriterOptions options_;
  Manifest meta_;
  bool fixed_ = false;
  uint64_t shard_max_records_ = 0;
  Hid file_;
  Appender images_;
  VarBytes data_;
  Appender image_info_;
  std::vector<Appender> labels_;
  VarBytes keys_;
  VarBytes extra_;
  uint64_t records_ = 0;
  uint64_t bytes_ = 0;
  bool committed_ = false;
};

absl::Status Hdf5ShardSink::Open() {
  auto lock = backends::LockHdf5();
  backends::RemoveIfExists(partial_);
  Hid fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
  // sec2 (HDF5's default, named so that it stays so): DiscardFurtherWrites
  // needs its file descriptor.
  Hid fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (!fcpl.valid() || H5Pset_obj_track_times(fcpl.get(), false) < 0 || !fapl.valid() ||
      H5Pset_fapl_sec2(fapl.get()) < 0) {
    return backends::Hdf5Error(partial_, "file properties");
  }
  file_ = Hid(H5Fcreate(partial_.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get()),
              backends::CloseFile);
  if (!file_.valid()) return backends::Hdf5Error(partial_, "creating the file");
  const hid_t f = file_.get();
  const ImageInfo& image = meta_.schema.image;
  if (fixed_) {
    std::vector<hsize_t> inner = {image.height, image.width, image.channels};
    if (image.layout == Layout::kCHW) inner = {image.channels, image.height, image.width};
    uint64_t rows = std::max<uint64_t>(1, options_.chunk_bytes / image.RawBytes());
    // A chunk is stored whole even when partly filled: no larger than a shard.
    if (shard_max_records_ != 0) rows = std::min(rows, shard_max_records_);
    SP_RETURN_IF_ERROR(
        images_.Create(f, partial_, "images", H5T_STD_U8LE, H5T_NATIVE_UINT8, 1, inner, rows));
  } else {
    SP_RETURN_IF_ERROR(data_.Create(f, partial_, "data", "offsets", options_.chunk_bytes, options_));
    SP_RETURN_IF_ERROR(image_info_.Create(f, partial_, "image_info", H5T_STD_U32LE,
                                          H5T_NATIVE_UINT32, 4, {kHdf5ImageInfoColumns},
                                          options_.row_chunk));
  }
  labels_.resize(meta_.schema.labels.size());
  for (size_t k = 0; k < labels_.size(); ++k) {
    // The names must outlive the appenders (they keep a pointer for errors).
    static const std::vector<std::string>* names = [] {
      auto* v = new std::vector<std::string>;
      for (int i = 0; i < kMaxLabels; ++i) v->push_back(LabelDatasetName(i));
      return v;
    }();
    SP_RETURN_IF_ERROR(labels_[k].Create(f, partial_, (*names)[k].c_str(), H5T_STD_I64LE,
                                         H5T_NATIVE_INT64, 8, {}, options_.row_chunk));
    const LabelField& field = meta_.schema.labels[k];
    SP_RETURN_IF_ERROR(WriteStringsAttribute(labels_[k].id(), "name", {field.name}, true));
    SP_RETURN_IF_ERROR(WriteStringsAttribute(labels_[k].id(), "classes", field.classes, false));
  }
  // Keys and extra bytes are small: a full-size chunk would mostly be padding
  // in a small shard.
  const uint64_t small_chunk = std::min<uint64_t>(options_.chunk_bytes, kSmallChunkBytes);
  SP_RETURN_IF_ERROR(keys_.Create(f, partial_, "keys", "key_offsets", small_chunk, options_));
  return extra_.Create(f, partial_, "extra", "extra_offsets", small_chunk, options_);
}

absl::Status Hdf5ShardSink::WriteMeta() {
  std::string text = backends::ShardMetaJson(
      meta_, std::filesystem::path(path_).filename().string(), records_);
  return WriteStringsAttribute(file_.get(), kHdf5MetaAttribute, {text}, true);
}

// Variable-length UTF-8 strings (h5py reads them as str): a scalar, or a
// 1-D array. Lock held.
absl::Status Hdf5ShardSink::WriteStringsAttribute(hid_t object, const char* name,
                                                  const std::vector<std::string>& values,
                                                  bool scalar) {
  Hid type(H5Tcopy(H5T_C_S1), H5Tclose);
  hsize_t n = values.size();
  Hid space(scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, nullptr), H5Sclose);
  if (!type.valid() || !space.valid() || H5Tset_size(type.get(), H5T_VARIABLE) < 0 ||
      H5Tset_cset(type.get(), H5T_CSET_UTF8) < 0) {
    return backends::Hdf5Error(partial_, "attribute type");
  }
  Hid attr(H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
           H5Aclose);
  std::vector<const char*> data;
  for (const std::string& v : values) data.push_back(v.c_str());
  if (!attr.valid() || (!data.empty() && H5Awrite(attr.get(), type.get(), data.data()) < 0)) {
    return backends::Hdf5Error(partial_, absl::StrCat("writing attribute ", name));
  }
  return absl::OkStatus();
}

absl::StatusOr<ShardEntry> Hdf5ShardSink::Commit() {
  {
    auto lock = backends::LockHdf5();
    SP_RETURN_IF_ERROR(images_.Flush());
    SP_RETURN_IF_ERROR(data_.Flush());
    SP_RETURN_IF_ERROR(image_info_.Flush());
    for (Appender& a : labels_) SP_RETURN_IF_ERROR(a.Flush());
    SP_RETURN_IF_ERROR(keys_.Flush());
    SP_RETURN_IF_ERROR(extra_.Flush());
    SP_RETURN_IF_ERROR(WriteMeta());
    SP_RETURN_IF_ERROR(CloseDatasets());
    // A failed H5Fclose cannot be undone (see backends::CloseFile): the
    // space its writes need is reserved first, while a failure still leaves
    // the file open for the destructor to abandon.
    SP_RETURN_IF_ERROR(backends::ReserveFileSpace(file_.get(), partial_));
    if (!file_.Reset()) return backends::Hdf5Error(partial_, "closing the file");
  }
  SP_ASSIGN_OR_RETURN(ShardEntry entry, backends::PublishShardFile(partial_, path_, records_));
  committed_ = true;
  return entry;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShardSink>> OpenHdf5ShardSink(const std::string& path,
                                                             const DatasetWriterOptions& options,
                                                             const Hdf5WriterOptions& hdf5) {
  if (hdf5.chunk_bytes == 0 || hdf5.row_chunk == 0) {
    return absl::InvalidArgumentError("HDF5 chunk sizes must be > 0");
  }
  auto sink = std::make_unique<Hdf5ShardSink>(path, options, hdf5);
  SP_RETURN_IF_ERROR(sink->Open());
  return std::unique_ptr<ShardSink>(std::move(sink));
}

}  // namespace shardpack::backends
