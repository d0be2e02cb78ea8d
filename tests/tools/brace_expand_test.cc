// WebDataset shard patterns, expanded as WebDataset's braceexpand expands
// them, and the patterns refused.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tools/pack/field_commands.h"

namespace shardpack::pack {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::StatusIs;

TEST(BraceExpandTest, RangesAndListsAsBraceexpandGivesThem) {
  SP_ASSERT_OK_AND_ASSIGN(auto names, ExpandBraces("data/shard-{000008..000011}.tar"));
  EXPECT_THAT(names, ElementsAre("data/shard-000008.tar", "data/shard-000009.tar",
                                 "data/shard-000010.tar", "data/shard-000011.tar"));
  SP_ASSERT_OK_AND_ASSIGN(auto both, ExpandBraces("{a,b}/{8..10}.tar"));
  EXPECT_THAT(both, ElementsAre("a/8.tar", "a/9.tar", "a/10.tar", "b/8.tar", "b/9.tar", "b/10.tar"));
  SP_ASSERT_OK_AND_ASSIGN(auto plain, ExpandBraces("one.tar"));
  EXPECT_THAT(plain, ElementsAre("one.tar"));
}

TEST(BraceExpandTest, PatternsThatDoNotExpandAreRefusedNamingThem) {
  for (const char* bad : {"{1..", "a}.tar", "{3..1}.tar", "{1..x}.tar", "{-1..2}.tar",
                          "{0..99999999}.tar"}) {
    EXPECT_THAT(ExpandBraces(bad), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(bad)))
        << bad;
  }
  EXPECT_THAT(ExpandBraces("{0..999}{0..9999}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than 1000000 names")));
}

}  // namespace
}  // namespace shardpack::pack
