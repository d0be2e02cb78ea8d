// RecordReader (shardpack/records.h): records by index and by key, on every
// backend, from many threads, and the errors of hostile input.
#include "shardpack/records.h"

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "backends/store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/dataset.h"
#include "shardpack/reader.h"
#include "shardpack/storage.h"
#include "tests/testing/jpeg_fixtures.h"
#include "tests/testing/shard_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "turbojpeg.h"

namespace shardpack {
namespace {

using ::shardpack::testing::IsOk;
using ::shardpack::testing::OwnedRecord;
using ::shardpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::vector<OwnedRecord> RawRecords(int n, Layout layout = Layout::kHWC) {
  std::vector<OwnedRecord> records;
  for (int i = 0; i < n; ++i) {
    records.push_back(testing::RawRecord(i, 4, 5, 3, layout));
    records.back().key = absl::StrCat("k/", i);
    records.back().labels = {i % 10};
    records.back().extra = {static_cast<uint8_t>(i), 7};
  }
  return records;
}

// Writes `records` as a dataset in `dir`: shards of 7 records, blocks of
// about 3 records (so a shard has several blocks).
Manifest Write(const std::string& dir, const std::vector<OwnedRecord>& records,
               Backend backend = Backend::kShard, Compression compression = Compression::kNone,
               bool table = true, int classes = 0) {
  DatasetWriterOptions o;
  o.directory = dir;
  o.schema.image = records.front().image;
  o.schema.labels = {{"label", {}}};
  for (int c = 0; c < classes; ++c) o.schema.labels[0].classes.push_back(absl::StrCat("c", c));
  o.shard_max_records = 7;
  o.shard.block_size = 3 * 200;
  o.shard.compression = compression;
  o.record_table = table;
  backends::UseBackend(&o, backend);
  auto writer = DatasetWriter::Create(o);
  EXPECT_THAT(writer, IsOk());
  for (const OwnedRecord& r : records) EXPECT_THAT((*writer)->Add(r.record()), IsOk());
  auto m = (*writer)->Finish();
  EXPECT_THAT(m, IsOk());
  return *m;
}

void ExpectAllRecords(const RecordReader& reader, const std::vector<OwnedRecord>& records) {
  ASSERT_EQ(reader.size(), records.size());
  RecordBuffer buffer;
  for (uint64_t i = 0; i < records.size(); ++i) {
    ASSERT_THAT(reader.Read(i, &buffer), IsOk()) << i;
    EXPECT_TRUE(SameContents(buffer.record(), records[i].record())) << i;
    EXPECT_EQ(buffer.index(), i);
  }
}

class RecordReaderBackendTest : public ::testing::TestWithParam<Backend> {};

TEST_P(RecordReaderBackendTest, ReadsEveryRecordAndFindsEveryKey) {
  testing::TempDir dir;
  const std::vector<OwnedRecord> records = RawRecords(30);
  Write(dir.path().string(), records, GetParam());
  auto reader = RecordReader::Open(dir.path().string());
  ASSERT_THAT(reader, IsOk());
  ExpectAllRecords(**reader, records);
  EXPECT_EQ((*reader)->schema().labels.size(), 1u);
  ASSERT_TRUE((*reader)->has_record_table());
  for (int i = 0; i < 30; ++i) EXPECT_EQ((*reader)->Find(absl::StrCat("k/", i)).value_or(99), i);
  EXPECT_THAT((*reader)->Find("k/30"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no record has the key 'k/30'")));
}

TEST_P(RecordReaderBackendTest, ReadsThroughItsManifestAndAsALoneShard) {
  testing::TempDir dir;
  const std::vector<OwnedRecord> records = RawRecords(10);
  Manifest m = Write(dir.path().string(), records, GetParam());
  auto via_manifest = RecordReader::Open(dir.Join("manifest.json"));
  ASSERT_THAT(via_manifest, IsOk());
  ExpectAllRecords(**via_manifest, records);
  auto lone = RecordReader::Open(dir.Join(m.shards[1].path));
  ASSERT_THAT(lone, IsOk());
  ExpectAllRecords(**lone, {records.begin() + 7, records.end()});
  EXPECT_THAT((*lone)->Find("k/8"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("shardpack index")));
}

INSTANTIATE_TEST_SUITE_P(Backends, RecordReaderBackendTest,
                         ::testing::Values(Backend::kShard, Backend::kLmdb, Backend::kHdf5),
                         [](const auto& p) { return std::string(BackendName(p.param)); });

TEST(RecordReaderTest, CompressedBlocksAndMappedFilesReadTheSame) {
  testing::TempDir dir;
  const std::vector<OwnedRecord> records = RawRecords(25);
  Write(dir.path().string(), records, Backend::kShard, Compression::kZstd);
  for (bool mmap : {false, true}) {
    RecordReaderOptions options;
    options.mmap = mmap;
    auto reader = RecordReader::Open(dir.path().string(), options);
    ASSERT_THAT(reader, IsOk());
    ExpectAllRecords(**reader, records);
  }
}

TEST(RecordReaderTest, IndexPastTheEndNamesIndexAndSize) {
  testing::TempDir dir;
  Write(dir.path().string(), RawRecords(9));
  auto reader = RecordReader::Open(dir.path().string());
  ASSERT_THAT(reader, IsOk());
  RecordBuffer buffer;
  for (uint64_t i : {uint64_t{9}, uint64_t{1000}, ~uint64_t{0}}) {
    EXPECT_THAT((*reader)->Read(i, &buffer),
                StatusIs(absl::StatusCode::kOutOfRange,
                         AllOf(HasSubstr(absl::StrCat("record ", i, " is past the end")),
                               HasSubstr("(9 records)"))));
  }
}

TEST(RecordReaderTest, WithoutRecordTableFindSaysToIndex) {
  testing::TempDir dir;
  Write(dir.path().string(), RawRecords(5), Backend::kShard, Compression::kNone, false);
  auto reader = RecordReader::Open(dir.path().string());
  ASSERT_THAT(reader, IsOk());
  EXPECT_FALSE((*reader)->has_record_table());
  EXPECT_THAT((*reader)->Find("k/1"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(dir.path().string()), HasSubstr("`shardpack index "))));
}

TEST(RecordReaderTest, DamagedTableFailsOpenNamingIt) {
  testing::TempDir dir;
  Write(dir.path().string(), RawRecords(5));
  std::string bytes = *ReadSmallFile(dir.Join("records.idx"));
  bytes[70] ^= 1;
  ASSERT_THAT(WriteFileAtomically(dir.Join("records.idx"), bytes), IsOk());
  EXPECT_THAT(RecordReader::Open(dir.path().string()),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("records.idx @0: record table CRC")));
}

TEST(RecordReaderTest, DamagedRecordNamesShardOffsetAndRecord) {
  testing::TempDir dir;
  Manifest m = Write(dir.path().string(), RawRecords(7));
  const std::string shard = dir.Join(m.shards[0].path);
  std::string bytes = *ReadSmallFile(shard);
  // Record 0's header starts after the first block's header, at 4096 + 32:
  // its reserved bytes (22..23) set.
  bytes[4096 + 32 + 22] = 1;
  ASSERT_THAT(WriteFileAtomically(shard, bytes), IsOk());
  auto reader = RecordReader::Open(dir.path().string());
  ASSERT_THAT(reader, IsOk());
  RecordBuffer buffer;
  EXPECT_THAT((*reader)->Read(0, &buffer),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("shard-00000.shard @4128: record 0"))));
  EXPECT_THAT((*reader)->Read(1, &buffer), IsOk());
}

TEST(RecordReaderTest, ShardHoldingOtherRecordCountFailsOpen) {
  testing::TempDir dir;
  Manifest m = Write(dir.path().string(), RawRecords(10));
  std::filesystem::rename(dir.Join(m.shards[1].path), dir.Join("keep"));
  std::filesystem::copy_file(dir.Join(m.shards[0].path), dir.Join(m.shards[1].path));
  EXPECT_THAT(RecordReader::Open(dir.path().string()),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("shard-00001.shard")));
}

TEST(RecordReaderTest, ConcurrentReadersSeeTheirRecords) {
  testing::TempDir dir;
  const std::vector<OwnedRecord> records = RawRecords(60);
  Write(dir.path().string(), records);
  auto reader = RecordReader::Open(dir.path().string());
  ASSERT_THAT(reader, IsOk());
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      RecordBuffer buffer;
      for (int n = 0; n < 2000; ++n) {
        const uint64_t i = rng() % records.size();
        if (!(*reader)->Read(i, &buffer).ok() || !SameContents(buffer.record(), records[i].record())) {
          ++wrong;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(RecordReaderTest, DecodesRawAndJpeg) {
  testing::TempDir dir;
  const std::vector<OwnedRecord> chw = RawRecords(3, Layout::kCHW);
  Write(dir.path().string(), chw);
  auto reader = RecordReader::Open(dir.path().string());
  ASSERT_THAT(reader, IsOk());
  RecordBuffer buffer;
  ASSERT_THAT((*reader)->Read(2, &buffer, /*decode=*/true), IsOk());
  const DecodedImage& image = buffer.image();
  ASSERT_EQ(image.bytes(), 4u * 5 * 3);
  // HWC pixel (y, x, c) is CHW byte c * 20 + y * 5 + x.
  EXPECT_EQ(image.data[(2 * 5 + 3) * 3 + 1], chw[2].payload[20 + 2 * 5 + 3]);

  testing::TempDir jdir;
  OwnedRecord jpeg;
  jpeg.key = "scene.jpg";
  jpeg.labels = {1};
  jpeg.payload = testing::TjSceneJpeg(40, 24, TJSAMP_420);
  jpeg.image = {Encoding::kJpeg, Layout::kHWC, 24, 40, 3};
  Write(jdir.path().string(), {jpeg});
  auto jreader = RecordReader::Open(jdir.path().string());
  ASSERT_THAT(jreader, IsOk());
  ASSERT_THAT((*jreader)->Read(0, &buffer, true), IsOk());
  EXPECT_EQ(buffer.image().width, 40u);
  EXPECT_EQ(buffer.image().height, 24u);
  EXPECT_EQ(buffer.image().channels, 3);
  const std::vector<uint8_t> want = testing::TjDecode(jpeg.payload, 40, 24, TJPF_RGB);
  ASSERT_EQ(want.size(), buffer.image().bytes());
  int far = 0;
  for (size_t i = 0; i < want.size(); ++i) far += std::abs(want[i] - buffer.image().data[i]) > 2;
  EXPECT_EQ(far, 0);
}

// A view file: records numbered in the view, labels relabelled, keys found
// at their view index, the records it leaves out refused by key.
TEST(RecordReaderViewTest, AViewReadsItsSelectionRelabelled) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.Join("a"));
  std::filesystem::create_directories(dir.Join("b"));
  const std::vector<OwnedRecord> records = RawRecords(30);
  Write(dir.Join("a"), records, Backend::kShard, Compression::kNone, true, 10);
  Write(dir.Join("b"), records, Backend::kLmdb, Compression::kNone, true, 10);
  const std::string view = dir.Join("v.view.json");
  std::ofstream(view) << R"({"shardpack_view": 1, "datasets": ["a", "b"],
                            "classes": {"names": ["c7", "c2"]}})";
  auto reader = RecordReader::Open(view);
  ASSERT_THAT(reader, IsOk());
  // Classes 7 and 2: records 2, 7, 12, 17, 22, 27 of each dataset.
  ASSERT_EQ((*reader)->size(), 12u);
  EXPECT_EQ((*reader)->schema().labels[0].classes, (std::vector<std::string>{"c7", "c2"}));
  RecordBuffer buffer;
  for (uint64_t i = 0; i < 12; ++i) {
    ASSERT_THAT((*reader)->Read(i, &buffer), IsOk());
    const uint64_t local = (i % 6) * 5 + 2;  // 2, 7, 12, ... in base order
    EXPECT_EQ(buffer.index(), i);
    EXPECT_EQ(buffer.record().key, absl::StrCat("k/", local));
    EXPECT_EQ(buffer.record().labels[0], local % 10 == 7 ? 0 : 1) << i;
    auto found = (*reader)->Find(absl::StrCat("k/", local));
    ASSERT_THAT(found, IsOk());
    EXPECT_EQ(*found, i % 6) << "the first dataset's record of that key";
  }
  EXPECT_THAT((*reader)->Find("k/3"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("one the view leaves out")));
  // A key left out in the first dataset but selected in the second is found there.
  const std::string tail = dir.Join("t.view.json");
  std::ofstream(tail) << R"({"shardpack_view": 1, "datasets": ["a", "b"], "indices": [[35, 60]]})";
  auto later = RecordReader::Open(tail);
  ASSERT_THAT(later, IsOk());
  auto found = (*later)->Find("k/8");  // record 8 of a (left out) and of b (base 38: view 3)
  ASSERT_THAT(found, IsOk());
  EXPECT_EQ(*found, 3u);
  EXPECT_THAT((*reader)->Find("k/99"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no record has the key")));
  EXPECT_THAT((*reader)->Read(12, &buffer),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("record 12 is past the end (12")));
}

// The record indices of one epoch of a Reader, in the order it gives them.
std::vector<uint64_t> EpochOrder(const ReaderOptions& o) {
  std::vector<uint64_t> order;
  auto reader = Reader::Open(o);
  EXPECT_THAT(reader, IsOk());
  if (!reader.ok()) return order;
  for (;;) {
    absl::StatusOr<Batch> batch = (*reader)->Next();
    if (absl::IsOutOfRange(batch.status())) break;
    EXPECT_THAT(batch, IsOk());
    if (!batch.ok()) break;
    for (int i = 0; i < batch->size(); ++i) order.push_back(batch->record_index(i));
  }
  return order;
}

TEST(SharedStorageTest, ReadersOfALocalDatasetShareOneHandle) {
  testing::TempDir dir;
  const std::vector<OwnedRecord> records = RawRecords(30);
  Write(dir.path().string(), records);
  auto storage = Storage::Open();
  ASSERT_THAT(storage, IsOk());
  ReaderOptions o;
  o.path = dir.path().string();
  o.batch_size = 4;
  o.threads = 2;
  const std::vector<uint64_t> alone = EpochOrder(o);
  EXPECT_EQ(alone.size(), 28u);
  o.storage = *storage;
  // Two readers at once, and a record reader, through the one handle.
  auto other = Reader::Open(o);
  ASSERT_THAT(other, IsOk());
  EXPECT_EQ(EpochOrder(o), alone);
  RecordReaderOptions ro;
  ro.storage = *storage;
  auto records_reader = RecordReader::Open(dir.path().string(), ro);
  ASSERT_THAT(records_reader, IsOk());
  ExpectAllRecords(**records_reader, records);
  auto batch = (*other)->Next();
  ASSERT_THAT(batch, IsOk());
  EXPECT_EQ(batch->record_index(0), alone[0]);
  // The handle may go first: the readers hold what they read through.
  storage->reset();
  EXPECT_THAT((*other)->Next(), IsOk());
  RecordBuffer buffer;
  EXPECT_THAT((*records_reader)->Read(29, &buffer), IsOk());
}

TEST(SharedStorageTest, CacheOptionsBesideAHandleAreRefusedNamingBoth) {
  testing::TempDir dir;
  Write(dir.path().string(), RawRecords(10));
  auto storage = Storage::Open({.cache_dir = dir.Join("cache"), .cache_bytes = 1 << 20});
  ASSERT_THAT(storage, IsOk());
  const auto refused = StatusIs(absl::StatusCode::kInvalidArgument,
                                AllOf(HasSubstr("storage"), HasSubstr("cache_dir"),
                                      HasSubstr("cache_bytes")));
  for (auto [cache_dir, cache_bytes] : {std::pair<std::string, int64_t>{dir.Join("c"), -1},
                                        {"", 0},
                                        {"", int64_t{1} << 30}}) {
    ReaderOptions o;
    o.path = dir.path().string();
    o.storage = *storage;
    o.cache_dir = cache_dir;
    o.cache_bytes = cache_bytes;
    EXPECT_THAT(Reader::Open(o), refused) << cache_dir << " " << cache_bytes;
    RecordReaderOptions ro;
    ro.storage = *storage;
    ro.cache_dir = cache_dir;
    ro.cache_bytes = cache_bytes;
    EXPECT_THAT(RecordReader::Open(dir.path().string(), ro), refused);
  }
  // The handle's own options are checked as the readers' cache_dir is.
  EXPECT_THAT(Storage::Open({.cache_dir = "s3://bucket/cache"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("s3://bucket/cache")));
  EXPECT_THAT(Storage::Open({.cache_dir = std::string("/tmp/a\0b", 8)}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cache_dir '")));
}

}  // namespace
}  // namespace shardpack
