// The record table from the command line: `shardpack index` rebuilds the
// table the packer writes, byte for byte; `sharddump verify` reports a table
// that is damaged or disagrees with the records.
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "format/record_table.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/dataset.h"
#include "tests/testing/cli_expect.h"
#include "tests/testing/shard_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

using ::shardpack::testing::IsOk;
using ::shardpack::testing::RunResult;
using ::testing::HasSubstr;

class RecordTableCliTest : public ::testing::Test {
 protected:
  // A CIFAR-10 dataset of 40 records in shards of 15, at Out("ds").
  void SetUp() override {
    const std::string input = dir_.Join("data_batch_1.bin");
    std::ofstream(input, std::ios::binary) << testing::Cifar10Bytes(40);
    RunResult r = testing::RunTool(
        SHARDPACK_PATH, {"cifar", input, "-o", Out("ds"), "--shard-records", "15", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  std::string Out(const std::string& name) const { return dir_.Join(name); }
  RunResult Verify() { return testing::RunTool(SHARDDUMP_PATH, {"verify", Out("ds"), "-q"}); }

  testing::TempDir dir_;
};

TEST_F(RecordTableCliTest, IndexRebuildsThePackersTableByteForByte) {
  const std::string table = *ReadSmallFile(Out("ds/records.idx"));
  Manifest m = *ReadManifest(Out("ds"));
  ASSERT_TRUE(m.record_table.has_value());
  Manifest without = m;
  without.record_table.reset();
  without.version_minor = 0;
  ASSERT_THAT(WriteManifest(Out("ds"), without), IsOk());
  std::filesystem::remove(Out("ds/records.idx"));
  RunResult r = testing::RunTool(SHARDPACK_PATH, {"index", Out("ds")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("wrote records.idx: 40 records"));
  EXPECT_EQ(*ReadSmallFile(Out("ds/records.idx")), table);
  EXPECT_EQ(*ReadManifest(Out("ds")), m);
  EXPECT_EQ(Verify().exit_code, 0);
  // Again, through the manifest's path: the same table, said to be rebuilt.
  r = testing::RunTool(SHARDPACK_PATH, {"index", Out("ds/manifest.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("rebuilt records.idx"));
  EXPECT_EQ(*ReadSmallFile(Out("ds/records.idx")), table);
}

TEST_F(RecordTableCliTest, IndexRefusesWhatIsNoDataset) {
  const Manifest m = *ReadManifest(Out("ds"));
  testing::ExpectOneLineFailure(
      testing::RunTool(SHARDPACK_PATH, {"index", Out("ds/" + m.shards[0].path)}), "shardpack",
      "a lone shard has no manifest");
  testing::ExpectOneLineFailure(testing::RunTool(SHARDPACK_PATH, {"index", Out("nothing")}),
                                "shardpack", "nothing");
  testing::ExpectOneLineFailure(testing::RunTool(SHARDPACK_PATH, {"index", dir_.Join("")}),
                                "shardpack", "no manifest.json");
}

TEST_F(RecordTableCliTest, IndexOfDamagedShardFailsNamingIt) {
  const Manifest m = *ReadManifest(Out("ds"));
  const std::string shard = Out("ds/" + m.shards[1].path);
  std::string bytes = *ReadSmallFile(shard);
  bytes[4096 + 40] ^= 1;  // a byte of block 0's payload
  ASSERT_THAT(WriteFileAtomically(shard, bytes), IsOk());
  testing::ExpectOneLineFailure(testing::RunTool(SHARDPACK_PATH, {"index", Out("ds")}),
                                "shardpack", m.shards[1].path);
}

TEST_F(RecordTableCliTest, VerifyReportsDamagedTable) {
  std::string bytes = *ReadSmallFile(Out("ds/records.idx"));
  bytes[100] ^= 1;
  ASSERT_THAT(WriteFileAtomically(Out("ds/records.idx"), bytes), IsOk());
  RunResult r = Verify();
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("records.idx @0: record table CRC-32C"));
  std::filesystem::remove(Out("ds/records.idx"));
  r = Verify();
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("records.idx"));
}

// A well-formed table whose labels are not the records': every record is
// named, up to ten.
TEST_F(RecordTableCliTest, VerifyReportsTableThatDisagreesWithRecords) {
  Manifest m = *ReadManifest(Out("ds"));
  auto right = format::RecordTable::Load(Out("ds"), m);
  ASSERT_THAT(right, IsOk());
  format::RecordTableBuilder wrong(1, Out("ds"));
  for (uint64_t i = 0; i < 40; ++i) {
    const int64_t label = right->label(i, 0) + (i == 3 ? 1 : 0);
    ASSERT_THAT(wrong.Add({&label, 1}, right->key(i)), IsOk());
  }
  const std::string key3(right->key(3));
  auto entry = format::WriteRecordTable(wrong, Out("ds"));
  ASSERT_THAT(entry, IsOk());
  m.record_table = *entry;
  ASSERT_THAT(WriteManifest(Out("ds"), m), IsOk());
  RunResult r = Verify();
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("records.idx: record 3 ('" + key3 + "') has other labels"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("record 4 ")));
}

// The shards' records are compared with the table by the threads that check
// the shards: whatever the thread count, the report lists the first
// mismatches in dataset order, at most ten, as one pass after the shards'
// did.
TEST_F(RecordTableCliTest, TableMismatchesInEveryShardAreReportedInOrderWhateverTheThreads) {
  Manifest m = *ReadManifest(Out("ds"));
  ASSERT_EQ(m.shards.size(), 3u);
  auto right = format::RecordTable::Load(Out("ds"), m);
  ASSERT_THAT(right, IsOk());
  format::RecordTableBuilder wrong(1, Out("ds"));
  // Records 14, 15, 29, 30 and 31 disagree: the ends of shards 0 and 1,
  // the starts of shards 1 and 2 (15 records a shard).
  for (uint64_t i = 0; i < 40; ++i) {
    const bool bad = i == 14 || i == 15 || i == 29 || i == 30 || i == 31;
    const int64_t label = right->label(i, 0) + (bad ? 1 : 0);
    ASSERT_THAT(wrong.Add({&label, 1}, right->key(i)), IsOk());
  }
  auto entry = format::WriteRecordTable(wrong, Out("ds"));
  ASSERT_THAT(entry, IsOk());
  m.record_table = *entry;
  ASSERT_THAT(WriteManifest(Out("ds"), m), IsOk());
  for (const char* threads : {"1", "2", "3"}) {
    RunResult r = testing::RunTool(SHARDDUMP_PATH, {"verify", Out("ds"), "-q", "--threads", threads});
    EXPECT_EQ(r.exit_code, 1) << r.out;
    size_t at = 0;
    for (uint64_t i : {14, 15, 29, 30, 31}) {
      const size_t found = r.out.find(absl::StrCat("records.idx: record ", i, " ('"), at);
      ASSERT_NE(found, std::string::npos) << threads << " threads, record " << i << ":\n" << r.out;
      at = found;
    }
    EXPECT_THAT(r.out, ::testing::Not(HasSubstr("records.idx: record 16 ")));
  }
}

}  // namespace
}  // namespace shardpack
