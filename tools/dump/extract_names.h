// File names of extracted records: "<index>_<key>.<ext>", safe whatever the
// key holds.
#ifndef SHARDPACK_TOOLS_DUMP_EXTRACT_NAMES_H_
#define SHARDPACK_TOOLS_DUMP_EXTRACT_NAMES_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace shardpack::dump {

// Most bytes of the key kept in a file name.
inline constexpr size_t kMaxKeyInName = 100;

// Digits of the largest index of a dataset of `records` records (at least 1),
// so that extracted names sort in index order.
int IndexDigits(uint64_t records);

// The key's part of a file name: a trailing image extension (.jpg, .jpeg,
// .png, .ppm, .pgm, .raw, any case) dropped, every byte outside
// [A-Za-z0-9._-] replaced by '_', at most kMaxKeyInName bytes.
std::string SanitizeKey(std::string_view key);

// "<index zero-padded to `digits`>_<SanitizeKey(key)>.<extension>", or
// "<index>.<extension>" when nothing of the key is left. Never holds '/',
// never starts with '.', at most digits + kMaxKeyInName + 6 bytes.
std::string ExtractFileName(uint64_t index, int digits, std::string_view key,
                            std::string_view extension);

}  // namespace shardpack::dump

#endif  // SHARDPACK_TOOLS_DUMP_EXTRACT_NAMES_H_
