// JSON text from a file, parsed with the checks every file of ours gets:
// bounds on its size, nesting, strings and values, checked as it is parsed
// and before anything past them is kept (so that no text, however large or
// deep, makes the parser recurse or run the process out of memory); no key
// twice in an object; a message that says where the text is wrong. Used by
// the manifest (format/manifest.cc), view files (dataset/view_spec.cc),
// the reader state (reader/reader_state.cc) and the pack identity
// (tools/pack/pack_identity.cc): the one nesting guard of them all.
//
// Memory: a parsed value costs ~50-100 bytes (nlohmann's DOM), so the DOM a
// parse keeps is bounded by max_values. A list that may be long (a
// manifest's shards, a view's indices) is streamed: each element is handed
// to its consumer as soon as it is parsed, then dropped, so that what a
// list costs is what its consumer keeps of it.
#ifndef SHARDPACK_FORMAT_JSON_TEXT_H_
#define SHARDPACK_FORMAT_JSON_TEXT_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace shardpack::format {

// The deepest nesting JSON text of ours may have, unless a caller lowers it.
inline constexpr int kMaxJsonNesting = 64;
// The longest string (value or key) JSON text of ours may hold: a path, a
// class name or a glob is far shorter.
inline constexpr uint64_t kMaxJsonStringBytes = uint64_t{64} << 10;

struct JsonLimits {
  std::string_view what;  // the text's kind, for messages: "a manifest"
  uint64_t max_bytes = 0;  // of the text
  int max_depth = kMaxJsonNesting;
  uint64_t max_string_bytes = kMaxJsonStringBytes;
  // Values (objects, arrays, strings, numbers, literals) held at once: those
  // of streamed lists count while their element is being parsed only.
  uint64_t max_values = 0;
};

// A list at a key of the top-level object whose elements are streamed:
// `consume(i, element)` is called for element i as soon as it is parsed;
// the element is dropped after, and the key's value in the parsed object is
// left an empty array. A status other than OK from `consume` stops the parse
// and is returned as it is. More than `max_elements` elements is refused.
struct JsonStream {
  std::string_view key;
  uint64_t max_elements = 0;
  // Refers to a callable that must outlive the parse: name it in a variable
  // (a lambda written in the initializer dies at the end of the statement).
  absl::FunctionRef<absl::Status(uint64_t, const nlohmann::ordered_json&)> consume;
};

// Parses `text`, read from `name`. DataLossError:
//   "<name>:LINE:COLUMN: not valid JSON: <reason>" for a syntax error;
//   "<name>: not valid JSON: <reason>" for a number past a double's range;
//   "<name>: N bytes, more than the M <what> may have";
//   "<name>: JSON nested more than N levels deep";
//   "<name>: a string of more than N bytes (<excerpt>)";
//   "<name>: more than N JSON values ...";
//   "<name>: more than N elements in <key>";
//   "<name>: key '<key>' appears twice in one object".
// Callers for whom the text is user input rather than data re-code the
// status.
absl::StatusOr<nlohmann::ordered_json> ParseJsonText(std::string_view text,
                                                     std::string_view name,
                                                     const JsonLimits& limits,
                                                     std::span<const JsonStream> streams = {});

}  // namespace shardpack::format

#endif  // SHARDPACK_FORMAT_JSON_TEXT_H_
