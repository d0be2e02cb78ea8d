// Records of any fields: a dataset's schema as named, typed fields.
//
// A dataset declares its fields in its manifest (docs/format.md, "Fields"):
// images, integer labels, strings (a caption), opaque bytes, JSON, and
// arrays of a dtype whose first dimension may vary (boxes [n, 4] f32, token
// ids [n] i32, an embedding [768] f16). Every record holds every field; a
// field declared optional may be absent, and absence is recorded.
//
// A record keeps the layout of docs/format.md section 5: the first image
// field is the record's payload (so the reader's image path is unchanged),
// the label fields are its labels, and every other field lives in the
// record's field section, held where a classic record holds its extra bytes,
// with a CRC-32C of the whole record. A schema of one image named "image"
// followed by label fields is a classic one: its records and manifest are
// byte for byte those of a dataset without fields.
#ifndef SHARDPACK_FIELDS_H_
#define SHARDPACK_FIELDS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shardpack/record.h"

namespace shardpack {

// Values are part of the manifest format (their names are).
enum class FieldType : uint8_t { kImage, kLabel, kString, kBytes, kJson, kArray };
enum class ArrayDType : uint8_t { kU8, kI32, kI64, kF16, kF32, kF64 };

std::string_view FieldTypeName(FieldType t);  // "image", "label", "string", "bytes", "json", "array"
std::string_view ArrayDTypeName(ArrayDType d);          // "u8", "i32", "i64", "f16", "f32", "f64"
// The inverses: InvalidArgumentError listing the names for any other name.
absl::StatusOr<FieldType> ParseFieldType(std::string_view name);
absl::StatusOr<ArrayDType> ParseArrayDType(std::string_view name);
// Bytes of one element: 1, 4, 8, 2, 4, 8.
int ArrayDTypeSize(ArrayDType d);

// Most fields a schema may declare, and most dimensions of an array field.
inline constexpr int kMaxFields = 64;
inline constexpr int kMaxArrayDims = 8;
// The name of the classic schema's image field.
inline constexpr char kClassicImageField[] = "image";

// One declared field.
struct Field {
  std::string name;  // 1..64 bytes of [A-Za-z0-9_.-], not starting with "__"
  FieldType type = FieldType::kBytes;
  bool optional = false;  // may be absent from a record
  // kImage: the encoding and layout of every value, and its fixed shape
  // (height, width, channels) or 0 for what varies.
  ImageInfo image;
  // kLabel, and kArray of i32 or i64: class names (class k is classes[k];
  // an array's every element is a class, as COCO's category ids of a
  // record's boxes); may be empty.
  std::vector<std::string> classes;
  // kArray: the element type and shape. shape[0] == 0 means the first
  // dimension varies from record to record (boxes [0, 4]); every other
  // dimension is fixed and at least 1. At most kMaxArrayDims dimensions.
  ArrayDType dtype = ArrayDType::kU8;
  std::vector<uint64_t> shape;
  friend bool operator==(const Field&, const Field&) = default;
};

// One field's value in one record. Views are borrowed (from the record, or
// from the caller when writing).
struct FieldValue {
  bool present = false;
  ImageInfo image;    // kImage: the value's own shape and encoding
  int64_t label = 0;  // kLabel
  // kImage: the image's bytes; kString/kJson: UTF-8 text; kBytes: bytes;
  // kArray: the elements, little-endian, row-major, unaligned.
  ByteSpan bytes;
  // kArray: the first dimension of this value (bytes.size() divided by the
  // bytes of one row); set by DecodeFields, ignored when writing.
  uint64_t rows = 0;
};

// A field's type as one short text, the form the tools print and writers
// take (docs/format.md, "Fields", 17.4):
//
//   image   "jpeg" or "raw", then "/chw" for CHW planes (HWC is not
//           spelled), then, when any of the shape is fixed, ":gray" or ":rgb"
//           (1 or 3 channels, height and width varying) or ":HxWxC" (0
//           where a dimension varies): "jpeg", "raw", "raw:32x32x3",
//           "raw/chw:32x32x3", "raw:gray", "raw:0x32x3"
//   label   "label" (its class names are not part of the text)
//   string, bytes, json
//   array   "<dtype>[<dims>]", the first dimension "n" when it varies:
//           "f32[n,4]", "i32[n]", "f16[768]" (spaces around a dimension
//           are allowed when parsing)
//
// and a trailing "?" when the field is optional ("json?"). Every field of a
// valid schema renders, and ParseFieldTypeText gives it back, its name and
// classes aside.
std::string FieldTypeText(const Field& field);

// The field that `text` describes (name and classes left empty).
// InvalidArgumentError "field type 'TEXT': ..." saying what is wrong (an
// unknown type or dtype, a shape of other than 3 numbers, an array of no or
// more than kMaxArrayDims dimensions, "n" past the first one, a number out
// of range). The declaration checks of MakeSchema still apply.
absl::StatusOr<Field> ParseFieldTypeText(std::string_view text);

struct Schema;

// Checks `fields` (names well-formed and distinct, at most kMaxFields, at
// most kMaxLabels label fields, array shapes as above, image encodings of
// the record format, class names UTF-8) and returns the schema they make:
// its image (of the first image field; raw 0x0x0 when there is none) and
// labels (of the label fields, in order) filled in, and its `fields` left
// empty when the schema is classic (see the file comment). InvalidArgument-
// Error naming the field otherwise.
absl::StatusOr<Schema> MakeSchema(std::vector<Field> fields);

// The fields of any schema: those declared, or for a classic schema the
// image field "image" followed by its label fields.
std::vector<Field> FieldsOf(const Schema& schema);

// Field values <-> records of a schema. Build is not thread-safe (each
// thread has its own, which reuses its buffers: no allocation per record
// once warm); Decode and CheckValues change nothing and may be called from
// any number of threads at once.
class RecordFields {
 public:
  explicit RecordFields(const Schema& schema);

  const std::vector<Field>& fields() const { return fields_; }
  // The index of the field named `name`, or -1.
  int Find(std::string_view name) const;

  // The record holding `values` (values[i] is field i of fields()) under
  // `key`. Checks every value against its field first: presence, type,
  // shape and encoding, UTF-8 strings, JSON that parses, labels within
  // their classes; InvalidArgumentError "field 'NAME': ..." otherwise. The
  // record's views point into `values` and into this object, valid until the
  // next call of Build.
  absl::StatusOr<Record> Build(std::string_view key, std::span<const FieldValue> values);

  // Splits a record of this schema into its field values (views into the
  // record, valid as long as its bytes). Checks the record's structure
  // against the schema (its field section's layout, the record CRC-32C when
  // `check_crc`, presence of what is not optional, array shapes, image
  // headers, labels within classes); DataLossError saying what disagrees
  // otherwise. `out` must have fields().size() entries. Does not look
  // inside strings and JSON: CheckValues does.
  absl::Status Decode(const Record& record, std::span<FieldValue> out, bool check_crc) const;

  // The content checks Build makes (UTF-8 strings, JSON that parses), for
  // values a reader decoded (verify, records read alone). DataLossError
  // "field 'NAME': ..." otherwise.
  absl::Status CheckValues(std::span<const FieldValue> values) const;

  bool classic() const { return classic_; }

 private:
  std::vector<Field> fields_;
  std::vector<int> section_fields_;  // indices of the fields held in the section
  int primary_image_ = -1;           // the field held as the payload
  ImageInfo absent_image_;           // the payload's info when that field is absent
  bool classic_ = true;
  std::vector<uint8_t> section_;  // Build's field section
};

// The CRC-32C of a record of a schema with fields: over its section 5
// encoding (header, labels, key, field section, payload; no padding) with the
// 4 bytes of the CRC itself left out. docs/format.md, "Fields".
uint32_t RecordCrc(const Record& record);

}  // namespace shardpack

#endif  // SHARDPACK_FIELDS_H_
