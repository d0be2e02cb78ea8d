// Output formatting shared by sharddump's commands: escaping of keys (which
// may hold any bytes), labels and shapes as text, JSON building and printing.
#ifndef SHARDPACK_TOOLS_DUMP_TEXT_H_
#define SHARDPACK_TOOLS_DUMP_TEXT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "shardpack/manifest.h"
#include "shardpack/record.h"

namespace shardpack::dump {

// Insertion-ordered, so documents read in the order docs/cli.md lists them.
using Json = nlohmann::ordered_json;

// True when `s` is well-formed UTF-8 (no overlong forms, surrogates or
// code points past U+10FFFF).
bool IsValidUtf8(std::string_view s);

// A key as one line of text that says exactly which bytes it holds: valid
// UTF-8 other than control characters passes through; backslash, tab,
// newline and carriage return become \\ \t \n \r; characters that reorder or
// hide text (bidirectional overrides and isolates, zero-width characters)
// become \u{XXXX}; every other byte (controls, NUL, DEL, bytes of invalid
// UTF-8) becomes \xHH with two hex digits.
std::string EscapeKey(std::string_view key);

// "3,-5"; "-" when there are no labels.
std::string LabelsText(const Labels& labels);

// "WxHxC", e.g. "500x375x3".
std::string ShapeText(const ImageInfo& image);

// "jpeg", "raw/hwc" or "raw/chw".
std::string EncodingText(const ImageInfo& image);

// Adds the key to a JSON object: "key" is the key itself when it is valid
// UTF-8; otherwise invalid bytes are replaced by U+FFFD in "key" and
// "key_hex" holds every byte of the key in lowercase hex.
void AddKey(std::string_view key, Json* object);

// The record fields ls and extract share (index, key, labels, encoding,
// layout, width, height, channels, bytes, extra_bytes).
Json RecordJson(uint64_t index, const Record& record);

// The schema as the manifest spells it.
Json SchemaJson(const Schema& schema);

// `j` as text: compact (one line) or indented by 2. Never throws: invalid
// UTF-8 (which AddKey avoids) is replaced by U+FFFD.
std::string DumpJson(const Json& j, bool pretty);

// Writes `text` to stdout; an error if stdout cannot take it.
absl::Status WriteStdout(std::string_view text);

// Flushes stdout; an error naming stdout if a write failed.
absl::Status FlushStdout();

}  // namespace shardpack::dump

#endif  // SHARDPACK_TOOLS_DUMP_TEXT_H_
