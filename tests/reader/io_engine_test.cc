// The I/O engines read the same bytes, return completions in submission
// order, and report misuse, damage and missing files with the right codes.
#include "reader/io_engine.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/os.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/shard_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack::reader {
namespace {

using ::shardpack::testing::PatternBytes;
using ::shardpack::testing::StatusIs;
using ::shardpack::testing::TempDir;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr uint64_t kA = kIoAlignment;

uint64_t AlignUp(uint64_t n) { return (n + kA - 1) / kA * kA; }

// A kIoAlignment-aligned buffer with capacity AlignUp(n) (at least one unit).
class AlignedBuffer {
 public:
  explicit AlignedBuffer(uint64_t n) {
    size_t capacity = std::max<uint64_t>(AlignUp(n), kA);
    data_ = static_cast<uint8_t*>(std::aligned_alloc(kA, capacity));
    std::fill_n(data_, capacity, uint8_t{0xAA});
  }
  ~AlignedBuffer() { std::free(data_); }
  AlignedBuffer(AlignedBuffer&& other) noexcept : data_(std::exchange(other.data_, nullptr)) {}
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  uint8_t* data() const { return data_; }

 private:
  uint8_t* data_;
};

struct TestFile {
  std::string path;
  std::vector<uint8_t> bytes;
};

TestFile WriteFile(const std::string& path, uint64_t seed, size_t size) {
  TestFile f{path, PatternBytes(seed, size)};
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(f.bytes.data()), static_cast<std::streamsize>(size));
  EXPECT_TRUE(out.good()) << path;
  return f;
}

bool OnMemoryFilesystem(const std::string& path) {
  struct statfs st;
  if (statfs(path.c_str(), &st) != 0) return false;
  auto type = static_cast<uint32_t>(st.f_type);
  return type == 0x01021994u /* TMPFS_MAGIC */ || type == 0x858458f6u /* RAMFS_MAGIC */;
}

// Opens `engine`, or skips the test when this machine cannot run it.
#define OPEN_OR_SKIP(io, engine, paths)                                                   \
  auto io##_or = BlockIo::Open((engine), (paths));                                        \
  if (absl::IsUnavailable(io##_or.status())) GTEST_SKIP() << io##_or.status().ToString(); \
  SP_ASSERT_OK(io##_or);                                                                  \
  std::unique_ptr<BlockIo> io = *std::move(io##_or)

class IoEngineTest : public ::testing::TestWithParam<IoEngine> {
 protected:
  void SetUp() override {
    // Sizes that are and are not multiples of 4096, and an empty file.
    files_.push_back(WriteFile(dir_.Join("a.bin"), 1, 300 * 1024 + 123));
    files_.push_back(WriteFile(dir_.Join("b.bin"), 2, 12 * kA));
    files_.push_back(WriteFile(dir_.Join("empty.bin"), 3, 0));
    for (const TestFile& f : files_) paths_.push_back(f.path);
  }

  // Submits `requests` keeping up to max_in_flight() outstanding and returns
  // the completions in the order Wait() gave them.
  static std::vector<IoCompletion> Run(BlockIo& io, const std::vector<IoRequest>& requests) {
    std::vector<IoCompletion> completions;
    size_t submitted = 0;
    while (completions.size() < requests.size()) {
      while (submitted < requests.size() && submitted - completions.size() < io.max_in_flight()) {
        absl::Status status = io.Submit(requests[submitted]);
        EXPECT_TRUE(status.ok()) << status;
        if (!status.ok()) return completions;
        ++submitted;
      }
      completions.push_back(io.Wait());
    }
    return completions;
  }

  // Runs `requests` and checks every completion: OK, in submission order,
  // with the file's bytes (in the request's buffer unless zero-copy).
  void ReadAllAndCheck(BlockIo& io, const std::vector<IoRequest>& requests) {
    const uint64_t bytes_before = io.bytes_read();
    std::vector<IoCompletion> completions = Run(io, requests);
    ASSERT_EQ(completions.size(), requests.size());
    uint64_t expected_bytes = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      const IoRequest& r = requests[i];
      const IoCompletion& c = completions[i];
      SCOPED_TRACE(::testing::Message()
                   << "read " << i << ": file " << r.file << " @" << r.offset << " +" << r.length);
      SP_ASSERT_OK(c.status);
      ASSERT_EQ(c.tag, r.tag);
      ASSERT_EQ(c.bytes.size(), r.length);
      EXPECT_FALSE(c.checked) << "a local engine checks nothing: the decoder must";
      if (!io.zero_copy() && r.length > 0) {
        EXPECT_EQ(c.bytes.data(), r.buffer);
      }
      const std::vector<uint8_t>& want = files_[r.file].bytes;
      ASSERT_TRUE(std::equal(c.bytes.begin(), c.bytes.end(), want.begin() + r.offset));
      expected_bytes += r.length;
    }
    EXPECT_EQ(io.bytes_read() - bytes_before, expected_bytes);
  }

  IoRequest Request(uint32_t file, uint64_t offset, uint32_t length, uint64_t tag) {
    buffers_.emplace_back(length);
    return {file, offset, length, buffers_.back().data(), tag};
  }

  TempDir dir_;
  std::vector<TestFile> files_;
  std::vector<std::string> paths_;
  std::vector<AlignedBuffer> buffers_;
};

TEST_P(IoEngineTest, ReadsComeBackInSubmissionOrderWithTheFilesBytes) {
  OPEN_OR_SKIP(io, GetParam(), paths_);
  EXPECT_EQ(io->engine(), GetParam());
  EXPECT_EQ(io->zero_copy(), GetParam() == IoEngine::kMmap);
  EXPECT_EQ(io->bytes_read(), 0u);
  if (GetParam() == IoEngine::kUring) {
    EXPECT_GT(io->max_in_flight(), 1u);
  }

  const uint64_t a_size = files_[0].bytes.size();
  const uint64_t a_last = a_size / kA * kA;
  std::vector<IoRequest> requests;
  uint64_t tag = 1000;
  // Whole-file and up-to-the-end reads, lengths on and off the alignment.
  requests.push_back(Request(0, 0, static_cast<uint32_t>(a_size), tag += 7));
  requests.push_back(Request(1, 0, 12 * kA, tag += 7));
  requests.push_back(Request(0, a_last, static_cast<uint32_t>(a_size - a_last), tag += 7));
  requests.push_back(
      Request(0, a_last - kA, static_cast<uint32_t>(a_size - a_last + kA), tag += 7));
  requests.push_back(Request(2, 0, 0, tag += 7));
  requests.push_back(Request(1, 11 * kA, kA, tag += 7));
  // Many reads of mixed sizes interleaved across files, so that io_uring has
  // reads of different costs in flight together.
  for (uint32_t i = 0; i < 60; ++i) {
    uint32_t file = i % 2;
    uint64_t blocks = files_[file].bytes.size() / kA;
    uint64_t offset = (i * 7 % blocks) * kA;
    uint64_t room = files_[file].bytes.size() - offset;
    uint32_t length = static_cast<uint32_t>(std::min<uint64_t>(room, 1 + (i * 5003) % 70000));
    requests.push_back(Request(file, offset, length, tag += 7));
  }
  ReadAllAndCheck(*io, requests);
  // The engine keeps working after it has drained.
  ReadAllAndCheck(*io, {Request(1, kA, 100, 1), Request(0, 2 * kA, 5000, 2)});
}

// A read of a file that is not cached takes the slow path while reads of
// cached pages complete at once: io_uring then completes out of order (seen
// on Linux 6.18), and Wait() must still return them in submission order.
TEST_P(IoEngineTest, SlowFirstReadStillComesBackFirst) {
  {
    int fd = open(paths_[0].c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    fdatasync(fd);  // clean pages can be dropped from the cache
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
  OPEN_OR_SKIP(io, GetParam(), paths_);
  const uint32_t a_size = static_cast<uint32_t>(files_[0].bytes.size());
  std::vector<IoRequest> requests = {Request(0, 0, a_size, 1)};
  for (uint32_t i = 1; i < io->max_in_flight(); ++i) {
    requests.push_back(Request(1, (i % 12) * kA, 100 + i, i + 1));
  }
  ReadAllAndCheck(*io, requests);
}

TEST_P(IoEngineTest, ReadPastTheEndIsDataLossNamingFileAndOffset) {
  OPEN_OR_SKIP(io, GetParam(), paths_);
  const uint64_t a_last = files_[0].bytes.size() / kA * kA;
  std::vector<IoRequest> requests = {
      Request(0, a_last, kA, 1),           // straddles the end
      Request(0, a_last + 4 * kA, 10, 2),  // wholly past it
      Request(2, 0, 1, 3),                 // any byte of an empty file
      Request(1, 0, 100, 4),               // a good read after the bad ones
  };
  std::vector<IoCompletion> completions = Run(*io, requests);
  ASSERT_EQ(completions.size(), requests.size());
  for (size_t i = 0; i < 3; ++i) {
    const IoRequest& r = requests[i];
    const IoCompletion& c = completions[i];
    EXPECT_EQ(c.tag, r.tag);
    EXPECT_THAT(c.status,
                StatusIs(absl::StatusCode::kDataLoss,
                         AllOf(HasSubstr(paths_[r.file]), HasSubstr(absl::StrCat("@", r.offset)))));
    EXPECT_EQ(common::ErrorOffset(c.status), r.offset);
    EXPECT_TRUE(c.bytes.empty());
  }
  EXPECT_EQ(completions[3].tag, 4u);
  SP_EXPECT_OK(completions[3].status);
  EXPECT_EQ(io->bytes_read(), 100u);
}

TEST_P(IoEngineTest, FileThatShrankAfterOpenIsDataLoss) {
  OPEN_OR_SKIP(io, GetParam(), paths_);
  std::filesystem::resize_file(paths_[1], 5 * kA + 10);
  SP_ASSERT_OK(io->Submit(Request(1, 4 * kA, 3 * kA, 9)));
  IoCompletion c = io->Wait();
  EXPECT_EQ(c.tag, 9u);
  if (GetParam() == IoEngine::kMmap) {
    // A view is handed out untouched; reading its lost pages reads zeros,
    // not SIGBUS, and the file then reports the damage by name.
    SP_ASSERT_OK(c.status);
    volatile uint8_t sink = 0;
    for (uint8_t b : c.bytes) sink = sink ^ b;
    EXPECT_THAT(io->file(1).CheckIntact(),
                StatusIs(absl::StatusCode::kDataLoss,
                         AllOf(HasSubstr(paths_[1]), HasSubstr("shrank while it was mapped"))));
    return;
  }
  EXPECT_THAT(c.status,
              StatusIs(absl::StatusCode::kDataLoss, AllOf(HasSubstr(paths_[1]), HasSubstr("@"))));
}

TEST_P(IoEngineTest, MisuseIsRefusedAtSubmit) {
  OPEN_OR_SKIP(io, GetParam(), paths_);
  EXPECT_THAT(io->Submit(Request(7, 0, 10, 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no file 7")));
  if (!io->zero_copy()) {
    EXPECT_THAT(io->Submit({0, 0, 10, nullptr, 1}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(paths_[0])));
  }
  for (size_t i = 0; i < io->max_in_flight(); ++i) SP_ASSERT_OK(io->Submit(Request(1, 0, 10, i)));
  EXPECT_THAT(io->Submit(Request(1, 0, 10, 99)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("in flight")));
  for (size_t i = 0; i < io->max_in_flight(); ++i) EXPECT_EQ(io->Wait().tag, i);
}

TEST_P(IoEngineTest, FileAccessorReadsSmallUnalignedRanges) {
  OPEN_OR_SKIP(io, GetParam(), paths_);
  const RandomAccessFile& f = io->file(0);
  EXPECT_EQ(f.name(), paths_[0]);
  EXPECT_EQ(f.size(), files_[0].bytes.size());
  std::vector<uint8_t> got(37);
  SP_ASSERT_OK(f.ReadExact(12345, got));
  EXPECT_TRUE(std::equal(got.begin(), got.end(), files_[0].bytes.begin() + 12345));
  EXPECT_THAT(f.ReadExact(f.size() - 10, got),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr(paths_[0])));
}

TEST_P(IoEngineTest, MissingFileIsNotFoundNamingIt) {
  std::string missing = dir_.Join("no-such.shard");
  auto io = BlockIo::Open(GetParam(), {paths_[0], missing});
  if (GetParam() == IoEngine::kUring && absl::IsUnavailable(io.status())) {
    GTEST_SKIP() << io.status().ToString();
  }
  EXPECT_THAT(io, StatusIs(absl::StatusCode::kNotFound, HasSubstr(missing)));
}

TEST_P(IoEngineTest, DestroyingWithReadsInFlightIsSafe) {
  OPEN_OR_SKIP(io, GetParam(), paths_);
  for (size_t i = 0; i < io->max_in_flight(); ++i) {
    SP_ASSERT_OK(io->Submit(Request(0, i * kA, 64 * 1024, i)));
  }
  io.reset();  // sanitizers check that nothing writes after this
}

std::string EngineName(const ::testing::TestParamInfo<IoEngine>& param) {
  switch (param.param) {
    case IoEngine::kPread:
      return "Pread";
    case IoEngine::kDirect:
      return "Direct";
    case IoEngine::kMmap:
      return "Mmap";
    case IoEngine::kUring:
      return "Uring";
    case IoEngine::kRemote:
      return "Remote";
    case IoEngine::kAuto:
      break;
  }
  return "Auto";
}

INSTANTIATE_TEST_SUITE_P(AllEngines, IoEngineTest,
                         ::testing::Values(IoEngine::kPread, IoEngine::kDirect, IoEngine::kMmap,
                                           IoEngine::kUring),
                         EngineName);

TEST(IoEngineDirectTest, MisalignedBufferOrOffsetIsInvalidArgument) {
  TempDir dir;
  TestFile f = WriteFile(dir.Join("a.bin"), 4, 8 * kA);
  OPEN_OR_SKIP(io, IoEngine::kDirect, std::vector<std::string>{f.path});
  AlignedBuffer buffer(2 * kA);
  EXPECT_THAT(
      io->Submit({0, 0, 100, buffer.data() + 1, 1}),
      StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr(f.path), HasSubstr("aligned"))));
  EXPECT_THAT(
      io->Submit({0, 100, 100, buffer.data(), 2}),
      StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr(f.path), HasSubstr("@100"))));
  // Nothing was queued by the refused requests.
  SP_ASSERT_OK(io->Submit({0, kA, 100, buffer.data(), 3}));
  EXPECT_EQ(io->Wait().tag, 3u);
}

TEST(IoEngineAutoTest, PicksMmapOnTmpfs) {
  if (!OnMemoryFilesystem("/dev/shm")) GTEST_SKIP() << "no tmpfs at /dev/shm";
  std::string pattern = "/dev/shm/shardpack-io-XXXXXX";
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  std::string path = pattern + "/a.bin";
  TestFile f = WriteFile(path, 5, 3 * kA + 5);
  {
    SP_ASSERT_OK_AND_ASSIGN(auto io, BlockIo::Open(IoEngine::kAuto, {path}));
    EXPECT_EQ(io->engine(), IoEngine::kMmap);
    EXPECT_TRUE(io->zero_copy());
    SP_ASSERT_OK(io->Submit({0, kA, static_cast<uint32_t>(2 * kA + 5), nullptr, 5}));
    IoCompletion c = io->Wait();
    SP_ASSERT_OK(c.status);
    EXPECT_TRUE(std::equal(c.bytes.begin(), c.bytes.end(), f.bytes.begin() + kA));
  }
  std::error_code ec;
  std::filesystem::remove_all(pattern, ec);
}

// Drops `path` from the page cache (written back first: dirty pages stay).
void DropFromPageCache(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(fdatasync(fd), 0);
  ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  close(fd);
}

// A page-cached file larger than the window is mapped (each epoch reads it
// again: a copy would be pure cost); one the window holds is mapped where
// the page cache maps it in 2 MiB pages, else read; one not in the page
// cache is read with pread. Reads through each give its bytes.
TEST(IoEngineAutoTest, MapsAPageCachedFileLargerThanTheWindowOrOnHugePages) {
  TempDir dir;
  if (OnMemoryFilesystem(dir.path().string())) GTEST_SKIP() << "the temp dir is on tmpfs";
  TestFile f = WriteFile(dir.Join("a.bin"), 7, 1024 * kA);  // 4 MiB
  std::ifstream(f.path, std::ios::binary).ignore(1 << 30);  // in the page cache
  SP_ASSERT_OK_AND_ASSIGN(const bool huge, common::PageCacheMapsHugePages(f.path));
  const IoEngine held = huge ? IoEngine::kMmap : IoEngine::kPread;
  std::vector<std::unique_ptr<BlockIo>> ios;
  for (auto [window, want] : {std::pair{uint64_t{256} * kA, IoEngine::kMmap},
                              std::pair{uint64_t{1024} * kA, held}, std::pair{UINT64_MAX, held}}) {
    SP_ASSERT_OK_AND_ASSIGN(auto io, BlockIo::Open(IoEngine::kAuto, {f.path}, nullptr, window));
    EXPECT_EQ(io->engine(), want) << "window " << window << ", huge pages " << huge;
    ios.push_back(std::move(io));
  }
  DropFromPageCache(f.path);
  SP_ASSERT_OK_AND_ASSIGN(auto cold, BlockIo::Open(IoEngine::kAuto, {f.path}, nullptr, kA));
  EXPECT_EQ(cold->engine(), IoEngine::kPread) << "a file not in the page cache was mapped";
  ios.push_back(std::move(cold));
  for (auto& io : ios) {
    std::unique_ptr<uint8_t, decltype(&free)> buffer(
        static_cast<uint8_t*>(aligned_alloc(kA, 2 * kA)), &free);
    SP_ASSERT_OK(io->Submit({0, kA, static_cast<uint32_t>(2 * kA), buffer.get(), 1}));
    IoCompletion c = io->Wait();
    SP_ASSERT_OK(c.status);
    EXPECT_TRUE(std::equal(c.bytes.begin(), c.bytes.end(), f.bytes.begin() + kA));
  }
}

// Blocks submitted to pread are read together from Submit on (WILLNEED
// advice), before Wait asks for the first: a reader waiting on the oldest
// has the next ones loading meanwhile, not one block after another.
TEST(IoEngineAutoTest, PreadReadsTheSubmittedBlocksTogether) {
  TempDir dir;
  if (OnMemoryFilesystem(dir.path().string())) GTEST_SKIP() << "the temp dir is on tmpfs";
  TestFile f = WriteFile(dir.Join("a.bin"), 12, 6144 * kA);  // 24 MiB
  DropFromPageCache(f.path);
  SP_ASSERT_OK_AND_ASSIGN(uint64_t resident, common::ResidentBytes(f.path));
  if (resident > 0) GTEST_SKIP() << "the page cache kept the file (" << resident << " bytes)";
  SP_ASSERT_OK_AND_ASSIGN(auto io, BlockIo::Open(IoEngine::kPread, {f.path}));
  constexpr uint64_t kBlock = 512 * kA;  // 2 MiB
  std::vector<std::unique_ptr<uint8_t, decltype(&free)>> buffers;
  for (uint64_t block : {10, 7, 4, 1}) {
    buffers.emplace_back(static_cast<uint8_t*>(aligned_alloc(kA, kBlock)), &free);
    SP_ASSERT_OK(io->Submit({0, block * kBlock, static_cast<uint32_t>(kBlock),
                             buffers.back().get(), block * kBlock}));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (resident < 4 * kBlock && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    SP_ASSERT_OK_AND_ASSIGN(resident, common::ResidentBytes(f.path));
  }
  EXPECT_GE(resident, 4 * kBlock) << "the blocks were not read before Wait";
  for (int i = 0; i < 4; ++i) {
    IoCompletion c = io->Wait();
    SP_ASSERT_OK(c.status);
    EXPECT_TRUE(std::equal(c.bytes.begin(), c.bytes.end(), f.bytes.begin() + c.tag)) << c.tag;
  }
}

TEST(IoEngineAutoTest, MissingFirstFileIsNotFound) {
  TempDir dir;
  std::string missing = dir.Join("gone.shard");
  EXPECT_THAT(BlockIo::Open(IoEngine::kAuto, {missing}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(missing)));
}

}  // namespace
}  // namespace shardpack::reader
