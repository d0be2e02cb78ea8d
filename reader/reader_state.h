// The saved form of a ReaderState, said once. ReaderState::ToJson writes
// it; ReadState reads it back from any source that can answer a few typed
// questions (StateValue): ReaderState::FromJson's JSON and the Python
// binding's state_dict(), whose keys are this form's (docs/reader.md, "The
// saved state").
#ifndef SHARDPACK_READER_READER_STATE_H_
#define SHARDPACK_READER_READER_STATE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "shardpack/reader.h"

namespace shardpack::reader {

// One value of a saved state where it lies (a JSON value, a Python object).
// ReadState asks each value for what its field must be; a value that is not
// that answers nullopt (or null), and the error quotes it with Shown(). A
// wrong type is an answer, not an error; no answer copies more than itself
// (a huge list is not walked to ask for its length). Not thread-safe: one
// ReadState at a time reads a value.
class StateValue {
 public:
  virtual ~StateValue() = default;
  // The value as an error quotes it: bounded (Excerpt), whatever its size.
  virtual std::string Shown() const = 0;
  // An integer from 0 to 2^64-1 (a bool is not one).
  virtual std::optional<uint64_t> Uint() const = 0;
  virtual std::optional<bool> Bool() const = 0;
  // Text, when it is valid UTF-8.
  virtual std::optional<std::string> Text() const = 0;
  // A list's length.
  virtual std::optional<size_t> Length() const = 0;
  // Element i of a list; i < *Length().
  virtual std::unique_ptr<StateValue> Element(size_t i) const = 0;
  virtual bool IsMap() const = 0;
  // Member `key` of a map, or null when it has none; only when IsMap().
  virtual std::unique_ptr<StateValue> Member(std::string_view key) const = 0;
  // A key of a map that is none of `known`, as an error quotes it; only
  // when IsMap().
  virtual std::optional<std::string> KeyNotIn(
      const std::vector<std::string_view>& known) const = 0;
};

// How errors spell the parts of the saved form to its readers.
struct StateDialect {
  const char* root;        // the whole state: "state_dict" in "state_dict['epoch']"
  const char* producer;    // what writes it: "state_dict()"
  const char* a_map;       // "a dict"
  const char* maps;        // "dicts"
  const char* a_list;      // "a list"
  const char* an_integer;  // "an int"
  const char* a_boolean;   // "a bool"
  const char* power;       // "**", as in "2**64-1"
  char quote = '\'';            // around keys and names: "['epoch']", "'drop'"
};

// ReaderState::FromJson's words: state["epoch"] is -1: it must be an
// integer from 0 to 2^63-1.
inline constexpr StateDialect kJsonState = {
    "state", "ReaderState::ToJson()", "an object", "objects", "an array", "an integer",
    "a boolean", "^", '"'};

// The state `root` holds: every field present, of its type and within the
// saved form's bounds, and no other key. InvalidArgumentError naming the
// first field that is not, and quoting its value:
//   <root>['epoch'] is -1: it must be an int from 0 to 2**63-1
//   <root>['earlier'][0] has no 'batch_size' (a state_dict() of this ...)
// The world size and batch size need only fit an int here: their ranges,
// like the fingerprint and the seed, are Reader::Restore's to check.
absl::StatusOr<ReaderState> ReadState(const StateValue& root, const StateDialect& dialect);

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_READER_STATE_H_
