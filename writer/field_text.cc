// shardpack.Writer's field types as text: the one grammar of
// format/field_text.cc (FieldTypeText, ParseFieldTypeText), with the field's
// name set and named in the error.
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "shardpack/fields.h"
#include "shardpack/writer.h"

namespace shardpack {
namespace {

constexpr char kForms[] =
    "jpeg, raw, raw:HxWxC, raw:gray, raw:rgb, label, string, bytes, json, or DTYPE[DIMS] "
    "(DTYPE u8 i32 i64 f16 f32 f64; DIMS e.g. n,4 with n a first dimension that varies), "
    "with ? at the end for an optional field";

}  // namespace

absl::StatusOr<Field> ParseFieldText(std::string_view name, std::string_view text) {
  absl::StatusOr<Field> field = ParseFieldTypeText(text);
  if (!field.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field '", common::Excerpt(name), "': type '", common::Excerpt(text), "' is not one of ",
        kForms, " (", field.status().message(), ")"));
  }
  field->name = std::string(name);
  return field;
}

std::string FieldText(const Field& field) { return FieldTypeText(field); }

}  // namespace shardpack
