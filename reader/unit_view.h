// The records of one loaded read unit, whatever backend they came from.
//
// The loader turns a unit's bytes into a UnitView; workers ask it for record
// i. Three shapes, one per kind of storage:
// - a `.shard` block (BlockView): records encoded back to back;
// - encoded records (LMDB): a table of views, each one record in the `.shard`
//   record encoding, wherever the backend keeps it;
// - columns (HDF5): pixels of fixed-shape images at a fixed stride, or
//   encoded images in a flat byte array with offsets, beside label arrays.
// A UnitView owns nothing: it points into the unit's buffer (or memory the
// source keeps mapped) and is valid while the unit stays loaded.
#ifndef SHARDPACK_READER_UNIT_VIEW_H_
#define SHARDPACK_READER_UNIT_VIEW_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "shardpack/record.h"
#include "shardpack/shard.h"

namespace shardpack::reader {

// A column store's view of rows [0, rows) of a unit.
struct ColumnRows {
  uint32_t rows = 0;
  // Image info of every row: raw fixed-shape images (height, width, channels,
  // layout), or the encoding of flat payloads (shape 0 x 0 x 0).
  ImageInfo image;
  // Raw: row i's pixels at images + i * image.RawBytes(). Flat: row i's
  // payload is images[offsets[i] - offsets[0], offsets[i + 1] - offsets[0]).
  const uint8_t* images = nullptr;
  const int64_t* offsets = nullptr;  // flat only: rows + 1 entries, checked ascending
  // Flat only, optional: row i's image info, 5 values from info + 5 * i:
  // encoding, layout, height, width, channels (overrides `image`).
  const uint32_t* info = nullptr;
  int num_labels = 0;
  std::array<const int64_t*, kMaxLabels> labels{};  // labels[j][i]: label j of row i
  // Optional keys, flat: row i's key is keys[key_offsets[i] - key_offsets[0], ...).
  const char* keys = nullptr;
  const int64_t* key_offsets = nullptr;
};

class UnitView {
 public:
  UnitView() = default;
  explicit UnitView(const BlockView& block) : kind_(Kind::kBlock), block_(block) {}
  // `records[i]` holds one record in the `.shard` record encoding. Errors
  // name `where` (the shard's path; it must outlive the view) and the
  // record's index in the shard, `first_record` + i.
  static UnitView Encoded(std::span<const ByteSpan> records, const std::string* where,
                          uint64_t first_record);
  static UnitView Columns(const ColumnRows& columns, const std::string* where,
                          uint64_t first_record);

  size_t size() const;
  // Record i's views. DataLossError naming the unit and record for damage.
  absl::StatusOr<Record> record(size_t i) const {
    if (kind_ == Kind::kBlock) return block_.record(i);
    return SlowRecord(i);
  }
  // The bytes a worker will read for record i (for prefetching; no checks).
  ByteSpan record_bytes(size_t i) const;
  // Brings into the cache what record_bytes(i) reads to find them.
  void PrefetchIndex(size_t i) const;

 private:
  enum class Kind { kNone, kBlock, kEncoded, kColumns };
  UnitView(Kind kind, const std::string* where, uint64_t first_record)
      : kind_(kind), where_(where), first_record_(first_record) {}
  absl::StatusOr<Record> SlowRecord(size_t i) const;

  Kind kind_ = Kind::kNone;
  BlockView block_;
  std::span<const ByteSpan> encoded_;
  ColumnRows columns_;
  const std::string* where_ = nullptr;
  uint64_t first_record_ = 0;
};

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_UNIT_VIEW_H_
