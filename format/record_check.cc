#include "format/record_check.h"

#include "common/status_macros.h"

namespace shardpack::format {

RecordCheck::RecordCheck(const Schema& schema) : schema_(schema) {
  if (schema.fields.empty()) return;
  fields_.emplace(schema);
  values_.resize(schema.fields.size());
}

const std::vector<Field>& RecordCheck::fields() const { return schema_.fields; }

absl::Status RecordCheck::Check(const Record& record) {
  if (!fields_.has_value()) return CheckRecordAgainstSchema(record, schema_);
  SP_RETURN_IF_ERROR(fields_->Decode(record, values_, /*check_crc=*/true));
  return fields_->CheckValues(values_);
}

}  // namespace shardpack::format
