// Excerpt, OneLine and WithMessage (common/errors.h): text from a user or a
// file bounded for a message, and a message reworded.
#include <string>

#include "common/errors.h"
#include "gtest/gtest.h"

namespace shardpack::format {
namespace {

TEST(ExcerptTest, ShortTextIsItselfLongTextItsStartAndItsLength) {
  EXPECT_EQ(common::Excerpt("abc"), "abc");
  EXPECT_EQ(common::Excerpt(std::string(64, 'x')), std::string(64, 'x'));
  EXPECT_EQ(common::Excerpt(std::string(65, 'x')), std::string(64, 'x') + "... (65 bytes)");
  EXPECT_EQ(common::Excerpt(std::string(10 << 20, 'x'), 4), "xxxx... (10485760 bytes)");
}

TEST(ExcerptTest, NulBytesStayAndNoUtf8CharacterIsCut) {
  EXPECT_EQ(common::Excerpt(std::string("a\0b", 3)), std::string("a\0b", 3));
  // "\xc3\xa9" is one character: a cut after its first byte goes before it.
  EXPECT_EQ(common::Excerpt("ab\xc3\xa9zzz", 3), "ab... (7 bytes)");
  EXPECT_EQ(common::Excerpt("ab\xc3\xa9zzz", 4), "ab\xc3\xa9... (7 bytes)");
  // A 4-byte character cut anywhere inside goes whole.
  EXPECT_EQ(common::Excerpt("a\xf0\x9f\x98\x80zz", 4), "a... (7 bytes)");
}

// A raw newline from a manifest once reached a Python exception: OneLine is
// what the Python module raises.
TEST(OneLineTest, ControlBytesAreEscapedEverythingElseKept) {
  EXPECT_EQ(common::OneLine("m.json.shards[0].path: 'a\nb\tc\rd' is not"),
            "m.json.shards[0].path: 'a\\nb\\tc\\rd' is not");
  EXPECT_EQ(common::OneLine(std::string("\0\x1b\x7f\\ caf\xc3\xa9", 10)),
            "\\x00\\x1b\\x7f\\ caf\xc3\xa9");
}

// A message reworded keeps the error's code and what it carried: the
// offset DataLossAt attached is still there for a damage report.
TEST(WithMessageTest, KeepsTheCodeAndTheOffset) {
  const absl::Status damaged = common::DataLossAt("a.shard", 4096, "block CRC-32C mismatch");
  const absl::Status named = common::WithMessage(
      damaged, std::string("record 7: ") + std::string(damaged.message()));
  EXPECT_EQ(named.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(named.message(), "record 7: a.shard @4096: block CRC-32C mismatch");
  EXPECT_EQ(common::ErrorOffset(named), 4096u);
  EXPECT_TRUE(common::WithMessage(absl::OkStatus(), "nothing").ok());
  const absl::Status plain = common::WithMessage(absl::NotFoundError("x"), "y: x");
  EXPECT_EQ(plain.code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(common::ErrorOffset(plain).has_value());
}

}  // namespace
}  // namespace shardpack::format
