// A field's type as one short text ("jpeg", "f32[n,4]", "json?") and back:
// what sharddump and Python's Dataset.fields print and what a writer takes.
// The grammar is in shardpack/fields.h and docs/format.md, 17.4.
#include <charconv>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "shardpack/fields.h"

namespace shardpack {
namespace {

using common::AsAbsl;

constexpr FieldType kPlainTypes[] = {FieldType::kLabel, FieldType::kString, FieldType::kBytes,
                                     FieldType::kJson};

std::string ImageText(const ImageInfo& i) {
  std::string text(EncodingName(i.encoding));
  if (i.layout == Layout::kCHW) text += "/chw";
  if (i.height == 0 && i.width == 0 && (i.channels == 1 || i.channels == 3)) {
    absl::StrAppend(&text, i.channels == 1 ? ":gray" : ":rgb");
  } else if (i.height != 0 || i.width != 0 || i.channels != 0) {
    absl::StrAppend(&text, ":", i.height, "x", i.width, "x", int{i.channels});
  }
  return text;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (size_t at = 0;;) {
    const size_t next = s.find(sep, at);
    parts.push_back(s.substr(at, next - at));
    if (next == std::string_view::npos) return parts;
    at = next + 1;
  }
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::string ArrayText(const Field& f) {
  std::vector<std::string> dims;
  for (size_t d = 0; d < f.shape.size(); ++d) {
    dims.push_back(d == 0 && f.shape[0] == 0 ? "n" : absl::StrCat(f.shape[d]));
  }
  return absl::StrCat(AsAbsl(ArrayDTypeName(f.dtype)), "[", absl::StrJoin(dims, ","), "]");
}

// A decimal number of at most `max`, digits only.
bool ParseNumber(std::string_view s, uint64_t max, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return error == std::errc() && end == s.data() + s.size() && *out <= max &&
         (s.size() == 1 || s[0] != '0');
}

absl::Status Bad(std::string_view text, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("field type '", common::Excerpt(text), "': ",
                                                 AsAbsl(what)));
}

// "jpeg", "raw", "raw/chw", each with an optional ":HxWxC".
absl::Status ParseImage(std::string_view text, std::string_view whole, Field* f) {
  f->type = FieldType::kImage;
  const size_t colon = text.find(':');
  std::string_view head = text.substr(0, colon);
  if (head.ends_with("/chw")) {
    f->image.layout = Layout::kCHW;
    head.remove_suffix(4);
  }
  if (head != "jpeg" && head != "raw") {
    return Bad(whole, "an image is jpeg or raw, then /chw for CHW planes, then :HxWxC");
  }
  f->image.encoding = head == "jpeg" ? Encoding::kJpeg : Encoding::kRaw;
  if (colon == std::string_view::npos) return absl::OkStatus();
  const std::string_view shape = text.substr(colon + 1);
  if (shape == "gray" || shape == "rgb") {
    f->image.channels = shape == "gray" ? 1 : 3;
    return absl::OkStatus();
  }
  const std::vector<std::string_view> dims = Split(shape, 'x');
  uint64_t v[3];
  if (dims.size() != 3 || !ParseNumber(dims[0], UINT32_MAX, &v[0]) ||
      !ParseNumber(dims[1], UINT32_MAX, &v[1]) || !ParseNumber(dims[2], 255, &v[2])) {
    return Bad(whole, "an image shape is gray, rgb or HxWxC (0 where it varies; C at most 255)");
  }
  f->image.height = static_cast<uint32_t>(v[0]);
  f->image.width = static_cast<uint32_t>(v[1]);
  f->image.channels = static_cast<uint8_t>(v[2]);
  return absl::OkStatus();
}

// "<dtype>[d0,d1,...]", d0 "n" when it varies.
absl::Status ParseArray(std::string_view text, std::string_view whole, Field* f) {
  f->type = FieldType::kArray;
  const size_t open = text.find('[');
  absl::StatusOr<ArrayDType> dtype = ParseArrayDType(text.substr(0, open));
  if (!dtype.ok()) {
    const absl::string_view why = dtype.status().message();
    return Bad(whole, std::string_view(why.data(), why.size()));
  }
  f->dtype = *dtype;
  const std::string_view dims_text = text.substr(open + 1, text.size() - open - 2);
  const std::vector<std::string_view> dims = Split(dims_text, ',');
  if (dims_text.empty() || dims.size() > kMaxArrayDims) {
    return Bad(whole, absl::StrCat("an array has 1 to ", kMaxArrayDims, " dimensions"));
  }
  for (size_t d = 0; d < dims.size(); ++d) {
    uint64_t n = 0;
    const std::string_view dim = Trim(dims[d]);
    if (d == 0 && dim == "n") {
      f->shape.push_back(0);
    } else if (ParseNumber(dim, UINT32_MAX, &n) && n > 0) {
      f->shape.push_back(n);
    } else {
      return Bad(whole, absl::StrCat("dimension ", d, " '", common::Excerpt(dim),
                                     "' is not a number from 1 to 2^32-1",
                                     d == 0 ? " or n (varies)" : ""));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string FieldTypeText(const Field& field) {
  std::string text;
  switch (field.type) {
    case FieldType::kImage: text = ImageText(field.image); break;
    case FieldType::kArray: text = ArrayText(field); break;
    default: text = FieldTypeName(field.type); break;
  }
  if (field.optional) text += '?';
  return text;
}

absl::StatusOr<Field> ParseFieldTypeText(std::string_view whole) {
  Field f;
  std::string_view text = whole;
  if (text.ends_with('?')) {
    f.optional = true;
    text.remove_suffix(1);
  }
  for (FieldType t : kPlainTypes) {
    if (text == FieldTypeName(t)) {
      f.type = t;
      return f;
    }
  }
  const std::string_view encoding = text.substr(0, text.find_first_of("/:"));
  if (encoding == "jpeg" || encoding == "raw") {
    SP_RETURN_IF_ERROR(ParseImage(text, whole, &f));
    return f;
  }
  if (text.find('[') != std::string_view::npos && text.ends_with(']')) {
    SP_RETURN_IF_ERROR(ParseArray(text, whole, &f));
    return f;
  }
  return Bad(whole,
             "not a type: jpeg, raw, raw:HxWxC, raw:gray, raw:rgb, label, string, bytes, json, "
             "or an array such as f32[n,4] (u8, i32, i64, f16, f32, f64), with ? when optional");
}

}  // namespace shardpack
