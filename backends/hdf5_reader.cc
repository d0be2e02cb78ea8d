// Hdf5ShardReader: opens our shards and plain images/labels files; reads
// hyperslabs of many rows, one H5Dread per dataset per call.
#include <sys/stat.h>

#include <array>
#include <cerrno>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "backends/hdf5_store.h"
#include "backends/hdf5_util.h"
#include "backends/publish.h"
#include "format/posix_open.h"
#include "shardpack/file.h"
#include "shardpack/status.h"

namespace shardpack::backends {
namespace {

using internal::Hid;

// Dataset slots; the label datasets follow kFirstLabel.
enum Slot {
  kImages,
  kData,
  kOffsets,
  kImageInfo,
  kKeys,
  kKeyOffsets,
  kExtra,
  kExtraOffsets,
  kFirstLabel,
  kSlots = kFirstLabel + kMaxLabels,
};

const char* SlotName(int slot) {
  static const std::array<std::string, kSlots>* names = [] {
    auto* n = new std::array<std::string, kSlots>{"images", "data", "offsets", "image_info",
                                                  "keys", "key_offsets", "extra",
                                                  "extra_offsets", "labels", "coarse_labels"};
    for (int k = 2; k < kMaxLabels; ++k) (*n)[kFirstLabel + k] = absl::StrCat("labels_", k);
    return n;
  }();
  return (*names)[slot].c_str();
}

}  // namespace

struct Hdf5ShardReader::Files {
  Hid file;
  std::array<Hid, kSlots> datasets;
  std::array<std::vector<hsize_t>, kSlots> dims;
  ~Files() {
    auto lock = internal::LockHdf5();
    for (Hid& d : datasets) d.Reset();
    file.Reset();
  }
};

namespace {

// Opens dataset `slot` if the file has it. Lock held.
absl::StatusOr<bool> OpenDataset(const std::string& path, hid_t file, int slot, Hid* out,
                                 std::vector<hsize_t>* dims, bool integer_only) {
  const char* name = SlotName(slot);
  htri_t exists = H5Lexists(file, name, H5P_DEFAULT);
  if (exists < 0) return internal::Hdf5Error(path, absl::StrCat("looking up '", name, "'"));
  if (exists == 0) return false;
  // The bulk datasets are read a whole chunk (or several) per call: without a
  // chunk cache HDF5 reads them straight into the caller's buffer instead of
  // through the cache (one copy less).
  Hid dapl(H5Pcreate(H5P_DATASET_ACCESS), H5Pclose);
  if (dapl.valid() && (slot == kImages || slot == kData)) {
    H5Pset_chunk_cache(dapl.get(), 0, 0, H5D_CHUNK_CACHE_W0_DEFAULT);
  }
  *out = Hid(H5Dopen2(file, name, dapl.valid() ? dapl.get() : H5P_DEFAULT), H5Dclose);
  if (!out->valid()) return internal::Hdf5Error(path, absl::StrCat("opening '", name, "'"));
  Hid space(H5Dget_space(out->get()), H5Sclose);
  Hid type(H5Dget_type(out->get()), H5Tclose);
  int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (rank < 1 || !type.valid()) {
    return internal::Hdf5Error(path, absl::StrCat("shape of '", name, "'"));
  }
  dims->resize(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims->data(), nullptr);
  if (integer_only && H5Tget_class(type.get()) != H5T_INTEGER) {
    return absl::DataLossError(
        absl::StrCat(path, ": dataset '", name, "' does not hold integers"));
  }
  return true;
}

}  // namespace

Hdf5ShardReader::Hdf5ShardReader(std::string path)
    : path_(std::move(path)), files_(std::make_unique<Files>()) {}
Hdf5ShardReader::~Hdf5ShardReader() = default;

bool Hdf5ShardReader::has_keys() const { return files_->datasets[kKeys].valid(); }
bool Hdf5ShardReader::has_extra() const { return files_->datasets[kExtra].valid(); }

absl::StatusOr<std::unique_ptr<Hdf5ShardReader>> Hdf5ShardReader::Open(const std::string& path) {
  // libhdf5 would open a FIFO and wait for a writer.
  SP_RETURN_IF_ERROR(shardpack::internal::CheckRegularFile(path));
  std::unique_ptr<Hdf5ShardReader> r(new Hdf5ShardReader(path));
  SP_RETURN_IF_ERROR(r->Load());
  return r;
}

namespace {

// Our metadata attribute, if the file has one. Lock held.
absl::StatusOr<std::optional<std::string>> ReadMetaAttribute(const std::string& path,
                                                             hid_t file) {
  htri_t exists = H5Aexists(file, kHdf5MetaAttribute);
  if (exists < 0) return internal::Hdf5Error(path, "reading the root attributes");
  if (exists == 0) return std::nullopt;
  Hid attr(H5Aopen(file, kHdf5MetaAttribute, H5P_DEFAULT), H5Aclose);
  Hid type(attr.valid() ? H5Aget_type(attr.get()) : -1, H5Tclose);
  if (!type.valid() || H5Tis_variable_str(type.get()) <= 0) {
    return absl::DataLossError(absl::StrCat(path, ": attribute ", kHdf5MetaAttribute,
                                            " is not a variable-length string"));
  }
  Hid mem(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(mem.get(), H5T_VARIABLE);
  H5Tset_cset(mem.get(), H5T_CSET_UTF8);
  char* text = nullptr;
  if (H5Aread(attr.get(), mem.get(), &text) < 0 || text == nullptr) {
    return internal::Hdf5Error(path, absl::StrCat("reading attribute ", kHdf5MetaAttribute));
  }
  std::string out(text);
  H5free_memory(text);
  return out;
}

}  // namespace

absl::Status Hdf5ShardReader::Load() {
  auto lock = internal::LockHdf5();
  htri_t is_hdf5 = H5Fis_hdf5(path_.c_str());
  if (is_hdf5 <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return absl::DataLossError(absl::StrCat(path_, ": not an HDF5 file (no HDF5 signature)"));
  }
  Files& f = *files_;
  f.file = Hid(H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f.file.valid()) return internal::Hdf5Error(path_, "cannot open HDF5 file");
  SP_ASSIGN_OR_RETURN(std::optional<std::string> meta, ReadMetaAttribute(path_, f.file.get()));
  std::array<bool, kSlots> have{};
  for (int s = 0; s < kSlots; ++s) {
    bool integer = s != kImages && s != kData && s != kKeys && s != kExtra;
    SP_ASSIGN_OR_RETURN(have[s], OpenDataset(path_, f.file.get(), s, &f.datasets[s], &f.dims[s],
                                             integer || s == kImages));
  }
  auto missing = [&](int slot) {
    return absl::DataLossError(absl::StrCat(path_, ": missing dataset '", SlotName(slot), "'"));
  };
  ours_ = meta.has_value();
  if (ours_) {
    SP_ASSIGN_OR_RETURN(meta_, internal::ParseShardMeta(
                                   *meta, absl::StrCat(path_, " attribute ", kHdf5MetaAttribute),
                                   Backend::kHdf5));
    size_ = meta_.shards[0].records;
    const ImageInfo& image = meta_.schema.image;
    fixed_shape_ = image.encoding == Encoding::kRaw && image.height != 0 && image.width != 0 &&
                   image.channels != 0;
    std::vector<int> needed = {kKeys, kKeyOffsets, kExtra, kExtraOffsets};
    if (fixed_shape_) {
      needed.push_back(kImages);
    } else {
      needed.insert(needed.end(), {kData, kOffsets, kImageInfo});
    }
    for (size_t k = 0; k < meta_.schema.labels.size(); ++k) {
      needed.push_back(kFirstLabel + static_cast<int>(k));
    }
    for (int s : needed) {
      if (!have[s]) return missing(s);
    }
    if (fixed_shape_) {
      std::vector<hsize_t> want = {size_, image.height, image.width, image.channels};
      if (image.layout == Layout::kCHW) want = {size_, image.channels, image.height, image.width};
      if (f.dims[kImages] != want) {
        return absl::DataLossError(
            absl::StrCat(path_, ": dataset 'images' does not have the schema's shape"));
      }
    }
  } else {
    if (!have[kImages]) {
      return absl::DataLossError(absl::StrCat(
          path_, ": missing dataset 'images' (neither a shardpack shard nor an images/labels "
                 "file)"));
    }
    if (!have[kFirstLabel]) return missing(kFirstLabel);
    const std::vector<hsize_t>& d = f.dims[kImages];
    if ((d.size() != 3 && d.size() != 4) || (d.size() == 4 && (d[3] == 0 || d[3] > 255))) {
      return absl::DataLossError(absl::StrCat(
          path_, ": dataset 'images' is not [N,H,W,C] (C <= 255) or [N,H,W]"));
    }
    Hid type(H5Dget_type(f.datasets[kImages].get()), H5Tclose);
    if (H5Tget_size(type.get()) != 1) {
      return absl::DataLossError(absl::StrCat(path_, ": dataset 'images' is not uint8"));
    }
    size_ = d[0];
    fixed_shape_ = true;
    meta_.backend = Backend::kHdf5;
    meta_.schema.image = ImageInfo{Encoding::kRaw, Layout::kHWC, static_cast<uint32_t>(d[1]),
                                   static_cast<uint32_t>(d[2]),
                                   static_cast<uint8_t>(d.size() == 4 ? d[3] : 1)};
    meta_.schema.labels.push_back({"label", {}});
    if (have[kFirstLabel + 1]) meta_.schema.labels.push_back({"coarse", {}});
    meta_.shards.assign(1, ShardEntry{std::filesystem::path(path_).filename().string(), size_,
                                      0, 0});
    meta_.pack_json = R"({"source":"plain HDF5 file"})";
  }
  for (size_t k = 0; k < meta_.schema.labels.size(); ++k) {
    labels_.push_back(kFirstLabel + static_cast<int>(k));
  }
  // Every per-row dataset has size() rows (offsets one more).
  for (int s = 0; s < kSlots; ++s) {
    if (!f.datasets[s].valid() || s == kData || s == kKeys || s == kExtra) continue;
    if (s >= kFirstLabel && (s - kFirstLabel) >= static_cast<int>(labels_.size())) continue;
    uint64_t want = size_ + ((s == kOffsets || s == kKeyOffsets || s == kExtraOffsets) ? 1 : 0);
    if (f.dims[s][0] != want) {
      return absl::DataLossError(absl::StrCat(path_, ": dataset '", SlotName(s), "' has ",
                                              f.dims[s][0], " rows, expected ", want));
    }
  }
  // Rows per chunk of the main dataset: the natural read unit.
  int main = fixed_shape_ ? kImages : kOffsets;
  Hid dcpl(H5Dget_create_plist(f.datasets[main].get()), H5Pclose);
  uint64_t row_bytes = fixed_shape_ ? std::max<uint64_t>(1, meta_.schema.image.RawBytes()) : 8;
  chunk_rows_ = std::max<uint64_t>(1, (uint64_t{1} << 20) / row_bytes);
  if (dcpl.valid() && H5Pget_layout(dcpl.get()) == H5D_CHUNKED) {
    std::vector<hsize_t> chunk(f.dims[main].size());
    if (H5Pget_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()) > 0 &&
        chunk[0] > 0) {
      chunk_rows_ = chunk[0];
    }
  }
  H5Eclear2(H5E_DEFAULT);
  return absl::OkStatus();
}

namespace {

// Reads rows [begin, end) of a dataset (all of its other dimensions) into
// `out` as `mem_type`. Lock held.
absl::Status ReadSlab(const std::string& path, hid_t dataset, const std::vector<hsize_t>& dims,
                      int slot, uint64_t begin, uint64_t end, hid_t mem_type, void* out) {
  if (begin == end) return absl::OkStatus();
  if (begin > end || end > dims[0]) {
    return absl::OutOfRangeError(absl::StrCat(path, ": rows [", begin, ", ", end, ") of '",
                                              SlotName(slot), "' (", dims[0], " rows)"));
  }
  std::vector<hsize_t> start(dims.size(), 0), count = dims;
  start[0] = begin;
  count[0] = end - begin;
  Hid file_space(H5Dget_space(dataset), H5Sclose);
  Hid mem_space(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr),
                H5Sclose);
  if (!file_space.valid() || !mem_space.valid() ||
      H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                          nullptr) < 0 ||
      H5Dread(dataset, mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, out) < 0) {
    return internal::Hdf5Error(
        path, absl::StrCat("reading '", SlotName(slot), "' rows [", begin, ", ", end, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Hdf5ShardReader::ReadRows(uint64_t begin, uint64_t end, uint8_t* images,
                                       int64_t* const* labels) {
  auto lock = internal::LockHdf5();
  Files& f = *files_;
  if (images != nullptr) {
    if (!fixed_shape_) {
      return absl::FailedPreconditionError(absl::StrCat(path_, ": no 'images' dataset"));
    }
    SP_RETURN_IF_ERROR(ReadSlab(path_, f.datasets[kImages].get(), f.dims[kImages], kImages,
                                begin, end, H5T_NATIVE_UINT8, images));
  }
  if (labels == nullptr) return absl::OkStatus();
  for (size_t k = 0; k < labels_.size(); ++k) {
    if (labels[k] == nullptr) continue;
    int s = labels_[k];
    SP_RETURN_IF_ERROR(ReadSlab(path_, f.datasets[s].get(), f.dims[s], s, begin, end,
                                H5T_NATIVE_INT64, labels[k]));
  }
  return absl::OkStatus();
}

absl::Status Hdf5ShardReader::ReadOffsets(uint64_t begin, uint64_t end, int64_t* offsets) {
  auto lock = internal::LockHdf5();
  if (fixed_shape_) return absl::FailedPreconditionError(absl::StrCat(path_, ": no 'offsets'"));
  return ReadSlab(path_, files_->datasets[kOffsets].get(), files_->dims[kOffsets], kOffsets,
                  begin, end + 1, H5T_NATIVE_INT64, offsets);
}

absl::Status Hdf5ShardReader::ReadData(uint64_t byte_begin, uint64_t byte_end, uint8_t* out) {
  auto lock = internal::LockHdf5();
  if (fixed_shape_) return absl::FailedPreconditionError(absl::StrCat(path_, ": no 'data'"));
  return ReadSlab(path_, files_->datasets[kData].get(), files_->dims[kData], kData, byte_begin,
                  byte_end, H5T_NATIVE_UINT8, out);
}

absl::Status Hdf5ShardReader::ReadImageInfo(uint64_t begin, uint64_t end, uint32_t* out) {
  auto lock = internal::LockHdf5();
  if (fixed_shape_) {
    return absl::FailedPreconditionError(absl::StrCat(path_, ": no 'image_info'"));
  }
  return ReadSlab(path_, files_->datasets[kImageInfo].get(), files_->dims[kImageInfo],
                  kImageInfo, begin, end, H5T_NATIVE_UINT32, out);
}

absl::Status Hdf5ShardReader::ReadKeys(uint64_t begin, uint64_t end,
                                       std::vector<int64_t>* offsets,
                                       std::vector<uint8_t>* bytes) {
  return ReadVarBytes(kKeys, begin, end, offsets, bytes);
}

absl::Status Hdf5ShardReader::ReadExtra(uint64_t begin, uint64_t end,
                                        std::vector<int64_t>* offsets,
                                        std::vector<uint8_t>* bytes) {
  return ReadVarBytes(kExtra, begin, end, offsets, bytes);
}

absl::Status Hdf5ShardReader::ReadVarBytes(int which, uint64_t begin, uint64_t end,
                                           std::vector<int64_t>* offsets,
                                           std::vector<uint8_t>* bytes) {
  auto lock = internal::LockHdf5();
  Files& f = *files_;
  offsets->assign(end - begin + 1, 0);
  bytes->clear();
  if (!f.datasets[which].valid()) return absl::OkStatus();
  const int offsets_slot = which + 1;  // kKeyOffsets, kExtraOffsets
  SP_RETURN_IF_ERROR(ReadSlab(path_, f.datasets[offsets_slot].get(), f.dims[offsets_slot],
                              offsets_slot, begin, end + 1, H5T_NATIVE_INT64, offsets->data()));
  const int64_t first = (*offsets)[0];
  for (size_t i = 0; i < offsets->size(); ++i) {
    int64_t o = (*offsets)[i];
    if (o < first || (i > 0 && o < (*offsets)[i - 1]) ||
        static_cast<uint64_t>(o) > f.dims[which][0]) {
      return absl::DataLossError(absl::StrCat(path_, " record ", begin + i, ": '",
                                              SlotName(offsets_slot), "' value ", o,
                                              " out of order or past the end of '",
                                              SlotName(which), "'"));
    }
    (*offsets)[i] = o - first;
  }
  bytes->resize(static_cast<size_t>(offsets->back()));
  return ReadSlab(path_, f.datasets[which].get(), f.dims[which], which,
                  static_cast<uint64_t>(first), static_cast<uint64_t>(first) + bytes->size(),
                  H5T_NATIVE_UINT8, bytes->data());
}

absl::StatusOr<Manifest> SynthesizeHdf5Manifest(const std::string& path) {
  SP_ASSIGN_OR_RETURN(std::unique_ptr<Hdf5ShardReader> reader, Hdf5ShardReader::Open(path));
  Manifest m = reader->meta();
  m.shards[0].path = std::filesystem::path(path).filename().string();
  std::error_code ec;
  m.shards[0].bytes = std::filesystem::file_size(path, ec);
  m.shards[0].crc32c = 0;
  return m;
}

}  // namespace shardpack::backends
