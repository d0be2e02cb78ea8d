#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "shardpack/record.h"

#include "common/enum_names.h"

namespace shardpack {

namespace {

using common::EnumName;
constexpr EnumName<Encoding> kEncodings[] = {{Encoding::kRaw, "raw"}, {Encoding::kJpeg, "jpeg"}};
constexpr EnumName<Layout> kLayouts[] = {{Layout::kHWC, "hwc"}, {Layout::kCHW, "chw"}};

}  // namespace

std::string_view EncodingName(Encoding e) { return common::NameIn(kEncodings, e); }
std::string_view LayoutName(Layout l) { return common::NameIn(kLayouts, l); }
absl::StatusOr<Encoding> ParseEncoding(std::string_view name) {
  return common::ParseIn(kEncodings, "encoding", name);
}
absl::StatusOr<Layout> ParseLayout(std::string_view name) {
  return common::ParseIn(kLayouts, "layout", name);
}

void Labels::Full() {
  std::fprintf(stderr, "shardpack: Labels::push_back on a full Labels (kMaxLabels = %d): a bug of "
               "the caller's\n", kMaxLabels);
  std::abort();
}

bool SameContents(const Record& a, const Record& b) {
  return a.key == b.key && a.labels == b.labels && a.image == b.image &&
         std::ranges::equal(a.payload, b.payload) && std::ranges::equal(a.extra, b.extra);
}

}  // namespace shardpack
