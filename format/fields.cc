// Fields: the schema's declared fields, a record's field section, and the
// check of a record against its schema (shared by the writer, the reader
// and `sharddump verify`, so that what verify passes the reader reads).
//
// Each field type is one entry of kKinds: how its declaration is checked,
// how a value is checked against the declaration (structure: shape,
// encoding, classes) and what its content must be (UTF-8, JSON). A new type
// is a new entry, not a branch in every stage.
#include "shardpack/fields.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/enum_names.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "common/utf8.h"
#include "format/record_codec.h"
#include "format/shard_layout.h"
#include "nlohmann/json.hpp"
#include "shardpack/crc32c.h"
#include "shardpack/manifest.h"

namespace shardpack {
namespace {

using common::AsAbsl;
using common::EnumName;

constexpr EnumName<FieldType> kTypeNames[] = {
    {FieldType::kImage, "image"}, {FieldType::kLabel, "label"}, {FieldType::kString, "string"},
    {FieldType::kBytes, "bytes"}, {FieldType::kJson, "json"},   {FieldType::kArray, "array"}};
constexpr EnumName<ArrayDType> kArrayDTypeNames[] = {{ArrayDType::kU8, "u8"},   {ArrayDType::kI32, "i32"},
                                           {ArrayDType::kI64, "i64"}, {ArrayDType::kF16, "f16"},
                                           {ArrayDType::kF32, "f32"}, {ArrayDType::kF64, "f64"}};

std::string ShapeText(const ImageInfo& i) {
  return absl::StrCat(AsAbsl(EncodingName(i.encoding)), " ", i.height, "x", i.width, "x",
                      i.channels, " ", AsAbsl(LayoutName(i.layout)));
}

bool FixedShape(const ImageInfo& i) { return i.height != 0 && i.width != 0 && i.channels != 0; }

// "" when `image` may be a value of a field declared `want`; else what
// disagrees.
std::string ImageDisagrees(const ImageInfo& image, const ImageInfo& want,
                           std::string_view in = "a field") {
  if (image.encoding != want.encoding) {
    return absl::StrCat("a ", AsAbsl(EncodingName(image.encoding)), " image in ", AsAbsl(in), " of ",
                        AsAbsl(EncodingName(want.encoding)), " images");
  }
  if (image.encoding != Encoding::kRaw) return "";
  if (image.layout != want.layout || (FixedShape(want) && image != want)) {
    return absl::StrCat("image ", ShapeText(image), ", the schema says ", ShapeText(want));
  }
  return "";
}

// Bytes of one row of an array field: the element size times every
// dimension but the first.
uint64_t RowBytes(const Field& f) {
  uint64_t row = static_cast<uint64_t>(ArrayDTypeSize(f.dtype));
  for (size_t d = 1; d < f.shape.size(); ++d) row *= f.shape[d];
  return row;
}

// One field type: its declaration check, its value's structure and content.
struct FieldKind {
  FieldType type;
  std::string (*check_declaration)(const Field&);
  std::string (*check_value)(const Field&, const FieldValue&);
  std::string (*check_content)(const Field&, const FieldValue&);
};

std::string Nothing(const Field&) { return ""; }
std::string NothingIn(const Field&, const FieldValue&) { return ""; }

std::string ImageDeclaration(const Field& f) {
  if (f.image.encoding != Encoding::kRaw && f.image.encoding != Encoding::kJpeg) {
    return "an image encoding the record format does not have";
  }
  if (f.image.layout != Layout::kHWC && f.image.layout != Layout::kCHW) return "an unknown layout";
  return "";
}
std::string ImageValue(const Field& f, const FieldValue& v) {
  if (v.image.encoding == Encoding::kRaw && v.image.RawBytes() != v.bytes.size()) {
    return absl::StrCat("raw image of ", v.bytes.size(), " bytes for ", ShapeText(v.image));
  }
  return ImageDisagrees(v.image, f.image);
}

std::string LabelDeclaration(const Field& f) {
  for (size_t k = 0; k < f.classes.size(); ++k) {
    if (!common::IsValidUtf8(f.classes[k])) return absl::StrCat("class ", k, " is not UTF-8");
  }
  return "";
}
// Whether `label` names one of `classes`; a field without class names
// takes any value.
bool WithinClasses(const std::vector<std::string>& classes, int64_t label) {
  return classes.empty() || (label >= 0 && static_cast<uint64_t>(label) < classes.size());
}
std::string LabelValue(const Field& f, const FieldValue& v) {
  if (WithinClasses(f.classes, v.label)) return "";
  return absl::StrCat("label ", v.label, " is outside its ", f.classes.size(), " classes (0..",
                      f.classes.size() - 1, ")");
}

std::string Utf8Content(const Field&, const FieldValue& v) {
  std::string_view text(reinterpret_cast<const char*>(v.bytes.data()), v.bytes.size());
  return common::IsValidUtf8(text) ? "" : "not UTF-8";
}
std::string JsonContent(const Field& f, const FieldValue& v) {
  if (std::string bad = Utf8Content(f, v); !bad.empty()) return bad;
  // accept() runs the SAX parser without building a document; its state is
  // a stack of one bit a level, so no text makes it recurse.
  return nlohmann::json::accept(v.bytes.begin(), v.bytes.end()) ? "" : "not valid JSON";
}

std::string ArrayDeclaration(const Field& f) {
  if (!f.classes.empty() && f.dtype != ArrayDType::kI32 && f.dtype != ArrayDType::kI64) {
    return "class names on an array that is not of i32 or i64";
  }
  if (std::string bad = LabelDeclaration(f); !bad.empty()) return bad;
  if (f.shape.empty() || f.shape.size() > kMaxArrayDims) {
    return absl::StrCat("an array needs 1 to ", kMaxArrayDims, " dimensions");
  }
  uint64_t row = static_cast<uint64_t>(ArrayDTypeSize(f.dtype));
  for (size_t d = 1; d < f.shape.size(); ++d) {
    if (f.shape[d] == 0) return "only the first dimension may vary (be 0)";
    if (f.shape[d] > (uint64_t{1} << 32) / row) return "a row of over 4 GiB";
    row *= f.shape[d];
  }
  if (f.shape[0] > (uint64_t{1} << 32) / row) return "a value of over 4 GiB";
  return "";
}
std::string ArrayValue(const Field& f, const FieldValue& v) {
  const uint64_t row = RowBytes(f);
  if (v.bytes.size() % row != 0) {
    return absl::StrCat(v.bytes.size(), " bytes, not a whole number of ", row, "-byte rows");
  }
  const uint64_t rows = v.bytes.size() / row;
  if (f.shape[0] != 0 && rows != f.shape[0]) {
    return absl::StrCat(rows, " rows, the schema says ", f.shape[0]);
  }
  if (f.classes.empty()) return "";
  const size_t n = v.bytes.size() / ArrayDTypeSize(f.dtype);
  for (size_t i = 0; i < n; ++i) {
    const int64_t c = f.dtype == ArrayDType::kI32
                          ? common::LoadLE<int32_t>(v.bytes.data() + 4 * i)
                          : common::LoadLE<int64_t>(v.bytes.data() + 8 * i);
    if (c < 0 || static_cast<uint64_t>(c) >= f.classes.size()) {
      return absl::StrCat("element ", i, " is ", c, ", outside its ", f.classes.size(),
                          " classes (0..", f.classes.size() - 1, ")");
    }
  }
  return "";
}

constexpr FieldKind kKinds[] = {
    {FieldType::kImage, ImageDeclaration, ImageValue, NothingIn},
    {FieldType::kLabel, LabelDeclaration, LabelValue, NothingIn},
    {FieldType::kString, Nothing, NothingIn, Utf8Content},
    {FieldType::kBytes, Nothing, NothingIn, NothingIn},
    {FieldType::kJson, Nothing, NothingIn, JsonContent},
    {FieldType::kArray, ArrayDeclaration, ArrayValue, NothingIn},
};

const FieldKind& KindOf(FieldType t) {
  for (const FieldKind& k : kKinds) {
    if (k.type == t) return k;
  }
  return kKinds[3];  // unreachable for a value of the enum: bytes check nothing
}

bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > 64 || name.starts_with("__")) return false;
  return std::ranges::all_of(name, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
  });
}

int PrimaryImage(std::span<const Field> fields) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].type == FieldType::kImage) return static_cast<int>(i);
  }
  return -1;
}

bool InSection(const Field& f, int index, int primary) {
  return f.type != FieldType::kLabel && index != primary;
}

bool IsClassic(std::span<const Field> fields) {
  if (fields.empty() || fields[0].type != FieldType::kImage || fields[0].optional ||
      fields[0].name != kClassicImageField) {
    return false;
  }
  return std::ranges::all_of(fields.subspan(1), [](const Field& f) {
    return f.type == FieldType::kLabel && !f.optional;
  });
}

Field LabelOf(const LabelField& l) {
  Field f;
  f.name = l.name;
  f.type = FieldType::kLabel;
  f.classes = l.classes;
  return f;
}

FieldValue LabelValueOf(int64_t label) {
  FieldValue v;
  v.present = true;
  v.label = label;
  return v;
}

absl::Status Damaged(std::string_view field, std::string_view what) {
  return absl::DataLossError(
      absl::StrCat("disagrees with the schema: field '", AsAbsl(field), "': ", AsAbsl(what)));
}

// Reads the section field values of a record of `fields` (not classic) into
// `out`, its presence bits and labels included. Structure only.
absl::Status DecodeSection(std::span<const Field> fields, const Record& r,
                           std::span<FieldValue> out, bool check_crc) {
  const int primary = PrimaryImage(fields);
  size_t in_section = 0;
  for (size_t i = 0; i < fields.size(); ++i) in_section += InSection(fields[i], int(i), primary);
  const ByteSpan s = r.extra;
  const uint64_t head = format::kFieldSectionHeadSize + 4 * in_section;
  if (s.size() < head) {
    return absl::DataLossError(absl::StrCat("field section of ", s.size(), " bytes, less than the ",
                                            head, " its ", in_section, " fields need"));
  }
  if (check_crc && common::LoadLE<uint32_t>(s.data()) != RecordCrc(r)) {
    return absl::DataLossError("record CRC-32C mismatch");
  }
  const uint64_t presence = common::LoadLE<uint64_t>(s.data() + 4);
  if (fields.size() < 64 && (presence >> fields.size()) != 0) {
    return absl::DataLossError("field section marks fields the schema does not have");
  }
  uint64_t at = head;
  size_t slot = 0, label = 0;
  for (size_t i = 0; i < fields.size(); ++i) {
    const Field& f = fields[i];
    FieldValue& v = out[i];
    v = FieldValue{};
    v.present = (presence >> i) & 1;
    if (!v.present && !f.optional) return Damaged(f.name, "missing, and not optional");
    if (f.type == FieldType::kLabel) {
      if (label >= static_cast<size_t>(r.labels.size())) return Damaged(f.name, "no label");
      v.label = r.labels[static_cast<int>(label++)];
      continue;
    }
    if (static_cast<int>(i) == primary) {
      if (v.present) v.image = r.image, v.bytes = r.payload;
      else if (!r.payload.empty()) return Damaged(f.name, "absent, but the record has a payload");
      continue;
    }
    const uint32_t len = common::LoadLE<uint32_t>(s.data() + format::kFieldSectionHeadSize + 4 * slot++);
    if (len > s.size() - at) return absl::DataLossError("field values run past the field section");
    if (!v.present && len != 0) return Damaged(f.name, "absent, but it has bytes");
    v.bytes = s.subspan(at, len);
    at += len;
    if (v.present && f.type == FieldType::kImage) {
      if (len < format::kFieldImageHeadSize) return Damaged(f.name, "image header cut short");
      const uint8_t* h = v.bytes.data();
      if (h[8] > 1 || h[9] > 1 || h[11] != 0) return Damaged(f.name, "damaged image header");
      v.image = {static_cast<Encoding>(h[8]), static_cast<Layout>(h[9]),
                 common::LoadLE<uint32_t>(h), common::LoadLE<uint32_t>(h + 4), h[10]};
      v.bytes = v.bytes.subspan(format::kFieldImageHeadSize);
    }
    if (v.present && f.type == FieldType::kArray) v.rows = v.bytes.size() / RowBytes(f);
  }
  if (label != static_cast<size_t>(r.labels.size())) {
    return absl::DataLossError(absl::StrCat("disagrees with the schema: ", r.labels.size(),
                                            " labels, the schema has ", label));
  }
  if (at != s.size()) {
    return absl::DataLossError(absl::StrCat("field section of ", s.size(), " bytes holds ", at,
                                            " bytes of fields"));
  }
  return absl::OkStatus();
}

// Checks each present value's structure against its field.
absl::Status CheckStructure(std::span<const Field> fields, std::span<const FieldValue> values,
                            absl::Status (*fail)(std::string_view, std::string_view)) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (!values[i].present) continue;
    std::string bad = KindOf(fields[i].type).check_value(fields[i], values[i]);
    if (!bad.empty()) return fail(fields[i].name, bad);
  }
  return absl::OkStatus();
}

absl::Status Invalid(std::string_view field, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("field '", AsAbsl(field), "': ", AsAbsl(what)));
}

// The classic record check (manifests 1.0 and 1.1): the image against the
// schema's, one label per label field, each within its classes. Nothing is
// allocated unless it fails: the reader checks every classic record so.
absl::Status CheckClassic(const Record& record, const Schema& schema) {
  if (std::string bad = ImageDisagrees(record.image, schema.image, "a dataset"); !bad.empty()) {
    return absl::DataLossError(absl::StrCat("disagrees with the schema: ", bad));
  }
  const size_t count = schema.labels.size();
  if (static_cast<size_t>(record.labels.size()) != count) {
    return absl::DataLossError(absl::StrCat("disagrees with the schema: ", record.labels.size(),
                                            " labels, the schema has ", count));
  }
  for (size_t k = 0; k < count; ++k) {
    const LabelField& f = schema.labels[k];
    const int64_t label = record.labels[static_cast<int>(k)];
    if (WithinClasses(f.classes, label)) continue;
    return absl::DataLossError(
        absl::StrCat("disagrees with the schema: label '", f.name, "' is ", label, ", outside its ",
                     f.classes.size(), " classes (0..", f.classes.size() - 1, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view FieldTypeName(FieldType t) { return common::NameIn(kTypeNames, t); }
std::string_view ArrayDTypeName(ArrayDType d) { return common::NameIn(kArrayDTypeNames, d); }
absl::StatusOr<FieldType> ParseFieldType(std::string_view name) {
  return common::ParseIn(kTypeNames, "field type", name);
}
absl::StatusOr<ArrayDType> ParseArrayDType(std::string_view name) {
  return common::ParseIn(kArrayDTypeNames, "dtype", name);
}
int ArrayDTypeSize(ArrayDType d) {
  switch (d) {
    case ArrayDType::kU8: return 1;
    case ArrayDType::kF16: return 2;
    case ArrayDType::kI32: case ArrayDType::kF32: return 4;
    case ArrayDType::kI64: case ArrayDType::kF64: return 8;
  }
  return 1;
}

absl::StatusOr<Schema> MakeSchema(std::vector<Field> fields) {
  if (fields.size() > kMaxFields) {
    return absl::InvalidArgumentError(
        absl::StrCat(fields.size(), " fields (at most ", kMaxFields, ")"));
  }
  Schema schema;
  for (size_t i = 0; i < fields.size(); ++i) {
    const Field& f = fields[i];
    if (!ValidName(f.name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "field name '", common::Excerpt(f.name),
          "' is not 1 to 64 of A-Z a-z 0-9 _ . - (and may not start with __)"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (fields[j].name == f.name) return Invalid(f.name, "declared twice");
    }
    if (std::string bad = KindOf(f.type).check_declaration(f); !bad.empty()) {
      return Invalid(f.name, bad);
    }
    if (f.type == FieldType::kLabel) {
      if (schema.labels.size() == kMaxLabels) {
        return Invalid(f.name, absl::StrCat("more than ", kMaxLabels, " label fields"));
      }
      schema.labels.push_back({f.name, f.classes});
    }
  }
  const int primary = PrimaryImage(fields);
  if (primary >= 0) schema.image = fields[static_cast<size_t>(primary)].image;
  if (!IsClassic(fields)) schema.fields = std::move(fields);
  return schema;
}

std::vector<Field> FieldsOf(const Schema& schema) {
  if (!schema.fields.empty()) return schema.fields;
  std::vector<Field> fields;
  Field image;
  image.name = kClassicImageField;
  image.type = FieldType::kImage;
  image.image = schema.image;
  fields.push_back(std::move(image));
  for (const LabelField& l : schema.labels) fields.push_back(LabelOf(l));
  return fields;
}

uint32_t RecordCrc(const Record& r) {
  std::array<uint8_t, format::kMaxRecordHeadBytes> head;
  uint32_t crc = Crc32cExtend(0, head.data(), format::EncodeRecordHead(r, head.data()));
  crc = Crc32cExtend(crc, reinterpret_cast<const uint8_t*>(r.key.data()), r.key.size());
  if (r.extra.size() > 4) crc = Crc32cExtend(crc, r.extra.data() + 4, r.extra.size() - 4);
  return Crc32cExtend(crc, r.payload.data(), r.payload.size());
}

absl::Status CheckRecordAgainstSchema(const Record& record, const Schema& schema) {
  if (schema.fields.empty()) return CheckClassic(record, schema);
  std::array<FieldValue, kMaxFields> values;
  std::span<FieldValue> out(values.data(), schema.fields.size());
  SP_RETURN_IF_ERROR(DecodeSection(schema.fields, record, out, /*check_crc=*/false));
  return CheckStructure(schema.fields, out, Damaged);
}

RecordFields::RecordFields(const Schema& schema)
    : fields_(FieldsOf(schema)), classic_(schema.fields.empty()) {
  primary_image_ = PrimaryImage(fields_);
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (InSection(fields_[i], static_cast<int>(i), primary_image_)) {
      section_fields_.push_back(static_cast<int>(i));
    }
  }
  absent_image_.layout = schema.image.layout;
}

int RecordFields::Find(std::string_view name) const {
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

absl::Status RecordFields::CheckValues(std::span<const FieldValue> values) const {
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (!values[i].present) continue;
    std::string bad = KindOf(fields_[i].type).check_content(fields_[i], values[i]);
    if (!bad.empty()) return Damaged(fields_[i].name, bad);
  }
  return absl::OkStatus();
}

absl::StatusOr<Record> RecordFields::Build(std::string_view key,
                                           std::span<const FieldValue> values) {
  if (values.size() != fields_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(values.size(), " values for ", fields_.size(), " fields"));
  }
  uint64_t presence = 0, section_bytes = format::kFieldSectionHeadSize + 4 * section_fields_.size();
  Record r;
  r.key = key;
  r.image = absent_image_;
  for (size_t i = 0; i < fields_.size(); ++i) {
    const Field& f = fields_[i];
    const FieldValue& v = values[i];
    if (!v.present) {
      if (!f.optional) return Invalid(f.name, "missing, and not optional");
      if (f.type == FieldType::kLabel) r.labels.push_back(-1);
      continue;
    }
    presence |= uint64_t{1} << i;
    const FieldKind& kind = KindOf(f.type);
    for (auto check : {kind.check_value, kind.check_content}) {
      if (std::string bad = check(f, v); !bad.empty()) return Invalid(f.name, bad);
    }
    if (f.type == FieldType::kLabel) r.labels.push_back(v.label);
    else if (static_cast<int>(i) == primary_image_) r.image = v.image, r.payload = v.bytes;
    else section_bytes += v.bytes.size() + (f.type == FieldType::kImage ? format::kFieldImageHeadSize : 0);
  }
  if (classic_) return r;
  if (section_bytes > UINT32_MAX) return absl::InvalidArgumentError("fields of over 4 GiB");
  section_.resize(section_bytes);
  uint8_t* p = section_.data();
  common::StoreLE<uint64_t>(p + 4, presence);
  uint8_t* lengths = p + format::kFieldSectionHeadSize;
  uint8_t* out = lengths + 4 * section_fields_.size();
  for (int i : section_fields_) {
    const FieldValue& v = values[static_cast<size_t>(i)];
    uint32_t len = 0;
    if (v.present && fields_[static_cast<size_t>(i)].type == FieldType::kImage) {
      common::StoreLE<uint32_t>(out, v.image.height);
      common::StoreLE<uint32_t>(out + 4, v.image.width);
      out[8] = static_cast<uint8_t>(v.image.encoding);
      out[9] = static_cast<uint8_t>(v.image.layout);
      out[10] = v.image.channels;
      out[11] = 0;
      out += format::kFieldImageHeadSize;
      len = format::kFieldImageHeadSize;
    }
    if (v.present && !v.bytes.empty()) std::memcpy(out, v.bytes.data(), v.bytes.size());
    out += v.present ? v.bytes.size() : 0;
    len += v.present ? static_cast<uint32_t>(v.bytes.size()) : 0;
    common::StoreLE<uint32_t>(lengths, len);
    lengths += 4;
  }
  r.extra = ByteSpan(section_.data(), section_.size());
  SP_ASSIGN_OR_RETURN(uint64_t encoded, format::EncodedRecordSize(r));
  (void)encoded;  // the size check: key length, labels, payload size
  common::StoreLE<uint32_t>(p, RecordCrc(r));
  return r;
}

absl::Status RecordFields::Decode(const Record& record, std::span<FieldValue> out,
                                  bool check_crc) const {
  if (out.size() != fields_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(out.size(), " values for ", fields_.size(), " fields"));
  }
  if (!classic_) {
    SP_RETURN_IF_ERROR(DecodeSection(fields_, record, out, check_crc));
    return CheckStructure(fields_, out, Damaged);
  }
  // A classic record: the image, then one label per label field (FieldsOf).
  if (static_cast<size_t>(record.labels.size()) + 1 != fields_.size()) {
    return absl::DataLossError(absl::StrCat("disagrees with the schema: ", record.labels.size(),
                                            " labels, the schema has ", fields_.size() - 1));
  }
  out[0] = FieldValue{};
  out[0].present = true;
  out[0].image = record.image;
  out[0].bytes = record.payload;
  for (size_t k = 1; k < fields_.size(); ++k) {
    out[k] = LabelValueOf(record.labels[static_cast<int>(k - 1)]);
  }
  return CheckStructure(fields_, out, Damaged);
}

}  // namespace shardpack
