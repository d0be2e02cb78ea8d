// The reader at the extremes of what it accepts: every value of the options,
// the state and the environment either works or is refused by name with
// what is accepted; a wait may end at a deadline. No Next() here waits
// without one, so a reader that wedges fails the test instead of hanging it.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/reader.h"
#include "shardpack/records.h"
#include "tests/testing/shard_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/write_shard.h"

namespace shardpack {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using testing::StatusIs;
constexpr auto kPatience = std::chrono::seconds(60);

class ReaderLimitsTest : public ::testing::Test {
 protected:
  // A lone shard of `n` side x side x 3 raw records, several blocks.
  std::string MakeShard(int n, uint32_t side = 4) {
    std::vector<testing::OwnedRecord> records;
    for (int i = 0; i < n; ++i) records.push_back(testing::RawRecord(i, side, side, 3));
    ShardWriterOptions w;
    w.block_size = 1024;
    std::string path = dir_.Join(absl::StrCat("data-", n, "-", side, ".shard"));
    std::ofstream(path, std::ios::binary) << testing::WriteShard(records, w);
    return path;
  }
  ReaderOptions Options(int n, int batch) {
    ReaderOptions o;
    o.path = MakeShard(n);
    o.batch_size = batch;
    o.threads = 2;
    o.rank = 0;
    o.world_size = 1;
    return o;
  }
  // Batches until the end of the epoch; each within kPatience.
  static uint64_t ReadEpoch(Reader& reader, uint64_t epoch) {
    uint64_t batches = 0;
    for (;;) {
      absl::StatusOr<Batch> b = reader.Next(kPatience);
      if (absl::IsOutOfRange(b.status())) return batches;
      EXPECT_TRUE(b.ok()) << b.status();
      if (!b.ok()) return batches;
      EXPECT_EQ(b->epoch(), epoch);
      ++batches;
    }
  }
  static void ExpectRefused(const absl::StatusOr<std::unique_ptr<Reader>>& r,
                            const std::string& says) {
    EXPECT_THAT(r, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(says)));
  }

  testing::TempDir dir_;
};

// Regression: a reader at epoch 2^64-1 never delivered a batch, its loader
// waiting for `epoch <= consumer_epoch + 1`, which wrapped to 0.
TEST_F(ReaderLimitsTest, EpochsUpToTheLastOneWorkAndThoseAfterAreRefusedByName) {
  ReaderOptions o = Options(100, 10);
  o.seed = UINT64_MAX;
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  ReaderState s = reader->state();
  for (uint64_t epoch : {uint64_t{1} << 32, uint64_t{1} << 62, kMaxEpoch - 1}) {
    s.epoch = epoch;
    SP_ASSERT_OK(reader->Restore(s));
    EXPECT_EQ(ReadEpoch(*reader, epoch), 10u) << epoch;
  }
  // Reading on from kMaxEpoch - 1 reaches the last epoch, which ends once.
  EXPECT_EQ(ReadEpoch(*reader, kMaxEpoch), 10u);
  EXPECT_THAT(reader->Next(kPatience),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("epoch 9223372036854775807 (2^63-1) was the last")));
  ReaderState end = reader->state();
  EXPECT_EQ(end.epoch, kMaxEpoch);
  EXPECT_EQ(end.segment.batches, 10u);
  // That state restores: at the end of the last epoch.
  SP_ASSERT_OK(reader->Restore(end));
  EXPECT_EQ(ReadEpoch(*reader, kMaxEpoch), 0u);
  EXPECT_THAT(reader->Next(kPatience), StatusIs(absl::StatusCode::kFailedPrecondition, _));

  for (uint64_t epoch : {kMaxEpoch + 1, UINT64_MAX}) {
    s.epoch = epoch;
    EXPECT_THAT(reader->Restore(s),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(absl::StrCat("state.epoch ", epoch,
                                                " is out of range: 0 to 2^63-1"))));
  }
  // The last epoch from its start, and its batch count's end.
  s.epoch = kMaxEpoch;
  s.segment.batches = 0;
  SP_ASSERT_OK(reader->Restore(s));
  EXPECT_EQ(ReadEpoch(*reader, kMaxEpoch), 10u);
  s.segment.batches = 10;
  SP_ASSERT_OK(reader->Restore(s));
  EXPECT_EQ(ReadEpoch(*reader, kMaxEpoch), 0u);
  for (uint64_t batch : {uint64_t{11}, uint64_t{1} << 63, UINT64_MAX}) {
    s.segment.batches = batch;
    EXPECT_THAT(reader->Restore(s),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(absl::StrCat("state.batch ", batch,
                                                " is out of range: 0 to 10"))));
  }
}

TEST_F(ReaderLimitsTest, AnElasticResumeOfTheLastEpochEndsThere) {
  ReaderOptions two = Options(100, 10);
  two.world_size = 2;
  SP_ASSERT_OK_AND_ASSIGN(auto rank0, Reader::Open(two));
  ReaderState s = rank0->state();
  s.epoch = kMaxEpoch;
  SP_ASSERT_OK(rank0->Restore(s));
  SP_ASSERT_OK(rank0->Next(kPatience).status());
  const ReaderState saved = rank0->state();  // 1 of 5 batches of 2 ranks
  ReaderOptions one = two;
  one.world_size = 1;
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(one));
  SP_ASSERT_OK(reader->Restore(saved));
  EXPECT_EQ(reader->batches_in_epoch(), 8u);  // the 80 records owed
  EXPECT_EQ(ReadEpoch(*reader, kMaxEpoch), 8u);
  EXPECT_THAT(reader->Next(kPatience), StatusIs(absl::StatusCode::kFailedPrecondition, _));
  // An earlier segment's batch count is checked before it is multiplied.
  ReaderState bad = saved;
  bad.earlier = {{2, 10, Remainder::kDrop, true, 1 << 20, UINT64_MAX}};
  EXPECT_THAT(reader->Restore(bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("segment 0 of the epoch: 18446744073709551615 batches")));
}

TEST_F(ReaderLimitsTest, BudgetsFromZeroTo2To64Minus1Work) {
  for (uint64_t bytes : {uint64_t{0}, uint64_t{1}, uint64_t{1} << 63, UINT64_MAX}) {
    ReaderOptions o = Options(100, 10);
    o.shuffle_bytes = bytes;
    o.read_ahead_bytes = bytes;
    SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
    EXPECT_EQ(ReadEpoch(*reader, 0), 10u) << bytes;
    if (bytes >= uint64_t{1} << 63) {
      EXPECT_EQ(reader->stats().memory_budget_bytes, UINT64_MAX) << "saturated, not wrapped";
    }
  }
}

TEST_F(ReaderLimitsTest, TheLargestBatchAndWorldSizeWork) {
  ReaderOptions o = Options(10, kMaxBatchSize);
  o.remainder = Remainder::kPad;
  o.path = MakeShard(10, 1);  // 3 bytes a sample: 3 MiB a batch
  o.threads = 1;
  o.ring_slots = 2;
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  SP_ASSERT_OK_AND_ASSIGN(Batch b, reader->Next(kPatience));
  EXPECT_EQ(b.size(), kMaxBatchSize);
  b = Batch();
  o.batch_size = 1;
  o.world_size = kMaxWorldSize;
  o.rank = kMaxWorldSize - 1;
  SP_ASSERT_OK_AND_ASSIGN(reader, Reader::Open(o));
  EXPECT_EQ(ReadEpoch(*reader, 0), 1u);  // one record, padded
}

TEST_F(ReaderLimitsTest, NextWithATimeoutConsumesNothingWhenTheBatchIsNotReady) {
  // A first batch that takes a while to build: 2000 records of 12 KB (24 MB),
  // which the engines do not build before Next(0) is called (a 6 MB first
  // batch was built in time in 6 of 120 runs under load, once auto mapped it).
  ReaderOptions o = Options(2000, 2000);
  o.path = MakeShard(2000, 64);
  o.threads = 1;
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  EXPECT_THAT(reader->Next(std::chrono::nanoseconds(0)),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       HasSubstr("batch 0 of epoch 0 was not ready within 0 ms")));
  EXPECT_EQ(reader->state().segment.batches, 0u);
  {
    SP_ASSERT_OK_AND_ASSIGN(Batch b, reader->Next(kPatience));
    EXPECT_EQ(b.index(), 0u);
    EXPECT_EQ(reader->stats().batches, 1u);
  }
  // A ready batch comes out of a zero timeout: poll until it is.
  o = Options(100, 10);
  SP_ASSERT_OK_AND_ASSIGN(reader, Reader::Open(o));
  for (uint64_t want = 0; want < 10;) {
    absl::StatusOr<Batch> next = reader->Next(std::chrono::nanoseconds(0));
    if (absl::IsDeadlineExceeded(next.status())) continue;
    SP_ASSERT_OK(next.status());
    EXPECT_EQ(next->index(), want++);
  }
}

TEST_F(ReaderLimitsTest, OptionsOutOfRangeAreRefusedByNameWithWhatIsAccepted) {
  const ReaderOptions good = Options(100, 10);
  struct Case {
    std::function<void(ReaderOptions&)> set;
    std::string says;
  };
  const std::vector<Case> cases = {
      {[](ReaderOptions& o) { o.batch_size = 0; }, "batch_size 0 is out of range: 1 to 1048576"},
      {[](ReaderOptions& o) { o.batch_size = kMaxBatchSize + 1; },
       "batch_size 1048577 is out of range: 1 to 1048576"},
      {[](ReaderOptions& o) { o.ring_slots = 1; },
       "ring_slots 1 is out of range: 2 to 1024, or 0 (chosen)"},
      {[](ReaderOptions& o) { o.threads = -1; },
       "threads -1 is out of range: 0 (one per core) to 1024"},
      {[](ReaderOptions& o) { o.device = -2; },
       "device -2 is out of range: -1 (host memory) or a CUDA device from 0"},
      {[](ReaderOptions& o) { o.world_size = 0; },
       "world_size 0 is out of range: -1 (from WORLD_SIZE) or 1 to 1048576"},
      {[](ReaderOptions& o) { o.world_size = kMaxWorldSize + 1; },
       "world_size 1048577 is out of range"},
      {[](ReaderOptions& o) { o.rank = -2; },
       "rank -2 is out of range: -1 (from RANK) or 0 to world_size-1"},
      {[](ReaderOptions& o) { o.rank = 2; o.world_size = 2; },
       "rank 2 is out of range: 0 to 1 (world_size 2)"},
      {[](ReaderOptions& o) { o.rank = INT32_MAX; }, "rank 2147483647 is out of range"},
      {[](ReaderOptions& o) { o.transform = Transform::CifarTrain(0, 4); },
       "transform size 0 is out of range: 1 to 8192"},
      {[](ReaderOptions& o) { o.transform = Transform::CifarTrain(4, INT32_MAX); },
       "transform pad 2147483647 is out of range: 0 to 8192"},
      {[](ReaderOptions& o) { o.transform = Transform::CifarTrain(4, -1); },
       "transform pad -1 is out of range"},
      {[](ReaderOptions& o) { o.std[1] = 0; }, "std[1] 0 is out of range: a finite number, not 0"},
      {[](ReaderOptions& o) { o.std[2] = std::numeric_limits<float>::infinity(); }, "std[2] inf"},
      {[](ReaderOptions& o) { o.mean[0] = std::nanf(""); },
       "mean[0] nan is out of range: a finite number"},
  };
  for (const Case& c : cases) {
    ReaderOptions o = good;
    c.set(o);
    ExpectRefused(Reader::Open(o), c.says);
  }
  // The largest padding still works.
  ReaderOptions o = good;
  o.transform = Transform::CifarTrain(4, kMaxTransformSize);
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  SP_EXPECT_OK(reader->Next(kPatience).status());
}

// A path goes to the system as a C string: a NUL would have opened the
// file named by the bytes before it.
TEST_F(ReaderLimitsTest, PathsWithANulOrTooLongAreRefusedAndEchoedBounded) {
  ReaderOptions o = Options(100, 10);
  const std::string real = o.path;
  o.path = real + std::string(1, '\0') + "-not-this";
  ExpectRefused(Reader::Open(o), "holds a NUL byte (at byte " + std::to_string(real.size()));
  o.path = std::string(1 << 20, 'p');
  absl::StatusOr<std::unique_ptr<Reader>> r = Reader::Open(o);
  ExpectRefused(r, "... (1048576 bytes)' is too long: at most 4095 bytes");
  EXPECT_LT(r.status().message().size(), 200u);
  // The cache's folder too, and RecordReader's path and cache folder (they
  // were cut at the NUL).
  o.path = real;
  o.cache_dir = dir_.Join("cache") + std::string(1, '\0') + "-not-this";
  ExpectRefused(Reader::Open(o), "cache_dir '");
  ExpectRefused(Reader::Open(o), "holds a NUL byte (at byte ");
  const std::string nul_path = real + std::string(1, '\0') + "-not-this";
  EXPECT_THAT(RecordReader::Open(nul_path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("holds a NUL byte (at byte " + std::to_string(real.size()))));
  RecordReaderOptions ro;
  ro.cache_dir = o.cache_dir;
  EXPECT_THAT(RecordReader::Open(real, ro),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cache_dir '")));
}

TEST_F(ReaderLimitsTest, RankAndWorldSizeFromTheEnvironmentAreNamedWhenWrong) {
  ReaderOptions o = Options(100, 10);
  o.rank = -1;
  o.world_size = -1;
  struct Case {
    const char* rank;  // null: unset
    const char* world;
    std::string says;
  };
  const std::string long_value(300, '7');
  const std::vector<Case> cases = {
      {nullptr, "1048577", "WORLD_SIZE=1048577 is out of range: 1 to 1048576"},
      {nullptr, "0", "WORLD_SIZE=0 is out of range: 1 to 1048576"},
      {nullptr, "99999999999999999999", "WORLD_SIZE=99999999999999999999 is out of range"},
      {nullptr, "four", "WORLD_SIZE='four' is not an integer: 1 to 1048576"},
      {nullptr, "", "WORLD_SIZE='' is not an integer"},
      {"-1", "2", "RANK=-1 is out of range: 0 to 1048575"},
      {"2", "2", "RANK=2 is out of range: 0 to 1 (WORLD_SIZE=2)"},
      {"1", nullptr, "RANK=1 is out of range: 0 to 0 (WORLD_SIZE unset: 1)"},
      {"x1", "2", "RANK='x1' is not an integer"},
      {long_value.c_str(), "2", "RANK=" + long_value.substr(0, 64) + "... (300 bytes) is out"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.says);
    c.rank != nullptr ? setenv("RANK", c.rank, 1) : unsetenv("RANK");
    c.world != nullptr ? setenv("WORLD_SIZE", c.world, 1) : unsetenv("WORLD_SIZE");
    ExpectRefused(Reader::Open(o), c.says);
  }
  // An option given is used, and named, as given.
  setenv("RANK", "3", 1);
  setenv("WORLD_SIZE", "4", 1);
  o.world_size = 2;
  ExpectRefused(Reader::Open(o), "RANK=3 is out of range: 0 to 1 (world_size 2)");
  o.world_size = -1;
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  EXPECT_EQ(reader->state().segment.world_size, 4);
  setenv("WORLD_SIZE", "1048576", 1);
  setenv("RANK", "1048575", 1);
  ExpectRefused(Reader::Open(o), "records give rank 1048575 of 1048576 no batch");
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
}

// Option names and transforms echo what they were given, bounded.
TEST_F(ReaderLimitsTest, ParsedNamesEchoWhatTheyWereGivenBounded) {
  const std::string huge(10 << 20, 'z');
  for (const absl::Status& s :
       {ParseIoEngine(huge).status(), ParseTransform(huge).status(),
        ParseTransform("rrc:" + huge).status(), ParseRemainder(huge).status()}) {
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("... (")));
    EXPECT_LT(s.message().size(), 200u) << s.message().substr(0, 200);
  }
  EXPECT_THAT(ParseTransform("rrc:0"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("transform 'rrc:0': SIZE is an integer from 1 to 8192")));
  EXPECT_THAT(ParseTransform("cifar-train:99999999999"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1 to 8192")));
  SP_ASSERT_OK_AND_ASSIGN(Transform t, ParseTransform("center:8192"));
  EXPECT_EQ(t.size, 8192);
  // A NUL in a name does not cut the message short.
  absl::Status nul = ParseIoEngine(std::string("pre\0ad", 6)).status();
  EXPECT_EQ(nul.message().substr(0, 22), std::string("unknown I/O engine 'pr", 22));
  EXPECT_THAT(std::string(nul.message()), HasSubstr(std::string("pre\0ad' (auto", 13)));
}

}  // namespace
}  // namespace shardpack
