// PNG fixtures made at test time: the one place tests encode PNGs (libpng's
// simplified API). A failure to encode is a test failure.
#ifndef SHARDPACK_TESTS_TESTING_PNG_FIXTURES_H_
#define SHARDPACK_TESTS_TESTING_PNG_FIXTURES_H_

#include <cstdint>
#include <vector>

namespace shardpack::testing {

// `pixels` (width x height, interleaved, rows packed; 1 channel gray, 3 RGB
// or 4 RGBA) as a PNG file's bytes.
std::vector<uint8_t> EncodePng(const std::vector<uint8_t>& pixels, uint32_t width,
                               uint32_t height, int channels);

}  // namespace shardpack::testing

#endif  // SHARDPACK_TESTS_TESTING_PNG_FIXTURES_H_
