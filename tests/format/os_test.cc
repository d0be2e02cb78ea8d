// The rest of the operating system behind common/ (common/os.h,
// common/child_process.h): stat and the names made and removed report the
// path and errno's code, and a child that crashes, hangs or answers is told
// apart.
#include "common/os.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>

#include "common/child_process.h"
#include "common/posix_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack::format {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::StatusIs;
using Clock = std::chrono::steady_clock;

TEST(OsTest, StatTellsFilesDirectoriesAndLinksAndNamesAMissingPath) {
  testing::TempDir dir;
  std::ofstream(dir.Join("f")) << "12345";
  fs::create_symlink(dir.Join("f"), dir.Join("link"));
  SP_ASSERT_OK_AND_ASSIGN(common::FileStatus file, common::Stat(dir.Join("f")));
  EXPECT_TRUE(file.IsRegularFile());
  EXPECT_EQ(file.size, 5u);
  SP_ASSERT_OK_AND_ASSIGN(common::FileStatus through, common::Stat(dir.Join("link")));
  EXPECT_TRUE(through.SameFile(file));
  SP_ASSERT_OK_AND_ASSIGN(common::FileStatus link, common::Lstat(dir.Join("link")));
  EXPECT_TRUE(link.IsSymbolicLink());
  EXPECT_FALSE(link.SameFile(file));
  SP_ASSERT_OK_AND_ASSIGN(common::FileStatus top, common::Stat(dir.path().string()));
  EXPECT_TRUE(top.IsDirectory());
  EXPECT_THAT(common::Stat(dir.Join("gone"), "image folder").status(),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("image folder " + dir.Join("gone") + ": No such file")));
  EXPECT_TRUE(common::PathExists(dir.Join("f")));
  EXPECT_FALSE(common::PathExists(dir.Join("gone")));
}

TEST(OsTest, DirectoriesAndNamesAreMadeAndRemovedWithErrorsNamingThem) {
  testing::TempDir dir;
  const std::string sub = dir.Join("sub");
  SP_ASSERT_OK(common::MakeDirectory(sub));
  EXPECT_THAT(common::MakeDirectory(sub),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("create " + sub)));
  std::ofstream(sub + "/f") << "x";
  EXPECT_THAT(common::RemoveDirectory(sub),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("remove " + sub)));
  SP_ASSERT_OK(common::RemoveFile(sub + "/f"));
  EXPECT_THAT(common::RemoveFile(sub + "/f"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("remove " + sub + "/f")));
  SP_ASSERT_OK(common::RemoveDirectory(sub));
  EXPECT_FALSE(common::PathExists(sub));
}

TEST(OsTest, DirFdCreatesOnlyNewNamesAndNeverWritesThroughALink) {
  testing::TempDir dir;
  SP_ASSERT_OK_AND_ASSIGN(common::DirFd d, common::DirFd::Open(dir.path().string()));
  SP_ASSERT_OK_AND_ASSIGN(common::UniqueFd fd, d.CreateNewFile("a"));
  SP_ASSERT_OK(common::WriteFull(fd.get(), "a", {reinterpret_cast<const uint8_t*>("hi"), 2}));
  SP_ASSERT_OK(common::CloseFile(std::move(fd), "a"));
  EXPECT_EQ(fs::file_size(dir.Join("a")), 2u);
  EXPECT_THAT(d.CreateNewFile("a").status(),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("create " + dir.Join("a"))));
  fs::create_symlink(dir.Join("elsewhere"), dir.Join("planted"));
  EXPECT_THAT(d.CreateNewFile("planted").status(),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("planted")));
  EXPECT_FALSE(fs::exists(dir.Join("elsewhere")));
  SP_ASSERT_OK(d.RemoveFile("planted"));
  EXPECT_THAT(d.RemoveFile("planted", "replace"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("replace " + dir.Join("planted"))));
  EXPECT_THAT(common::DirFd::Open(dir.Join("a")).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("open directory " + dir.Join("a"))));
}

TEST(OsTest, MemoryAdviceWidensToPagesAndIgnoresFailure) {
  const size_t page = common::PageSize();
  EXPECT_GE(page, 4096u);
  EXPECT_EQ(page & (page - 1), 0u);
  EXPECT_GT(common::PhysicalMemoryBytes(), uint64_t{0});
  std::vector<uint8_t> bytes(3 * page + 7);
  common::AdviseMemory(bytes.data() + 5, bytes.size() - 5, common::MemoryAdvice::kWillNeed);
  common::AdviseMemory(bytes.data(), 0, common::MemoryAdvice::kDontNeed);
  common::AdviseFile(-1, 0, 0, common::FileAdvice::kSequential);  // EBADF, ignored
  EXPECT_EQ(bytes[5], 0);
}

// PageCacheMapsHugePages answers for a file of 2 MiB or more (what it says
// is the kernel's: Linux 6.18 maps an ext4 file written in large pieces in
// 2 MiB pages), says no for a smaller one, leaves nothing mapped, and
// refuses what it cannot open, named.
TEST(OsTest, PageCacheMapsHugePagesProbesAndLeavesNothingMapped) {
  testing::TempDir dir;
  const std::string big = dir.Join("big"), small = dir.Join("small");
  std::ofstream(big, std::ios::binary) << std::string(6 << 20, 'x');
  std::ofstream(small, std::ios::binary) << std::string((2 << 20) - 1, 'x');
  auto huge = common::PageCacheMapsHugePages(big);
  ASSERT_THAT(huge, testing::IsOk());
  auto tiny = common::PageCacheMapsHugePages(small);
  ASSERT_THAT(tiny, testing::IsOk());
  EXPECT_FALSE(*tiny);
  std::ifstream maps("/proc/self/maps");
  const std::string mapped((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  EXPECT_THAT(mapped, Not(HasSubstr(big)));
  EXPECT_THAT(common::PageCacheMapsHugePages(dir.Join("missing")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(dir.Join("missing"))));
  EXPECT_THAT(common::PageCacheMapsHugePages(dir.path().string()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not a regular file")));
}

// ResidentBytes counts what the page cache holds: a file just read is all
// there (its last page whole); dropped (fsynced, then POSIX_FADV_DONTNEED),
// it is not, except on a file system that keeps files in memory. What is
// not a regular file is refused, named.
TEST(OsTest, ResidentBytesFollowThePageCache) {
  testing::TempDir dir;
  const std::string path = dir.Join("f");
  const std::string bytes(3 * 1024 * 1024 + 100, 'x');
  std::ofstream(path, std::ios::binary) << bytes;
  std::ifstream(path, std::ios::binary).ignore(bytes.size() + 1);
  const uint64_t page = common::PageSize();
  auto resident = common::ResidentBytes(path);
  ASSERT_THAT(resident, testing::IsOk());
  EXPECT_EQ(*resident, (bytes.size() + page - 1) / page * page);
  std::ofstream(dir.Join("empty"));
  resident = common::ResidentBytes(dir.Join("empty"));
  ASSERT_THAT(resident, testing::IsOk());
  EXPECT_EQ(*resident, 0u);
  EXPECT_THAT(common::ResidentBytes(dir.Join("missing")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(dir.Join("missing"))));
  ASSERT_EQ(mkfifo(dir.Join("fifo").c_str(), 0600), 0);
  EXPECT_THAT(common::ResidentBytes(dir.Join("fifo")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr(dir.Join("fifo") + ": a FIFO, not a regular file")));
  EXPECT_THAT(common::ResidentBytes(dir.path().string()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not a regular file")));
  auto in_memory = common::IsMemoryFileSystem(path);
  ASSERT_THAT(in_memory, testing::IsOk());
  if (*in_memory) GTEST_SKIP() << dir.path() << " is in memory: nothing to drop";
  const int fd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(fdatasync(fd), 0);  // dirty pages are not dropped
  common::AdviseFile(fd, 0, 0, common::FileAdvice::kDontNeed);
  close(fd);
  resident = common::ResidentBytes(path);
  ASSERT_THAT(resident, testing::IsOk());
  EXPECT_LT(*resident, bytes.size() / 2) << "the kernel kept the pages it was told to drop";
}

// A scratch file is unnamed from the start: its folder shows nothing, and
// what is written can be read back.
TEST(OsTest, ScratchFilesHaveNoName) {
  testing::TempDir dir;
  auto fd = common::CreateScratchFile(dir.path().string());
  ASSERT_THAT(fd, testing::IsOk());
  const uint8_t data[3] = {1, 2, 3};
  ASSERT_THAT(common::WriteFull(fd->get(), "scratch", data), testing::IsOk());
  uint8_t back[3] = {};
  ASSERT_THAT(common::PreadFull(fd->get(), "scratch", 0, back), testing::IsOk());
  EXPECT_EQ(back[2], 3);
  EXPECT_TRUE(fs::is_empty(dir.path()));
  EXPECT_THAT(common::CreateScratchFile(dir.Join("missing")),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("create a scratch file in " + dir.Join("missing"))));
}

TEST(OsTest, RandomSeedsDifferFromCallToCall) {
  // HTTP retry jitter of two sessions must not move in step; 64 random bits
  // repeat among a few draws with probability ~2^-58.
  std::set<uint64_t> seeds;
  for (int i = 0; i < 8; ++i) seeds.insert(common::RandomSeed());
  EXPECT_EQ(seeds.size(), 8u);
}

TEST(OsTest, RedirectToMemoryFileKeepsTheNumberAndDropsTheFile) {
  testing::TempDir dir;
  const std::string path = dir.Join("f");
  SP_ASSERT_OK_AND_ASSIGN(common::UniqueFd fd, common::CreateNewFile(path));
  ASSERT_TRUE(common::RedirectToMemoryFile(fd.get()));
  SP_ASSERT_OK(common::WriteFull(fd.get(), path, {reinterpret_cast<const uint8_t*>("lost"), 4}));
  EXPECT_EQ(fs::file_size(path), 0u);
  EXPECT_EQ(common::ReserveFileBytes(fd.get(), 1 << 20), 0);
}

TEST(ChildProcessTest, AnAnswerACrashAndAHangAreToldApart) {
  const Clock::time_point soon = Clock::now() + std::chrono::seconds(20);
  SP_ASSERT_OK_AND_ASSIGN(
      common::ChildOutcome answered,
      common::RunInChild([] { return std::string(10000, 'x'); }, soon, 100, "to test", "t"));
  EXPECT_TRUE(answered.in_time);
  EXPECT_EQ(answered.output, std::string(100, 'x'));
  ASSERT_TRUE(answered.wait_status.has_value());
  EXPECT_TRUE(WIFEXITED(*answered.wait_status));

  SP_ASSERT_OK_AND_ASSIGN(common::ChildOutcome crashed, common::RunInChild(
                                                            []() -> std::string {
                                                              ::raise(SIGBUS);
                                                              return "unreached";
                                                            },
                                                            soon, 100, "to test", "t"));
  EXPECT_TRUE(crashed.in_time);
  EXPECT_EQ(crashed.output, "");
  ASSERT_TRUE(crashed.wait_status.has_value());
  ASSERT_TRUE(WIFSIGNALED(*crashed.wait_status));
  EXPECT_EQ(WTERMSIG(*crashed.wait_status), SIGBUS);

  const Clock::time_point start = Clock::now();
  SP_ASSERT_OK_AND_ASSIGN(common::ChildOutcome hung, common::RunInChild(
                                                         []() -> std::string {
                                                           while (true) ::pause();
                                                         },
                                                         start + std::chrono::milliseconds(200),
                                                         100, "to test", "t"));
  EXPECT_FALSE(hung.in_time);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  ASSERT_TRUE(hung.wait_status.has_value());
  EXPECT_EQ(WTERMSIG(*hung.wait_status), SIGKILL);
}

}  // namespace
}  // namespace shardpack::format
