// Sizes written by people: flags (--block-size 4MiB) and the environment
// (SHARDPACK_CACHE_BYTES=200GiB) take the same text.
#ifndef SHARDPACK_COMMON_SIZE_H_
#define SHARDPACK_COMMON_SIZE_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace shardpack::common {

// Parses "256MiB", "4M", "1.5GB", "4096" into bytes. Binary (KiB, MiB, GiB,
// K, M, G) and decimal (kB, MB, GB) suffixes, in any case; no suffix means
// bytes. InvalidArgumentError for anything else, and for 2^64 bytes or more.
absl::StatusOr<uint64_t> ParseSize(std::string_view text);

}  // namespace shardpack::common

#endif  // SHARDPACK_COMMON_SIZE_H_
