// What every tool promises when it fails, checked the same way by every CLI
// test.
#ifndef SHARDPACK_TESTS_TESTING_CLI_EXPECT_H_
#define SHARDPACK_TESTS_TESTING_CLI_EXPECT_H_

#include <string>
#include <vector>

#include "tests/testing/subprocess.h"

namespace shardpack::testing {

// `text` split at '\n', without the empty piece after a final newline.
std::vector<std::string> Lines(const std::string& text);

// The failure contract: exit 1 and one line (newline-terminated) on stderr, "<tool>: ..."
// containing `needle`.
void ExpectOneLineFailure(const RunResult& r, const std::string& tool, const std::string& needle);

}  // namespace shardpack::testing

#endif  // SHARDPACK_TESTS_TESTING_CLI_EXPECT_H_
