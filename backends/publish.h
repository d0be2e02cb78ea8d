// What every backend's shard sink shares: the temporary name a shard is
// written under, and publishing it (fsync, checksum, rename, fsync of the
// directory) so that a half-written shard never reads as complete.
#ifndef SHARDPACK_BACKENDS_PUBLISH_H_
#define SHARDPACK_BACKENDS_PUBLISH_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "shardpack/manifest.h"

namespace shardpack::backends {

// "<path>.partial": where a shard is written until it is complete.
std::string PartialPath(const std::string& path);

// Removes `path` if it exists (a stale partial file of an earlier run).
void RemoveIfExists(const std::string& path);

// Fsyncs `partial`, computes its size and CRC-32C (reading it back: the
// backend libraries write through their own files), renames it to `path`
// and fsyncs the directory. The entry's path is left empty.
absl::StatusOr<ShardEntry> PublishShardFile(const std::string& partial, const std::string& path,
                                            uint64_t records);

// The metadata a shard of another backend carries about itself: a manifest
// of one shard (its backend, schema and pack parameters; the shard's record
// count; bytes and crc32c 0, unknown while it is written), serialized as the
// manifest is. docs/format.md, "Shard metadata".
std::string ShardMetaJson(const Manifest& dataset, const std::string& shard_name,
                          uint64_t records);

// Parses ShardMetaJson text; `where` prefixes errors. DataLossError when it
// is not a manifest of exactly one shard of `backend`.
absl::StatusOr<Manifest> ParseShardMeta(std::string_view text, std::string_view where,
                                        Backend backend);

}  // namespace shardpack::backends

#endif  // SHARDPACK_BACKENDS_PUBLISH_H_
