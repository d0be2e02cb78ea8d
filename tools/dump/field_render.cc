#include "tools/dump/field_render.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/coding.h"
#include "common/errors.h"
#include "tools/common/escape.h"

namespace shardpack::dump {
namespace {

std::string_view Text(const FieldValue& v) {
  return {reinterpret_cast<const char*>(v.bytes.data()), v.bytes.size()};
}

// The value's shape: its rows, then the declared dimensions past the first.
std::vector<uint64_t> ArrayShape(const Field& f, const FieldValue& v) {
  std::vector<uint64_t> shape = {v.rows};
  shape.insert(shape.end(), f.shape.begin() + 1, f.shape.end());
  return shape;
}

const std::string* ClassOf(const Field& f, int64_t label) {
  if (label < 0 || static_cast<uint64_t>(label) >= f.classes.size()) return nullptr;
  return &f.classes[static_cast<size_t>(label)];
}

// numpy's type string of a dtype, little-endian.
std::string_view NumpyDescr(ArrayDType d) {
  switch (d) {
    case ArrayDType::kU8: return "|u1";
    case ArrayDType::kI32: return "<i4";
    case ArrayDType::kI64: return "<i8";
    case ArrayDType::kF16: return "<f2";
    case ArrayDType::kF32: return "<f4";
    case ArrayDType::kF64: return "<f8";
  }
  return "|u1";
}

}  // namespace

std::string FieldShortText(const Field& f, const FieldValue& v) {
  if (!v.present) return "-";
  switch (f.type) {
    case FieldType::kString:
    case FieldType::kJson:
      return cli::EscapeText(common::Excerpt(Text(v), kShownTextBytes));
    case FieldType::kLabel: {
      const std::string* name = ClassOf(f, v.label);
      return name == nullptr ? absl::StrCat(v.label)
                             : absl::StrCat(v.label, " (", cli::EscapeText(*name), ")");
    }
    case FieldType::kArray:
      return absl::StrCat(common::AsAbsl(ArrayDTypeName(f.dtype)), "[",
                          absl::StrJoin(ArrayShape(f, v), ","), "]");
    case FieldType::kBytes:
      return absl::StrCat(v.bytes.size(), " bytes");
    case FieldType::kImage:
      return absl::StrCat(EncodingText(v.image), " ", ShapeText(v.image));
  }
  return "-";
}

std::string FieldColumns(std::span<const Field> fields, std::span<const FieldValue> values) {
  std::vector<std::string> columns;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].type == FieldType::kImage) continue;
    columns.push_back(
        absl::StrCat(fields[i].name, "=", FieldShortText(fields[i], values[i])));
  }
  return absl::StrJoin(columns, "\t");
}

Json FieldsJson(std::span<const Field> fields, std::span<const FieldValue> values) {
  Json j = Json::object();
  for (size_t i = 0; i < fields.size(); ++i) {
    const Field& f = fields[i];
    const FieldValue& v = values[i];
    Json& out = j[f.name];
    if (!v.present) {
      out = nullptr;
      continue;
    }
    switch (f.type) {
      case FieldType::kString:
      case FieldType::kJson: out = common::Excerpt(Text(v), kShownTextBytes); break;
      case FieldType::kLabel: {
        const std::string* name = ClassOf(f, v.label);
        out = {{"label", v.label}, {"class", name != nullptr ? Json(*name) : Json(nullptr)}};
        break;
      }
      case FieldType::kArray:
        out = {{"dtype", std::string(ArrayDTypeName(f.dtype))}, {"shape", ArrayShape(f, v)}};
        break;
      case FieldType::kBytes: out = {{"bytes", v.bytes.size()}}; break;
      case FieldType::kImage:
        out = {{"encoding", std::string(EncodingName(v.image.encoding))},
               {"layout", std::string(LayoutName(v.image.layout))},
               {"width", v.image.width},
               {"height", v.image.height},
               {"channels", v.image.channels},
               {"bytes", v.bytes.size()}};
        break;
    }
  }
  return j;
}

std::string_view FieldFileExtension(FieldType type) {
  switch (type) {
    case FieldType::kString: return "txt";
    case FieldType::kJson: return "json";
    case FieldType::kBytes: return "bin";
    case FieldType::kArray: return "npy";
    case FieldType::kLabel: return "cls";
    case FieldType::kImage: return "raw";
  }
  return "bin";
}

std::string NpyHeader(const Field& f, uint64_t rows) {
  FieldValue value;
  value.rows = rows;
  const std::vector<uint64_t> shape = ArrayShape(f, value);
  std::string dims = absl::StrJoin(shape, ", ");
  if (shape.size() == 1) dims += ",";
  std::string dict = absl::StrCat("{'descr': '", common::AsAbsl(NumpyDescr(f.dtype)),
                                  "', 'fortran_order': False, 'shape': (", dims, "), }");
  // The magic (6), the version (2) and the header's length (2), then the
  // header ending in '\n', padded with spaces so that the data start at a
  // multiple of 64 bytes (numpy's format.py).
  const size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string header("\x93NUMPY\x01\x00", 8);
  uint8_t length[2];
  common::StoreLE<uint16_t>(length, static_cast<uint16_t>(dict.size()));
  header.append(reinterpret_cast<const char*>(length), 2);
  return header + dict;
}

}  // namespace shardpack::dump
