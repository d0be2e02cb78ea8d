// A ring slot's fields (docs/reader.md, "Fields in batches"): one column a
// delivered field, as reader/field_plan.h plans it, and the crop window of
// each sample's image. Written by the one worker that builds the slot's
// batch, read by the consumer once it is published.
//
// Memory: fixed columns are sized once, when the ring is made (a batch of
// rows); a variable column's values grow to the largest batch the slot has
// held, doubling, and keep their capacity, so that once warm nothing is
// allocated per batch or per record.
#ifndef SHARDPACK_READER_FIELD_COLUMNS_H_
#define SHARDPACK_READER_FIELD_COLUMNS_H_

#include <cstdint>
#include <span>
#include <vector>

#include "shardpack/fields.h"
#include "shardpack/reader.h"

namespace shardpack::reader {

class FieldPlan;  // reader/field_plan.h
struct CropWindow;  // reader/transform.h

struct ColumnBuffer {
  std::vector<uint8_t> values;   // fixed: a row a sample; variable: the rows so far
  std::vector<int64_t> offsets;  // variable: size + 1
  std::vector<uint8_t> present;  // a byte a sample
  std::vector<int32_t> shapes;   // images delivered as stored: 3 a sample
};

struct SlotFields {
  std::vector<ColumnBuffer> columns;  // FieldPlan::columns()' order
  std::vector<float> crops;           // 4 a sample: y, x, h, w
  std::vector<int32_t> sizes;         // 2 a sample: height, width
  std::vector<uint8_t> flips;         // 1 a sample

  // Sized for `plan` and batches of `batch` samples (at the ring's making);
  // left empty for an inactive plan (a classic read), which the functions
  // below are not called for.
  void Size(const FieldPlan& plan, int batch);
  // Bytes sized once (fixed columns and per-sample arrays).
  uint64_t fixed_bytes() const;
};

// The start of a batch: every variable column empty.
void BeginFields(const FieldPlan& plan, SlotFields& slot);
// Row i's window (zeros when null: no image was transformed).
void SetWindow(SlotFields& slot, int i, const CropWindow* window);
// Row i of every column but the transformed images' (which their
// transforms wrote) from the sample's field values (`values`: the fields of
// the record's schema, as RecordFields::Decode gives them) and its labels
// (as the batch gives them). Rows are built in order: row i follows i - 1.
void CollateRow(const FieldPlan& plan, std::span<const FieldValue> values,
                const int64_t* labels, int i, SlotFields& slot);
// Row i of a sample that failed: absent everywhere, no variable rows.
void ClearRow(const FieldPlan& plan, int i, SlotFields& slot);
// Each row i < size becomes a copy of row from[i] (damaged rows replaced
// by good ones); `scratch` is the worker's, its capacity kept.
void CopyRows(const FieldPlan& plan, std::span<const int> from, int size, SlotFields& slot,
              std::vector<uint8_t>& scratch);
// Column k of a batch of `size` samples, as Batch::field gives it.
BatchField FieldView(const FieldPlan& plan, const SlotFields& slot, int k, int size);

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_FIELD_COLUMNS_H_
