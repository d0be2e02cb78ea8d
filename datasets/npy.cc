#include "datasets/npy.h"

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/errors.h"

namespace shardpack::datasets {
namespace {

using common::AsAbsl;

constexpr char kMagic[] = "\x93NUMPY";

// The value text of `key` in the header's Python dict literal, e.g. for
// 'shape' "(3, 4)"; empty when absent.
std::string_view ValueOf(std::string_view header, std::string_view key) {
  const std::string quoted = absl::StrCat("'", AsAbsl(key), "'");
  size_t at = header.find(quoted);
  if (at == std::string_view::npos) return {};
  at = header.find(':', at + quoted.size());
  if (at == std::string_view::npos) return {};
  ++at;
  while (at < header.size() && header[at] == ' ') ++at;
  size_t end = at;
  if (at < header.size() && header[at] == '(') {
    end = header.find(')', at);
    return end == std::string_view::npos ? std::string_view{} : header.substr(at, end - at + 1);
  }
  while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  return header.substr(at, end - at);
}

bool DTypeOf(std::string_view descr, ArrayDType* out) {
  struct Name {
    std::string_view descr;
    ArrayDType dtype;
  };
  static constexpr Name kNames[] = {
      {"'|u1'", ArrayDType::kU8}, {"'<u1'", ArrayDType::kU8}, {"'|i1'", ArrayDType::kU8},
      {"'|b1'", ArrayDType::kU8}, {"'<i4'", ArrayDType::kI32}, {"'<i8'", ArrayDType::kI64},
      {"'<f2'", ArrayDType::kF16}, {"'<f4'", ArrayDType::kF32}, {"'<f8'", ArrayDType::kF64}};
  for (const Name& n : kNames) {
    if (descr == n.descr) {
      *out = n.dtype;
      return true;
    }
  }
  return false;
}

bool ParseShape(std::string_view text, std::vector<uint64_t>* shape) {
  shape->clear();
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') return false;
  text = text.substr(1, text.size() - 2);
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    if (i == text.size()) break;
    uint64_t v = 0;
    size_t digits = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
      if (v > (uint64_t{1} << 40)) return false;
      v = v * 10 + static_cast<uint64_t>(text[i] - '0');
    }
    if (digits == 0 || shape->size() == kMaxArrayDims + 1) return false;
    shape->push_back(v);
  }
  return true;
}

}  // namespace

absl::StatusOr<NpyArray> ParseNpy(ByteSpan bytes, std::string_view name) {
  auto invalid = [&](std::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(AsAbsl(name), ": ", AsAbsl(what)));
  };
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0) {
    return invalid("not a .npy file");
  }
  const uint8_t major = bytes[6];
  size_t header_len = 0, at = 0;
  if (major == 1) {
    header_len = common::LoadLE<uint16_t>(bytes.data() + 8);
    at = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return invalid("a .npy header cut short");
    header_len = common::LoadLE<uint32_t>(bytes.data() + 8);
    at = 12;
  } else {
    return invalid(absl::StrCat(".npy format version ", int{major}, " (this build reads 1 to 3)"));
  }
  if (header_len > bytes.size() - at) return invalid("a .npy header cut short");
  std::string_view header(reinterpret_cast<const char*>(bytes.data() + at), header_len);
  NpyArray out;
  const std::string_view descr = ValueOf(header, "descr");
  if (!DTypeOf(descr, &out.dtype)) {
    return invalid(absl::StrCat("dtype ", AsAbsl(common::Excerpt(descr)),
                                " (a field holds u1, i4, i8, f2, f4 or f8, little-endian)"));
  }
  if (!ParseShape(ValueOf(header, "shape"), &out.shape)) return invalid("a .npy shape that does not parse");
  if (out.shape.size() > kMaxArrayDims) {
    return invalid(absl::StrCat(out.shape.size(), " dimensions (at most ", kMaxArrayDims, ")"));
  }
  if (ValueOf(header, "fortran_order") == "True" && out.shape.size() > 1) {
    return invalid("an array in Fortran order (save it in C order: np.ascontiguousarray)");
  }
  uint64_t elements = 1;
  for (uint64_t d : out.shape) {
    if (d != 0 && elements > (uint64_t{1} << 40) / d) return invalid("an array of over 2^40 elements");
    elements *= d;
  }
  const uint64_t data_bytes = elements * static_cast<uint64_t>(ArrayDTypeSize(out.dtype));
  const uint64_t data_at = at + header_len;
  if (bytes.size() - data_at != data_bytes) {
    return invalid(absl::StrCat(bytes.size() - data_at, " bytes of data for a shape of ",
                                elements, " elements (", data_bytes, " bytes)"));
  }
  out.data = bytes.subspan(data_at);
  return out;
}

}  // namespace shardpack::datasets
