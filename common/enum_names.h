// The one way an enum of ours gets its names and is parsed from them: a
// constexpr table of (value, name) in declaration order.
//
//   constexpr EnumName<Remainder> kRemainders[] = {
//       {Remainder::kDrop, "drop"}, {Remainder::kPartial, "partial"}, ...};
//   std::string_view RemainderName(Remainder r) { return NameIn(kRemainders, r); }
//   absl::StatusOr<Remainder> ParseRemainder(std::string_view name) {
//     return ParseIn(kRemainders, "remainder", name, Case::kAny);
//   }
//
// Names stored in files (encodings, layouts, backends) parse exactly; option
// values given by people (reader options, flags) in any ASCII case.
#ifndef SHARDPACK_COMMON_ENUM_NAMES_H_
#define SHARDPACK_COMMON_ENUM_NAMES_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/errors.h"

namespace shardpack::common {

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

enum class Case { kExact, kAny };

// The name of `e`, or "unknown" for a value outside the table (a damaged or
// newer value cast into the enum).
template <typename E, size_t N>
constexpr std::string_view NameIn(const EnumName<E> (&names)[N], E e) {
  for (const auto& [value, name] : names) {
    if (value == e) return name;
  }
  return "unknown";
}

// The value named `name`, or InvalidArgumentError "unknown <what> '<name>'
// (<every name>)" with the name bounded (Excerpt).
template <typename E, size_t N>
absl::StatusOr<E> ParseIn(const EnumName<E> (&names)[N], std::string_view what,
                          std::string_view name, Case match = Case::kExact) {
  for (const auto& [value, n] : names) {
    if (match == Case::kExact ? n == name : absl::EqualsIgnoreCase(AsAbsl(n), AsAbsl(name))) {
      return value;
    }
  }
  std::string listed;  // only for the error
  for (const auto& entry : names) {
    absl::StrAppend(&listed, listed.empty() ? "" : ", ", AsAbsl(entry.name));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown ", AsAbsl(what), " '", Excerpt(name), "' (", listed, ")"));
}

}  // namespace shardpack::common

#endif  // SHARDPACK_COMMON_ENUM_NAMES_H_
