// The one escaping of everything the tools print that came from a file, a
// directory listing, a manifest, a record or the user: keys, paths, class
// names, and the messages of errors that embed them.
#ifndef SHARDPACK_TOOLS_COMMON_ESCAPE_H_
#define SHARDPACK_TOOLS_COMMON_ESCAPE_H_

#include <string>
#include <string_view>

namespace shardpack::cli {

// `text` as one line that says exactly which bytes it holds, and that a
// terminal shows as it is: valid UTF-8 other than control characters passes
// through; backslash, tab, newline and carriage return become \\ \t \n \r;
// characters that reorder or hide text (bidirectional embeddings, overrides
// and isolates, marks, zero-width characters, the line and paragraph
// separators) become \u{XXXX}; every other byte (C0 and C1 controls, ESC,
// NUL, DEL, bytes of invalid UTF-8) becomes \xHH with two lowercase hex
// digits. Every byte is kept, NUL included: escape a string once, whole,
// and never pass it through c_str() before.
std::string EscapeText(std::string_view text);

}  // namespace shardpack::cli

#endif  // SHARDPACK_TOOLS_COMMON_ESCAPE_H_
