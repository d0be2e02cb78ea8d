// Output formatting shared by sharddump's commands: labels and shapes as
// text, JSON building and printing. Keys, paths and names are escaped for
// text output by cli::EscapeText (tools/common/escape.h).
#ifndef SHARDPACK_TOOLS_DUMP_TEXT_H_
#define SHARDPACK_TOOLS_DUMP_TEXT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "backends/record_scan.h"
#include "nlohmann/json.hpp"
#include "shardpack/manifest.h"
#include "shardpack/record.h"

namespace shardpack::dump {

// Where record `record` of the shard at `path` lives, as messages say it:
// "PATH @OFFSET: record N" (a `.shard` record), "PATH: record N" (LMDB, HDF5).
std::string RecordWhere(std::string_view path, const backends::RecordLocation& loc,
                        uint64_t record);

// Insertion-ordered, so documents read in the order docs/cli.md lists them.
using Json = nlohmann::ordered_json;

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

// `j` on one line of printable ASCII (every other character as \uXXXX,
// invalid UTF-8 as \ufffd): JSON inside a text report, shown as it is.
std::string AsciiJson(const Json& j);

}  // namespace shardpack::dump

#endif  // SHARDPACK_TOOLS_DUMP_TEXT_H_
