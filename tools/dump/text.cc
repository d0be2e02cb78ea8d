#include "tools/dump/text.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace shardpack::dump {
namespace {

// Length of the well-formed UTF-8 sequence starting s[0] (RFC 3629 table),
// or 0 when there is none.
size_t Utf8SequenceLength(const unsigned char* s, size_t n) {
  const unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // bounds of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (n < len || s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < len; ++i) {
    if (s[i] < 0x80 || s[i] > 0xBF) return 0;
  }
  return len;
}

// The two-character escapes of EscapeKey, or null.
const char* ShortEscape(unsigned char c) {
  switch (c) {
    case '\\':
      return "\\\\";
    case '\t':
      return "\\t";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    default:
      return nullptr;
  }
}

// The code point of a well-formed sequence of `len` bytes.
uint32_t CodePoint(const unsigned char* s, size_t len) {
  static constexpr unsigned char kLeadMask[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  uint32_t cp = s[0] & kLeadMask[len];
  for (size_t i = 1; i < len; ++i) cp = (cp << 6) | (s[i] & 0x3F);
  return cp;
}

// Characters that reorder or hide text on a terminal (Trojan Source,
// CVE-2021-42574): bidirectional embeddings, overrides and isolates, marks,
// zero-width characters and the line and paragraph separators. A key holding
// one would make `ls` print a line that reads other than it is.
bool ReordersOrHides(uint32_t cp) {
  return cp == 0x061C || (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF;
}

void AppendHexByte(unsigned char c, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back(kHex[c >> 4]);
  out->push_back(kHex[c & 15]);
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0;
  while (i < s.size()) {
    size_t len = Utf8SequenceLength(p + i, s.size() - i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string EscapeKey(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  const auto* p = reinterpret_cast<const unsigned char*>(key.data());
  size_t i = 0;
  while (i < key.size()) {
    const unsigned char c = p[i];
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    if (const char* escape = ShortEscape(c)) {
      out += escape;
      ++i;
      continue;
    }
    size_t len = c >= 0x80 ? Utf8SequenceLength(p + i, key.size() - i) : 0;
    // C1 controls (U+0080..U+009F, "\xC2\x80".."\xC2\x9F") can drive a
    // terminal like ESC does, so they are escaped too.
    bool c1_control = len == 2 && c == 0xC2 && p[i + 1] < 0xA0;
    if (len > 1 && ReordersOrHides(CodePoint(p + i, len))) {
      absl::StrAppend(&out, "\\u{", absl::Hex(CodePoint(p + i, len), absl::kZeroPad4), "}");
      i += len;
      continue;
    }
    if (len > 1 && !c1_control) {
      out.append(key.substr(i, len));
      i += len;
      continue;
    }
    size_t n = len > 1 ? len : 1;
    for (size_t j = 0; j < n; ++j) {
      out += "\\x";
      AppendHexByte(p[i + j], &out);
    }
    i += n;
  }
  return out;
}

std::string LabelsText(const Labels& labels) {
  if (labels.empty()) return "-";
  return absl::StrJoin(labels.begin(), labels.end(), ",");
}

std::string ShapeText(const ImageInfo& image) {
  return absl::StrCat(image.width, "x", image.height, "x", int{image.channels});
}

std::string EncodingText(const ImageInfo& image) {
  if (image.encoding == Encoding::kJpeg) return "jpeg";
  return absl::StrCat("raw/", std::string(LayoutName(image.layout)));
}

void AddKey(std::string_view key, Json* object) {
  (*object)["key"] = std::string(key);
  if (!IsValidUtf8(key)) {
    std::string hex;
    hex.reserve(2 * key.size());
    for (char c : key) AppendHexByte(static_cast<unsigned char>(c), &hex);
    (*object)["key_hex"] = hex;
  }
}

Json RecordJson(uint64_t index, const Record& record) {
  Json j;
  j["index"] = index;
  AddKey(record.key, &j);
  j["labels"] = Json::array();
  for (int64_t label : record.labels) j["labels"].push_back(label);
  j["encoding"] = std::string(EncodingName(record.image.encoding));
  j["layout"] = std::string(LayoutName(record.image.layout));
  j["width"] = record.image.width;
  j["height"] = record.image.height;
  j["channels"] = record.image.channels;
  j["bytes"] = record.payload.size();
  j["extra_bytes"] = record.extra.size();
  return j;
}

Json SchemaJson(const Schema& schema) {
  Json j;
  j["encoding"] = std::string(EncodingName(schema.image.encoding));
  j["layout"] = std::string(LayoutName(schema.image.layout));
  j["height"] = schema.image.height;
  j["width"] = schema.image.width;
  j["channels"] = schema.image.channels;
  j["labels"] = Json::array();
  for (const LabelField& field : schema.labels) {
    j["labels"].push_back({{"name", field.name}, {"classes", field.classes}});
  }
  return j;
}

std::string DumpJson(const Json& j, bool pretty) {
  return j.dump(pretty ? 2 : -1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

absl::Status WriteStdout(std::string_view text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) {
    return absl::UnknownError(absl::StrCat("write to stdout: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status FlushStdout() {
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    return absl::UnknownError(absl::StrCat("write to stdout: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace shardpack::dump
