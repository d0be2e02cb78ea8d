// Records and shards made by tests and fuzz seeders, in memory. No
// GoogleTest here: the fuzzers link this too (write_shard.h has the
// test-failing WriteShard).
#ifndef SHARDPACK_TESTS_TESTING_SHARD_FIXTURES_H_
#define SHARDPACK_TESTS_TESTING_SHARD_FIXTURES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "shardpack/fields.h"
#include "shardpack/record.h"
#include "shardpack/shard.h"

namespace shardpack::testing {

// A record that owns its bytes; record() views them.
struct OwnedRecord {
  std::string key;
  Labels labels;
  ImageInfo image;
  std::vector<uint8_t> payload;
  std::vector<uint8_t> extra;

  Record record() const { return Record{key, labels, image, payload, extra}; }
};

// Deterministic pseudo-random bytes (splitmix64 of seed and position).
std::vector<uint8_t> PatternBytes(uint64_t seed, size_t n);

// A raw image record of the given shape with pattern pixels.
OwnedRecord RawRecord(uint64_t i, uint32_t h, uint32_t w, uint8_t c,
                      Layout layout = Layout::kHWC);

// A "jpeg" record holding `n` pattern bytes (the format does not decode).
OwnedRecord JpegLikeRecord(uint64_t i, size_t n);

// The bytes of a CIFAR-10 binary file of n records: record i has label
// i % 10 and pixel byte j equal to (7 i + 13 j) mod 256.
std::string Cifar10Bytes(int n);

// A field declaration of `name` and `type`, its other members as
// shardpack/fields.h defaults them (set an image's, a label's classes, an
// array's dtype and shape after).
Field FieldOf(std::string name, FieldType type, bool optional = false);

// Writes `records` into a shard in memory and returns its bytes.
absl::StatusOr<std::string> EncodeShard(const std::vector<OwnedRecord>& records,
                                        const ShardWriterOptions& options = {});

}  // namespace shardpack::testing

#endif  // SHARDPACK_TESTS_TESTING_SHARD_FIXTURES_H_
