// A record's fields as Python values, for shardpack.Dataset (docs/python.md,
// "Records with fields"): images as bytes (or, decoded, numpy uint8 HWC
// arrays), labels as int, strings as str, JSON as the parsed object, bytes
// as bytes, arrays as numpy arrays of their dtype and shape, an absent
// optional field as None.
#ifndef SHARDPACK_PYTHON_FIELD_VALUES_H_
#define SHARDPACK_PYTHON_FIELD_VALUES_H_

#include <pybind11/pybind11.h>

#include <vector>

#include "shardpack/fields.h"
#include "shardpack/records.h"

namespace shardpack::python {

namespace py = pybind11;

// How image fields come: as stored (bytes), raw ones as arrays of their
// pixels (no decoding: a raw payload's bytes alone lose its shape), or every
// one decoded.
enum class ImageValues { kStored, kRawAsArrays, kDecoded };

// {"__key__", "__index__", then each field by name} of the record last read
// into `b` from a dataset of `fields` (RecordReader::fields(), not empty).
// With kDecoded, `b` holds a read made with decode = true. Needs the GIL;
// imports numpy (ImportError saying why) when an array or image is to be
// made.
py::dict FieldsDict(const std::vector<Field>& fields, const RecordBuffer& b, ImageValues images);

// {name: type text (FieldTypeText: "jpeg", "f32[n,4]", "json?")}, in field
// order.
py::dict FieldTypes(const std::vector<Field>& fields);

// {name: [class names]} of the label fields, in field order.
py::dict FieldClasses(const std::vector<Field>& fields);

}  // namespace shardpack::python

#endif  // SHARDPACK_PYTHON_FIELD_VALUES_H_
