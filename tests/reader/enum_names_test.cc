// Enum names (common/enum_names.h): every named enum of the public headers
// round-trips through its name, parses nothing else, and says which names
// exist.
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "common/enum_names.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/manifest.h"
#include "shardpack/reader.h"
#include "shardpack/record.h"
#include "tests/testing/status_matchers.h"

namespace shardpack {
namespace {

using ::testing::HasSubstr;
using testing::StatusIs;

enum class Fruit { kApple, kPear };
constexpr common::EnumName<Fruit> kFruits[] = {{Fruit::kApple, "apple"},
                                                 {Fruit::kPear, "pear"}};

TEST(EnumNamesTest, NamesAndParsesExactlyOrInAnyCase) {
  EXPECT_EQ(common::NameIn(kFruits, Fruit::kPear), "pear");
  EXPECT_EQ(*common::ParseIn(kFruits, "fruit", "apple"), Fruit::kApple);
  EXPECT_THAT(common::ParseIn(kFruits, "fruit", "Apple"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown fruit 'Apple' (apple, pear)")));
  EXPECT_EQ(*common::ParseIn(kFruits, "fruit", "PEAR", common::Case::kAny), Fruit::kPear);
}

TEST(EnumNamesTest, AValueOutsideTheTableIsUnknown) {
  EXPECT_EQ(common::NameIn(kFruits, static_cast<Fruit>(7)), "unknown");
  EXPECT_EQ(EncodingName(static_cast<Encoding>(200)), "unknown");
  EXPECT_EQ(BackendName(static_cast<Backend>(9)), "unknown");
}

TEST(EnumNamesTest, ALongOrEmptyNameIsBoundedInTheMessage) {
  const std::string long_name(10'000, 'x');
  absl::StatusOr<Fruit> r = common::ParseIn(kFruits, "fruit", long_name);
  ASSERT_FALSE(r.ok());
  EXPECT_LT(r.status().message().size(), 200u);
  EXPECT_THAT(r.status().message(), HasSubstr("(10000 bytes)"));
  EXPECT_THAT(common::ParseIn(kFruits, "fruit", ""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown fruit ''")));
}

// Names stored in files parse exactly: a manifest saying "RAW" is not ours.
TEST(EnumNamesTest, FileNamesRoundTripAndParseExactly) {
  for (Encoding e : {Encoding::kRaw, Encoding::kJpeg}) EXPECT_EQ(*ParseEncoding(EncodingName(e)), e);
  for (Layout l : {Layout::kHWC, Layout::kCHW}) EXPECT_EQ(*ParseLayout(LayoutName(l)), l);
  for (Backend b : kBackends) EXPECT_EQ(*ParseBackend(BackendName(b)), b);
  EXPECT_THAT(ParseEncoding("RAW"), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("unknown encoding 'RAW' (raw, jpeg)")));
  EXPECT_THAT(ParseLayout("whc"), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("unknown layout 'whc' (hwc, chw)")));
  EXPECT_THAT(ParseBackend("leveldb"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown backend 'leveldb' (shard, lmdb, hdf5)")));
}

// Option values given by people parse in any case (their round trip:
// reader_test.cc, ReaderOptionNamesTest).
TEST(EnumNamesTest, OptionNamesParseInAnyCase) {
  EXPECT_EQ(*ParseOutputLayout("NCHW"), OutputLayout::kNCHW);
  EXPECT_EQ(*ParseDType("Float32"), DType::kFloat32);
  EXPECT_EQ(*ParseIoEngine("URING"), IoEngine::kUring);
}

}  // namespace
}  // namespace shardpack
