// ReaderState's saved form (reader/reader_state.cc): the JSON text that
// docs/reader.md shows, byte for byte (read from docs/); every state
// round-trips; damaged or hostile text is an InvalidArgumentError that names
// the field and quotes its value, short.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/reader.h"
#include "tests/testing/status_matchers.h"

namespace shardpack {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::StatusIs;

// docs/reader.md, "The saved state": the example there is this state.
ReaderState Example() {
  ReaderState s;
  s.seed = 7;
  s.epoch = 3;
  s.fingerprint = 0x0123456789abcdef;
  s.segment = {3, 16, Remainder::kPartial, true, 1 << 20, 4};
  s.earlier = {{4, 10, Remainder::kPad, false, 0, 2}};
  return s;
}

constexpr std::string_view kExampleJson =
    R"({"seed":7,"epoch":3,"batch":4,"fingerprint":"0123456789abcdef","world_size":3,)"
    R"("batch_size":16,"remainder":"partial","shuffle":true,"shuffle_bytes":1048576,)"
    R"("earlier":[{"world_size":4,"batch_size":10,"remainder":"pad","shuffle":false,)"
    R"("shuffle_bytes":0,"batches":2}]})";

// The example's text with `from` (present once) replaced by `to`.
std::string Damaged(std::string_view from, std::string_view to) {
  std::string text(kExampleJson);
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << from << " is there twice";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// The message FromJson refuses `text` with (an InvalidArgumentError).
std::string Refusal(std::string_view text) {
  absl::StatusOr<ReaderState> s = ReaderState::FromJson(text);
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_)) << text;
  return s.ok() ? "" : std::string(s.status().message());
}

// The ```json block of docs/reader.md's "The saved state", or "" when the
// section or the block is not there.
std::string DocumentedJson() {
  std::ifstream in(std::filesystem::path(SHARDPACK_SOURCE_DIR) / "docs" / "reader.md");
  std::ostringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const size_t section = doc.find("\n## The saved state\n");
  const size_t open = doc.find("```json\n", section);
  if (section == std::string::npos || open == std::string::npos) return "";
  const size_t begin = open + 8, end = doc.find("\n```", begin);
  return end == std::string::npos ? "" : doc.substr(begin, end - begin);
}

TEST(ReaderStateTest, ToJsonWritesTheDocumentedText) {
  EXPECT_EQ(Example().ToJson(), kExampleJson);
  EXPECT_EQ(DocumentedJson(), kExampleJson) << "docs/reader.md, \"The saved state\"";
}

TEST(ReaderStateTest, EveryStateRoundTrips) {
  ReaderState s = Example();
  SP_ASSERT_OK_AND_ASSIGN(ReaderState back, ReaderState::FromJson(s.ToJson()));
  EXPECT_EQ(back, s);
  // The ends of every range, each remainder, no earlier segment or the most.
  s.seed = UINT64_MAX;
  s.epoch = kMaxEpoch;
  s.fingerprint = UINT64_MAX;
  s.segment = {INT32_MAX, INT32_MAX, Remainder::kDrop, false, UINT64_MAX, UINT64_MAX};
  s.earlier.clear();
  SP_ASSERT_OK_AND_ASSIGN(back, ReaderState::FromJson(s.ToJson()));
  EXPECT_EQ(back, s);
  s.earlier.assign(kMaxStateSegments, {1, 1, Remainder::kPartial, true, 0, 0});
  s.earlier.back().remainder = Remainder::kPad;
  SP_ASSERT_OK_AND_ASSIGN(back, ReaderState::FromJson(s.ToJson()));
  EXPECT_EQ(back, s);
  // Whitespace and key order are JSON's business, not the state's.
  SP_ASSERT_OK_AND_ASSIGN(back, ReaderState::FromJson(absl::StrCat(
      " {\"earlier\": [], \"batch\": 0,\n \"seed\": 1, \"epoch\": 0, \"fingerprint\": ",
      "\"0000000000000001\", \"shuffle_bytes\": 5, \"shuffle\": false, \"remainder\": \"drop\", ",
      "\"batch_size\": 2, \"world_size\": 1}\n")));
  EXPECT_EQ(back.seed, 1u);
  EXPECT_EQ(back.segment, (ReadSegment{1, 2, Remainder::kDrop, false, 5, 0}));
}

TEST(ReaderStateTest, TextThatIsNotAStateIsRefused) {
  EXPECT_THAT(Refusal(""), StartsWith("state:1:1: not valid JSON: "));
  EXPECT_THAT(Refusal(R"({"seed":7,)"), StartsWith("state:1:11: not valid JSON: "));
  EXPECT_THAT(Refusal("{\"seed\":\"\xff\"}"), StartsWith("state:1:10: not valid JSON: "));
  EXPECT_EQ(Refusal("[1,2]"), "state is [1,2]: it must be an object from ReaderState::ToJson()");
  EXPECT_EQ(Refusal("null"), "state is null: it must be an object from ReaderState::ToJson()");
  // Nested absurdly deep: refused as it is parsed, not by a recursion.
  EXPECT_EQ(Refusal(Damaged(R"("epoch":3)", absl::StrCat(R"("epoch":)", std::string(1000000, '['),
                                                          std::string(1000000, ']')))),
            "state: JSON nested more than 8 levels deep");
  // A key twice is refused, not the last one taken.
  EXPECT_EQ(Refusal(Damaged(R"("seed":7)", R"("seed":7,"seed":8)")),
            "state: key 'seed' appears twice in one object");
}

TEST(ReaderStateTest, AMissingOrUnknownKeyIsNamed) {
  EXPECT_EQ(Refusal(Damaged(R"("batch":4,)", "")),
            R"(state has no "batch" (a ReaderState::ToJson() of this version of shardpack )"
            R"(has it))");
  EXPECT_EQ(Refusal(Damaged(R"(,"batches":2)", "")),
            R"(state["earlier"][0] has no "batches" (a ReaderState::ToJson() of this version )"
            R"(of shardpack has it))");
  EXPECT_EQ(Refusal(Damaged(R"("seed":7,)", R"("seed":7,"rank":1,)")),
            R"(state has an unknown key "rank" (a ReaderState::ToJson() of this version of )"
            R"(shardpack has only seed, epoch, batch, fingerprint, world_size, batch_size, )"
            R"(remainder, shuffle, shuffle_bytes, earlier))");
  EXPECT_THAT(Refusal(Damaged(R"("batches":2)", R"("batches":2,"x":0)")),
              StartsWith(R"(state["earlier"][0] has an unknown key "x" )"));
}

TEST(ReaderStateTest, AValueOfTheWrongTypeOrPastItsRangeIsNamedAndQuoted) {
  // The example's text with `from` replaced by `to` is refused with `says`.
  struct Damage {
    std::string_view from, to, says;
  };
  const std::vector<Damage> cases = {
      {R"("epoch":3)", R"("epoch":"3")",
       R"(state["epoch"] is "3": it must be an integer from 0 to 2^63-1)"},
      {R"("batch":4)", R"("batch":4.5)",
       R"(state["batch"] is 4.5: it must be an integer from 0 to 2^64-1)"},
      {R"("seed":7)", R"("seed":true)",
       R"(state["seed"] is true: it must be an integer from 0 to 2^64-1)"},
      {R"("shuffle":true)", R"("shuffle":1)",
       R"(state["shuffle"] is 1: it must be a boolean)"},
      {R"("remainder":"partial")", R"("remainder":"Partial")",
       R"(state["remainder"] is "Partial": it must be "drop", "partial" or "pad")"},
      {R"("0123456789abcdef")", "81985529216486895",
       R"(state["fingerprint"] is 81985529216486895: it must be 16 lowercase hex digits)"},
      {R"("0123456789abcdef")", R"("0123456789ABCDEF")",
       R"(state["fingerprint"] is "0123456789ABCDEF": it must be 16 lowercase hex digits)"},
      {R"("earlier":[{"world_size":4,)", R"("earlier":{"world_size":4},"x":[{)",
       R"(state["earlier"] is {"world_size":4}: it must be an array of at most 64 objects)"},
      {R"("earlier":[{)", R"("earlier":[3,{)",
       R"(state["earlier"][0] is 3: it must be an object)"},
      {R"("remainder":"pad")", R"("remainder":null)",
       R"(state["earlier"][0]["remainder"] is null: it must be "drop", "partial" or "pad")"},
      {R"("seed":7)", R"("seed":-1)",
       R"(state["seed"] is -1: it must be an integer from 0 to 2^64-1)"},
      // Past 2^64-1 the parser holds a double: refused, never wrapped.
      {R"("seed":7)", R"("seed":18446744073709551616)",
       R"(state["seed"] is 1.8446744073709552e+19: it must be an integer from 0 to 2^64-1)"},
      {R"("epoch":3)", R"("epoch":9223372036854775808)",
       R"(state["epoch"] is 9223372036854775808: it must be an integer from 0 to 2^63-1)"},
      {R"("world_size":3)", R"("world_size":2147483648)",
       R"(state["world_size"] is 2147483648: it must be an integer from 0 to 2147483647)"},
      {R"("batch_size":10)", R"("batch_size":-10)",
       R"(state["earlier"][0]["batch_size"] is -10: it must be an integer from 0 to )"
       R"(2147483647)"},
  };
  for (const Damage& c : cases) EXPECT_EQ(Refusal(Damaged(c.from, c.to)), c.says) << c.to;
}

TEST(ReaderStateTest, TooLargeANumberOrTooManySegmentsIsRefused) {
  EXPECT_THAT(Refusal(Damaged(R"("seed":7)", absl::StrCat(R"("seed":1)", std::string(400, '0')))),
              StartsWith(R"(state: not valid JSON: )"));  // past a double's range
  std::string many;
  for (size_t i = 0; i <= kMaxStateSegments; ++i) absl::StrAppend(&many, i ? "," : "", "{}");
  EXPECT_THAT(Refusal(Damaged(R"("earlier":[{)", absl::StrCat(R"("earlier":[)", many, ",{"))),
              HasSubstr("it must be an array of at most 64 objects"));
}

TEST(ReaderStateTest, AHugeValueIsQuotedShort) {
  const std::string huge(60000, 's');
  const std::string message =
      Refusal(Damaged(R"("epoch":3)", absl::StrCat(R"("epoch":")", huge, "\"")));
  EXPECT_THAT(message, StartsWith(absl::StrCat(R"(state["epoch"] is ")", std::string(63, 's'),
                                               "... (60002 bytes): it must be")));
  EXPECT_LT(message.size(), 200u);
  EXPECT_THAT(Refusal(Damaged(R"("seed":7,)", absl::StrCat(R"("seed":7,")", huge, R"(":0,)"))),
              StartsWith(absl::StrCat(R"(state has an unknown key ")", std::string(63, 's'),
                                      "... (60002 bytes)")));
  // Past 64 KiB a string is refused as it is parsed, quoted as short.
  EXPECT_EQ(Refusal(Damaged(R"("epoch":3)", absl::StrCat(R"("epoch":")", std::string(10000000, 's'),
                                                          "\""))),
            absl::StrCat("state: a string of more than 65536 bytes ('", std::string(32, 's'),
                         "... (10000000 bytes)'), the longest a reader state may hold"));
}

}  // namespace
}  // namespace shardpack
