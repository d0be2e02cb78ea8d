// libFuzzer target for a view file's parser (dataset/view_spec.h) and the
// key glob. A bad view is an InvalidArgumentError whose message starts with
// the file's name; nothing crashes or throws. A view that parses holds what
// the parser promises: datasets and lists not empty, ranges ordered, a
// fraction in [0, 1]. GlobMatch ends on any glob and key (the input split
// in two at its first NUL), "*" matches everything and any text matches
// itself.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "dataset/view_spec.h"

namespace {

constexpr char kName[] = "fuzz.view.json";

void Expect(bool ok, std::string_view what, std::string_view detail = {}) {
  if (ok) return;
  std::fprintf(stderr, "view_fuzzer: invariant broken: %.*s%s%.*s\n",
               static_cast<int>(what.size()), what.data(), detail.empty() ? "" : ": ",
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

void CheckSpec(const shardpack::dataset::ViewSpec& spec) {
  Expect(!spec.datasets.empty(), "no dataset accepted");
  if (spec.classes) Expect(!spec.classes->names.empty(), "empty class list accepted");
  if (spec.indices) {
    Expect(!spec.indices->empty(), "empty index list accepted");
    for (const auto& e : *spec.indices) {
      Expect(e.begin <= e.end && (!e.single || e.begin == e.end), "range out of order");
    }
  }
  if (spec.where) {
    Expect(spec.where->labels || spec.where->key_prefix || spec.where->key_glob ||
               !spec.where->strings.empty(),
           "where without a condition accepted");
    for (const auto& c : spec.where->strings) {
      Expect(c.in || c.prefix || c.glob, "a string condition without a test accepted");
    }
    if (spec.where->labels) Expect(!spec.where->labels->empty(), "empty label list accepted");
  }
  if (spec.split) {
    Expect(std::isfinite(spec.split->fraction) && spec.split->fraction >= 0 &&
               spec.split->fraction <= 1,
           "fraction outside [0, 1] accepted");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<shardpack::dataset::ViewSpec> spec =
      shardpack::dataset::ParseViewSpec(text, kName);
  if (spec.ok()) {
    CheckSpec(*spec);
  } else {
    const absl::Status& s = spec.status();
    const std::string_view m(s.message().data(), s.message().size());
    Expect(s.code() == absl::StatusCode::kInvalidArgument, "error code", s.ToString());
    Expect(m.starts_with(kName), "error does not name the view file", m);
  }
  const size_t nul = text.find('\0');
  const std::string_view glob = text.substr(0, nul);
  const std::string_view key = nul == std::string_view::npos ? text : text.substr(nul + 1);
  (void)shardpack::dataset::GlobMatch(glob, key);
  Expect(shardpack::dataset::GlobMatch("*", key), "'*' does not match a key");
  // Every byte of a glob matches itself ('*' the run of itself, '?' one byte).
  Expect(shardpack::dataset::GlobMatch(key, key), "a glob does not match its own text");
  return 0;
}
