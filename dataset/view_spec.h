// A view file's text, parsed and checked field by field, before any dataset
// is opened (dataset/view.h has the format; OpenView resolves the names
// and indices against the datasets).
#ifndef SHARDPACK_DATASET_VIEW_SPEC_H_
#define SHARDPACK_DATASET_VIEW_SPEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shardpack::dataset {

// Bounds on a view file (docs/reliability.md, "Bounded JSON"), checked
// before what is past them is parsed or kept: its bytes, the entries of
// its "indices" (each kept as 24 bytes), and its other JSON values (dataset
// names, class names, labels). Strings past 64 KiB and nesting past 64
// levels are refused too (format/json_text.h).
inline constexpr uint64_t kMaxViewBytes = uint64_t{64} << 20;
inline constexpr uint64_t kMaxViewIndices = uint64_t{1} << 23;
inline constexpr uint64_t kMaxViewValues = uint64_t{1} << 20;

struct ViewSpec {
  struct Classes {
    std::optional<std::string> field;  // a label field's name; default: the first
    std::vector<std::string> names;    // distinct, at least one
    bool relabel = true;
  };
  // An entry of "indices": one index (single) or a range [begin, end).
  struct IndexEntry {
    uint64_t begin = 0;
    uint64_t end = 0;  // single: equal to begin (so that UINT64_MAX cannot overflow)
    bool single = false;
  };
  // An element of where.labels.in: a label value, or a class name.
  struct LabelValue {
    int64_t label = 0;
    std::optional<std::string> name;
  };
  // An element of where.strings: a string field's value, tested by every
  // test given (at least one).
  struct StringCondition {
    std::string field;
    std::optional<std::vector<std::string>> in;  // the value is one of these
    std::optional<std::string> prefix;
    std::optional<std::string> glob;             // GlobMatch, over the whole value
  };
  struct Where {
    std::optional<std::string> field;  // of labels; default: the first label field
    std::optional<std::vector<LabelValue>> labels;
    std::optional<std::string> key_prefix;
    std::optional<std::string> key_glob;
    std::vector<StringCondition> strings;  // empty: none
  };
  struct Split {
    uint64_t seed = 0;
    double fraction = 0;  // in [0, 1]
    bool held_out = true;  // take: "held_out" (true) or "rest"
  };

  std::vector<std::string> datasets;  // as written, at least one
  std::optional<Classes> classes;
  std::optional<std::vector<IndexEntry>> indices;
  std::optional<Where> where;
  std::optional<Split> split;
};

// Parses a view file's text; `name` (its path) prefixes every message.
// InvalidArgumentError naming the field for bad JSON, a missing or unknown
// key, a wrong type, a negative or fractional index, a range with begin >
// end, a fraction that is not a number in [0, 1], an empty list, a repeated
// class name, a `take` other than "held_out" / "rest", a version other than
// kViewVersion, a key twice in an object, text past the bounds above.
absl::StatusOr<ViewSpec> ParseViewSpec(std::string_view text, const std::string& name);

// Whether `key` matches `glob`: `*` any run of bytes, `?` one byte, every
// other byte itself (no classes, no escapes). O(key * glob) at worst.
bool GlobMatch(std::string_view glob, std::string_view key);

}  // namespace shardpack::dataset

#endif  // SHARDPACK_DATASET_VIEW_SPEC_H_
