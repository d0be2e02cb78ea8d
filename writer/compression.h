// A `.shard` block compression as text: what `--compress` takes, the pack
// identity's "compression" records and shardpack.Writer's `compression`.
#ifndef SHARDPACK_WRITER_COMPRESSION_H_
#define SHARDPACK_WRITER_COMPRESSION_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "shardpack/shard.h"

namespace shardpack::writer {

// zstd's own range of levels (ZSTD_minCLevel() .. ZSTD_maxCLevel() of
// libzstd 1.5; negative levels trade ratio for speed): zstd would clamp a
// level outside it in silence.
inline constexpr int kMinZstdLevel = -131072;
inline constexpr int kMaxZstdLevel = 22;

// "none", "zstd" (level 3) or "zstd:LEVEL" with LEVEL in
// kMinZstdLevel..kMaxZstdLevel into `shard`'s compression and level.
// InvalidArgumentError "'zstd:99' is not a compression: none, or
// zstd[:LEVEL] with LEVEL in -131072..22 (default 3)" otherwise.
absl::Status ParseCompress(std::string_view text, ShardWriterOptions* shard);

// The inverse: "none" or "zstd:<level>".
std::string CompressionName(const ShardWriterOptions& shard);

}  // namespace shardpack::writer

#endif  // SHARDPACK_WRITER_COMPRESSION_H_
