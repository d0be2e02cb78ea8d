// The reader's contracts, each checked on datasets written here.
#include "shardpack/reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <numeric>
#include <thread>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "reader/pipeline.h"
#include "reader/prefetch.h"
#include "shardpack/dataset.h"
#include "tests/testing/mapped_rss.h"
#include "tests/testing/shard_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Pixel (y, x, c) of record i, HWC.
uint8_t Pixel(uint64_t i, int y, int x, int c) {
  return static_cast<uint8_t>(i * 31 + y * 7 + x * 3 + c * 101);
}

// A raw dataset of `n` side x side x 3 records, label i * classes / n
// (class-sorted), written with DatasetWriter (no pack-time shuffle).
std::string MakeDataset(const testing::TempDir& dir, const std::string& name, uint64_t n,
                        int side, int classes, uint32_t block_size = 64 << 10,
                        uint64_t shard_records = 0) {
  std::string path = dir.Join(name);
  fs::create_directories(path);
  DatasetWriterOptions o;
  o.directory = path;
  o.shard.block_size = block_size;
  o.shard_max_records = shard_records;
  o.schema.image = {Encoding::kRaw, Layout::kHWC, uint32_t(side), uint32_t(side), 3};
  o.schema.labels = {{"label", {}}};
  auto writer = DatasetWriter::Create(o);
  EXPECT_TRUE(writer.ok()) << writer.status();
  std::vector<uint8_t> pixels(size_t(side) * side * 3);
  for (uint64_t i = 0; i < n; ++i) {
    for (int y = 0; y < side; ++y)
      for (int x = 0; x < side; ++x)
        for (int c = 0; c < 3; ++c) pixels[(size_t(y) * side + x) * 3 + c] = Pixel(i, y, x, c);
    std::string key = absl::StrCat("r", i);
    Record r{key, {int64_t(i * classes / n)}, o.schema.image, pixels, {}};
    EXPECT_TRUE((*writer)->Add(r).ok());
  }
  EXPECT_TRUE((*writer)->Finish().ok());
  return path;
}

ReaderOptions Options(const std::string& path, int batch, int threads) {
  ReaderOptions o;
  o.path = path;
  o.batch_size = batch;
  o.threads = threads;
  o.rank = 0;
  o.world_size = 1;
  return o;
}

struct Delivered {
  std::vector<uint64_t> records;
  std::vector<int64_t> labels;
  std::string images;  // every batch's bytes, concatenated
  uint64_t batches = 0;
};

// Reads `epochs` epochs (Next() until OutOfRange each time). Without
// `keep_images` only records and labels are kept.
Delivered ReadEpochs(Reader& reader, int epochs, bool keep_images = true) {
  Delivered d;
  for (int e = 0; e < epochs; ++e) {
    for (;;) {
      absl::StatusOr<Batch> batch = reader.Next();
      if (absl::IsOutOfRange(batch.status())) break;
      EXPECT_TRUE(batch.ok()) << batch.status();
      if (!batch.ok()) return d;
      ++d.batches;
      for (int i = 0; i < batch->size(); ++i) d.records.push_back(batch->record_index(i));
      d.labels.insert(d.labels.end(), batch->labels(), batch->labels() + batch->size());
      if (keep_images) {
        d.images.append(static_cast<const char*>(batch->images()), batch->image_bytes());
      }
    }
  }
  return d;
}

class ReaderTest : public ::testing::Test {
 protected:
  testing::TempDir dir_;
};

TEST_F(ReaderTest, NoTransformDeliversTheStoredPixelsInDatasetOrder) {
  std::string path = MakeDataset(dir_, "ds", 100, 4, 10);
  ReaderOptions o = Options(path, 10, 2);
  o.shuffle = false;
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  EXPECT_EQ(reader->batches_per_epoch(), 10u);
  SP_ASSERT_OK_AND_ASSIGN(Batch b, reader->Next());
  EXPECT_EQ(b.shape(), (std::array<int64_t, 4>{10, 4, 4, 3}));
  EXPECT_EQ(b.dtype(), ElementType::kUint8);
  const uint8_t* px = static_cast<const uint8_t*>(b.images());
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(b.record_index(i), uint64_t(i));
    EXPECT_EQ(b.labels()[i], 0);
    EXPECT_EQ(px[i * 48 + (2 * 4 + 1) * 3 + 2], Pixel(i, 2, 1, 2));
  }
}

// Regression: holding the oldest of fewer than ring_slots Batches used to
// hang Next(), which waited for the slot that Batch still held.
TEST_F(ReaderTest, HoldingTheBatchWhoseSlotIsNeededIsAnErrorNotAHang) {
  std::string path = MakeDataset(dir_, "ds", 100, 4, 10);
  ReaderOptions o = Options(path, 10, 2);
  o.ring_slots = 3;
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  SP_ASSERT_OK_AND_ASSIGN(Batch oldest, reader->Next());
  for (int i = 0; i < 2; ++i) {
    SP_ASSERT_OK_AND_ASSIGN(Batch released, reader->Next());
  }
  EXPECT_THAT(reader->Next().status(),
              testing::StatusIs(absl::StatusCode::kFailedPrecondition,
                                HasSubstr("epoch 0 batch 0 still holds the ring slot")));
  oldest = Batch();
  SP_ASSERT_OK_AND_ASSIGN(Batch next, reader->Next());
  EXPECT_EQ(next.index(), 3u);
  // Two held Batches (ring_slots - 1) are fine when the older goes first.
  SP_ASSERT_OK_AND_ASSIGN(Batch second, reader->Next());
  next = Batch();
  SP_ASSERT_OK_AND_ASSIGN(Batch third, reader->Next());
  EXPECT_EQ(third.index(), 5u);
}

// A record's lines, from the one holding its first byte to the one holding
// its last, spread evenly over the crop's rows: all issued by the last row.
TEST(SpreadPrefetchTest, IssuesEveryLineOfTheRecordEvenlyOverTheSteps) {
  alignas(64) static uint8_t buffer[8192];
  // A CIFAR record (3073 bytes) starting 10 bytes into a line: 49 lines.
  reader::SpreadPrefetch p(ByteSpan(buffer + 10, 3073), 32);
  EXPECT_EQ(p.lines_left(), 49u);
  size_t left = 49;
  for (int row = 1; row <= 32; ++row) {
    p.Step();
    const size_t issued = left - p.lines_left();
    EXPECT_TRUE(issued == 1 || issued == 2) << "row " << row << ": " << issued;
    left = p.lines_left();
    // ceil(row * 49 / 32) issued after `row` rows.
    EXPECT_EQ(49 - left, (size_t(row) * 49 + 31) / 32) << "row " << row;
  }
  EXPECT_EQ(p.lines_left(), 0u);
  p.Step();  // steps past the record's lines issue nothing
  EXPECT_EQ(p.lines_left(), 0u);

  reader::SpreadPrefetch rest(ByteSpan(buffer, 640), 32);  // 10 lines, 1 a step
  rest.Step();
  EXPECT_EQ(rest.lines_left(), 9u);
  rest.Rest();
  EXPECT_EQ(rest.lines_left(), 0u);
  EXPECT_EQ(reader::SpreadPrefetch(ByteSpan(), 32).lines_left(), 0u);
  reader::SpreadPrefetch no_steps(ByteSpan(buffer, 64), 0);
  no_steps.Step();
  EXPECT_EQ(no_steps.lines_left(), 1u);
  no_steps.Rest();
  EXPECT_EQ(no_steps.lines_left(), 0u);
}

// The default ring: 4 slots, or for small batches as many up to a worker
// and four more as fit in 32 MiB, and at least a slot a worker and two
// more; the holding rule follows the slots chosen.
TEST_F(ReaderTest, DefaultRingIsDeeperForSmallBatchesAndHoldsOneFewer) {
  EXPECT_EQ(reader::RingSlotsFor(kAutoRingSlots, 1536 << 10, 2), 6);  // CIFAR, 512 a batch
  EXPECT_EQ(reader::RingSlotsFor(kAutoRingSlots, 1536 << 10, 12), 16);
  EXPECT_EQ(reader::RingSlotsFor(kAutoRingSlots, 4 << 20, 2), 6);
  EXPECT_EQ(reader::RingSlotsFor(kAutoRingSlots, 4 << 20, 8), 10);
  EXPECT_EQ(reader::RingSlotsFor(kAutoRingSlots, 10 << 20, 2), 4);
  EXPECT_EQ(reader::RingSlotsFor(kAutoRingSlots, uint64_t{77} << 20, 2), 4);  // 224x224, 512
  EXPECT_EQ(reader::RingSlotsFor(kAutoRingSlots, uint64_t{77} << 20, 16), 18);
  EXPECT_EQ(reader::RingSlotsFor(kAutoRingSlots, 1536 << 10, 15), 19);
  EXPECT_EQ(reader::RingSlotsFor(kAutoRingSlots, 1, 1024), kMaxRingSlots);
  EXPECT_EQ(reader::RingSlotsFor(3, 1, 16), 3);

  std::string path = MakeDataset(dir_, "ds", 100, 4, 10);
  ReaderOptions o = Options(path, 5, 2);
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  ASSERT_EQ(reader->ring_slots(), 6);
  // Batch k is built into batch k - 6's slot: 5 held across a call.
  std::vector<Batch> held;
  for (int i = 0; i < 6; ++i) {
    SP_ASSERT_OK_AND_ASSIGN(Batch b, reader->Next());
    held.push_back(std::move(b));
  }
  EXPECT_THAT(reader->Next().status(),
              testing::StatusIs(absl::StatusCode::kFailedPrecondition,
                                HasSubstr("epoch 0 batch 0 still holds the ring slot")));
  held.erase(held.begin());
  SP_ASSERT_OK_AND_ASSIGN(Batch next, reader->Next());
  EXPECT_EQ(next.index(), 6u);

  o.ring_slots = 1;
  EXPECT_THAT(Reader::Open(o).status(),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("ring_slots 1 is out of range: 2 to 1024, or 0")));
}

TEST_F(ReaderTest, EachRankSeesItsRecordsOnceDisjointWithEqualBatchCounts) {
  std::string path = MakeDataset(dir_, "ds", 1003, 4, 10, 8 << 10);
  std::set<uint64_t> all;
  std::set<uint64_t> batch_counts;
  for (int rank = 0; rank < 3; ++rank) {
    ReaderOptions o = Options(path, 16, 2);
    o.rank = rank;
    o.world_size = 3;
    o.remainder = Remainder::kPartial;
    SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
    Delivered d = ReadEpochs(*reader, 1);
    batch_counts.insert(d.batches);
    std::set<uint64_t> mine(d.records.begin(), d.records.end());
    EXPECT_EQ(mine.size(), d.records.size()) << "rank " << rank << " saw a record twice";
    EXPECT_EQ(d.records.size(), 1003u / 3);
    for (uint64_t r : mine) EXPECT_TRUE(all.insert(r).second) << "record " << r << " on two ranks";
  }
  EXPECT_EQ(batch_counts.size(), 1u);
  EXPECT_EQ(all.size(), 1003u / 3 * 3);
}

TEST_F(ReaderTest, RankAndWorldSizeComeFromTheEnvironment) {
  std::string path = MakeDataset(dir_, "ds", 100, 4, 10);
  ReaderOptions o = Options(path, 10, 1);
  o.rank = -1;
  o.world_size = -1;
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "2", 1);
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  EXPECT_EQ(reader->batches_per_epoch(), 5u);
  setenv("RANK", "2", 1);
  EXPECT_THAT(Reader::Open(o),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("RANK=2 is out of range: 0 to 1 (WORLD_SIZE=2)")));
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
}

TEST_F(ReaderTest, ByteIdenticalBatchesWithOneTwoAndEightThreads) {
  std::string path = MakeDataset(dir_, "ds", 3000, 32, 10, 128 << 10);
  std::string first;
  for (int threads : {1, 2, 8}) {
    ReaderOptions o = Options(path, 64, threads);
    o.transform = Transform::CifarTrain();
    o.shuffle_bytes = 1 << 20;  // smaller than the dataset: the jittered order
    o.read_ahead_bytes = 1 << 20;
    SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
    Delivered d = ReadEpochs(*reader, 2);
    ASSERT_EQ(d.batches, 2 * (3000u / 64));
    if (first.empty()) {
      first = d.images;
    } else {
      EXPECT_TRUE(d.images == first) << threads << " threads differ";
    }
  }
}

TEST_F(ReaderTest, EveryIoEngineDeliversTheSameBatches) {
  std::string path = MakeDataset(dir_, "ds", 2000, 16, 10, 32 << 10, 700);
  std::string first;
  for (IoEngine io : {IoEngine::kPread, IoEngine::kMmap, IoEngine::kDirect, IoEngine::kUring,
                      IoEngine::kAuto}) {
    ReaderOptions o = Options(path, 50, 2);
    o.io = io;
    o.transform = Transform::CifarTrain(16, 2);
    o.shuffle_bytes = 256 << 10;  // a few blocks: many loads, several in flight
    o.read_ahead_bytes = 256 << 10;
    auto reader = Reader::Open(o);
    if (absl::IsUnavailable(reader.status())) {
      std::printf("%s unavailable here: %s\n", std::string(IoEngineName(io)).c_str(),
                  std::string(reader.status().message()).c_str());
      continue;
    }
    SP_ASSERT_OK(reader.status());
    Delivered d = ReadEpochs(**reader, 2);
    EXPECT_EQ(d.records.size(), 2 * 2000u);
    if (first.empty()) first = d.images;
    EXPECT_TRUE(d.images == first) << IoEngineName(io);
  }
}

TEST_F(ReaderTest, RestoreGivesTheIdenticalRestOfTheEpochWithoutReplaying) {
  std::string path = MakeDataset(dir_, "ds", 4000, 8, 10, 16 << 10);
  ReaderOptions o = Options(path, 32, 2);
  o.transform = Transform::CifarTrain(8, 2);
  o.shuffle_bytes = 128 << 10;
  o.read_ahead_bytes = 64 << 10;
  SP_ASSERT_OK_AND_ASSIGN(auto full, Reader::Open(o));
  Delivered whole = ReadEpochs(*full, 2);

  SP_ASSERT_OK_AND_ASSIGN(auto first, Reader::Open(o));
  const int k = 100;  // of 125 batches an epoch
  for (int i = 0; i < k; ++i) SP_ASSERT_OK(first->Next().status());
  ReaderState state = first->state();
  EXPECT_EQ(state.epoch, 0u);
  EXPECT_EQ(state.segment.batches, uint64_t(k));

  // Through its saved form, as a checkpoint keeps it.
  SP_ASSERT_OK_AND_ASSIGN(const ReaderState saved, ReaderState::FromJson(state.ToJson()));
  EXPECT_EQ(saved, state);

  SP_ASSERT_OK_AND_ASSIGN(auto resumed, Reader::Open(o));
  SP_ASSERT_OK(resumed->Restore(saved));
  Delivered rest = ReadEpochs(*resumed, 2);
  size_t skip = size_t(k) * 32;
  ASSERT_EQ(rest.records.size(), whole.records.size() - skip);
  EXPECT_TRUE(std::equal(rest.records.begin(), rest.records.end(), whole.records.begin() + skip));
  EXPECT_TRUE(rest.images == whole.images.substr(skip * 8 * 8 * 3));
  // Resuming read the last quarter of the epoch (and the next epoch), not the
  // batches before the restore point.
  ReaderStats s = resumed->stats();
  EXPECT_LT(s.bytes_read, full->stats().bytes_read * 0.7);
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif

TEST_F(ReaderTest, MemoryStaysWithinBudgetAndFlatOverTenEpochs) {
  if (kAddressSanitizer) {
    GTEST_SKIP() << "RSS is not the program's under AddressSanitizer (shadow memory, "
                    "quarantined frees); this test runs in the plain build";
  }
  // 24 MiB of records, a 4 MiB shuffle budget.
  std::string path = MakeDataset(dir_, "ds", 8000, 32, 10, 256 << 10);
  ReaderOptions o = Options(path, 128, 2);
  o.transform = Transform::CifarTrain();
  o.shuffle_bytes = 4 << 20;
  o.read_ahead_bytes = 2 << 20;
  o.io = IoEngine::kPread;
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  auto rss = [] {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
    }
    return 0LL;
  };
  long long before = rss();
  ReadEpochs(*reader, 1, false);
  long long after_one = rss();
  for (int e = 0; e < 9; ++e) {
    ReadEpochs(*reader, 1, false);
    if (getenv("SP_DEBUG_RSS")) fprintf(stderr, "epoch %d rss %lld\n", e + 2, rss() - before);
  }
  long long after_ten = rss();
  uint64_t budget = reader->stats().memory_budget_bytes;
  EXPECT_LT(after_one - before, static_cast<long long>(budget + (4 << 20)));
  EXPECT_LT(std::abs(after_ten - after_one), 4 << 20) << "memory grew over epochs";
  RecordProperty("rss_growth_epochs_1_to_10", std::to_string(after_ten - after_one));
}

// The reported budget once left out the index and the epoch plans (8
// bytes a record each, and the reader kept three plans at an epoch's start:
// 647 MB of RSS against a 308 MB budget at 8,000,000 records).
TEST_F(ReaderTest, ReportedBudgetCountsTheIndexAndThePlans) {
  constexpr uint64_t kRecords = 20000;
  std::string path = MakeDataset(dir_, "ds", kRecords, 2, 10, 16 << 10);
  ReaderOptions o = Options(path, 100, 2);
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  ReadEpochs(*reader, 4, false);
  const ReaderStats s = reader->stats();
  // 4 bytes of record offsets a record, at least.
  EXPECT_GE(s.index_bytes, 4 * kRecords);
  EXPECT_LT(s.index_bytes, 6 * kRecords) << "index bookkeeping grew";
  // One plan at rest (8 bytes a position) and the next one's build: its
  // order (8) and the shuffle's refs and counts (10): 26 a record, never the
  // 34 of a third plan kept.
  EXPECT_GE(s.plan_peak_bytes, 26 * kRecords);
  EXPECT_LT(s.plan_peak_bytes, 27 * kRecords) << "more than one plan beside the one being built";
  // The budget's share for plans is known at Open and holds what was held.
  EXPECT_LE(s.plan_peak_bytes, s.plan_bytes);
  EXPECT_LT(s.plan_bytes, 31 * kRecords);  // with room for a 4,096-key bucket: 3.3 here
  const uint64_t ring = uint64_t(reader->ring_slots()) * 100 * 2 * 2 * 3;
  // The default shuffle budget is the dataset whole (its blocks, and two
  // more), and the loader holds it.
  ASSERT_EQ(o.shuffle_bytes, kAutoShuffleBytes);
  const uint64_t shard = fs::file_size(fs::path(path) / "shard-00000.shard");
  EXPECT_GT(reader->shuffle_bytes(), shard * 9 / 10);
  EXPECT_LT(reader->shuffle_bytes(), shard + (64 << 10));
  EXPECT_EQ(s.memory_budget_bytes, reader->shuffle_bytes() + o.read_ahead_bytes + ring +
                                       s.index_bytes + s.plan_bytes);
}

// Flips a byte inside the first block's payload of the first shard.
void DamageFirstBlock(const std::string& dataset) {
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(dataset));
  std::string shard = (fs::path(dataset) / m.shards[0].path).string();
  std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(4096 + 32 + 100);
  char c;
  f.seekg(4096 + 32 + 100);
  f.get(c);
  f.seekp(4096 + 32 + 100);
  f.put(static_cast<char>(c ^ 0x40));
}

TEST_F(ReaderTest, CorruptBlockIsAnErrorNamingShardAndOffset) {
  std::string path = MakeDataset(dir_, "ds", 500, 8, 10, 16 << 10);
  DamageFirstBlock(path);
  ReaderOptions o = Options(path, 50, 2);
  o.shuffle = false;
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  EXPECT_THAT(reader->Next(), testing::StatusIs(absl::StatusCode::kDataLoss,
                                                HasSubstr("shard-00000.shard @4128: checksum mismatch")));
}

TEST_F(ReaderTest, CorruptBlockIsSkippedAndReplacedDeterministically) {
  std::string path = MakeDataset(dir_, "ds", 500, 8, 10, 16 << 10);
  DamageFirstBlock(path);
  std::string first;
  for (int threads : {1, 3}) {
    ReaderOptions o = Options(path, 50, threads);
    o.on_corrupt = OnCorrupt::kSkip;
    o.transform = Transform::CifarTrain(8, 2);
    SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
    Delivered d = ReadEpochs(*reader, 1);
    EXPECT_EQ(d.batches, 10u);
    EXPECT_EQ(d.records.size(), 500u);  // shapes never change
    EXPECT_GT(reader->stats().skipped, 0u);
    std::set<uint64_t> distinct(d.records.begin(), d.records.end());
    EXPECT_LT(distinct.size(), 500u) << "damaged records were replaced by others";
    if (first.empty()) first = d.images;
    EXPECT_TRUE(d.images == first);
  }
}

// Every sample is a crop of its record's zero-padded image, mirrored or
// not, every pixel and channel of it: for CIFAR's 32 with padding 4, and
// for crops smaller and larger than the stored image (the larger one reads
// padding on both sides of a row).
TEST_F(ReaderTest, CifarTrainCropsAndFlipsWithinThePaddedImage) {
  struct Config {
    int side, size, pad;
  };
  for (const Config& cfg : {Config{32, 32, 4}, Config{32, 28, 2}, Config{16, 24, 6},
                            Config{8, 8, 0}}) {
    SCOPED_TRACE(::testing::Message() << "side " << cfg.side << " size " << cfg.size << " pad "
                                      << cfg.pad);
    const std::string path = MakeDataset(dir_, absl::StrCat("ds", cfg.side, "_", cfg.size), 200,
                                         cfg.side, 10, 64 << 10);
    ReaderOptions o = Options(path, 200, 2);
    o.transform = Transform::CifarTrain(cfg.size, cfg.pad);
    SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
    SP_ASSERT_OK_AND_ASSIGN(Batch b, reader->Next());
    const uint8_t* px = static_cast<const uint8_t*>(b.images());
    const int n = cfg.size, range = cfg.side + 2 * cfg.pad - n;
    int flipped = 0, shifted = 0;
    for (int i = 0; i < b.size(); ++i) {
      const uint8_t* img = px + size_t(i) * n * n * 3;
      const uint64_t r = b.record_index(i);
      // Find the (dy, dx, flip) that explains the output; one must.
      int matches = 0;
      for (int flip = 0; flip < 2; ++flip)
        for (int dy = 0; dy <= range; ++dy)
          for (int dx = 0; dx <= range; ++dx) {
            bool ok = true;
            for (int y = 0; y < n && ok; ++y)
              for (int x = 0; x < n && ok; ++x)
                for (int c = 0; c < 3 && ok; ++c) {
                  const int sx = dx - cfg.pad + (flip ? n - 1 - x : x), sy = dy - cfg.pad + y;
                  const bool in = sy >= 0 && sy < cfg.side && sx >= 0 && sx < cfg.side;
                  ok = img[(y * n + x) * 3 + c] == (in ? Pixel(r, sy, sx, c) : 0);
                }
            if (ok && matches++ == 0) {
              flipped += flip;
              shifted += (dy != range / 2 || dx != range / 2);
            }
          }
      ASSERT_GE(matches, 1) << "sample " << i << " is no crop of its record";
    }
    EXPECT_GT(flipped, 60);  // ~100 of 200 expected
    EXPECT_LT(flipped, 140);
    if (range > 0) {
      EXPECT_GT(shifted, 100);
    }
  }
}

TEST_F(ReaderTest, EvalTransformNchwFloatNormalizes) {
  std::string path = MakeDataset(dir_, "ds", 20, 4, 10);
  ReaderOptions o = Options(path, 4, 1);
  o.shuffle = false;
  o.transform = Transform::CifarEval(4);
  o.layout = OutputLayout::kNCHW;
  o.dtype = DType::kFloat32;
  o.mean = {0.5f, 0.25f, 0.f};
  o.std = {0.5f, 2.f, 1.f};
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  SP_ASSERT_OK_AND_ASSIGN(Batch b, reader->Next());
  EXPECT_EQ(b.shape(), (std::array<int64_t, 4>{4, 3, 4, 4}));
  EXPECT_EQ(b.dtype(), ElementType::kFloat32);
  EXPECT_EQ(b.image_bytes(), 4u * 3 * 4 * 4 * ElementBytes(b.dtype()));
  const float* f = static_cast<const float*>(b.images());
  for (int i = 0; i < 4; ++i)
    for (int c = 0; c < 3; ++c) {
      float want = (Pixel(i, 3, 2, c) / 255.f - o.mean[c]) / o.std[c];
      EXPECT_NEAR(f[((i * 3 + c) * 4 + 3) * 4 + 2], want, 1e-5);
    }
}

// The issue's measurement: 50,000 records packed class-sorted, 10 classes,
// default reader options, batches of 256.
TEST_F(ReaderTest, ClassSortedDatasetShuffleQualityWithDefaults) {
  const uint64_t n = 50000;
  std::string path = MakeDataset(dir_, "cifar", n, 32, 10, 4 << 20);
  ReaderOptions o = Options(path, 256, 2);
  o.remainder = Remainder::kPartial;
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  Delivered d = ReadEpochs(*reader, 2);
  ASSERT_EQ(d.records.size(), 2 * n);
  double entropy = 0;
  int batches = 0;
  for (size_t b = 0; b + 256 <= n; b += 256, ++batches) {
    std::map<int64_t, int> counts;
    for (size_t i = b; i < b + 256; ++i) counts[d.labels[i]]++;
    for (auto [label, c] : counts) entropy -= c / 256.0 * std::log2(c / 256.0);
  }
  double fraction = entropy / batches / std::log2(10.0);
  std::vector<double> p0(n), p1(n);
  for (size_t i = 0; i < n; ++i) p0[d.records[i]] = double(i);
  for (size_t i = 0; i < n; ++i) p1[d.records[n + i]] = double(i);
  double d2 = 0;
  for (size_t i = 0; i < n; ++i) d2 += (p0[i] - p1[i]) * (p0[i] - p1[i]);
  double rho = 1 - 6 * d2 / (double(n) * (double(n) * n - 1));
  EXPECT_GE(fraction, 0.95);
  EXPECT_LT(std::abs(rho), 0.05);
  RecordProperty("label_entropy_fraction", std::to_string(fraction));
  RecordProperty("spearman", std::to_string(rho));
  std::printf("label entropy %.4f of log2(10), Spearman %.4f\n", fraction, rho);
}

// A mapped dataset larger than the window is held as the window holds it:
// the pages of the blocks the loader lets go leave the process (they stay in
// the page cache), so what the reader maps stays within its budget instead
// of growing to the whole file over an epoch.
TEST_F(ReaderTest, AMappedDatasetLargerThanTheWindowStaysWithinIt) {
  const uint64_t n = 20000;  // 3 KiB records in 1 MiB blocks: 59 MiB
  const std::string path = MakeDataset(dir_, "ds", n, 32, 10, 1 << 20);
  const std::string shard = fs::canonical(fs::path(path) / "shard-00000.shard").string();
  ReaderOptions o = Options(path, 256, 2);
  o.io = IoEngine::kMmap;
  o.shuffle_bytes = 8 << 20;
  o.read_ahead_bytes = 4 << 20;
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  uint64_t most = 0, delivered = 0;
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (;;) {
      absl::StatusOr<Batch> batch = reader->Next();
      if (absl::IsOutOfRange(batch.status())) break;
      SP_ASSERT_OK(batch.status());
      delivered += batch->size();
      most = std::max(most, testing::SettledMappedRssBytes(shard));
    }
  }
  EXPECT_EQ(delivered, 2 * (n / 256) * 256);
  EXPECT_GT(most, 0u) << "the shard was not mapped";
  // The budget (window and read-ahead, 12 MiB), the pages a released block
  // shares with its neighbours, and the shard's index pages.
  EXPECT_LE(most, uint64_t{14} << 20) << "a mapping that kept every page read";
}

// ---- Hostile inputs ------------------------------------------------------

// Rewrites the manifest of the dataset at `path` through `edit`.
void EditManifest(const std::string& path, const std::function<void(Manifest&)>& edit) {
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(path));
  edit(m);
  SP_ASSERT_OK(WriteFileAtomically((fs::path(path) / "manifest.json").string(),
                                   SerializeManifest(m)));
}

// The first error Next() returns within an epoch and a half, or OK.
absl::Status FirstError(Reader& reader, int* skipped = nullptr) {
  for (uint64_t i = 0; i < reader.batches_per_epoch() * 3 / 2; ++i) {
    absl::StatusOr<Batch> b = reader.Next();
    if (absl::IsOutOfRange(b.status())) continue;
    if (!b.ok()) return b.status();
    if (skipped != nullptr) *skipped += b->skipped();
  }
  return absl::OkStatus();
}

// A record that disagrees with the schema is damage, as on_corrupt says: an
// error naming the file, or a skipped sample; never a label of -1, a dropped
// label or a transform failing mid-epoch.
TEST_F(ReaderTest, RecordsThatDisagreeWithTheSchemaAreDamage) {
  const std::string path = MakeDataset(dir_, "ds", 40, 4, 10);
  // Labels are 0..9 (4 records each); the edited schema names 9 classes.
  EditManifest(path, [](Manifest& m) {
    m.schema.labels[0].classes = {"a", "b", "c", "d", "e", "f", "g", "h", "i"};
  });
  ReaderOptions o = Options(path, 8, 2);
  o.shuffle = false;
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  EXPECT_THAT(FirstError(*reader),
              testing::StatusIs(absl::StatusCode::kDataLoss,
                                HasSubstr("label 'label' is 9, outside its 9 classes")));

  o.on_corrupt = OnCorrupt::kSkip;
  SP_ASSERT_OK_AND_ASSIGN(auto skipping, Reader::Open(o));
  for (uint64_t i = 0; i < skipping->batches_per_epoch(); ++i) {
    SP_ASSERT_OK_AND_ASSIGN(Batch b, skipping->Next());
    for (int j = 0; j < b.size(); ++j) EXPECT_LT(b.labels()[j], 9);
  }
  EXPECT_EQ(skipping->stats().skipped, 4u);

  EditManifest(path, [](Manifest& m) { m.schema.labels.push_back({"coarse", {}}); });
  SP_ASSERT_OK_AND_ASSIGN(auto two_labels, Reader::Open(Options(path, 8, 2)));
  EXPECT_THAT(FirstError(*two_labels),
              testing::StatusIs(absl::StatusCode::kDataLoss,
                                HasSubstr("1 labels, the schema has 2")));

  EditManifest(path, [](Manifest& m) {
    m.schema.labels.pop_back();
    m.schema.labels[0].classes.clear();
    m.schema.image.height = 2;
  });
  SP_ASSERT_OK_AND_ASSIGN(auto shape, Reader::Open(Options(path, 8, 2)));
  EXPECT_THAT(FirstError(*shape),
              testing::StatusIs(absl::StatusCode::kDataLoss,
                                HasSubstr("image raw 4x4x3 hwc, the schema says raw 2x4x3 hwc")));
}

// io=mmap on a file truncated while it is read: the pread engine's clear
// error, not SIGBUS.
TEST_F(ReaderTest, MmapShardTruncatedWhileReadIsAnErrorNotSigbus) {
  const std::string path = MakeDataset(dir_, "ds", 2000, 8, 10, /*block_size=*/16 << 10);
  ReaderOptions o = Options(path, 50, 2);
  o.io = IoEngine::kMmap;
  o.shuffle = false;
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  SP_ASSERT_OK(reader->Next().status());
  ASSERT_EQ(truncate((fs::path(path) / "shard-00000.shard").c_str(), 4096), 0);
  EXPECT_THAT(FirstError(*reader),
              testing::StatusIs(absl::StatusCode::kDataLoss,
                                AllOf(HasSubstr("shard-00000.shard"),
                                      HasSubstr("shrank while it was mapped"))));
}

// A FIFO in place of a shard or of the manifest: an error at once, never a
// reader blocked in open().
TEST_F(ReaderTest, FifoInPlaceOfAShardOrManifestIsAnErrorNotAHang) {
  for (const char* name : {"shard-00000.shard", "manifest.json"}) {
    SCOPED_TRACE(name);
    testing::TempDir dir;
    const std::string path = MakeDataset(dir, "ds", 20, 4, 2);
    const std::string file = (fs::path(path) / name).string();
    ASSERT_TRUE(fs::remove(file));
    ASSERT_EQ(mkfifo(file.c_str(), 0600), 0);
    EXPECT_THAT(Reader::Open(Options(path, 4, 1)).status(),
                testing::StatusIs(absl::StatusCode::kFailedPrecondition,
                                  AllOf(HasSubstr(name), HasSubstr("a FIFO"))));
  }
}

// ---- Elastic resume ---------------------------------------------------------

// Reads `batches` batches on every rank of `world` (all of the epoch when
// past it), appending the records to `seen`; returns rank `world - 1`'s state.
ReaderState ReadRanks(const ReaderOptions& base, int world, const ReaderState* from,
                      uint64_t batches, std::vector<uint64_t>* seen,
                      std::set<uint64_t>* batch_counts) {
  ReaderState last;
  for (int rank = 0; rank < world; ++rank) {
    ReaderOptions o = base;
    o.rank = rank;
    o.world_size = world;
    auto reader = Reader::Open(o);
    EXPECT_TRUE(reader.ok()) << reader.status();
    if (!reader.ok()) return last;
    if (from != nullptr) {
      absl::Status s = (*reader)->Restore(*from);
      EXPECT_TRUE(s.ok()) << s;
    }
    batch_counts->insert((*reader)->batches_in_epoch());
    for (uint64_t b = 0; b < batches; ++b) {
      absl::StatusOr<Batch> batch = (*reader)->Next();
      if (absl::IsOutOfRange(batch.status())) break;
      EXPECT_TRUE(batch.ok()) << batch.status();
      if (!batch.ok()) break;
      for (int i = 0; i < batch->size(); ++i) seen->push_back(batch->record_index(i));
    }
    last = (*reader)->state();
  }
  return last;
}

TEST_F(ReaderTest, ElasticResumeDeliversEveryRecordOnceOnFewerOrMoreRanks) {
  const uint64_t n = 1500;
  std::string path = MakeDataset(dir_, "ds", n, 4, 10, 8 << 10);  // 170 records a block
  struct Case {
    int w, w2;
    uint64_t b;
  };
  // b = 1: inside the shuffle window's reach (the budget holds 4 of 9 blocks).
  for (Case c : {Case{4, 3, 5}, Case{2, 5, 1}, Case{3, 4, 9}, Case{4, 1, 3}, Case{1, 3, 20}}) {
    SCOPED_TRACE(::testing::Message() << c.w << " -> " << c.w2 << " ranks after " << c.b);
    ReaderOptions o = Options(path, 16, 2);
    o.remainder = Remainder::kPartial;
    o.shuffle_bytes = 32 << 10;
    o.read_ahead_bytes = 16 << 10;
    std::vector<uint64_t> seen;
    std::set<uint64_t> counts;
    ReaderState state = ReadRanks(o, c.w, nullptr, c.b, &seen, &counts);
    EXPECT_EQ(state.segment.batches, c.b);
    EXPECT_EQ(state.segment.world_size, c.w);
    const size_t first = seen.size();
    counts.clear();
    ReaderState after = ReadRanks(o, c.w2, &state, UINT64_MAX, &seen, &counts);
    EXPECT_EQ(counts.size(), 1u) << "ranks disagree on the batch count";
    std::set<uint64_t> distinct(seen.begin(), seen.end());
    EXPECT_EQ(distinct.size(), seen.size()) << "a record delivered twice";
    // Every record, but those the W' ranks' remainder rule leaves out.
    const uint64_t owed = n - first;
    EXPECT_EQ(seen.size(), n - owed % c.w2);
    // The next epoch is an ordinary W'-rank epoch.
    EXPECT_EQ(after.epoch, 1u);
    EXPECT_TRUE(after.earlier.empty());
  }
}

TEST_F(ReaderTest, ElasticResumeFromAnyRankAndTheSameOptionsGivesTheSameStream) {
  std::string path = MakeDataset(dir_, "ds", 1000, 4, 10, 8 << 10);
  ReaderOptions o = Options(path, 10, 1);
  o.world_size = 4;
  std::vector<ReaderState> states;
  for (int rank = 0; rank < 4; ++rank) {
    o.rank = rank;
    SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
    for (int i = 0; i < 7; ++i) SP_ASSERT_OK(reader->Next().status());
    states.push_back(reader->state());
    EXPECT_EQ(reader->fingerprint(), states[0].fingerprint);
  }
  for (const ReaderState& s : states) EXPECT_TRUE(s == states[0]) << "states differ by rank";
  // Two resumed ranks of 3 agree with each other whichever state they got.
  o.world_size = 3;
  o.rank = 1;
  SP_ASSERT_OK_AND_ASSIGN(auto a, Reader::Open(o));
  SP_ASSERT_OK_AND_ASSIGN(auto b, Reader::Open(o));
  SP_ASSERT_OK(a->Restore(states[0]));
  SP_ASSERT_OK(b->Restore(states[3]));
  Delivered da = ReadEpochs(*a, 1), db = ReadEpochs(*b, 1);
  EXPECT_EQ(da.records, db.records);
  EXPECT_GT(da.batches, 0u);
  // A state saved mid-way through the resumed epoch resumes it identically.
  SP_ASSERT_OK_AND_ASSIGN(auto c, Reader::Open(o));
  SP_ASSERT_OK(c->Restore(states[0]));
  SP_ASSERT_OK(c->Next().status());
  ReaderState mid = c->state();
  EXPECT_EQ(mid.earlier.size(), 1u);
  SP_ASSERT_OK_AND_ASSIGN(auto d, Reader::Open(o));
  SP_ASSERT_OK(d->Restore(mid));
  Delivered dd = ReadEpochs(*d, 1);
  ASSERT_EQ(dd.records.size() + 10, da.records.size());
  EXPECT_TRUE(std::equal(dd.records.begin(), dd.records.end(), da.records.begin() + 10));
}

TEST_F(ReaderTest, ElasticRestoreReadsOnlyWhatTheRestNeeds) {
  std::string path = MakeDataset(dir_, "ds", 4000, 8, 10, 16 << 10);
  ReaderOptions o = Options(path, 32, 2);
  o.world_size = 2;
  o.shuffle_bytes = 128 << 10;
  o.read_ahead_bytes = 64 << 10;
  SP_ASSERT_OK_AND_ASSIGN(auto full, Reader::Open(o));
  ReadEpochs(*full, 1, false);
  for (int i = 0; i < 50; ++i) SP_ASSERT_OK(full->Next().status());  // of 62 in epoch 1
  ReaderState state = full->state();
  o.world_size = 3;
  SP_ASSERT_OK_AND_ASSIGN(auto resumed, Reader::Open(o));
  SP_ASSERT_OK(resumed->Restore(state));
  Delivered rest = ReadEpochs(*resumed, 1, false);
  EXPECT_GT(rest.batches, 0u);
  EXPECT_LT(rest.batches, resumed->batches_per_epoch());
  EXPECT_LT(resumed->stats().bytes_read, full->stats().bytes_read / 2 * 0.7);
}

TEST_F(ReaderTest, StatesOfAnotherDatasetSeedOrWithBadFieldsAreRefused) {
  std::string path = MakeDataset(dir_, "ds", 1000, 4, 10, 8 << 10);
  std::string other = MakeDataset(dir_, "other", 1001, 4, 10, 8 << 10);
  ReaderOptions o = Options(path, 10, 1);
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  ReaderOptions oo = o;
  oo.path = other;
  SP_ASSERT_OK_AND_ASSIGN(auto on_other, Reader::Open(oo));
  EXPECT_NE(reader->fingerprint(), on_other->fingerprint());
  const ReaderState good = reader->state();
  auto refused = [&](ReaderState s, const std::string& says) {
    EXPECT_THAT(reader->Restore(s),
                testing::StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(says)));
  };
  refused(on_other->state(), "another dataset");
  // A saved state of another dataset reads back fine: the dataset is Restore's to check.
  SP_ASSERT_OK_AND_ASSIGN(const ReaderState loaded,
                          ReaderState::FromJson(on_other->state().ToJson()));
  refused(loaded, "another dataset");
  ReaderState s = good;
  s.seed = 8;
  refused(s, "state of seed 8");
  s = good;
  s.segment.world_size = 0;
  refused(s, "state.world_size 0");
  s.segment.world_size = kMaxWorldSize + 1;
  refused(s, "state.world_size");
  s = good;
  s.segment.batch_size = -3;
  refused(s, "state.batch_size -3");
  s = good;
  s.segment.remainder = static_cast<Remainder>(9);
  refused(s, "state.remainder 9");
  s = good;
  s.segment.batches = 101;  // of 100
  refused(s, "state.batch 101");
  s.segment.batches = UINT64_MAX;
  refused(s, "state.batch");
  s = good;
  s.segment.world_size = 2;
  s.segment.batches = 51;  // of 50 on 2 ranks
  refused(s, "51 batches delivered");
  s = good;
  s.earlier.assign(kMaxStateSegments + 1, {1, 10, Remainder::kDrop, true, 1 << 20, 1});
  refused(s, "earlier segments");
  s = good;
  s.earlier = {{2, 0, Remainder::kDrop, true, 1 << 20, 1}};
  refused(s, "state.earlier[0].batch_size 0");
  s.earlier = {{2, 10, Remainder::kDrop, true, 1 << 20, 1000}};
  refused(s, "segment 0 of the epoch: 1000 batches delivered");
  // Nothing was changed by the refusals: the reader reads from the start.
  SP_ASSERT_OK_AND_ASSIGN(Batch b, reader->Next());
  EXPECT_EQ(b.index(), 0u);
}


// ---- What an embedding program can ask --------------------------------------

TEST_F(ReaderTest, SchemaOutputShapeAndEngineAreKnownBeforeTheFirstBatch) {
  std::string path = MakeDataset(dir_, "ds", 100, 6, 10);
  ReaderOptions o = Options(path, 20, 1);
  o.transform = Transform::CifarTrain(4, 0);
  o.layout = OutputLayout::kNCHW;
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  EXPECT_EQ(reader->schema().image.height, 6u);
  ASSERT_EQ(reader->schema().labels.size(), 1u);
  EXPECT_EQ(reader->schema().labels[0].name, "label");
  EXPECT_EQ(reader->output_shape(), (std::array<int64_t, 4>{20, 3, 4, 4}));
  EXPECT_NE(reader->io_engine(), IoEngine::kAuto) << "auto names what it chose";
  EXPECT_EQ(reader->device_fallback(), "");
  SP_ASSERT_OK_AND_ASSIGN(Batch b, reader->Next());
  EXPECT_EQ(b.shape(), reader->output_shape());
  for (IoEngine e : {IoEngine::kPread, IoEngine::kMmap}) {
    o.io = e;
    SP_ASSERT_OK_AND_ASSIGN(auto r, Reader::Open(o));
    EXPECT_EQ(r->io_engine(), e);
  }
}

TEST_F(ReaderTest, CorruptReporterIsToldOfEachReplacedSample) {
  std::string path = MakeDataset(dir_, "ds", 500, 8, 10, 16 << 10);
  DamageFirstBlock(path);
  ReaderOptions o = Options(path, 50, 2);
  o.on_corrupt = OnCorrupt::kSkip;
  std::vector<CorruptSample> told;
  const std::thread::id consumer = std::this_thread::get_id();
  o.corrupt_reporter = [&](const CorruptSample& c) {
    EXPECT_EQ(std::this_thread::get_id(), consumer) << "called on Next()'s thread";
    told.push_back(c);
  };
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  uint64_t skipped_in_batches = 0;
  std::set<uint64_t> delivered;
  for (;;) {
    absl::StatusOr<Batch> batch = reader->Next();
    if (absl::IsOutOfRange(batch.status())) break;
    ASSERT_TRUE(batch.ok()) << batch.status();
    skipped_in_batches += batch->skipped();
    size_t from_this_batch = 0;
    for (const CorruptSample& c : told) {
      if (c.epoch == batch->epoch() && c.batch == batch->index()) ++from_this_batch;
    }
    EXPECT_EQ(from_this_batch, size_t(batch->skipped())) << "told before Next() returned";
    for (int i = 0; i < batch->size(); ++i) delivered.insert(batch->record_index(i));
  }
  ASSERT_GT(told.size(), 0u);
  EXPECT_EQ(told.size(), skipped_in_batches);
  EXPECT_EQ(told.size(), reader->stats().skipped);
  for (const CorruptSample& c : told) {
    EXPECT_EQ(c.damage.status.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(c.damage.status.message()), HasSubstr(".shard")) << "names the shard";
    EXPECT_THAT(c.damage.path, HasSubstr(".shard")) << "the shard's path";
    EXPECT_LT(c.position, 50);
    ASSERT_TRUE(c.damage.record.has_value());
    EXPECT_EQ(delivered.count(*c.damage.record), 0u)
        << "record " << *c.damage.record << " was replaced";
  }
}

TEST_F(ReaderTest, BatchesMayBeDestroyedOnAnotherThreadWhileNextRuns) {
  std::string path = MakeDataset(dir_, "ds", 2000, 4, 10);
  ReaderOptions o = Options(path, 10, 2);
  o.ring_slots = 3;
  o.shuffle = false;
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Batch> handed;
  bool done = false;
  std::thread trainer([&] {  // frees what the loading thread fetched
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return done || !handed.empty(); });
      if (handed.empty()) return;
      Batch b = std::move(handed.front());
      handed.pop_front();
      lock.unlock();
      b = Batch();  // destroyed on this thread, maybe while Next() runs
      lock.lock();
    }
  });
  std::vector<uint64_t> records;
  int refused = 0;
  for (;;) {
    absl::StatusOr<Batch> batch = reader->Next();
    if (absl::IsOutOfRange(batch.status())) break;
    if (absl::IsFailedPrecondition(batch.status())) {  // the trainer is behind
      ++refused;
      std::this_thread::yield();
      continue;
    }
    ASSERT_TRUE(batch.ok()) << batch.status();
    for (int i = 0; i < batch->size(); ++i) records.push_back(batch->record_index(i));
    std::lock_guard<std::mutex> lock(mu);
    handed.push_back(*std::move(batch));
    cv.notify_one();
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_one();
  }
  trainer.join();
  std::vector<uint64_t> want(2000);
  std::iota(want.begin(), want.end(), 0u);
  EXPECT_EQ(records, want) << "every batch once, in order (" << refused << " refusals)";
  EXPECT_TRUE(reader->Restore(reader->state()).ok()) << "no Batch is counted as alive";
}

TEST(ReaderOptionNamesTest, EveryOptionEnumHasANameAndParsesBack) {
  for (IoEngine e : {IoEngine::kAuto, IoEngine::kPread, IoEngine::kDirect, IoEngine::kMmap,
                     IoEngine::kUring}) {
    EXPECT_EQ(*ParseIoEngine(IoEngineName(e)), e);
  }
  for (Remainder r : {Remainder::kDrop, Remainder::kPartial, Remainder::kPad}) {
    EXPECT_EQ(*ParseRemainder(RemainderName(r)), r);
  }
  for (OnCorrupt c : {OnCorrupt::kError, OnCorrupt::kSkip}) {
    EXPECT_EQ(*ParseOnCorrupt(OnCorruptName(c)), c);
  }
  for (OutputLayout l : {OutputLayout::kNHWC, OutputLayout::kNCHW}) {
    EXPECT_EQ(*ParseOutputLayout(OutputLayoutName(l)), l);
  }
  for (DType d : {DType::kUint8, DType::kFloat32}) EXPECT_EQ(*ParseDType(DTypeName(d)), d);
  EXPECT_EQ(ElementTypeName(ElementType::kFloat16), "float16");
  EXPECT_EQ(ElementTypeName(ElementType::kUint8), "uint8");
  for (DeviceDType d : {DeviceDType::kAsHost, DeviceDType::kFloat32, DeviceDType::kFloat16}) {
    EXPECT_EQ(*ParseDeviceDType(DeviceDTypeName(d)), d);
  }
  EXPECT_EQ(*ParseOutputLayout("NCHW"), OutputLayout::kNCHW) << "any case";
  EXPECT_THAT(ParseRemainder("wrap").status(),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("unknown remainder 'wrap' (drop, partial, pad)")));
  EXPECT_THAT(ParseIoEngine("").status(),
              testing::StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("auto, pread")));
}

}  // namespace
}  // namespace shardpack
