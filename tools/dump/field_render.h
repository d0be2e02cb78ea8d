// The fields of a record as sharddump shows and writes them (docs/cli.md):
// `ls`'s short text of a value, its JSON, and `extract`'s file of a value
// that is not an image (.txt, .json, .bin, .npy, .cls).
#ifndef SHARDPACK_TOOLS_DUMP_FIELD_RENDER_H_
#define SHARDPACK_TOOLS_DUMP_FIELD_RENDER_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "shardpack/fields.h"
#include "tools/dump/text.h"

namespace shardpack::dump {

// Bytes of a string or JSON value `ls` shows before it cuts the rest.
inline constexpr size_t kShownTextBytes = 40;

// One value, short, escaped for a line of text: a string or JSON text cut to
// kShownTextBytes ("... (N bytes)" after), a label with its class name
// ("1 (dog)"), an array's dtype and shape ("f32[2,4]"), "N bytes", an image
// as "jpeg 40x24x3" (WxHxC), "-" when absent.
std::string FieldShortText(const Field& field, const FieldValue& value);

// "name=short text" of every field but the images, tab-separated: `ls`'s
// last columns.
std::string FieldColumns(std::span<const Field> fields, std::span<const FieldValue> values);

// {name: value} of every field: a string or JSON text cut as above, a label
// {label, class}, an array {dtype, shape}, bytes {bytes}, an image
// {encoding, layout, width, height, channels, bytes}, null when absent.
Json FieldsJson(std::span<const Field> fields, std::span<const FieldValue> values);

// The extension of `extract`'s file of a field that is not an image: txt
// (string), json, bin (bytes), npy (array), cls (label).
std::string_view FieldFileExtension(FieldType type);

// The body of that file: the text, JSON or bytes as stored; a label as its
// decimal digits (WebDataset's .cls); an array as a .npy file (format
// version 1.0, little-endian, C order, header padded to 64 bytes) whose
// header NpyHeader gives and whose data are the value's bytes.
std::string NpyHeader(const Field& field, uint64_t rows);

}  // namespace shardpack::dump

#endif  // SHARDPACK_TOOLS_DUMP_FIELD_RENDER_H_
