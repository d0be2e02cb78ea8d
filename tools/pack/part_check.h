// What `merge` checks before it links anything: that the datasets given are
// the parts 1..N of one pack, each once.
#ifndef SHARDPACK_TOOLS_PACK_PART_CHECK_H_
#define SHARDPACK_TOOLS_PACK_PART_CHECK_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "shardpack/manifest.h"
#include "writer/pack_identity.h"

namespace shardpack::pack {

// One part as its manifest describes it.
struct PartDataset {
  std::string path;
  Manifest manifest;
  writer::PackIdentity pack;  // the manifest's "pack" object
  uint64_t index = 0;  // 1-based
  uint64_t count = 0;
};

// Reads and checks one part: its manifest parses; its "pack" object parses
// as a PackIdentity (so part.index is in 1..part.count, part.count in
// 1..2^32-1) that has a part and an input (a pack's part) or a job (a
// Writer's part), and no "merged"; a pack's part holds no more records than
// its share of the input's items; each shard file is a
// regular file of the size the manifest says (one lstat each: no bytes are
// read). A Writer's part of an open count (kOpenPartCount) takes `count` as
// its N, and needs it; `count`, when given, must be a closed part's N too.
// FailedPreconditionError naming the path and what is wrong.
absl::StatusOr<PartDataset> ReadPart(const std::string& path,
                                     std::optional<uint64_t> count = std::nullopt);

// Checks that `parts` (any order) are parts 1..N of one pack: one N, one
// schema, and identities equal as parts (PackComparison::kAsParts: so input
// fingerprint or job, seed, every option and the tool version match); then that
// each index 1..N is given exactly once. The first difference is a
// FailedPreconditionError naming both parts and what differs. Returns the
// parts sorted by index.
absl::StatusOr<std::vector<const PartDataset*>> CheckParts(const std::vector<PartDataset>& parts);

// "part 3 of 8 (PATH)", for messages.
std::string PartName(const PartDataset& p);

}  // namespace shardpack::pack

#endif  // SHARDPACK_TOOLS_PACK_PART_CHECK_H_
