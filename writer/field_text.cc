// A field's type as text ("jpeg", "raw:32x32x3", "f32[n,4]?"): the form of
// shardpack.Writer's schema, MDS's `columns` in spirit. The grammar is in
// shardpack/writer.h, at ParseFieldText.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/errors.h"
#include "common/size.h"
#include "shardpack/writer.h"

namespace shardpack {
namespace {

using common::AsAbsl;

constexpr char kForms[] =
    "jpeg, raw, raw:HxWxC, raw:gray, raw:rgb, label, string, bytes, json, or DTYPE[DIMS] "
    "(DTYPE u8 i32 i64 f16 f32 f64; DIMS e.g. n,4 with n a first dimension that varies), "
    "with ? at the end for an optional field";

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// "HxWxC" with each a whole number: H and W 1..2^32-1, C 1..255.
bool ParseRawShape(std::string_view text, ImageInfo* image) {
  const size_t x1 = text.find('x');
  const size_t x2 = x1 == std::string_view::npos ? x1 : text.find('x', x1 + 1);
  if (x2 == std::string_view::npos) return false;
  const auto h = common::ParseWholeNumber(text.substr(0, x1), 1, UINT32_MAX);
  const auto w = common::ParseWholeNumber(text.substr(x1 + 1, x2 - x1 - 1), 1, UINT32_MAX);
  const auto c = common::ParseWholeNumber(text.substr(x2 + 1), 1, 255);
  if (!h || !w || !c) return false;
  image->height = static_cast<uint32_t>(*h);
  image->width = static_cast<uint32_t>(*w);
  image->channels = static_cast<uint8_t>(*c);
  return true;
}

bool ParseImage(std::string_view text, Field* f) {
  f->type = FieldType::kImage;
  f->image = ImageInfo{};
  if (text == "jpeg") {
    f->image.encoding = Encoding::kJpeg;
    return true;
  }
  if (text == "raw") return true;
  if (!text.starts_with("raw:")) return false;
  text.remove_prefix(4);
  if (text == "gray") {
    f->image.channels = 1;
    return true;
  }
  if (text == "rgb") {
    f->image.channels = 3;
    return true;
  }
  return ParseRawShape(text, &f->image);
}

// "DTYPE[D0,D1,...]": the dimensions as ArrayDeclaration (format/fields.cc)
// checks them later; here only their form.
bool ParseArray(std::string_view text, Field* f) {
  const size_t open = text.find('[');
  if (open == std::string_view::npos || !text.ends_with(']')) return false;
  absl::StatusOr<ArrayDType> dtype = ParseArrayDType(text.substr(0, open));
  if (!dtype.ok()) return false;
  f->type = FieldType::kArray;
  f->dtype = *dtype;
  f->shape.clear();
  std::string_view dims = text.substr(open + 1, text.size() - open - 2);
  while (true) {
    const size_t comma = dims.find(',');
    const std::string_view dim = Trim(dims.substr(0, comma));
    if (f->shape.empty() && dim == "n") {
      f->shape.push_back(0);
    } else {
      std::optional<uint64_t> n = common::ParseWholeNumber(dim, 1, UINT64_MAX);
      if (!n) return false;
      f->shape.push_back(*n);
    }
    if (comma == std::string_view::npos) return true;
    dims.remove_prefix(comma + 1);
  }
}

}  // namespace

absl::StatusOr<Field> ParseFieldText(std::string_view name, std::string_view text) {
  Field f;
  f.name = std::string(name);
  std::string_view type = text;
  if (type.ends_with('?')) {
    f.optional = true;
    type.remove_suffix(1);
  }
  bool ok = true;
  if (type == "label") {
    f.type = FieldType::kLabel;
  } else if (type == "string") {
    f.type = FieldType::kString;
  } else if (type == "bytes") {
    f.type = FieldType::kBytes;
  } else if (type == "json") {
    f.type = FieldType::kJson;
  } else if (type == "jpeg" || type.starts_with("raw")) {
    ok = ParseImage(type, &f);
  } else {
    ok = ParseArray(type, &f);
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat("field '", common::Excerpt(name), "': type '",
                                                   common::Excerpt(text), "' is not one of ",
                                                   kForms));
  }
  return f;
}

std::string FieldText(const Field& f) {
  std::string text;
  std::string rest;  // what the text form cannot say
  switch (f.type) {
    case FieldType::kImage: {
      const ImageInfo& i = f.image;
      const bool fixed = i.height != 0 && i.width != 0 && i.channels != 0;
      if (i.encoding == Encoding::kJpeg) {
        text = "jpeg";
        if (i.height != 0 || i.width != 0 || i.channels != 0) {
          rest = absl::StrCat(i.height, "x", i.width, "x", i.channels);
        }
      } else if (fixed) {
        text = absl::StrCat("raw:", i.height, "x", i.width, "x", i.channels);
      } else {
        text = i.channels == 1 ? "raw:gray" : i.channels == 3 ? "raw:rgb" : "raw";
        const bool said = i.channels == 0 || i.channels == 1 || i.channels == 3;
        if (i.height != 0 || i.width != 0 || !said) {
          rest = absl::StrCat(i.height, "x", i.width, "x", i.channels);
        }
      }
      if (i.layout != Layout::kHWC) absl::StrAppend(&rest, rest.empty() ? "" : " ", "chw");
      break;
    }
    case FieldType::kArray: {
      std::vector<std::string> dims;
      for (size_t d = 0; d < f.shape.size(); ++d) {
        dims.push_back(d == 0 && f.shape[d] == 0 ? "n" : absl::StrCat(f.shape[d]));
      }
      text = absl::StrCat(AsAbsl(ArrayDTypeName(f.dtype)), "[", absl::StrJoin(dims, ","), "]");
      break;
    }
    default:
      text = std::string(FieldTypeName(f.type));
  }
  if (f.optional) text += "?";
  if (!rest.empty()) absl::StrAppend(&text, " (", rest, ")");
  return text;
}

}  // namespace shardpack
