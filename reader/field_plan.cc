#include "reader/field_plan.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/status_macros.h"

namespace shardpack::reader {
namespace {

bool FixedImage(const ImageInfo& i) {
  return i.encoding == Encoding::kRaw && i.height != 0 && i.width != 0 && i.channels != 0;
}

// The one place a field type says how it goes into a batch (the
// transformed images excepted: their transforms say that).
ColumnPlan ColumnOf(const Field& f) {
  ColumnPlan c;
  switch (f.type) {
    case FieldType::kLabel:
      c.kind = ColumnKind::kLabel;
      c.dtype = ArrayDType::kI64;
      c.row_bytes = sizeof(int64_t);
      break;
    case FieldType::kArray: {
      c.dtype = f.dtype;
      const bool fixed = f.shape[0] != 0;
      c.kind = fixed ? ColumnKind::kFixed : ColumnKind::kVariable;
      // Fixed: [batch, shape...]; variable: [rows, shape[1]...].
      const size_t first = fixed ? 0 : 1;
      c.row_bytes = static_cast<size_t>(ArrayDTypeSize(f.dtype));
      for (size_t d = first; d < f.shape.size(); ++d) {
        c.shape[size_t(c.rank++)] = static_cast<int64_t>(f.shape[d]);  // after the batch's
        c.row_bytes *= f.shape[d];
      }
      break;
    }
    case FieldType::kImage:
      if (FixedImage(f.image)) {
        const ImageInfo& i = f.image;
        const bool hwc = i.layout == Layout::kHWC;
        c.kind = ColumnKind::kFixed;
        c.rank = 4;
        c.shape = {0, hwc ? i.height : i.channels, hwc ? i.width : i.height,
                   hwc ? i.channels : i.width};
        c.row_bytes = i.RawBytes();
        break;
      }
      c.kind = ColumnKind::kVariable;
      c.row_bytes = 1;
      c.image_shapes = true;
      break;
    case FieldType::kString:
    case FieldType::kBytes:
    case FieldType::kJson:
      c.kind = ColumnKind::kVariable;
      c.row_bytes = 1;
      break;
  }
  return c;
}

int IndexOf(const std::vector<Field>& fields, std::string_view name) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::string Names(const std::vector<Field>& fields) {
  std::string out;
  for (const Field& f : fields) absl::StrAppend(&out, out.empty() ? "" : ", ", f.name);
  return out;
}

absl::Status Bad(std::string_view option, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(common::AsAbsl(option), ": ", common::AsAbsl(what)));
}

// o.fields as a mask over `fields`: every field when it is empty.
absl::StatusOr<std::vector<bool>> Selected(const std::vector<Field>& fields,
                                           const ReaderOptions& o) {
  std::vector<bool> selected(fields.size(), o.fields.empty());
  for (const std::string& name : o.fields) {
    const int i = IndexOf(fields, name);
    if (i < 0) {
      return Bad("fields", absl::StrCat("the dataset has no field '", common::Excerpt(name),
                                        "' (its fields: ", Names(fields), ")"));
    }
    if (selected[size_t(i)]) return Bad("fields", absl::StrCat("'", name, "' is named twice"));
    selected[size_t(i)] = true;
  }
  return selected;
}

// One entry of o.image_fields: NAME, NAME:linear or NAME:nearest; `later`:
// not the first (a raw 1-channel one is then a label map by default).
absl::StatusOr<TransformedField> ImageField(const std::vector<Field>& fields,
                                            const std::vector<bool>& selected,
                                            std::string_view entry, bool later) {
  const size_t colon = entry.find(':');
  const std::string_view name = entry.substr(0, colon);
  const int i = IndexOf(fields, name);
  if (i < 0) {
    return Bad("image_fields", absl::StrCat("the dataset has no field '", common::Excerpt(name),
                                            "' (its fields: ", Names(fields), ")"));
  }
  const Field& f = fields[size_t(i)];
  if (f.type != FieldType::kImage) {
    return Bad("image_fields", absl::StrCat("'", common::AsAbsl(name), "' is a ", common::AsAbsl(FieldTypeName(f.type)),
                                            " field, not an image"));
  }
  if (!selected[size_t(i)]) {
    return Bad("image_fields", absl::StrCat("'", common::AsAbsl(name), "' is not among `fields`"));
  }
  TransformedField t{i, Interpolation::kLinear};
  if (later && f.image.encoding == Encoding::kRaw && f.image.channels == 1) {
    t.interpolation = Interpolation::kNearest;
  }
  if (colon == std::string_view::npos) return t;
  const std::string_view how = entry.substr(colon + 1);
  if (how != "linear" && how != "nearest") {
    return Bad("image_fields", absl::StrCat("'", common::Excerpt(entry),
                                            "': the interpolation is linear or nearest"));
  }
  t.interpolation = how == "nearest" ? Interpolation::kNearest : Interpolation::kLinear;
  return t;
}

// The transformed fields: o.image_fields, or the first selected image field
// when the transform can make something of it.
absl::StatusOr<std::vector<TransformedField>> Transformed(const std::vector<Field>& fields,
                                                          const std::vector<bool>& selected,
                                                          const ReaderOptions& o) {
  std::vector<TransformedField> out;
  for (const std::string& entry : o.image_fields) {
    SP_ASSIGN_OR_RETURN(TransformedField t, ImageField(fields, selected, entry, !out.empty()));
    for (const TransformedField& before : out) {
      if (before.field == t.field) {
        return Bad("image_fields", absl::StrCat("'", fields[size_t(t.field)].name,
                                                "' is named twice"));
      }
    }
    out.push_back(t);
  }
  if (!o.image_fields.empty()) return out;
  // With no image field selected, the transform has nothing to do: a loop
  // over captions may keep the options of one over images.
  const bool none = o.transform.kind == Transform::Kind::kNone;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].type != FieldType::kImage || !selected[i]) continue;
    // Transform none leaves an image of no fixed raw shape as stored.
    if (!none || FixedImage(fields[i].image)) out.push_back({int(i), Interpolation::kLinear});
    return out;
  }
  return out;
}

}  // namespace

absl::StatusOr<FieldPlan> FieldPlan::Make(const Schema& schema, const ReaderOptions& o) {
  FieldPlan plan;
  if (schema.fields.empty() && o.fields.empty() && o.image_fields.empty()) return plan;
  plan.active_ = true;
  plan.fields_ = FieldsOf(schema);
  SP_ASSIGN_OR_RETURN(const std::vector<bool> selected, Selected(plan.fields_, o));
  SP_ASSIGN_OR_RETURN(plan.transformed_, Transformed(plan.fields_, selected, o));
  int label = 0;
  for (size_t i = 0; i < plan.fields_.size(); ++i) {
    const Field& f = plan.fields_[i];
    const int here = f.type == FieldType::kLabel ? label++ : -1;
    if (!selected[i]) continue;
    ColumnPlan c = ColumnOf(f);
    c.field = static_cast<int>(i);
    c.label = here;
    for (size_t k = 0; k < plan.transformed_.size(); ++k) {
      if (plan.transformed_[k].field != c.field) continue;
      c = ColumnPlan{};
      c.field = static_cast<int>(i);
      c.kind = k == 0 ? ColumnKind::kImages : ColumnKind::kTransformed;
      c.transform = static_cast<int>(k);
      plan.transformed_[k].column = static_cast<int>(plan.columns_.size());
    }
    plan.columns_.push_back(c);
  }
  return plan;
}

int FieldPlan::Find(std::string_view name) const {
  for (size_t k = 0; k < columns_.size(); ++k) {
    if (fields_[size_t(columns_[k].field)].name == name) return static_cast<int>(k);
  }
  return -1;
}

void FieldPlan::SetOutput(int k, const OutputShape& shape, OutputLayout layout, DType dtype) {
  ColumnPlan& c = columns_[size_t(transformed_[size_t(k)].column)];
  const bool nchw = layout == OutputLayout::kNCHW;
  c.dtype = dtype == DType::kFloat32 ? ArrayDType::kF32 : ArrayDType::kU8;
  c.rank = 4;
  c.shape = {0, nchw ? shape.channels : shape.height, nchw ? shape.height : shape.width,
             nchw ? shape.width : shape.channels};
  c.row_bytes = shape.sample_bytes;
}

}  // namespace shardpack::reader
