#include "python/field_values.h"

#include <cstring>
#include <string>

#include "codec/interleave.h"
#include "python/arrays.h"
#include "python/py_reader.h"

namespace shardpack::python {
namespace {

// Little-endian numpy type strings, element by element as ArrayDType.
const char* NumpyType(ArrayDType d) {
  switch (d) {
    case ArrayDType::kU8: return "u1";
    case ArrayDType::kI32: return "<i4";
    case ArrayDType::kI64: return "<i8";
    case ArrayDType::kF16: return "<f2";
    case ArrayDType::kF32: return "<f4";
    case ArrayDType::kF64: return "<f8";
  }
  return "u1";
}

py::bytes Bytes(ByteSpan b) { return py::bytes(reinterpret_cast<const char*>(b.data()), b.size()); }

py::str Text(ByteSpan b) {
  // The reader checked it is UTF-8 (RecordFields::CheckValues).
  return py::str(reinterpret_cast<const char*>(b.data()), b.size());
}

py::array ArrayOf(const Field& f, const FieldValue& v) {
  RequireNumpy("Dataset: an array field");
  std::vector<py::ssize_t> shape = {static_cast<py::ssize_t>(v.rows)};
  for (size_t d = 1; d < f.shape.size(); ++d) shape.push_back(static_cast<py::ssize_t>(f.shape[d]));
  const size_t element = static_cast<size_t>(ArrayDTypeSize(f.dtype));
  py::array a = NewArray(py::dtype(NumpyType(f.dtype)), element, shape);
  if (!v.bytes.empty()) std::memcpy(a.mutable_data(), v.bytes.data(), v.bytes.size());
  return a;
}

py::array ImageOf(const DecodedImage& im) {
  RequireNumpy("Dataset.record(decode=True)");
  py::array a = NewArray(py::dtype::of<uint8_t>(), 1,
                         {im.height, im.width, static_cast<py::ssize_t>(im.channels)});
  if (im.bytes() != 0) std::memcpy(a.mutable_data(), im.data, im.bytes());
  return a;
}

// A raw image's pixels as uint8 [H, W, C] (CHW planes interleaved). The
// reader checked that the payload is the shape's size (RecordFields).
py::array RawPixelsOf(const FieldValue& v) {
  RequireNumpy("Dataset.record(decode=\"raw\")");
  const ImageInfo& im = v.image;
  const size_t plane = size_t{im.height} * im.width;
  py::array a = NewArray(py::dtype::of<uint8_t>(), 1,
                         {im.height, im.width, static_cast<py::ssize_t>(im.channels)});
  if (v.bytes.size() != plane * im.channels || v.bytes.empty()) return a;
  uint8_t* out = static_cast<uint8_t*>(a.mutable_data());
  if (im.layout == Layout::kHWC || im.channels == 1) {
    std::memcpy(out, v.bytes.data(), v.bytes.size());
    return a;
  }
  codec::InterleavePlanes(v.bytes.data(), plane, im.channels, out);
  return a;
}

py::object ImageValue(const FieldValue& v, const DecodedImage* decoded, ImageValues images) {
  if (decoded != nullptr) return ImageOf(*decoded);
  if (images == ImageValues::kRawAsArrays && v.image.encoding == Encoding::kRaw) {
    return RawPixelsOf(v);
  }
  return Bytes(v.bytes);
}

py::object ValueOf(const Field& f, const FieldValue& v, const DecodedImage* decoded,
                   ImageValues images, const py::object& json_loads) {
  if (!v.present) return py::none();
  switch (f.type) {
    case FieldType::kImage: return ImageValue(v, decoded, images);
    case FieldType::kLabel: return py::int_(v.label);
    case FieldType::kString: return Text(v.bytes);
    case FieldType::kJson: return json_loads(Text(v.bytes));
    case FieldType::kBytes: return Bytes(v.bytes);
    case FieldType::kArray: return ArrayOf(f, v);
  }
  return py::none();
}

}  // namespace

py::dict FieldsDict(const std::vector<Field>& fields, const RecordBuffer& b, ImageValues images) {
  py::dict d;
  const Record& r = b.record();
  PyObject* key = PyUnicode_DecodeUTF8(r.key.data(), static_cast<Py_ssize_t>(r.key.size()),
                                       "surrogateescape");
  if (key == nullptr) throw py::error_already_set();
  d["__key__"] = py::reinterpret_steal<py::object>(key);
  d["__index__"] = b.index();
  py::object json_loads = py::module_::import("json").attr("loads");
  for (size_t i = 0; i < fields.size(); ++i) {
    const DecodedImage* decoded =
        images == ImageValues::kDecoded && i < b.images().size() ? &b.images()[i] : nullptr;
    d[py::str(fields[i].name)] = ValueOf(fields[i], b.fields()[i], decoded, images, json_loads);
  }
  return d;
}

py::dict FieldTypes(const std::vector<Field>& fields) {
  py::dict d;
  for (const Field& f : fields) d[py::str(f.name)] = FieldTypeText(f);
  return d;
}

py::dict FieldClasses(const std::vector<Field>& fields) {
  py::dict d;
  for (const Field& f : fields) {
    // A label's, and an i32 / i64 array's that names its elements' classes.
    if (f.type != FieldType::kLabel && f.classes.empty()) continue;
    py::list classes;
    for (const std::string& c : f.classes) classes.append(py::str(c));
    d[py::str(f.name)] = classes;
  }
  return d;
}

}  // namespace shardpack::python
