#include "tools/common/escape.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/utf8.h"

namespace shardpack::cli {
namespace {

// The two-character escapes of EscapeText, or null.
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
// zero-width characters and the line and paragraph separators. A name
// holding one would make a line read other than it is.
bool ReordersOrHides(uint32_t cp) {
  return cp == 0x061C || (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF;
}

void AppendHexEscape(unsigned char c, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->append("\\x");
  out->push_back(kHex[c >> 4]);
  out->push_back(kHex[c & 15]);
}

}  // namespace

std::string EscapeText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  size_t i = 0;
  while (i < text.size()) {
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
    const size_t len = c >= 0x80 ? common::Utf8SequenceLength(p + i, text.size() - i) : 0;
    // C1 controls (U+0080..U+009F, "\xC2\x80".."\xC2\x9F") can drive a
    // terminal as ESC does, so they are escaped too.
    const bool c1_control = len == 2 && c == 0xC2 && p[i + 1] < 0xA0;
    if (len > 1 && ReordersOrHides(CodePoint(p + i, len))) {
      absl::StrAppend(&out, "\\u{", absl::Hex(CodePoint(p + i, len), absl::kZeroPad4), "}");
      i += len;
      continue;
    }
    if (len > 1 && !c1_control) {
      out.append(text.substr(i, len));
      i += len;
      continue;
    }
    const size_t n = len > 1 ? len : 1;
    for (size_t j = 0; j < n; ++j) AppendHexEscape(p[i + j], &out);
    i += n;
  }
  return out;
}

}  // namespace shardpack::cli
