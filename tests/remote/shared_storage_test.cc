// Readers that share one Storage (shardpack/storage.h), over a dataset that
// tests/remote/fault_proxy.py serves on loopback: the dataset is opened once
// for all of them (one manifest request) and their remote counters are one;
// readers that each make their own storage open it each.
#include <curl/curl.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "shardpack/dataset.h"
#include "shardpack/reader.h"
#include "shardpack/records.h"
#include "shardpack/storage.h"
#include "tests/remote/fault_proxy.h"
#include "tests/testing/shard_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

using ::shardpack::testing::IsOk;

constexpr int kRecords = 40;

class SharedStorageTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_DEFAULT); }

  // 40 raw 96x96x3 records in shards of 16 (442 KB: more than the head
  // and tail a shard's opening fetches), two a block, served as
  // http://127.0.0.1:PORT/ds/.
  void SetUp() override {
    DatasetWriterOptions o;
    o.directory = dir_.Join("served/ds");
    std::filesystem::create_directories(o.directory);
    o.schema.image = {Encoding::kRaw, Layout::kHWC, 96, 96, 3};
    o.schema.labels = {{"label", {}}};
    o.shard_max_records = 16;
    o.shard.block_size = 64 << 10;
    auto writer = DatasetWriter::Create(o);
    ASSERT_THAT(writer, IsOk());
    for (int i = 0; i < kRecords; ++i) {
      testing::OwnedRecord r = testing::RawRecord(i, 96, 96, 3);
      r.labels = {i % 5};
      ASSERT_THAT((*writer)->Add(r.record()), IsOk());
    }
    ASSERT_THAT((*writer)->Finish(), IsOk());
    proxy_ = std::make_unique<testing::Proxy>(
        std::vector<std::string>{"--serve", dir_.Join("served")});
    ASSERT_GT(proxy_->port(), 0) << "fault_proxy.py did not start";
    url_ = proxy_->origin() + "/ds/";
  }

  // The requests the server answered for the dataset's `object`.
  int Requests(const std::string& object) const {
    int n = 0;
    for (const nlohmann::json& e : proxy_->Log()) n += e["path"] == "/ds/" + object;
    return n;
  }

  ReaderOptions Options() const {
    ReaderOptions o;
    o.path = url_;
    o.batch_size = 8;
    o.threads = 1;
    return o;
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::Proxy> proxy_;
  std::string url_;
};

// The samples of one epoch of `reader`.
uint64_t ReadEpoch(Reader& reader) {
  uint64_t samples = 0;
  for (;;) {
    absl::StatusOr<Batch> batch = reader.Next();
    if (absl::IsOutOfRange(batch.status())) return samples;
    EXPECT_THAT(batch, IsOk());
    if (!batch.ok()) return samples;
    samples += static_cast<uint64_t>(batch->size());
  }
}

// A reader's pipeline starts at its first Next() and goes on into the next
// epoch in the background, so counters are compared as they can only grow:
// one taken later is at least one taken earlier.
TEST_F(SharedStorageTest, ReadersSharingAStorageFetchTheManifestOnceAndCountAsOne) {
  auto storage = Storage::Open({.cache_dir = dir_.Join("cache")});
  ASSERT_THAT(storage, IsOk());
  ReaderOptions o = Options();
  o.storage = *storage;
  auto first = Reader::Open(o);
  ASSERT_THAT(first, IsOk());
  auto second = Reader::Open(o);
  ASSERT_THAT(second, IsOk());
  RecordReaderOptions ro;
  ro.storage = *storage;
  auto records = RecordReader::Open(url_, ro);
  ASSERT_THAT(records, IsOk());
  EXPECT_EQ(ReadEpoch(**first), uint64_t{kRecords});
  const ReaderStats::Remote a = (*first)->stats().remote;
  const ReaderStats::Remote b = (*second)->stats().remote;  // it has read no batch
  EXPECT_GT(a.cache_misses, 0u);
  EXPECT_GE(b.cache_misses, a.cache_misses) << "the second reader counts the first's fetches";
  EXPECT_GE(b.requests, a.requests);
  EXPECT_EQ(ReadEpoch(**second), uint64_t{kRecords});
  RecordBuffer buffer;
  for (uint64_t i = 0; i < kRecords; ++i) {
    ASSERT_THAT((*records)->Read(i, &buffer), IsOk()) << i;
    EXPECT_EQ(buffer.record().labels[0], static_cast<int64_t>(i % 5));
  }
  EXPECT_EQ(Requests("manifest.json"), 1);
  const ReaderStats::Remote c = (*second)->stats().remote;
  EXPECT_GT(c.cache_hits, 0u) << "the second reader's blocks were the first's, kept";
  // Every request the server answered (all blocks are kept: the epochs
  // after the first fetch nothing), counted once, in each reader.
  EXPECT_EQ(c.requests, proxy_->Log().size());
}

TEST_F(SharedStorageTest, ReadersWithStoragesOfTheirOwnOpenTheDatasetEach) {
  ReaderOptions o = Options();
  o.cache_dir = dir_.Join("cache");
  auto first = Reader::Open(o);
  ASSERT_THAT(first, IsOk());
  auto second = Reader::Open(o);
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(ReadEpoch(**first), uint64_t{kRecords});
  EXPECT_EQ(Requests("manifest.json"), 2);
  // Each counts its own: the second only its opening (it has read no batch).
  const ReaderStats::Remote a = (*first)->stats().remote;
  const ReaderStats::Remote b = (*second)->stats().remote;
  EXPECT_LT(b.cache_hits + b.cache_misses, a.cache_hits + a.cache_misses);
  EXPECT_EQ(a.requests + b.requests, proxy_->Log().size());
}

}  // namespace
}  // namespace shardpack
