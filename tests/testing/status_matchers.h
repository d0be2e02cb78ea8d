// Status matchers for tests (Debian's Abseil ships none).
#ifndef SHARDPACK_TESTS_TESTING_STATUS_MATCHERS_H_
#define SHARDPACK_TESTS_TESTING_STATUS_MATCHERS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shardpack::testing {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

// StatusIs(code, message_matcher) for absl::Status and absl::StatusOr<T>.
MATCHER_P2(StatusIs, code, message_matcher,
           std::string("has code ") + absl::StatusCodeToString(code)) {
  const absl::Status& s = GetStatus(arg);
  *result_listener << "status is " << s.ToString();
  return s.code() == code &&
         ::testing::ExplainMatchResult(message_matcher, std::string(s.message()),
                                       result_listener);
}

MATCHER(IsOk, "is OK") {
  const absl::Status& s = GetStatus(arg);
  *result_listener << "status is " << s.ToString();
  return s.ok();
}

}  // namespace shardpack::testing

#define SP_EXPECT_OK(expr) EXPECT_THAT((expr), ::shardpack::testing::IsOk())
#define SP_ASSERT_OK(expr) ASSERT_THAT((expr), ::shardpack::testing::IsOk())
#define SP_ASSERT_OK_AND_ASSIGN(lhs, expr) \
  SP_ASSERT_OK_AND_ASSIGN_IMPL_(SP_STATUS_CONCAT_(sp_test_or_, __LINE__), lhs, expr)
#define SP_ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  ASSERT_THAT(tmp, ::shardpack::testing::IsOk());     \
  lhs = *std::move(tmp)

#endif  // SHARDPACK_TESTS_TESTING_STATUS_MATCHERS_H_
