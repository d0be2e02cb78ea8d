// A shard written in memory by a test: a failure to write it fails the test.
#ifndef SHARDPACK_TESTS_TESTING_WRITE_SHARD_H_
#define SHARDPACK_TESTS_TESTING_WRITE_SHARD_H_

#include <string>
#include <vector>

#include "shardpack/shard.h"
#include "tests/testing/shard_fixtures.h"

namespace shardpack::testing {

// EncodeShard's bytes; a failure is a test failure (and gives no bytes).
std::string WriteShard(const std::vector<OwnedRecord>& records,
                       const ShardWriterOptions& options = {});

}  // namespace shardpack::testing

#endif  // SHARDPACK_TESTS_TESTING_WRITE_SHARD_H_
