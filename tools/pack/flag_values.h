// shardpack's flag values that hold more than one number ("3/8", "64x64",
// "zstd:19"): each parsed in one place, for the CLI11 check (a bad value is a
// usage error, exit 2, naming the value and what is accepted) and for the
// options built from it.
#ifndef SHARDPACK_TOOLS_PACK_FLAG_VALUES_H_
#define SHARDPACK_TOOLS_PACK_FLAG_VALUES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "shardpack/shard.h"

namespace shardpack::pack {

// --part "I/N" with 1 <= I <= N <= kMaxParts (shardpack/writer.h) into a
// 0-based index and a count. InvalidArgumentError "'3/2' is not a part I/N
// with 1 <= I <= N <= 4294967295" otherwise.
absl::Status ParsePart(const std::string& text, uint32_t* index, uint32_t* count);

// --size "WxH" of --mode raw: each side in 1..65500 (codec::kMaxJpegSide)
// and W x H at most datasets::ImageOptions' max_pixels (2^28): the limits
// every image has, so that no raw output is refused as too large later.
absl::Status ParseRawSize(const std::string& text, uint32_t* width, uint32_t* height);

// CLI11 checks: "" when the text parses, else the parser's message.
std::string CheckPart(const std::string& text);  // also takes "auto"
std::string CheckCompress(const std::string& text);  // writer::ParseCompress
std::string CheckRawSize(const std::string& text);

}  // namespace shardpack::pack

#endif  // SHARDPACK_TOOLS_PACK_FLAG_VALUES_H_
