// Hdf5ShardReader: opens our shards and plain images/labels files; reads
// hyperslabs of many rows, one H5Dread per dataset per call.
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <filesystem>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/hdf5_layout.h"
#include "backends/hdf5_store.h"
#include "backends/hdf5_util.h"
#include "backends/publish.h"
#include "common/check.h"
#include "common/errors.h"
#include "common/os.h"
#include "common/posix_open.h"
#include "common/status_macros.h"
#include "shardpack/file.h"

namespace shardpack::backends {
namespace {

using backends::Hid;

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
    auto lock = backends::LockHdf5();
    for (Hid& d : datasets) d.Reset();
    file.Reset();
  }
};

namespace {

// Limits on what a file may claim, checked before anything is allocated
// (docs/format.md, "What an HDF5 reader refuses").
//
// A row of `images` must fit one record of a .shard (payload sizes are u32).
constexpr uint64_t kMaxRowBytes = std::numeric_limits<uint32_t>::max();
// Logical bytes a filtered dataset may hold per stored byte. deflate, the
// best of HDF5's built-in filters on real data, peaks at 1032:1; beyond
// this a few KB could claim terabytes (scaleoffset stores a constant chunk
// in a few bytes).
constexpr uint64_t kMaxFilterRatio = 2048;
// Largest read a scan step or reader unit asks for because of the file's
// chunk shape (a file can declare chunks of up to 4 GiB).
constexpr uint64_t kMaxChunkReadBytes = uint64_t{64} << 20;
// Names of ignored datasets kept for LayoutText (a file may hold millions).
constexpr size_t kMaxIgnoredListed = 16;

absl::Status Refused(const std::string& path, const char* name, std::string_view what) {
  return absl::DataLossError(
      absl::StrCat(path, ": dataset '", name, "' ", absl::string_view(what.data(), what.size())));
}

// Only hard links: a soft, external or user-defined link could point the
// reader at another object or another file. Lock held.
absl::Status CheckLink(const std::string& path, hid_t file, const char* name) {
  H5L_info_t info;
  if (H5Lget_info(file, name, &info, H5P_DEFAULT) < 0) {
    return backends::Hdf5Error(path, absl::StrCat("looking up '", name, "'"));
  }
  if (info.type == H5L_TYPE_HARD) return absl::OkStatus();
  const char* kind = info.type == H5L_TYPE_SOFT       ? "a soft link"
                     : info.type == H5L_TYPE_EXTERNAL ? "an external link (to another file)"
                                                      : "a user-defined link";
  return Refused(path, name, absl::StrCat("is ", kind, ", which shardpack does not follow"));
}

// Filters HDF5 implements itself; any other needs a plugin (refused, and
// plugin loading is off: see LockHdf5).
bool BuiltInFilter(H5Z_filter_t id) {
  return id == H5Z_FILTER_DEFLATE || id == H5Z_FILTER_SHUFFLE || id == H5Z_FILTER_FLETCHER32 ||
         id == H5Z_FILTER_SZIP || id == H5Z_FILTER_NBIT || id == H5Z_FILTER_SCALEOFFSET;
}

// The dataset's bytes come from this file alone, through built-in filters:
// no virtual dataset, no external storage. Sets *filtered. Lock held.
absl::Status CheckSources(const std::string& path, const char* name, hid_t dcpl, bool* filtered) {
  if (H5Pget_layout(dcpl) == H5D_VIRTUAL) {
    return Refused(path, name,
                   "is a virtual dataset (its rows live in other datasets), "
                   "which shardpack does not read");
  }
  if (H5Pget_external_count(dcpl) != 0) {
    return Refused(path, name,
                   "uses external storage (its bytes live in other files), "
                   "which shardpack does not read");
  }
  const int filters = H5Pget_nfilters(dcpl);
  if (filters < 0) return backends::Hdf5Error(path, absl::StrCat("filters of '", name, "'"));
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0, config = 0;
    std::array<unsigned, 8> values{};
    size_t count = values.size();
    char filter_name[80] = {};
    H5Z_filter_t id = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &count, values.data(),
                                     sizeof(filter_name), filter_name, &config);
    if (id < 0) return backends::Hdf5Error(path, absl::StrCat("filters of '", name, "'"));
    if (!BuiltInFilter(id)) {
      return Refused(
          path, name,
          absl::StrCat("needs HDF5 filter ", id, " ('", backends::Printable(filter_name),
                       "'), not one built into HDF5 (deflate, shuffle, fletcher32, szip, nbit, "
                       "scaleoffset); filter plugins are not loaded"));
    }
  }
  *filtered = filters > 0;
  return absl::OkStatus();
}

// The extent is backed by bytes of this file: without filters every
// logical byte is stored (rows with no storage would read as fill values);
// with filters at most kMaxFilterRatio logical bytes per stored byte. Also
// bounds the storage by the file, since the chunk index that reports it is
// file contents too. Lock held.
absl::Status CheckExtent(const std::string& path, const char* name, hid_t dataset,
                         const std::vector<hsize_t>& dims, size_t element_bytes, bool filtered,
                         uint64_t file_bytes) {
  // Saturating products: UINT64_MAX is above every limit below.
  auto times = [](uint64_t a, uint64_t b) {
    return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
  };
  uint64_t logical = element_bytes;
  for (hsize_t d : dims) logical = times(logical, d);
  if (logical == 0) return absl::OkStatus();
  const uint64_t stored = std::min<uint64_t>(H5Dget_storage_size(dataset), file_bytes);
  H5Eclear2(H5E_DEFAULT);  // 0 with an error is judged as 0 bytes stored
  const uint64_t limit = times(stored, filtered ? kMaxFilterRatio : 1);
  if (logical <= limit) return absl::OkStatus();
  return Refused(path, name,
                 absl::StrCat("claims ", logical, " bytes but the file (", file_bytes,
                              " bytes) stores ", stored, " of them",
                              filtered ? absl::StrCat(" (more than ", kMaxFilterRatio,
                                                      " to 1 after its filters)")
                                       : std::string(" (rows without storage read as fill "
                                                     "values, not data)")));
}

// Shape and element type the reader will read the dataset as: `rank`
// dimensions (0: 3 or 4, for images) of integers of `element_bytes` (0: any
// integer up to 8 bytes).
struct SlotShape {
  int rank;
  size_t element_bytes;
};

SlotShape ShapeOf(int slot) {
  switch (slot) {
    case kImages:
      return {0, 1};
    case kData:
    case kKeys:
    case kExtra:
      return {1, 1};
    case kImageInfo:
      return {2, 0};
    default:
      return {1, 0};  // offsets and labels
  }
}

absl::Status CheckShape(const std::string& path, int slot, hid_t type,
                        const std::vector<hsize_t>& dims) {
  const char* name = SlotName(slot);
  const SlotShape want = ShapeOf(slot);
  const bool rank_ok = want.rank == 0 ? (dims.size() == 3 || dims.size() == 4)
                                      : dims.size() == static_cast<size_t>(want.rank);
  if (!rank_ok || (slot == kImageInfo && dims[1] != kHdf5ImageInfoColumns)) {
    return Refused(path, name,
                   absl::StrCat("has ", dims.size(), " dimensions, not the ",
                                slot == kImageInfo ? "[N,5]"
                                : want.rank == 0   ? "[N,H,W,C], [N,C,H,W] or [N,H,W]"
                                                   : "one",
                                " it must have"));
  }
  const size_t bytes = H5Tget_size(type);
  if (H5Tget_class(type) != H5T_INTEGER || bytes == 0 || bytes > 8 ||
      (want.element_bytes != 0 && bytes != want.element_bytes)) {
    return Refused(path, name,
                   absl::StrCat("holds ", backends::Hdf5TypeName(type), ", not ",
                                want.element_bytes == 1 ? "bytes (uint8)" : "integers"));
  }
  return absl::OkStatus();
}

// Opens the HDF5 dataset object (a member of the file) `slot` if the file
// has it, after checking that everything read from it comes from this file
// and that its extent is backed by it. Lock held.
absl::StatusOr<bool> OpenHdf5Member(const std::string& path, hid_t file, uint64_t file_bytes,
                                    int slot, Hid* out, std::vector<hsize_t>* dims) {
  const char* name = SlotName(slot);
  htri_t exists = H5Lexists(file, name, H5P_DEFAULT);
  if (exists < 0) return backends::Hdf5Error(path, absl::StrCat("looking up '", name, "'"));
  if (exists == 0) return false;
  SP_RETURN_IF_ERROR(CheckLink(path, file, name));
  {
    Hid object(H5Oopen(file, name, H5P_DEFAULT), H5Oclose);
    const H5I_type_t kind = object.valid() ? H5Iget_type(object.get()) : H5I_BADID;
    if (kind == H5I_GROUP) return Refused(path, name, "is a group, not a dataset");
    if (kind == H5I_DATATYPE) return Refused(path, name, "is a named datatype, not a dataset");
  }
  // The bulk datasets are read a whole chunk (or several) per call: without a
  // chunk cache HDF5 reads them straight into the caller's buffer instead of
  // through the cache (one copy less).
  Hid dapl(H5Pcreate(H5P_DATASET_ACCESS), H5Pclose);
  if (dapl.valid() && (slot == kImages || slot == kData)) {
    H5Pset_chunk_cache(dapl.get(), 0, 0, H5D_CHUNK_CACHE_W0_DEFAULT);
  }
  *out = Hid(H5Dopen2(file, name, dapl.valid() ? dapl.get() : H5P_DEFAULT), H5Dclose);
  if (!out->valid()) return backends::Hdf5Error(path, absl::StrCat("opening '", name, "'"));
  Hid dcpl(H5Dget_create_plist(out->get()), H5Pclose);
  if (!dcpl.valid()) return backends::Hdf5Error(path, absl::StrCat("layout of '", name, "'"));
  bool filtered = false;
  SP_RETURN_IF_ERROR(CheckSources(path, name, dcpl.get(), &filtered));
  Hid space(H5Dget_space(out->get()), H5Sclose);
  Hid type(H5Dget_type(out->get()), H5Tclose);
  int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (rank < 0 || !type.valid()) {
    return backends::Hdf5Error(path, absl::StrCat("shape of '", name, "'"));
  }
  dims->resize(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims->data(), nullptr);
  SP_RETURN_IF_ERROR(CheckShape(path, slot, type.get(), *dims));
  SP_RETURN_IF_ERROR(
      CheckExtent(path, name, out->get(), *dims, H5Tget_size(type.get()), filtered, file_bytes));
  return true;
}

}  // namespace

Hdf5ShardReader::Hdf5ShardReader(std::string path)
    : path_(std::move(path)), files_(std::make_unique<Files>()) {}
Hdf5ShardReader::~Hdf5ShardReader() = default;

absl::Status Hdf5ShardReader::CheckSize() const {
  SP_ASSIGN_OR_RETURN(const common::FileStatus st, common::Stat(path_));
  if (st.size == file_bytes_) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(path_, ": ", st.size, " bytes now, ", file_bytes_,
                                          " when it was opened: the file changed while it was "
                                          "read (libhdf5 reads a lost tail as zeros)"));
}

bool Hdf5ShardReader::has_keys() const { return files_->datasets[kKeys].valid(); }
bool Hdf5ShardReader::has_extra() const { return files_->datasets[kExtra].valid(); }

absl::StatusOr<std::unique_ptr<Hdf5ShardReader>> Hdf5ShardReader::Open(const std::string& path) {
  // libhdf5 would open a FIFO and wait for a writer.
  std::unique_ptr<Hdf5ShardReader> r(new Hdf5ShardReader(path));
  SP_RETURN_IF_ERROR(shardpack::common::CheckRegularFile(path, &r->file_bytes_));
  SP_RETURN_IF_ERROR(r->Load());
  return r;
}

namespace {

// Our metadata attribute, if the file has one. Lock held.
absl::StatusOr<std::optional<std::string>> ReadMetaAttribute(const std::string& path,
                                                             hid_t file) {
  htri_t exists = H5Aexists(file, kHdf5MetaAttribute);
  if (exists < 0) return backends::Hdf5Error(path, "reading the root attributes");
  if (exists == 0) return std::nullopt;
  Hid attr(H5Aopen(file, kHdf5MetaAttribute, H5P_DEFAULT), H5Aclose);
  Hid type(attr.valid() ? H5Aget_type(attr.get()) : -1, H5Tclose);
  Hid space(attr.valid() ? H5Aget_space(attr.get()) : -1, H5Sclose);
  // One string: H5Aread writes one pointer per element into `text`.
  if (!type.valid() || !space.valid() || H5Tis_variable_str(type.get()) <= 0 ||
      H5Sget_simple_extent_npoints(space.get()) != 1) {
    return absl::DataLossError(absl::StrCat(path, ": attribute ", kHdf5MetaAttribute,
                                            " is not one variable-length string"));
  }
  Hid mem(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(mem.get(), H5T_VARIABLE);
  H5Tset_cset(mem.get(), H5T_CSET_UTF8);
  char* text = nullptr;
  if (H5Aread(attr.get(), mem.get(), &text) < 0 || text == nullptr) {
    return backends::Hdf5Error(path, absl::StrCat("reading attribute ", kHdf5MetaAttribute));
  }
  std::string out(text);
  H5free_memory(text);
  return out;
}

}  // namespace

absl::Status Hdf5ShardReader::Load() {
  auto lock = backends::LockHdf5();
  htri_t is_hdf5 = H5Fis_hdf5(path_.c_str());
  if (is_hdf5 <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return absl::DataLossError(absl::StrCat(path_, ": not an HDF5 file (no HDF5 signature)"));
  }
  Files& f = *files_;
  f.file = Hid(H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), backends::CloseFile);
  if (!f.file.valid()) return backends::Hdf5Error(path_, "cannot open HDF5 file");
  // The layout is told by what the file holds: our metadata attribute says
  // ours (and which layout); without it, `images` and `labels` make a plain
  // file. Datasets the layout does not use are never opened.
  SP_ASSIGN_OR_RETURN(std::optional<std::string> meta, ReadMetaAttribute(path_, f.file.get()));
  ours_ = meta.has_value();
  SP_RETURN_IF_ERROR(ours_ ? LoadOurs(*meta) : LoadPlain());
  for (size_t k = 0; k < meta_.schema.labels.size(); ++k) {
    labels_.push_back(kFirstLabel + static_cast<int>(k));
  }
  if (fixed_shape_ && meta_.schema.image.RawBytes() > kMaxRowBytes) {
    const ImageInfo& i = meta_.schema.image;
    return absl::DataLossError(absl::StrCat(
        path_, ": dataset 'images' has rows of ", i.RawBytes(), " bytes (", i.height, "x", i.width,
        "x", static_cast<int>(i.channels), "), more than a record holds (", kMaxRowBytes, ")"));
  }
  // Every per-row dataset has size() rows (offsets one more).
  for (int s = 0; s < kSlots; ++s) {
    if (!f.datasets[s].valid() || s == kData || s == kKeys || s == kExtra) continue;
    uint64_t want = size_ + ((s == kOffsets || s == kKeyOffsets || s == kExtraOffsets) ? 1 : 0);
    if (f.dims[s][0] != want) {
      return absl::DataLossError(absl::StrCat(path_, ": dataset '", SlotName(s), "' has ",
                                              f.dims[s][0], " rows, expected ", want));
    }
  }
  ListIgnored();
  SetChunkRows();
  H5Eclear2(H5E_DEFAULT);
  return absl::OkStatus();
}

absl::StatusOr<bool> Hdf5ShardReader::OpenSlot(int slot) {
  Files& f = *files_;
  return OpenHdf5Member(path_, f.file.get(), file_bytes_, slot, &f.datasets[slot], &f.dims[slot]);
}

// Our shard: the metadata's schema says which layout, and every dataset of
// that layout must be there.
absl::Status Hdf5ShardReader::LoadOurs(const std::string& meta) {
  SP_ASSIGN_OR_RETURN(meta_,
                      backends::ParseShardMeta(
                          meta, absl::StrCat(path_, " attribute ", kHdf5MetaAttribute),
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
    SP_ASSIGN_OR_RETURN(bool have, OpenSlot(s));
    if (!have) {
      return absl::DataLossError(absl::StrCat(path_, ": missing dataset '", SlotName(s),
                                              "' (a shardpack ",
                                              fixed_shape_ ? "fixed" : "flat", " layout shard)"));
    }
  }
  if (fixed_shape_) {
    std::vector<hsize_t> want = {size_, image.height, image.width, image.channels};
    if (image.layout == Layout::kCHW) want = {size_, image.channels, image.height, image.width};
    if (files_->dims[kImages] != want) {
      return absl::DataLossError(
          absl::StrCat(path_, ": dataset 'images' does not have the schema's shape"));
    }
  }
  return absl::OkStatus();
}

// A plain file: `images` and `labels`, and `coarse_labels` when it is a
// column of integers, one per row; nothing else is looked at.
absl::Status Hdf5ShardReader::LoadPlain() {
  Files& f = *files_;
  SP_ASSIGN_OR_RETURN(bool images, OpenSlot(kImages));
  bool labels = false;
  if (images) {
    SP_ASSIGN_OR_RETURN(labels, OpenSlot(kFirstLabel));
  }
  if (!images || !labels) {
    uint64_t total = 0;
    std::vector<backends::RootEntry> found = backends::ListRoot(f.file.get(), 8, &total, true);
    return absl::DataLossError(absl::StrCat(
        path_, ": not a layout shardpack reads (no attribute '", kHdf5MetaAttribute,
        "', no dataset '", images ? "labels" : "images", "'); found ",
        backends::EntriesText(found, total),
        "; accepted: a shardpack shard, or a plain file with 'images' uint8 [N,H,W,C], "
        "[N,C,H,W] or [N,H,W] and integer 'labels' [N]"));
  }
  const std::vector<hsize_t>& d = f.dims[kImages];
  std::optional<ImageInfo> image =
      backends::PlainImageShape(std::vector<hsize_t>(d.begin() + 1, d.end()));
  if (!image.has_value()) {
    return absl::DataLossError(absl::StrCat(
        path_, ": dataset 'images' [", absl::StrJoin(d, ","),
        "] is not [N,H,W,C] or [N,C,H,W] (0 < H, W < 2^32, 0 < C <= 255) or [N,H,W]"));
  }
  size_ = d[0];
  fixed_shape_ = true;
  meta_.backend = Backend::kHdf5;
  meta_.schema.image = *image;
  meta_.schema.labels.push_back({"label", {}});
  std::optional<backends::RootEntry> coarse =
      backends::FindRootEntry(f.file.get(), SlotName(kFirstLabel + 1));
  if (coarse.has_value() && coarse->IsIntegerColumn(size_)) {
    SP_ASSIGN_OR_RETURN(bool have, OpenSlot(kFirstLabel + 1));
    if (have) meta_.schema.labels.push_back({"coarse", {}});
  }
  meta_.shards.assign(1, ShardEntry{std::filesystem::path(path_).filename().string(), size_,
                                    0, 0});
  meta_.pack_json = R"({"source":"plain HDF5 file"})";
  return absl::OkStatus();
}

// The root's other links, by name: at most kMaxIgnoredListed of them, and
// how many there are.
void Hdf5ShardReader::ListIgnored() {
  const Files& f = *files_;
  auto used = [&](const std::string& name) {
    for (int s = 0; s < kSlots; ++s) {
      if (f.datasets[s].valid() && name == SlotName(s)) return true;
    }
    return false;
  };
  const uint64_t opened = static_cast<uint64_t>(std::count_if(
      f.datasets.begin(), f.datasets.end(), [](const Hid& d) { return d.valid(); }));
  uint64_t total = 0;
  for (const backends::RootEntry& e :
       backends::ListRoot(f.file.get(), kMaxIgnoredListed + opened, &total, false)) {
    if (!used(e.name) && ignored_.size() < kMaxIgnoredListed) ignored_.push_back(e.name);
  }
  ignored_count_ = total - std::min(total, opened);
}

// Rows per chunk of the main dataset: the natural read unit.
void Hdf5ShardReader::SetChunkRows() {
  Files& f = *files_;
  int main = fixed_shape_ ? kImages : kOffsets;
  Hid dcpl(H5Dget_create_plist(f.datasets[main].get()), H5Pclose);
  uint64_t row_bytes = fixed_shape_ ? std::max<uint64_t>(1, meta_.schema.image.RawBytes()) : 8;
  chunk_rows_ = std::max<uint64_t>(1, (uint64_t{1} << 20) / row_bytes);
  if (dcpl.valid() && H5Pget_layout(dcpl.get()) == H5D_CHUNKED) {
    std::vector<hsize_t> chunk(f.dims[main].size());
    if (H5Pget_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()) > 0 &&
        chunk[0] > 0) {
      // The chunk shape is file contents: a step is never more than
      // kMaxChunkReadBytes of rows (at least one row) because of it.
      chunk_rows_ =
          std::min<uint64_t>(chunk[0], std::max<uint64_t>(1, kMaxChunkReadBytes / row_bytes));
    }
  }
}

std::string Hdf5ShardReader::LayoutText() const {
  std::string text = !ours_          ? "fixed images/labels (plain file)"
                     : fixed_shape_ ? "fixed images (shardpack)"
                                    : "flat data/offsets (shardpack)";
  if (!ours_ && num_labels() > 1) text = "fixed images/labels/coarse_labels (plain file)";
  if (!ours_ && meta_.schema.image.layout == Layout::kCHW) {
    absl::StrAppend(&text, ", images channels first");
  }
  if (ignored_count_ > 0) {
    absl::StrAppend(&text, "; ignored: ", absl::StrJoin(ignored_, ", "));
    if (ignored_count_ > ignored_.size()) {
      absl::StrAppend(&text, " and ", ignored_count_ - ignored_.size(), " more");
    }
  }
  return text;
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
    return backends::Hdf5Error(
        path, absl::StrCat("reading '", SlotName(slot), "' rows [", begin, ", ", end, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Hdf5ShardReader::ReadRows(uint64_t begin, uint64_t end, uint8_t* images,
                                       int64_t* const* labels) {
  SP_DCHECK(begin <= end && end <= size());
  auto lock = backends::LockHdf5();
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
  auto lock = backends::LockHdf5();
  if (fixed_shape_) return absl::FailedPreconditionError(absl::StrCat(path_, ": no 'offsets'"));
  SP_RETURN_IF_ERROR(ReadSlab(path_, files_->datasets[kOffsets].get(), files_->dims[kOffsets],
                              kOffsets, begin, end + 1, H5T_NATIVE_INT64, offsets));
  // Callers size buffers from these: each must lie inside `data`, in order.
  const uint64_t data_bytes = files_->dims[kData][0];
  for (uint64_t i = 0; i <= end - begin; ++i) {
    const int64_t o = offsets[i];
    if (o < 0 || static_cast<uint64_t>(o) > data_bytes || (i > 0 && o < offsets[i - 1])) {
      return absl::DataLossError(absl::StrCat(path_, " record ", begin + i, ": 'offsets' value ", o,
                                              " out of order or outside 'data' (", data_bytes,
                                              " bytes)"));
    }
  }
  return absl::OkStatus();
}

absl::Status Hdf5ShardReader::ReadData(uint64_t byte_begin, uint64_t byte_end, uint8_t* out) {
  auto lock = backends::LockHdf5();
  if (fixed_shape_) return absl::FailedPreconditionError(absl::StrCat(path_, ": no 'data'"));
  return ReadSlab(path_, files_->datasets[kData].get(), files_->dims[kData], kData, byte_begin,
                  byte_end, H5T_NATIVE_UINT8, out);
}

absl::Status Hdf5ShardReader::ReadImageInfo(uint64_t begin, uint64_t end, uint32_t* out) {
  auto lock = backends::LockHdf5();
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
  auto lock = backends::LockHdf5();
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
