// Well-formed UTF-8 (RFC 3629): what a name must be to be stored as JSON
// text (class names in a manifest), and what the tools' escaping passes
// through unchanged.
#ifndef SHARDPACK_COMMON_UTF8_H_
#define SHARDPACK_COMMON_UTF8_H_

#include <cstddef>
#include <string_view>

namespace shardpack::common {

// Length (1 to 4) of the well-formed UTF-8 sequence that starts at s[0], or 0
// when there is none there: a stray continuation byte, C0, C1 or F5..FF, an
// overlong form, a surrogate (U+D800..U+DFFF), a code point past U+10FFFF, or
// a sequence cut short by the end (n bytes are readable). Precondition n > 0.
size_t Utf8SequenceLength(const unsigned char* s, size_t n);

// True when `s` is well-formed UTF-8 from end to end.
bool IsValidUtf8(std::string_view s);

}  // namespace shardpack::common

#endif  // SHARDPACK_COMMON_UTF8_H_
