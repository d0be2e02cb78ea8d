#include "tests/testing/write_shard.h"

#include "gtest/gtest.h"

namespace shardpack::testing {

std::string WriteShard(const std::vector<OwnedRecord>& records, const ShardWriterOptions& options) {
  absl::StatusOr<std::string> bytes = EncodeShard(records, options);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *std::move(bytes) : std::string();
}

}  // namespace shardpack::testing
