// The verified cache and the remote files over a store in memory that
// serves a dataset written by the test, with the faults each test picks:
// blocks checked before they are used or kept, a damaged block fetched
// again then handed on, the budget kept (smaller than a block too), a
// user's file in the cache folder never removed, a second pass served from
// the cache with no request, and a damaged cache entry never used.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/coding.h"
#include "format/shard_layout.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "remote/remote_dataset.h"
#include "shardpack/crc32c.h"
#include "shardpack/dataset.h"
#include "shardpack/shard.h"
#include "tests/testing/shard_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack::remote {
namespace {

using ::shardpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Serves the files of `dir` as objects under "mem://ds/"; `fault` may
// change a range's bytes (after they were copied) or fail it.
class MemoryStore final : public ObjectStore {
 public:
  using Fault = std::function<absl::Status(std::string_view object, uint64_t offset,
                                           std::span<uint8_t> bytes)>;
  explicit MemoryStore(std::string dir) : dir_(std::move(dir)) {}
  const std::string& url() const override { return url_; }
  absl::StatusOr<std::string> Get(std::string_view object, uint64_t) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.requests;
    const std::string path = dir_ + "/" + std::string(object);
    if (!fs::exists(path)) return absl::NotFoundError(UrlOf(object) + ": no such object");
    return ReadAll(path);
  }
  using ObjectStore::Fetch;
  // Each request in turn, `done` told of each as it ends (outside the lock:
  // a caller's check may read the store's stats).
  void Fetch(std::span<RangeRequest> requests, EachDone done) override {
    for (size_t i = 0; i < requests.size(); ++i) {
      FetchOne(requests[i]);
      done(i);
    }
  }
  StoreStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  Fault fault;

 private:
  void FetchOne(RangeRequest& r) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.requests;
    const std::string bytes = ReadAll(dir_ + "/" + std::string(r.object));
    if (r.offset + r.dst.size() > bytes.size()) {
      r.status = absl::DataLossError(UrlOf(r.object) + ": short");
      return;
    }
    std::copy_n(bytes.data() + r.offset, r.dst.size(), r.dst.data());
    stats_.bytes += r.dst.size();
    r.status = fault ? fault(r.object, r.offset, r.dst) : absl::OkStatus();
  }

  const std::string dir_;
  const std::string url_ = "mem://ds/";
  mutable std::mutex mu_;
  StoreStats stats_;
};

class RemoteDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = dir_.Join("data");
    manifest_ = WriteDataset(data_, 0);
  }

  // 150 records in shards of 60, many blocks each; `seed` changes their
  // bytes, not their sizes (so another seed's blocks sit at the same offsets).
  static Manifest WriteDataset(const std::string& dir, uint64_t seed) {
    fs::create_directories(dir);
    DatasetWriterOptions o;
    o.directory = dir;
    o.schema.image.encoding = Encoding::kJpeg;
    o.schema.labels = {{"label", {}}};
    o.shard_max_records = 60;
    o.shard.block_size = 16 << 10;  // many blocks a shard
    auto writer = DatasetWriter::Create(o);
    EXPECT_TRUE(writer.ok()) << writer.status();
    for (uint64_t i = 0; i < 150; ++i) {
      auto r = testing::JpegLikeRecord(i + seed, 5000 + 37 * i);  // shards past 256 KiB
      r.labels = {static_cast<int64_t>(i % 7)};
      SP_EXPECT_OK((*writer)->Add(r.record()));
    }
    auto m = (*writer)->Finish();
    EXPECT_TRUE(m.ok()) << m.status();
    return *m;
  }

  // The folder of this dataset's entries in cache/.
  static std::string SpaceOf(RemoteDataset& d) {
    return fs::path(d.cache().PathOf("x")).parent_path().string();
  }

  // The dataset through a fresh store, with a cache of `bytes` in cache/.
  std::shared_ptr<RemoteDataset> Open(uint64_t bytes, MemoryStore** store = nullptr,
                                      const std::string& data = "") {
    auto s = std::make_unique<MemoryStore>(data.empty() ? data_ : data);
    if (store != nullptr) *store = s.get();
    auto d = RemoteDataset::Open("mem://ds/", {dir_.Join("cache"), bytes}, std::move(s));
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *d : nullptr;
  }

  // Every block of every shard through ReadRemote in one batch, compared
  // with the local bytes (of `data`, default this dataset's).
  void ReadEveryBlock(RemoteDataset& d, const std::string& data = "") {
    std::vector<std::unique_ptr<RemoteFile>> files;
    std::vector<std::string> local;
    std::vector<RemoteRead> reads;
    std::vector<std::vector<uint8_t>> buffers;
    for (const ShardEntry& e : manifest_.shards) {
      auto file = d.OpenFile(e.path);
      ASSERT_TRUE(file.ok()) << file.status();
      local.push_back(ReadAll(absl::StrCat(data.empty() ? data_ : data, "/", e.path)));
      auto index = ShardIndex::Load(**file);
      ASSERT_TRUE(index.ok()) << index.status();
      for (const BlockInfo& b : index->blocks()) {
        buffers.emplace_back(b.stored_size);
        reads.push_back({file->get(), b.offset, {}, 0, {}});
      }
      files.push_back(std::move(*file));
    }
    for (size_t i = 0; i < reads.size(); ++i) reads[i].dst = buffers[i];
    ReadRemote(reads);
    size_t f = 0;
    for (size_t i = 0; i < reads.size(); ++i) {
      while (reads[i].file != files[f].get()) ++f;
      SP_EXPECT_OK(reads[i].status);
      // Fetched, cached or within the tail: checked here, not again by a
      // reader's decoder (RemoteRead::checked).
      EXPECT_TRUE(reads[i].checked) << "block at " << reads[i].offset;
      EXPECT_TRUE(std::string(buffers[i].begin(), buffers[i].end()) ==
                  local[f].substr(reads[i].offset, buffers[i].size()))
          << "block at " << reads[i].offset << " of shard " << f;
    }
  }

  uint64_t CacheBytes() {
    uint64_t total = 0;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir_.Join("cache"), ec);
         it != fs::recursive_directory_iterator(); ++it) {
      if (it->is_regular_file()) total += it->file_size();
    }
    return total;
  }

  testing::TempDir dir_;
  std::string data_;
  Manifest manifest_;
};

TEST_F(RemoteDatasetTest, SecondPassIsServedByTheCacheWithNoRequest) {
  MemoryStore* store = nullptr;
  auto d = Open(uint64_t{1} << 30, &store);
  ASSERT_NE(d, nullptr);
  ReadEveryBlock(*d);
  const uint64_t first = store->stats().requests;
  EXPECT_GT(first, 3u);
  // Every byte once: the blocks within a shard's tail, fetched at open, are
  // not fetched again.
  uint64_t dataset_bytes = 0;
  for (const ShardEntry& e : manifest_.shards) dataset_bytes += e.bytes;
  EXPECT_LE(store->stats().bytes, dataset_bytes);
  ReadEveryBlock(*d);
  EXPECT_EQ(store->stats().requests, first);
  EXPECT_GT(d->stats().cache.hits, 0u);
  // A new process (a new dataset object) on the same cache: only the manifest.
  auto again = Open(uint64_t{1} << 30, &store);
  ReadEveryBlock(*again);
  EXPECT_EQ(store->stats().requests, 1u);
}

// A shard of more records than the tail's 256 KiB of footer holds: the rest
// of its footer is fetched once, at open, and kept beside the ends; every
// later read of the footer (a reader's own index) is served from memory, and
// a new process takes both from the cache.
TEST_F(RemoteDatasetTest, AFooterLongerThanTheTailIsFetchedOnce) {
  const std::string data = dir_.Join("big");
  fs::create_directories(data);
  DatasetWriterOptions o;
  o.directory = data;
  o.schema.image.encoding = Encoding::kJpeg;
  o.schema.labels = {{"label", {}}};
  auto writer = DatasetWriter::Create(o);
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (uint64_t i = 0; i < 80000; ++i) {  // 4 bytes of record offset each: 320 KB
    auto r = testing::JpegLikeRecord(i, 16);
    r.labels = {static_cast<int64_t>(i % 7)};
    SP_ASSERT_OK((*writer)->Add(r.record()));
  }
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, (*writer)->Finish());
  ASSERT_EQ(m.shards.size(), 1u);
  const std::string shard = m.shards[0].path;
  // A third process finds the footer's cache entry damaged: its trailer's
  // CRC-32C (over the entry) refuses it, and the footer's rest alone is
  // fetched again, never the damaged bytes used.
  for (int process = 0; process < 3; ++process) {
    if (process == 2) {
      int damaged = 0;
      for (const auto& e : fs::recursive_directory_iterator(dir_.Join("cache"))) {
        const std::string name = e.path().filename().string();
        if (!e.is_regular_file() || name.find("-footer") == std::string::npos) continue;
        std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(1000);
        f.put('\x5a');
        ++damaged;
      }
      ASSERT_EQ(damaged, 1);
    }
    MemoryStore* store = nullptr;
    auto d = Open(uint64_t{1} << 30, &store, data);
    ASSERT_NE(d, nullptr);
    SP_ASSERT_OK_AND_ASSIGN(auto file, d->OpenFile(shard));
    // The manifest, then the head and tail and the footer's rest; a second
    // process: the manifest alone; the third: the manifest and the footer.
    const uint64_t opened = store->stats().requests;
    EXPECT_EQ(opened, std::vector<uint64_t>({4, 1, 2})[process]) << "process " << process;
    for (int load = 0; load < 2; ++load) {
      SP_ASSERT_OK_AND_ASSIGN(ShardIndex index, ShardIndex::Load(*file));
      ASSERT_LT(index.footer_offset() + (uint64_t{256} << 10), m.shards[0].bytes)
          << "the footer fits the tail: no test";
      EXPECT_EQ(index.num_records(), 80000u);
    }
    EXPECT_EQ(store->stats().requests, opened) << "the footer fetched again";
  }
}

// A trailer that checks out but places the footer somewhere else (before
// the tail, or inside the file's header): the footer's rest is fetched as the
// trailer says (within its 64 MiB bound) or not at all, and the index loader
// refuses what it finds, naming the object and the offset; nothing is kept.
TEST_F(RemoteDatasetTest, ATrailerPlacingTheFooterElsewhereIsDataLoss) {
  const std::string shard = manifest_.shards[0].path;
  struct Case {
    uint64_t footer_offset;
    std::string error;
  };
  for (const Case& c : {Case{4096, "@4096: footer checksum mismatch"},
                        Case{0, "trailer places the footer at 0"}}) {
    const std::string data = dir_.Join(absl::StrCat("moved-", c.footer_offset));
    fs::copy(data_, data, fs::copy_options::recursive);
    std::string bytes = ReadAll(data + "/" + shard);
    uint8_t* t = reinterpret_cast<uint8_t*>(bytes.data()) + bytes.size() - format::kTrailerSize;
    const uint64_t trailer_at = bytes.size() - format::kTrailerSize;
    common::StoreLE<uint64_t>(t, c.footer_offset);
    common::StoreLE<uint64_t>(t + 8, trailer_at - c.footer_offset);
    common::StoreLE<uint32_t>(t + format::kTrailerCrcOffset, Crc32c({t, format::kTrailerCrcOffset}));
    std::ofstream(data + "/" + shard, std::ios::binary | std::ios::trunc) << bytes;
    fs::remove_all(dir_.Join("cache"));
    auto d = Open(uint64_t{1} << 30, nullptr, data);
    ASSERT_NE(d, nullptr);
    EXPECT_THAT(d->OpenFile(shard).status(),
                StatusIs(absl::StatusCode::kDataLoss,
                         AllOf(HasSubstr("mem://ds/" + shard), HasSubstr(c.error))))
        << "footer at " << c.footer_offset;
    EXPECT_EQ(CacheBytes(), 0u) << "an entry kept of a shard that failed its index";
  }
}

TEST_F(RemoteDatasetTest, DamagedBlockIsFetchedAgainThenDataLossUncached) {
  MemoryStore* store = nullptr;
  auto d = Open(uint64_t{1} << 30, &store);
  ASSERT_NE(d, nullptr);
  const std::string target = manifest_.shards[1].path;
  int damaged = 0;
  // The first fetch of every block of shard 1 has a flipped byte: the
  // second is good, so every byte read is the shard's.
  std::map<uint64_t, int> seen;
  store->fault = [&](std::string_view object, uint64_t offset, std::span<uint8_t> bytes) {
    // Blocks are about 16 KiB; the head 4 KiB, the tail 256 KiB.
    const bool block = bytes.size() > 4096 && bytes.size() <= (32 << 10);
    if (object == target && block && seen[offset]++ == 0) {
      bytes[bytes.size() / 2] ^= 0x40;
      ++damaged;
    }
    return absl::OkStatus();
  };
  ReadEveryBlock(*d);
  EXPECT_GT(damaged, 0);
  EXPECT_EQ(d->stats().refetched, static_cast<uint64_t>(damaged));
  EXPECT_EQ(d->stats().damaged, 0u);
  // Damaged on every try: never handed out, whole, in part or with its
  // neighbours: a DataLossError naming the URL and the block's offset
  // (the reader's on_corrupt decides what follows), counted, never kept.
  fs::remove_all(dir_.Join("cache"));
  auto fresh = Open(uint64_t{1} << 30, &store);
  uint64_t bad = UINT64_MAX;  // a byte of block 1, once the index is loaded
  store->fault = [&](std::string_view object, uint64_t offset, std::span<uint8_t> bytes) {
    if (object == target && offset <= bad && bad - offset < bytes.size()) {
      bytes[bad - offset] ^= 1;
    }
    return absl::OkStatus();
  };
  auto file = fresh->OpenFile(target);
  ASSERT_TRUE(file.ok()) << file.status();
  auto index = ShardIndex::Load(**file);
  ASSERT_TRUE(index.ok()) << index.status();
  const BlockInfo& b = index->block(1);
  bad = b.offset + 40;
  const std::string where = absl::StrCat("mem://ds/", target, " @", b.offset, ": block failed");
  std::vector<uint8_t> whole(b.stored_size), part(100), across(b.stored_size + 200);
  for (auto [at, dst] : std::vector<std::pair<uint64_t, std::span<uint8_t>>>{
           {b.offset, whole}, {b.offset + 300, part}, {b.offset - 100, across}}) {
    EXPECT_THAT((*file)->ReadExact(at, dst), StatusIs(absl::StatusCode::kDataLoss,
                                                      HasSubstr(where)))
        << dst.size() << " bytes at " << at;
  }
  EXPECT_EQ(fresh->stats().damaged, 3u);
  for (const auto& e : fs::recursive_directory_iterator(dir_.Join("cache"))) {
    EXPECT_NE(e.path().filename().string(), absl::StrFormat("1-%x.spc", b.offset)) << "kept";
  }
}

// ReadRemote tells of each read once, as soon as it is final: served by
// the cache, fetched (its bytes in place and already kept), a part of a
// block, or damaged on both fetches (its DataLossError set).
TEST_F(RemoteDatasetTest, EachReadIsToldOnceWhenItIsFinal) {
  MemoryStore* store = nullptr;
  auto d = Open(uint64_t{1} << 30, &store);
  ASSERT_NE(d, nullptr);
  const std::string target = manifest_.shards[1].path;
  auto file = d->OpenFile(target);
  ASSERT_TRUE(file.ok()) << file.status();
  auto index = ShardIndex::Load(**file);
  ASSERT_TRUE(index.ok()) << index.status();
  ASSERT_GE(index->blocks().size(), 4u);
  const BlockInfo &cached = index->block(0), &damaged = index->block(1);
  const BlockInfo &fetched = index->block(2), &parted = index->block(3);
  std::vector<uint8_t> warm(cached.stored_size);
  SP_ASSERT_OK((*file)->ReadExact(cached.offset, warm));  // now in the cache
  store->fault = [&](std::string_view object, uint64_t offset, std::span<uint8_t> bytes) {
    const uint64_t bad = damaged.offset + 40;
    if (object == target && offset <= bad && bad - offset < bytes.size()) bytes[bad - offset] ^= 1;
    return absl::OkStatus();
  };
  std::vector<std::vector<uint8_t>> buffers = {
      std::vector<uint8_t>(cached.stored_size), std::vector<uint8_t>(damaged.stored_size),
      std::vector<uint8_t>(fetched.stored_size), std::vector<uint8_t>(100)};
  std::vector<RemoteRead> reads = {{file->get(), cached.offset, buffers[0], 0, {}},
                                   {file->get(), damaged.offset, buffers[1], 0, {}},
                                   {file->get(), fetched.offset, buffers[2], 0, {}},
                                   {file->get(), parted.offset + 50, buffers[3], 0, {}}};
  struct Told {
    std::vector<RemoteRead>* reads;
    std::vector<uint64_t> blocks;  // the offset of each read's block
    std::string local, space;
    std::vector<std::string> what;
  } told{&reads, {cached.offset, damaged.offset, fetched.offset, parted.offset},
         ReadAll(data_ + "/" + target), SpaceOf(*d), {}};
  told.what.resize(reads.size());
  auto tell = [](void* context, size_t i) {
    Told& t = *static_cast<Told*>(context);
    const RemoteRead& r = (*t.reads)[i];
    std::string what = r.status.ok() ? "" : std::string(r.status.message());
    if (r.status.ok()) {
      what = std::string(r.dst.begin(), r.dst.end()) == t.local.substr(r.offset, r.dst.size())
                 ? "its bytes"
                 : "other bytes";
      if (fs::exists(absl::StrFormat("%s/1-%x.spc", t.space, t.blocks[i]))) what += ", kept";
    }
    t.what[i] += what + ";";
  };
  ReadRemote(reads, {tell, &told});
  EXPECT_EQ(told.what[0], "its bytes, kept;");
  EXPECT_THAT(told.what[1], AllOf(HasSubstr(absl::StrCat("@", damaged.offset, ": block failed")),
                                  HasSubstr("on two fetches")));
  EXPECT_EQ(told.what[1].find(';'), told.what[1].size() - 1) << "told more than once";
  EXPECT_EQ(told.what[2], "its bytes, kept;");
  EXPECT_EQ(told.what[3], "its bytes, kept;");
}

TEST_F(RemoteDatasetTest, BudgetHoldsEvenBelowOneBlockAndSparesOtherFiles) {
  fs::create_directories(dir_.Join("cache"));
  { std::ofstream(dir_.Join("cache/mine.spc")) << "a user's file, named like an entry"; }
  for (uint64_t budget : {uint64_t{4096}, uint64_t{40} << 10}) {
    auto d = Open(budget);
    ASSERT_NE(d, nullptr);
    ReadEveryBlock(*d);
    ReadEveryBlock(*d);
    EXPECT_LE(CacheBytes(), budget + ReadAll(dir_.Join("cache/mine.spc")).size())
        << "budget " << budget;
    EXPECT_TRUE(fs::exists(dir_.Join("cache/mine.spc")));
    if (budget > 16 << 10) {
      EXPECT_GT(d->stats().cache.kept, 0u);
    }
  }
}

// The names and modification times of the entries in `space`.
std::map<std::string, fs::file_time_type> EntriesOf(const std::string& space) {
  std::map<std::string, fs::file_time_type> out;
  for (const auto& e : fs::directory_iterator(space)) {
    if (e.path().extension() == ".spc") out[e.path().filename().string()] = e.last_write_time();
  }
  return out;
}

// A dataset larger than the budget keeps what fitted first and streams the
// rest: its next pass hits those entries and neither writes nor evicts
// (evicting its own oldest for more of itself would write every block of
// every pass and hit none). Another dataset's entries make room for it.
TEST_F(RemoteDatasetTest, ADatasetLargerThanTheBudgetKeepsWhatFittedFirst) {
  uint64_t dataset_bytes = 0;
  for (const ShardEntry& e : manifest_.shards) dataset_bytes += e.bytes;
  const uint64_t budget = dataset_bytes / 3;
  const std::string other = dir_.Join("other");
  WriteDataset(other, 1000);
  std::string theirs;
  {
    auto d = Open(budget, nullptr, other);
    ReadEveryBlock(*d, other);
    theirs = SpaceOf(*d);
  }
  ASSERT_FALSE(EntriesOf(theirs).empty());
  MemoryStore* store = nullptr;
  auto d = Open(budget, &store);
  ReadEveryBlock(*d);
  const CacheStats first = d->stats().cache;
  const uint64_t first_requests = store->stats().requests;
  EXPECT_TRUE(EntriesOf(theirs).empty()) << "the other dataset's entries were kept";
  EXPECT_GT(first.evicted, 0u);
  EXPECT_GT(first.kept, 0u);
  EXPECT_LT(first.kept, first.misses) << "the whole dataset fitted: nothing to test";
  EXPECT_LE(CacheBytes(), budget);
  const auto kept = EntriesOf(SpaceOf(*d));
  auto again = Open(budget, &store);
  ReadEveryBlock(*again);
  const CacheStats second = again->stats().cache;
  EXPECT_EQ(second.kept, 0u);
  EXPECT_EQ(second.evicted, 0u);
  EXPECT_EQ(second.hits, kept.size()) << "every entry kept is read once";
  EXPECT_LT(store->stats().requests, first_requests);
  // EXPECT_TRUE, not EXPECT_EQ: a mismatch would print every entry.
  EXPECT_TRUE(EntriesOf(SpaceOf(*again)) == kept) << "entries rewritten or removed";
  // Room made since (entries removed) is taken once the cache looks again,
  // which it does after a tenth of the budget was refused.
  for (const auto& [name, time] : kept) {
    if (name.find("ends") == std::string::npos) fs::remove(SpaceOf(*again) + "/" + name);
  }
  ReadEveryBlock(*again);
  EXPECT_GT(again->stats().cache.kept, 0u);
  EXPECT_LE(CacheBytes(), budget);
  // Two datasets open at once (a mixture) do not evict each other: the
  // other one streams past a cache full of this one's entries.
  {
    auto mixed = Open(budget, nullptr, other);
    ReadEveryBlock(*mixed, other);
    EXPECT_EQ(mixed->stats().cache.evicted, 0u);
    EXPECT_EQ(mixed->stats().cache.kept, 0u);
  }
  // A budget lowered since: its own entries go down to it.
  auto smaller = Open(budget / 2);
  ReadEveryBlock(*smaller);
  EXPECT_GT(smaller->stats().cache.evicted, 0u);
  EXPECT_LE(CacheBytes(), budget / 2);
}

TEST_F(RemoteDatasetTest, DamagedCacheEntryIsDroppedAndFetchedAgain) {
  MemoryStore* store = nullptr;
  {
    auto d = Open(uint64_t{1} << 30);
    ReadEveryBlock(*d);
  }
  // Flip a byte in every block entry on disk.
  int flipped = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir_.Join("cache"))) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name.find("head") != std::string::npos ||
        name.find("tail") != std::string::npos) {
      continue;
    }
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
    ++flipped;
  }
  ASSERT_GT(flipped, 0);
  auto d = Open(uint64_t{1} << 30, &store);
  ReadEveryBlock(*d);  // compares every byte with the shard's
  EXPECT_GE(store->stats().requests, static_cast<uint64_t>(flipped));
}

TEST_F(RemoteDatasetTest, ObjectsOutsideTheManifestAndMissingManifestAreRefused) {
  auto d = Open(uint64_t{1} << 20);
  ASSERT_NE(d, nullptr);
  EXPECT_THAT(d->OpenFile("../etc/passwd"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("mem://ds/../etc/passwd: not an object the dataset's")));
  fs::remove(data_ + "/manifest.json");
  EXPECT_THAT(RemoteDataset::Open("mem://ds/", {}, std::make_unique<MemoryStore>(data_)),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("mem://ds/manifest.json")));
}

TEST_F(RemoteDatasetTest, ShortOrFailedRangeIsAnErrorNamingTheUrl) {
  MemoryStore* store = nullptr;
  auto d = Open(0, &store);
  ASSERT_NE(d, nullptr);
  const std::string target = manifest_.shards[0].path;
  auto file = d->OpenFile(target);
  ASSERT_TRUE(file.ok()) << file.status();
  store->fault = [&](std::string_view object, uint64_t, std::span<uint8_t>) {
    return absl::UnavailableError("mem://ds/" + std::string(object) + ": HTTP 503 after 5 tries");
  };
  std::vector<uint8_t> bytes(100);
  EXPECT_THAT((*file)->ReadExact(5000, bytes),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("mem://ds/" + target)));
  EXPECT_THAT((*file)->ReadExact((*file)->size() - 10, bytes),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("passes its end")));
}

// A read of part of a block (RecordReader's) fetches and checks the whole
// block, keeps it, and gets its part; the same read again is the cache's.
TEST_F(RemoteDatasetTest, PartialReadsGetTheirPartOfACheckedBlock) {
  MemoryStore* store = nullptr;
  auto d = Open(uint64_t{1} << 30, &store);
  ASSERT_NE(d, nullptr);
  const std::string target = manifest_.shards[2].path;
  const std::string local = ReadAll(data_ + "/" + target);
  auto file = d->OpenFile(target);
  ASSERT_TRUE(file.ok()) << file.status();
  auto index = ShardIndex::Load(**file);
  ASSERT_TRUE(index.ok()) << index.status();
  for (int pass = 0; pass < 2; ++pass) {
    const uint64_t before = store->stats().requests;
    for (const BlockInfo& b : index->blocks()) {
      for (uint64_t at : {uint64_t{0}, uint64_t{100}, uint64_t{b.stored_size} - 7}) {
        std::vector<uint8_t> part(std::min<uint64_t>(5000, b.stored_size - at));
        SP_ASSERT_OK((*file)->ReadExact(b.offset + at, part));
        EXPECT_TRUE(std::string(part.begin(), part.end()) ==
                    local.substr(b.offset + at, part.size()))
            << "pass " << pass << ", block at " << b.offset << " + " << at;
      }
    }
    if (pass == 1) {
      EXPECT_EQ(store->stats().requests, before) << "the second pass fetched";
    }
  }
  // A part of a block is not a checked block for a decoder; the block is.
  const BlockInfo& b = index->block(1);
  std::vector<uint8_t> part(100), block(b.stored_size);
  std::vector<RemoteRead> reads = {{file->get(), b.offset + 10, part, 0, {}, true},
                                   {file->get(), b.offset, block, 0, {}, false}};
  ReadRemote(reads);
  SP_ASSERT_OK(reads[0].status);
  SP_ASSERT_OK(reads[1].status);
  EXPECT_FALSE(reads[0].checked);
  EXPECT_TRUE(reads[1].checked);
}

// An object read whole (the record table here; LMDB and HDF5 shards the
// same way) is checked against the manifest's CRC-32C before it is kept.
TEST_F(RemoteDatasetTest, WholeObjectIsCheckedAgainstTheManifest) {
  ASSERT_TRUE(manifest_.record_table.has_value());
  const std::string name = manifest_.record_table->path;
  MemoryStore* store = nullptr;
  {
    auto d = Open(uint64_t{1} << 30, &store);
    auto local = d->LocalCopy(name);
    ASSERT_TRUE(local.ok()) << local.status();
    EXPECT_EQ(ReadAll(*local), ReadAll(data_ + "/" + name));
    const uint64_t requests = store->stats().requests;
    EXPECT_EQ(*d->LocalCopy(name), *local);
    EXPECT_EQ(store->stats().requests, requests);
  }
  fs::remove_all(dir_.Join("cache"));
  auto d = Open(uint64_t{1} << 30, &store);
  store->fault = [](std::string_view, uint64_t, std::span<uint8_t> bytes) {
    bytes[bytes.size() / 2] ^= 1;
    return absl::OkStatus();
  };
  EXPECT_THAT(d->LocalCopy(name),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("mem://ds/" + name + ": CRC-32C of the fetched object is")));
  EXPECT_EQ(CacheBytes(), 0u) << "a damaged object was kept";
  auto none = Open(0);
  EXPECT_THAT(none->LocalCopy(name), StatusIs(absl::StatusCode::kFailedPrecondition,
                                              HasSubstr("no cache is set")));
}

// Hostile cache folders: a cache_dir that is a file is an error naming it;
// a FIFO or a directory where an entry should be is a miss (never opened for
// reading, so never a hang), and the block is fetched and read right.
TEST_F(RemoteDatasetTest, NonRegularCacheEntriesAreMissesAndAFileIsNoFolder) {
  const std::string file = dir_.Join("not-a-folder");
  { std::ofstream(file) << "x"; }
  EXPECT_THAT(RemoteDataset::Open("mem://ds/", {file, 1 << 20},
                                  std::make_unique<MemoryStore>(data_)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("cache_dir " + file + ": cannot make")));
  auto d = Open(uint64_t{1} << 30);
  ASSERT_NE(d, nullptr);
  ReadEveryBlock(*d);  // fills the cache
  int planted = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir_.Join("cache"))) {
    const std::string path = e.path().string();
    if (!e.is_regular_file() || path.find("-head") != std::string::npos ||
        path.find("-tail") != std::string::npos) {
      continue;
    }
    fs::remove(path);
    if (planted++ % 2 == 0) {
      ASSERT_EQ(mkfifo(path.c_str(), 0644), 0) << path;
    } else {
      fs::create_directory(path);
    }
  }
  ASSERT_GT(planted, 1);
  auto again = Open(uint64_t{1} << 30);
  ReadEveryBlock(*again);  // every byte compared with the shard's
  EXPECT_GE(again->stats().cache.misses, static_cast<uint64_t>(planted));
}

// --- A cache entry is used only when it is ours, whole and checked ---------

// Ranks sharing a cache whose budget is below one object: each copy handed
// out for liblmdb or libhdf5 stays at its path while its dataset is open,
// however the others evict (was: "open .../3-file.spc: No such file").
TEST_F(RemoteDatasetTest, WholeCopiesInUseSurviveOtherProcessesBelowOneObject) {
  constexpr int kProcesses = 12;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid > 0) {
      children.push_back(pid);
      continue;
    }
    int failures = 0;
    auto s = std::make_unique<MemoryStore>(data_);
    auto d = RemoteDataset::Open("mem://ds/", {dir_.Join("cache"), 64 << 10}, std::move(s));
    for (int round = 0; d.ok() && round < 4; ++round) {
      for (size_t k = 0; k < manifest_.shards.size(); ++k) {
        const std::string& name = manifest_.shards[(k + p) % manifest_.shards.size()].path;
        auto local = (*d)->LocalCopy(name);
        usleep(1000);  // what a library does before it opens the path
        if (!local.ok() || ReadAll(*local) != ReadAll(data_ + "/" + name)) ++failures;
      }
    }
    _exit(d.ok() && failures == 0 ? 0 : 1);
  }
  int failed = 0;
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  EXPECT_EQ(failed, 0) << "of " << kProcesses << " processes";
}

// A damaged copy in the cache is dropped and fetched again, not used by
// every later run.
TEST_F(RemoteDatasetTest, DamagedCachedWholeCopyIsFetchedAgain) {
  const std::string name = manifest_.shards[1].path;
  std::string path;
  {
    auto d = Open(uint64_t{1} << 30);
    auto local = d->LocalCopy(name);
    ASSERT_TRUE(local.ok()) << local.status();
    path = *local;
  }
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1000);
    f.put('\x5a');
  }
  ASSERT_NE(ReadAll(path), ReadAll(data_ + "/" + name));
  MemoryStore* store = nullptr;
  auto d = Open(uint64_t{1} << 30, &store);
  auto local = d->LocalCopy(name);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(ReadAll(*local), ReadAll(data_ + "/" + name));
  EXPECT_GT(store->stats().requests, 1u);
  EXPECT_EQ(d->stats().cache.dropped, 1u);
}

// Links planted in the cache (for its folder, its entries, beside them)
// are never followed: their targets stay as they were, nothing is written
// outside the cache, and the links go.
TEST_F(RemoteDatasetTest, LinksInTheCacheAreNeverFollowed) {
  const std::string outside = dir_.Join("outside");
  fs::create_directories(outside);
  const std::string victim = outside + "/victim";
  const std::string precious(300 << 10, 'p');
  { std::ofstream(victim) << precious; }
  std::string space;
  {
    auto d = Open(uint64_t{1} << 30);
    space = SpaceOf(*d);
  }
  const std::string table = manifest_.record_table->path;
  fs::remove_all(space);
  fs::create_directory_symlink(outside, space);  // the space itself
  {
    auto d = Open(uint64_t{1} << 30);
    ReadEveryBlock(*d);
    ASSERT_TRUE(d->LocalCopy(table).ok());
    EXPECT_FALSE(fs::is_symlink(space));
  }
  std::vector<std::string> links;  // entries that are links to the victim
  for (const char* entry : {"0-ends.spc", "records.spc", "1-ends.spc"}) {
    links.push_back(space + "/" + entry);
    fs::remove(links.back());
    fs::create_symlink(victim, links.back());
  }
  fs::create_symlink(victim, dir_.Join("cache/shardpack-cache/planted.spc"));
  {
    auto d = Open(uint64_t{1} << 30);
    ReadEveryBlock(*d);
    auto local = d->LocalCopy(table);
    ASSERT_TRUE(local.ok()) << local.status();
    EXPECT_EQ(ReadAll(*local), ReadAll(data_ + "/" + table));
  }
  for (const std::string& link : links) EXPECT_FALSE(fs::is_symlink(link)) << link;
  fs::remove_all(space);
  auto small = Open(40 << 10);  // evicts: the planted link goes, not its target
  ReadEveryBlock(*small);
  EXPECT_FALSE(fs::exists(fs::symlink_status(dir_.Join("cache/shardpack-cache/planted.spc"))));
  EXPECT_EQ(ReadAll(victim), precious);
  EXPECT_EQ(std::distance(fs::directory_iterator(outside), fs::directory_iterator()), 1);
}

// Another dataset's entries, put where this one's would be, are not served
// as its records: each fails its check against this dataset and is
// fetched again.
TEST_F(RemoteDatasetTest, AnotherDatasetsEntriesAreNotServed) {
  const std::string other = dir_.Join("other");
  WriteDataset(other, 1000);  // other bytes at the same offsets
  const std::string table = manifest_.record_table->path;
  std::string theirs, ours;
  {
    auto d = Open(uint64_t{1} << 30, nullptr, other);
    std::vector<std::string> names;
    for (const ShardEntry& e : manifest_.shards) names.push_back(e.path);
    for (const std::string& name : names) {
      auto file = d->OpenFile(name);
      ASSERT_TRUE(file.ok()) << file.status();
      auto index = ShardIndex::Load(**file);
      ASSERT_TRUE(index.ok()) << index.status();
      for (const BlockInfo& b : index->blocks()) {
        std::vector<uint8_t> bytes(b.stored_size);
        SP_ASSERT_OK((*file)->ReadExact(b.offset, bytes));
      }
      ASSERT_TRUE(d->LocalCopy(name).ok());
    }
    ASSERT_TRUE(d->LocalCopy(table).ok());
    theirs = SpaceOf(*d);
  }
  {
    auto d = Open(uint64_t{1} << 30);
    ours = SpaceOf(*d);
  }
  ASSERT_NE(theirs, ours);
  fs::remove_all(ours);
  fs::rename(theirs, ours);
  auto d = Open(uint64_t{1} << 30);
  ReadEveryBlock(*d);  // every byte compared with this dataset's
  for (const ShardEntry& e : manifest_.shards) {
    auto local = d->LocalCopy(e.path);
    ASSERT_TRUE(local.ok()) << local.status();
    EXPECT_TRUE(ReadAll(*local) == ReadAll(data_ + "/" + e.path)) << e.path;
  }
  auto local = d->LocalCopy(table);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_TRUE(ReadAll(*local) == ReadAll(data_ + "/" + table));
}

// A reader killed mid-write leaves a partial file: it counts against the
// budget, and once it is a minute old and no writer holds it, it goes.
TEST_F(RemoteDatasetTest, DeadWritersPartialsCountAndAreRemoved) {
  std::string space;
  {
    auto d = Open(uint64_t{1} << 30);
    space = SpaceOf(*d);
  }
  const std::string stale = space + "/0-ends.spc.partial-0123456789ab";
  const std::string fresh = space + "/1-ends.spc.partial-ba9876543210";
  { std::ofstream(stale) << std::string(300 << 10, 's'); }
  { std::ofstream(fresh) << std::string(10 << 10, 'f'); }
  fs::last_write_time(stale, fs::file_time_type::clock::now() - std::chrono::minutes(5));
  constexpr uint64_t kBudget = 100 << 10;
  auto d = Open(kBudget);
  ReadEveryBlock(*d);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(fresh)) << "a live writer's partial (maybe) was removed";
  EXPECT_LE(CacheBytes(), kBudget);
}

TEST(CacheOptionsTest, EnvironmentAndSizes) {
  std::map<std::string, std::string> env = {{"HOME", "/home/u"}};
  auto get = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  auto o = CacheOptionsFromEnvironment(get);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->dir, "/home/u/.cache/shardpack");
  EXPECT_EQ(o->bytes, uint64_t{16} << 30);
  env["SHARDPACK_CACHE_DIR"] = "/mnt/nvme/c";
  env["SHARDPACK_CACHE_BYTES"] = "1.5GiB";
  o = CacheOptionsFromEnvironment(get);
  EXPECT_EQ(o->dir, "/mnt/nvme/c");
  EXPECT_EQ(o->bytes, uint64_t{3} << 29);
  for (const char* bad : {"", "-1", "ten", "1e30", "nan", "5Q", "inf"}) {
    env["SHARDPACK_CACHE_BYTES"] = bad;
    EXPECT_THAT(CacheOptionsFromEnvironment(get),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("SHARDPACK_CACHE_BYTES")))
        << bad;
  }
  // The flags' sizes (common::ParseSize): GB is decimal, GiB and G binary.
  for (const auto& [text, bytes] : std::vector<std::pair<std::string, uint64_t>>{
           {"0", 0}, {" 512M ", uint64_t{512} << 20}, {"4096", 4096}, {"2GB", 2000000000}}) {
    env["SHARDPACK_CACHE_BYTES"] = text;
    o = CacheOptionsFromEnvironment(get);
    ASSERT_TRUE(o.ok()) << text << ": " << o.status();
    EXPECT_EQ(o->bytes, bytes) << text;
  }
}

}  // namespace
}  // namespace shardpack::remote
