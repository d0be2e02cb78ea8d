// Which of a dataset's fields a reader delivers, and how each goes into a
// batch (docs/reader.md, "Fields in batches"). Made once when the reader
// opens, from the schema and ReaderOptions::fields / image_fields; const
// after that, shared by the workers, the ring and the Batch handles.
//
// Each field type has one way into a batch, said once in ColumnOf
// (reader/field_plan.cc): labels are an int64 a sample; arrays of a fixed
// shape and raw images of a fixed shape are fixed rows; strings, bytes,
// JSON, arrays whose first dimension varies and other images are variable
// (values and offsets, as Arrow's lists); the image fields the transform
// applies to are its output. reader/field_columns.h fills the columns.
#ifndef SHARDPACK_READER_FIELD_PLAN_H_
#define SHARDPACK_READER_FIELD_PLAN_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "reader/transform.h"
#include "shardpack/fields.h"
#include "shardpack/manifest.h"
#include "shardpack/reader.h"

namespace shardpack::reader {

// How a column of a batch is filled.
enum class ColumnKind : uint8_t {
  kImages,       // the transformed image of Batch::images(): only its presence here
  kTransformed,  // an image field that follows it: written by its own transform
  kLabel,        // an int64 a sample, from the batch's labels
  kFixed,        // row_bytes a sample, copied; zeros when absent
  kVariable,     // rows appended back to back, with offsets
};

struct ColumnPlan {
  int field = 0;  // its index in FieldPlan::fields()
  ColumnKind kind = ColumnKind::kFixed;
  ArrayDType dtype = ArrayDType::kU8;
  // BatchField::shape: shape[0] is the batch's (or the rows') and is left
  // 0 here; rank counts it.
  int rank = 1;
  std::array<int64_t, kMaxArrayDims + 1> shape{};
  // Bytes of a sample (kTransformed, kLabel, kFixed) or of a row (kVariable).
  size_t row_bytes = 0;
  int label = -1;       // kLabel: its index in the batch's labels
  int transform = -1;   // kImages, kTransformed: its index in FieldPlan::transformed()
  bool image_shapes = false;  // an image delivered as stored: each one's shape kept
};

// An image field the transform applies to.
struct TransformedField {
  int field = 0;
  Interpolation interpolation = Interpolation::kLinear;
  int column = -1;  // its column in FieldPlan::columns()
};

class FieldPlan {
 public:
  // A classic read: no columns (active() is false).
  FieldPlan() = default;

  // The plan for `schema` (the reader's: a mixture's label fields included)
  // and o.fields, o.image_fields, o.transform. Inactive for a classic
  // schema read without fields and image_fields. InvalidArgumentError
  // naming the option: a name the schema lacks (listing its fields), one
  // given twice, an image_fields entry that is no image field or that
  // `fields` leaves out, an interpolation other than linear and nearest.
  static absl::StatusOr<FieldPlan> Make(const Schema& schema, const ReaderOptions& o);

  bool active() const { return active_; }
  const std::vector<Field>& fields() const { return fields_; }
  const std::vector<ColumnPlan>& columns() const { return columns_; }
  // The image fields the transform applies to, in image_fields' order: the
  // first is Batch::images(), the others follow it. Empty when none is.
  const std::vector<TransformedField>& transformed() const { return transformed_; }
  // The column of field `name`, or -1.
  int Find(std::string_view name) const;

  // Transformed field k's output (k >= 1): its transform's shape in
  // `layout`, of `dtype`; set by the opener once the transforms are made.
  void SetOutput(int k, const OutputShape& shape, OutputLayout layout, DType dtype);

 private:
  bool active_ = false;
  std::vector<Field> fields_;
  std::vector<ColumnPlan> columns_;
  std::vector<TransformedField> transformed_;
};

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_FIELD_PLAN_H_
