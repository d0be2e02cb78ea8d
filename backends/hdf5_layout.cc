#include "backends/hdf5_layout.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/hdf5_util.h"

namespace shardpack::backends {
namespace {

const char* LinkKind(H5L_type_t type) {
  switch (type) {
    case H5L_TYPE_HARD:
      return "hard link";
    case H5L_TYPE_SOFT:
      return "soft link";
    case H5L_TYPE_EXTERNAL:
      return "external link";
    default:
      return "user-defined link";
  }
}

// Fills in what the object at `name` (a hard link) is. Errors leave it
// "unreadable": describing is never a reason to refuse. Lock held.
void DescribeObject(hid_t file, RootEntry* e) {
  Hid object(H5Oopen(file, e->name.c_str(), H5P_DEFAULT), H5Oclose);
  const H5I_type_t kind = object.valid() ? H5Iget_type(object.get()) : H5I_BADID;
  if (kind == H5I_GROUP) {
    e->what = "group";
  } else if (kind == H5I_DATATYPE) {
    e->what = "named datatype";
  } else if (kind == H5I_DATASET) {
    Hid type(H5Dget_type(object.get()), H5Tclose);
    Hid space(H5Dget_space(object.get()), H5Sclose);
    const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
    if (type.valid() && rank >= 0) {
      e->dataset = true;
      e->type_class = H5Tget_class(type.get());
      e->type_bytes = H5Tget_size(type.get());
      e->dims.resize(static_cast<size_t>(rank));
      H5Sget_simple_extent_dims(space.get(), e->dims.data(), nullptr);
      e->what = absl::StrCat(Hdf5TypeName(type.get()), " [", absl::StrJoin(e->dims, ","), "]");
    }
  }
  if (e->what.empty()) e->what = "unreadable object";
  H5Eclear2(H5E_DEFAULT);
}

RootEntry Entry(hid_t file, const char* name, const H5L_info_t& info, bool describe) {
  RootEntry e;
  e.name = name;
  e.hard = info.type == H5L_TYPE_HARD;
  if (!e.hard) {
    e.what = LinkKind(info.type);
  } else if (describe) {
    DescribeObject(file, &e);
  }
  e.name = Printable(name);
  return e;
}

struct Listing {
  size_t limit;
  bool describe;
  std::vector<RootEntry>* out;
};

herr_t AddEntry(hid_t group, const char* name, const H5L_info_t* info, void* data) {
  auto* listing = static_cast<Listing*>(data);
  listing->out->push_back(Entry(group, name, *info, listing->describe));
  return listing->out->size() >= listing->limit ? 1 : 0;  // 1 stops the walk
}

}  // namespace

std::string Hdf5TypeName(hid_t type) {
  const size_t bytes = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
      return absl::StrCat(H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int", 8 * bytes);
    case H5T_FLOAT:
      return absl::StrCat("float", 8 * bytes);
    case H5T_STRING:
      return "string";
    case H5T_VLEN:
      return "variable-length";
    case H5T_COMPOUND:
      return "compound";
    case H5T_ENUM:
      return "enum";
    case H5T_ARRAY:
      return "array";
    case H5T_OPAQUE:
      return "opaque";
    case H5T_REFERENCE:
      return "reference";
    case H5T_BITFIELD:
      return "bitfield";
    default:
      return "unknown type";
  }
}

std::string RootEntry::Text() const {
  return absl::StrCat("'", name, "' ", dataset ? what : absl::StrCat("(", what, ")"));
}

bool RootEntry::IsIntegerColumn(uint64_t rows) const {
  return hard && dataset && type_class == H5T_INTEGER && type_bytes >= 1 && type_bytes <= 8 &&
         dims.size() == 1 && dims[0] == rows;
}

std::vector<RootEntry> ListRoot(hid_t file, size_t limit, uint64_t* total, bool describe) {
  std::vector<RootEntry> out;
  H5G_info_t group;
  *total = H5Gget_info(file, &group) >= 0 ? group.nlinks : 0;
  if (limit > 0) {
    Listing listing{limit, describe, &out};
    hsize_t at = 0;
    H5Literate(file, H5_INDEX_NAME, H5_ITER_INC, &at, AddEntry, &listing);
  }
  H5Eclear2(H5E_DEFAULT);
  return out;
}

std::optional<RootEntry> FindRootEntry(hid_t file, const char* name) {
  H5L_info_t info;
  if (H5Lexists(file, name, H5P_DEFAULT) <= 0 || H5Lget_info(file, name, &info, H5P_DEFAULT) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  return Entry(file, name, info, true);
}

std::string EntriesText(const std::vector<RootEntry>& entries, uint64_t total) {
  if (total == 0) return "nothing";
  std::vector<std::string> parts;
  for (const RootEntry& e : entries) parts.push_back(e.Text());
  std::string text = absl::StrJoin(parts, ", ");
  if (total > entries.size()) absl::StrAppend(&text, " and ", total - entries.size(), " more");
  return text;
}

std::optional<ImageInfo> PlainImageShape(const std::vector<hsize_t>& d) {
  auto channels_like = [](hsize_t c) { return c == 1 || c == 3 || c == 4; };
  if (d.size() != 2 && d.size() != 3) return std::nullopt;
  ImageInfo image{Encoding::kRaw, Layout::kHWC, 0, 0, 1};
  std::vector<hsize_t> hwc = d;
  if (d.size() == 2) {
    hwc.push_back(1);
  } else if (!channels_like(d[2]) && channels_like(d[0])) {
    image.layout = Layout::kCHW;
    hwc = {d[1], d[2], d[0]};
  }
  if (hwc[0] == 0 || hwc[0] > UINT32_MAX || hwc[1] == 0 || hwc[1] > UINT32_MAX || hwc[2] == 0 ||
      hwc[2] > 255) {
    return std::nullopt;
  }
  image.height = static_cast<uint32_t>(hwc[0]);
  image.width = static_cast<uint32_t>(hwc[1]);
  image.channels = static_cast<uint8_t>(hwc[2]);
  return image;
}

}  // namespace shardpack::backends
