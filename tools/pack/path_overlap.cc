#include "tools/pack/path_overlap.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace shardpack::pack {
namespace {

namespace fs = std::filesystem;

// Absolute, symlinks resolved as far as the path exists, no "." or "..",
// no trailing separator.
fs::path Canonical(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  if (ec) return fs::path(path).lexically_normal();
  fs::path canonical = fs::weakly_canonical(absolute, ec);
  if (ec) return absolute.lexically_normal();
  // weakly_canonical keeps a trailing separator of a path that ends in "..".
  if (canonical.has_relative_path() && canonical.filename().empty()) {
    canonical = canonical.parent_path();
  }
  return canonical;
}

// Whether `inner` is `outer` or lies below it, component by component
// (so "/data/a" is not inside "/data/ab").
bool IsWithin(const fs::path& inner, const fs::path& outer) {
  auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return o == outer.end();
}

}  // namespace

absl::Status CheckOutputApartFromInputs(const std::string& output,
                                        const std::vector<InputPath>& inputs) {
  const fs::path out = Canonical(output);
  const fs::path staging = Canonical(output + ".partial");
  for (const InputPath& input : inputs) {
    std::error_code ec;
    if (!fs::exists(input.path, ec)) continue;
    const fs::path in = Canonical(input.path);
    if (in == out) {
      return absl::InvalidArgumentError(absl::StrCat(
          "output ", output, " is the input ", input.path,
          " itself: shardpack never writes over what it reads; choose another output"));
    }
    if (IsWithin(in, out) || IsWithin(in, staging)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", input.path, " lies inside the output ", output,
          " (the output folder is replaced as a whole); choose an output apart from the inputs"));
    }
    if (!input.output_may_be_inside && fs::is_directory(in, ec) && IsWithin(out, in)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "output ", output, " lies inside the input folder ", input.path,
          ": a folder shardpack reads must not receive its output (an image folder would "
          "take it for a class); choose an output outside it"));
    }
  }
  return absl::OkStatus();
}

}  // namespace shardpack::pack
