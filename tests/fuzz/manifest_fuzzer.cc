// libFuzzer target for ParseManifest. A malformed manifest is a DataLossError
// (an unsupported major version a FailedPreconditionError) whose message
// starts with the manifest's name; nothing crashes or throws. A manifest that
// parses survives SerializeManifest -> ParseManifest unchanged, and its
// serialization is a fixed point.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "shardpack/manifest.h"

namespace {

constexpr char kName[] = "fuzz.json";

void Expect(bool ok, std::string_view what, std::string_view detail = {}) {
  if (ok) return;
  std::fprintf(stderr, "manifest_fuzzer: invariant broken: %.*s%s%.*s\n",
               static_cast<int>(what.size()), what.data(), detail.empty() ? "" : ": ",
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<shardpack::Manifest> parsed = shardpack::ParseManifest(text, kName);
  if (!parsed.ok()) {
    const absl::Status& s = parsed.status();
    std::string_view m(s.message().data(), s.message().size());
    Expect(s.code() == absl::StatusCode::kDataLoss ||
               s.code() == absl::StatusCode::kFailedPrecondition,
           "error code", s.ToString());
    Expect(m.starts_with(kName), "error does not name the manifest", m);
    return 0;
  }
  Expect(parsed->version_major == shardpack::kManifestMajorVersion, "major version accepted");
  std::string text2 = shardpack::SerializeManifest(*parsed);
  absl::StatusOr<shardpack::Manifest> reparsed = shardpack::ParseManifest(text2, kName);
  Expect(reparsed.ok(), "a serialized manifest does not parse", reparsed.status().ToString());
  Expect(*reparsed == *parsed, "round trip changes the manifest", text2);
  Expect(shardpack::SerializeManifest(*reparsed) == text2, "serialization is not a fixed point",
         text2);
  return 0;
}
