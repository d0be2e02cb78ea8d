// The flipped-byte sweep the hand-written decoders' tests share: every byte
// of every file XORed with each of `flips`, decoded with `decode`. A decode
// may succeed (within spec.max_pixels) or fail with DataLoss or
// InvalidArgument naming the file; never a signal.
#ifndef SHARDPACK_TESTS_CODEC_FLIP_SWEEP_H_
#define SHARDPACK_TESTS_CODEC_FLIP_SWEEP_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "codec/decode.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shardpack::codec {

using DecodeFn = absl::StatusOr<PixelView> (*)(ByteSpan, std::string_view, const DecodeSpec&,
                                               DecodeBuffers*);

// Returns how many damaged files were refused.
inline int SweepFlippedBytes(const std::vector<std::string>& files,
                             std::initializer_list<uint8_t> flips, DecodeFn decode,
                             std::string_view name) {
  DecodeBuffers buffers;
  DecodeSpec spec;
  spec.max_pixels = 1 << 20;
  int errors = 0;
  for (const std::string& file : files) {
    for (size_t i = 0; i < file.size(); ++i) {
      for (uint8_t v : flips) {
        std::string damaged = file;
        damaged[i] = static_cast<char>(v ^ static_cast<uint8_t>(file[i]));
        auto r = decode(ByteSpan(reinterpret_cast<const uint8_t*>(damaged.data()), damaged.size()),
                        name, spec, &buffers);
        if (r.ok()) {
          EXPECT_LE(uint64_t{r->width} * r->height, spec.max_pixels);
          continue;
        }
        ++errors;
        EXPECT_THAT(std::string(r.status().message()), ::testing::StartsWith(std::string(name)));
        EXPECT_TRUE(r.status().code() == absl::StatusCode::kDataLoss ||
                    r.status().code() == absl::StatusCode::kInvalidArgument)
            << r.status();
      }
    }
  }
  return errors;
}

}  // namespace shardpack::codec

#endif  // SHARDPACK_TESTS_CODEC_FLIP_SWEEP_H_
