// The checks of one record against its dataset's schema that a record read
// on its own gets (`sharddump verify`, `ls`, `extract`; RecordReader makes
// the same through RecordFields): for a schema with fields, the field
// section's structure, the record's own CRC-32C and the values' content
// (UTF-8 strings, JSON that parses); for a classic schema,
// CheckRecordAgainstSchema.
#ifndef SHARDPACK_FORMAT_RECORD_CHECK_H_
#define SHARDPACK_FORMAT_RECORD_CHECK_H_

#include <optional>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "shardpack/fields.h"
#include "shardpack/manifest.h"
#include "shardpack/record.h"

namespace shardpack::format {

// Not thread-safe (it keeps the last record's values): one per thread.
class RecordCheck {
 public:
  // `schema` must outlive this object.
  explicit RecordCheck(const Schema& schema);

  // DataLossError saying what disagrees ("record CRC-32C mismatch",
  // "disagrees with the schema: field 'caption': not UTF-8"); callers prefix
  // the file and record.
  absl::Status Check(const Record& record);

  // Whether the schema declares fields (else Check is the classic check and
  // values() is empty).
  bool has_fields() const { return fields_.has_value(); }
  const std::vector<Field>& fields() const;
  // After an OK Check of a record with fields: one value per field (views
  // into the record, valid as long as its bytes).
  std::span<const FieldValue> values() const { return values_; }

 private:
  const Schema& schema_;
  std::optional<RecordFields> fields_;
  std::vector<FieldValue> values_;
};

}  // namespace shardpack::format

#endif  // SHARDPACK_FORMAT_RECORD_CHECK_H_
