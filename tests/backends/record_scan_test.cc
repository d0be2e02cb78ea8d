// The one record scan (backends/record_scan.h): records with where they
// live, and damage stepped over and told to the reporter as a Damage.
#include "backends/record_scan.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/shard.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/write_shard.h"

namespace shardpack::backends {
namespace {

using ::shardpack::testing::StatusIs;
using ::testing::HasSubstr;

struct Collect : ScanReporter {
  void Corruption(const Damage& damage) override { told.push_back(damage); }
  std::vector<Damage> told;
};

class RecordScanTest : public ::testing::Test {
 protected:
  // A `.shard` file of 30 records of 1000 bytes in 4 KiB blocks (several
  // records a block, several blocks), its bytes and its index.
  void SetUp() override {
    std::vector<testing::OwnedRecord> records;
    for (uint64_t i = 0; i < 30; ++i) records.push_back(testing::JpegLikeRecord(i, 1000));
    ShardWriterOptions o;
    o.block_size = 4096;
    bytes_ = testing::WriteShard(records, o);
    ASSERT_FALSE(bytes_.empty());
    path_ = dir_.Join("scan.shard");
    auto file = NewMemoryFile(path_, {reinterpret_cast<const uint8_t*>(bytes_.data()),
                                      bytes_.size()});
    SP_ASSERT_OK_AND_ASSIGN(index_, ShardIndex::Load(*file));
    ASSERT_GE(index_.num_blocks(), 3u);
    Save();
  }
  void Save() {
    std::ofstream(path_, std::ios::binary | std::ios::trunc) << bytes_;
  }

  testing::TempDir dir_;
  std::string path_;
  std::string bytes_;
  ShardIndex index_;
};

TEST_F(RecordScanTest, RecordsComeInOrderWithTheirBlockAndOffset) {
  SP_ASSERT_OK_AND_ASSIGN(auto scanner, ShardScanner::Open(path_, Backend::kShard));
  EXPECT_EQ(scanner->path(), path_);
  EXPECT_EQ(scanner->size(), 30u);
  EXPECT_EQ(scanner->file_bytes(), bytes_.size());
  EXPECT_EQ(scanner->storage().blocks, index_.num_blocks());
  EXPECT_EQ(scanner->format_version(), "1.0");
  std::vector<uint64_t> seen;
  SP_ASSERT_OK(scanner->Scan(0, 30, [&](uint64_t i, const Record& r, const RecordLocation& at) {
    seen.push_back(i);
    const BlockInfo& block = index_.block(index_.BlockOf(i));
    EXPECT_EQ(at.block_offset, block.offset) << "record " << i;
    EXPECT_TRUE(at.has_offset);
    EXPECT_FALSE(at.compressed);
    EXPECT_EQ(at.Text(), absl::StrCat(at.file_offset()));
    // The record's header starts at its file offset: its payload follows
    // the header and key, within a few dozen bytes.
    const std::string_view payload(reinterpret_cast<const char*>(r.payload.data()),
                                   r.payload.size());
    const size_t found = bytes_.find(payload, at.file_offset());
    EXPECT_NE(found, std::string::npos) << "record " << i;
    if (found != std::string::npos) {
      EXPECT_LT(found - at.file_offset(), 128u) << "record " << i;
    }
    EXPECT_EQ(std::string(r.key), testing::JpegLikeRecord(i, 1000).key);
    return absl::OkStatus();
  }));
  std::vector<uint64_t> all(30);
  for (uint64_t i = 0; i < 30; ++i) all[i] = i;
  EXPECT_EQ(seen, all);
}

TEST_F(RecordScanTest, DamageStopsTheScanUnlessAReporterIsGiven) {
  const BlockInfo& damaged = index_.block(1);
  bytes_[damaged.offset + 32 + 10] ^= 0x40;  // in block 1's payload
  Save();
  SP_ASSERT_OK_AND_ASSIGN(auto scanner, ShardScanner::Open(path_, Backend::kShard));
  EXPECT_THAT(scanner->Scan(0, 30, [](uint64_t, const Record&) { return absl::OkStatus(); }),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr(path_)));

  Collect reporter;
  std::vector<uint64_t> seen;
  SP_ASSERT_OK(scanner->Scan(
      0, 30,
      [&](uint64_t i, const Record&, const RecordLocation&) {
        seen.push_back(i);
        return absl::OkStatus();
      },
      &reporter));
  ASSERT_EQ(reporter.told.size(), 1u);
  const Damage& d = reporter.told[0];
  EXPECT_EQ(d.path, path_);
  EXPECT_GE(d.offset, damaged.offset);
  EXPECT_LT(d.offset, index_.block(2).offset) << "within the damaged block";
  EXPECT_EQ(d.record, damaged.first_record) << "the first record lost";
  EXPECT_THAT(d.status, StatusIs(absl::StatusCode::kDataLoss, HasSubstr(path_)));
  EXPECT_EQ(d.message(), std::string(d.status.message()));
  for (uint64_t i = 0; i < 30; ++i) {
    const bool lost = i >= damaged.first_record && i < damaged.first_record + damaged.record_count;
    EXPECT_EQ(std::count(seen.begin(), seen.end(), i), lost ? 0 : 1) << "record " << i;
  }
}

}  // namespace
}  // namespace shardpack::backends
