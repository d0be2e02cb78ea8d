// The gate before liblmdb and libhdf5 (backends/shard_gate.h): precise
// errors when a shard's size or CRC-32C disagrees with its manifest entry,
// the entry of a manifest beside a lone file, and vetting of files nobody
// checksummed.
#include "backends/shard_gate.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/dataset.h"
#include "tests/backends/backend_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

namespace fs = std::filesystem;
using ::shardpack::testing::StatusIs;
using ::testing::HasSubstr;

class ShardGateTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    std::vector<testing::OwnedRecord> records;
    for (int i = 0; i < 5; ++i) records.push_back(testing::JpegLikeRecord(i, 100 + 17 * i));
    auto m = testing::WriteDataset(tmp_.path(), GetParam(), records, testing::JpegSchema());
    ASSERT_TRUE(m.ok()) << m.status();
    entry_ = m->shards[0];
    shard_ = tmp_.Join(entry_.path);
  }
  absl::Status Open(const std::optional<ShardEntry>& expected) {
    return backends::OpenShardScanner(shard_, GetParam(), expected).status();
  }
  void Append(const std::string& bytes) {
    std::ofstream(shard_, std::ios::binary | std::ios::app) << bytes;
  }

  testing::TempDir tmp_;
  ShardEntry entry_;
  std::string shard_;
};

TEST_P(ShardGateTest, IntactShardPassesWithItsEntryAndAlone) {
  SP_EXPECT_OK(Open(entry_));
  SP_EXPECT_OK(Open(std::nullopt));  // vetted in a child
  SP_ASSERT_OK_AND_ASSIGN(backends::FileDigest d, backends::DigestFile(shard_));
  EXPECT_EQ(d.bytes, entry_.bytes);
  EXPECT_EQ(d.crc32c, entry_.crc32c);
}

TEST_P(ShardGateTest, TruncatedShardNamesBothSizes) {
  fs::resize_file(shard_, entry_.bytes - 1);
  EXPECT_THAT(Open(entry_), StatusIs(absl::StatusCode::kDataLoss,
                                     HasSubstr(absl::StrFormat("%s: %d bytes, the manifest says %d",
                                                               shard_, entry_.bytes - 1,
                                                               entry_.bytes))));
}

TEST_P(ShardGateTest, ShardGrownByOneByteNamesBothSizes) {
  Append("x");
  EXPECT_THAT(Open(entry_), StatusIs(absl::StatusCode::kDataLoss,
                                     HasSubstr(absl::StrFormat("%s: %d bytes, the manifest says %d",
                                                               shard_, entry_.bytes + 1,
                                                               entry_.bytes))));
}

TEST_P(ShardGateTest, WrongCrcInTheManifestNamesBothCrcs) {
  ShardEntry wrong = entry_;
  wrong.crc32c ^= 0x1000;
  EXPECT_THAT(Open(wrong),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr(absl::StrFormat("%s: CRC-32C of the whole file is %08x, the "
                                                 "manifest says %08x",
                                                 shard_, entry_.crc32c, wrong.crc32c))));
}

TEST_P(ShardGateTest, LoneFileUsesTheEntryOfTheManifestBesideIt) {
  SP_ASSERT_OK_AND_ASSIGN(backends::LoneShard lone, backends::OpenLoneShard(shard_, GetParam()));
  ASSERT_TRUE(lone.entry.has_value());
  EXPECT_EQ(*lone.entry, entry_);
  EXPECT_EQ(lone.manifest.shards[0].crc32c, entry_.crc32c);
  EXPECT_EQ(lone.manifest.shards[0].bytes, entry_.bytes);
  Append("x");
  EXPECT_THAT(backends::OpenLoneShard(shard_, GetParam()),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("bytes, the manifest says")));
  // Without the manifest, the same file is vetted (and the appended byte
  // is harmless to both libraries).
  fs::remove(tmp_.Join(kManifestFileName));
  SP_ASSERT_OK_AND_ASSIGN(lone, backends::OpenLoneShard(shard_, GetParam()));
  EXPECT_FALSE(lone.entry.has_value());
  EXPECT_EQ(lone.manifest.shards[0].records, 5u);
}

TEST_P(ShardGateTest, VettingReturnsTheChildsErrorNamingTheFile) {
  const std::string junk = tmp_.Join("junk");
  std::ofstream(junk) << std::string(20000, 'j');
  EXPECT_THAT(backends::VetShardFile(junk, GetParam()),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr(junk)));
  EXPECT_THAT(backends::VetShardFile(tmp_.Join("missing"), GetParam()),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(tmp_.Join("missing"))));
}

INSTANTIATE_TEST_SUITE_P(LmdbAndHdf5, ShardGateTest,
                         ::testing::Values(Backend::kLmdb, Backend::kHdf5),
                         [](const ::testing::TestParamInfo<Backend>& p) {
                           return std::string(BackendName(p.param));
                         });

}  // namespace
}  // namespace shardpack
