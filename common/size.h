// Sizes and numbers written by people: flags (--block-size 4MiB), the
// environment (SHARDPACK_CACHE_BYTES=200GiB) and type texts ("f32[n,4]")
// take the same text.
#ifndef SHARDPACK_COMMON_SIZE_H_
#define SHARDPACK_COMMON_SIZE_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"

namespace shardpack::common {

// Parses "256MiB", "4M", "1.5GB", "4096" into bytes. Binary (KiB, MiB, GiB,
// K, M, G) and decimal (kB, MB, GB) suffixes, in any case; no suffix means
// bytes. InvalidArgumentError for anything else, and for 2^64 bytes or more.
absl::StatusOr<uint64_t> ParseSize(std::string_view text);

// `text` as a whole number in [min, max]: decimal digits alone (leading
// zeros allowed, no sign, no space); nullopt for anything else. The one
// reading of a number typed on a command line, also inside a flag's value
// ("64x64", "3/8") or a type's text ("f32[n,4]").
std::optional<uint64_t> ParseWholeNumber(std::string_view text, uint64_t min, uint64_t max);

}  // namespace shardpack::common

#endif  // SHARDPACK_COMMON_SIZE_H_
