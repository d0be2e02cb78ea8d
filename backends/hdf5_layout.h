// What an HDF5 file holds at its root, in words, and how a plain file's
// `images` shape is read: what Hdf5ShardReader uses to recognize a file's
// layout by its contents and to say what it found (docs/format.md, 14.2).
#ifndef SHARDPACK_BACKENDS_HDF5_LAYOUT_H_
#define SHARDPACK_BACKENDS_HDF5_LAYOUT_H_

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shardpack/record.h"

namespace shardpack::backends {

// An HDF5 element type in words: "uint8", "int64", "float32", "string",
// "compound", ... Lock held.
std::string Hdf5TypeName(hid_t type);

// One link of the root group.
struct RootEntry {
  std::string name;  // printable (bytes outside ASCII as '?')
  // "uint8 [37,5,4,3]", "string [37]", "group", "soft link", ...
  std::string what;
  bool hard = false;  // a hard link (the only kind the reader follows)
  bool dataset = false;
  // Datasets: element class, size in bytes and shape.
  H5T_class_t type_class = H5T_NO_CLASS;
  size_t type_bytes = 0;
  std::vector<hsize_t> dims;

  // "'keys' string [37]", "'meta' (group)".
  std::string Text() const;
  // A 1-D integer dataset of `rows` rows, reached by a hard link.
  bool IsIntegerColumn(uint64_t rows) const;
};

// The root group's links in name order, at most `limit` of them; *total is
// how many there are. With `describe`, what each is (hard links are opened
// to tell a dataset's type and shape); else names and link kinds only.
// Lock held.
std::vector<RootEntry> ListRoot(hid_t file, size_t limit, uint64_t* total, bool describe);

// The entry `name` of the root group, if there is one. Lock held.
std::optional<RootEntry> FindRootEntry(hid_t file, const char* name);

// "'a' uint8 [3,2], 'b' (group), ... and 5 more", or "nothing" when empty.
std::string EntriesText(const std::vector<RootEntry>& entries, uint64_t total);

// How a plain file's `images` dimensions (after N) read as an image:
//   [H, W]        one channel;
//   [H, W, C]     HWC when C is 1, 3 or 4 (the documented default, also
//                 when both ends could be channels), or when H is not;
//   [C, H, W]     CHW when C is 1, 3 or 4 and the last dimension is not
//                 ([3, 32, 32], as torchvision tensors are stored).
// Nullopt when a side is 0 or does not fit the record header (H, W < 2^32,
// C <= 255).
std::optional<ImageInfo> PlainImageShape(const std::vector<hsize_t>& dims_after_n);

}  // namespace shardpack::backends

#endif  // SHARDPACK_BACKENDS_HDF5_LAYOUT_H_
