// The one POSIX layer (common/posix_io.h): full reads stop at the end of the
// file with an error naming the file and offset, full writes land whole,
// every fsync failure is reported, and a failed publish leaves no partial.
#include "common/posix_io.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/errors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/file.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack::format {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::StatusIs;

std::span<const uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void WriteText(const std::string& path, std::string_view text) {
  std::ofstream(path, std::ios::binary) << text;
}

// `text` written to `path`, opened for reading.
common::UniqueFd OpenText(const std::string& path, std::string_view text) {
  WriteText(path, text);
  return common::UniqueFd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
}

TEST(PosixIoTest, FullReadReadsTheRangeAndNamesFileAndOffsetPastTheEnd) {
  testing::TempDir dir;
  const std::string path = dir.Join("f");
  const common::UniqueFd fd = OpenText(path, "0123456789");
  ASSERT_GE(fd.get(), 0);
  std::vector<uint8_t> four(4);
  SP_ASSERT_OK(common::PreadFull(fd.get(), path, 3, four));
  EXPECT_EQ(std::string(four.begin(), four.end()), "3456");
  std::vector<uint8_t> dst(8);
  // Bytes 6..9 exist, 10..13 do not: the error is at offset 10, 4 missing.
  absl::Status s = common::PreadFull(fd.get(), path, 6, dst);
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kDataLoss,
                          AllOf(HasSubstr(path + " @10:"), HasSubstr("ended 4 bytes early"))));
  EXPECT_EQ(common::ErrorOffset(s), 10u);
  // PreadSome reports the end of the file as 0 bytes, not as an error.
  SP_ASSERT_OK_AND_ASSIGN(size_t n, common::PreadSome(fd.get(), path, 10, dst));
  EXPECT_EQ(n, 0u);
}

TEST(PosixIoTest, ReadErrorNamesFileAndOffset) {
  testing::TempDir dir;
  // A directory's descriptor: pread fails with EISDIR.
  common::UniqueFd fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_GE(fd.get(), 0);
  std::vector<uint8_t> dst(4);
  EXPECT_THAT(common::PreadFull(fd.get(), "the-dir", 4096, dst),
              StatusIs(absl::StatusCode::kUnknown, HasSubstr("the-dir @4096: read failed: ")));
}

TEST(PosixIoTest, PosixFileReadsAndRefusesRangesPastItsSize) {
  testing::TempDir dir;
  const std::string path = dir.Join("f");
  WriteText(path, "abcdef");
  SP_ASSERT_OK_AND_ASSIGN(auto file, common::PosixFile::Open(path));
  EXPECT_EQ(file->size(), 6u);
  std::vector<uint8_t> dst(3);
  SP_ASSERT_OK(file->ReadExact(2, dst));
  EXPECT_EQ(std::string(dst.begin(), dst.end()), "cde");
  EXPECT_THAT(file->ReadExact(4, dst),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(path + " @4:"), HasSubstr("past the end of the file"))));
  // Truncated after it was opened: the short read says so.
  ASSERT_EQ(truncate(path.c_str(), 3), 0);
  EXPECT_THAT(file->ReadExact(2, dst),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(path + " @3:"), HasSubstr("did it shrink"))));
}

TEST(PosixIoTest, FullWritesLandWhole) {
  testing::TempDir dir;
  const std::string path = dir.Join("f");
  common::UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  ASSERT_GE(fd.get(), 0);
  SP_ASSERT_OK(common::WriteFull(fd.get(), path, Bytes("hello world")));
  SP_ASSERT_OK(common::PwriteFull(fd.get(), path, 6, Bytes("WORLD")));
  SP_ASSERT_OK(common::SyncFile(fd.get(), path));
  SP_ASSERT_OK(common::SyncFileData(fd.get(), path));
  EXPECT_EQ(Contents(path), "hello WORLD");
}

TEST(PosixIoTest, WriteErrorNamesTheFile) {
  testing::TempDir dir;
  const std::string path = dir.Join("f");
  const common::UniqueFd fd = OpenText(path, "x");  // not open for writing
  ASSERT_GE(fd.get(), 0);
  EXPECT_THAT(common::WriteFull(fd.get(), path, Bytes("y")),
              StatusIs(absl::StatusCode::kUnknown, HasSubstr("write " + path)));
  EXPECT_THAT(common::PwriteFull(fd.get(), path, 0, Bytes("y")),
              StatusIs(absl::StatusCode::kUnknown, HasSubstr("write " + path)));
}

TEST(PosixIoTest, DirectoryFsyncFailureIsReported) {
  EXPECT_THAT(
      common::SyncDirectory("/nonexistent-dir/sub"),
      StatusIs(absl::StatusCode::kNotFound, HasSubstr("open directory /nonexistent-dir/sub")));
  EXPECT_THAT(common::SyncParentDirectory("/nonexistent-dir/x.shard"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent-dir")));
  testing::TempDir dir;
  SP_EXPECT_OK(common::SyncDirectory(dir.path().string()));
  SP_EXPECT_OK(common::SyncParentDirectory(dir.Join("x")));
}

TEST(PosixIoTest, PublishRenamesAndSyncs) {
  testing::TempDir dir;
  const std::string path = dir.Join("out");
  WriteText(path + ".partial", "whole");
  SP_ASSERT_OK(common::PublishFile(path + ".partial", path));
  EXPECT_EQ(Contents(path), "whole");
  EXPECT_FALSE(fs::exists(path + ".partial"));
}

TEST(PosixIoTest, FailedPublishLeavesNoPartial) {
  testing::TempDir dir;
  const std::string partial = dir.Join("out.partial");
  WriteText(partial, "half");
  EXPECT_THAT(common::PublishFile(partial, "/nonexistent-dir/out"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("rename " + partial)));
  EXPECT_FALSE(fs::exists(partial));
}

TEST(PosixIoTest, FailedAtomicFileCommitLeavesNoPartial) {
  testing::TempDir dir;
  const std::string path = dir.Join("out");
  // A non-empty directory at the final path: the rename fails.
  fs::create_directories(path + "/inside");
  SP_ASSERT_OK_AND_ASSIGN(auto file, AtomicFile::Create(path));
  SP_ASSERT_OK(file->Append(Bytes("data")));
  EXPECT_THAT(file->Commit(),
              StatusIs(absl::StatusCode::kUnknown, HasSubstr("rename " + path + ".partial")));
  // Gone at once, not only when the object is destroyed.
  EXPECT_FALSE(fs::exists(path + ".partial"));
  EXPECT_TRUE(fs::is_directory(path + "/inside"));
}

void Ignore(int) {}

// A write into a pipe that the reader drains slowly, hit by a signal whose
// handler has no SA_RESTART before every read: write(2) then returns early,
// with part of the data (a short write) or with EINTR. Every byte arrives,
// in order, once.
TEST(PosixIoTest, FullWriteGoesOnAfterSignalsAndShortWrites) {
  struct sigaction ignore = {}, old = {};
  ignore.sa_handler = Ignore;
  sigemptyset(&ignore.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &ignore, &old), 0);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const common::UniqueFd in(fds[0]), out(fds[1]);
  std::string data(4 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 131) >> 7);
  std::atomic<bool> done{false};
  absl::Status status;
  std::thread writer([&] {
    status = common::WriteFull(out.get(), "the pipe", Bytes(data));
    done = true;
  });
  std::string got;
  char buffer[4096];
  while (got.size() < data.size()) {
    if (!done) pthread_kill(writer.native_handle(), SIGUSR1);
    const ssize_t n = read(in.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    ASSERT_GT(n, 0);
    got.append(buffer, static_cast<size_t>(n));
  }
  writer.join();
  sigaction(SIGUSR1, &old, nullptr);
  SP_EXPECT_OK(status);
  EXPECT_TRUE(got == data) << "the bytes differ, first at "
                           << (std::mismatch(got.begin(), got.end(), data.begin()).first -
                               got.begin());
}

TEST(PosixIoTest, WholeFileIsCreatedOrTruncatedAndErrorsNameIt) {
  testing::TempDir dir;
  const std::string path = dir.Join("f");
  SP_ASSERT_OK(common::WriteWholeFile(path, Bytes("a longer first text")));
  SP_ASSERT_OK(common::WriteWholeFile(path, Bytes("short")));
  EXPECT_EQ(Contents(path), "short");
  EXPECT_THAT(common::WriteWholeFile(dir.Join("no/f"), Bytes("x")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("create " + dir.Join("no/f"))));
  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full";
  EXPECT_THAT(common::WriteWholeFile("/dev/full", Bytes("x")),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("write /dev/full: No space left on device")));
}

TEST(PosixIoTest, DirectoriesAreListedWithoutFollowingLinks) {
  testing::TempDir dir;
  WriteText(dir.Join("file"), "x");
  fs::create_directories(dir.Join("sub"));
  fs::create_directory_symlink(dir.Join("sub"), dir.Join("link"));
  SP_ASSERT_OK_AND_ASSIGN(std::vector<common::DirectoryEntry> entries,
                          common::ListDirectory(dir.path().string()));
  std::sort(entries.begin(), entries.end(),
            [](const common::DirectoryEntry& a, const common::DirectoryEntry& b) {
              return a.name < b.name;
            });
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].name, "file");
  EXPECT_TRUE(S_ISREG(entries[0].mode));
  EXPECT_EQ(entries[1].name, "link");
  EXPECT_TRUE(S_ISLNK(entries[1].mode));
  EXPECT_TRUE(S_ISDIR(entries[2].mode));
  EXPECT_THAT(common::ListDirectory(dir.Join("none")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("list " + dir.Join("none"))));
  // OpenDirectory takes the directory itself, never a link or a file.
  SP_EXPECT_OK(common::OpenDirectory(dir.Join("sub")).status());
  EXPECT_THAT(std::string(common::OpenDirectory(dir.Join("link")).status().message()),
              ::testing::StartsWith("open " + dir.Join("link") + ": "));
  EXPECT_THAT(common::OpenDirectory(dir.Join("file")).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("open " + dir.Join("file"))));
}

TEST(PosixIoTest, AnExclusiveLockIsHeldUntilItsDescriptorCloses) {
  testing::TempDir dir;
  SP_ASSERT_OK_AND_ASSIGN(common::UniqueFd first, common::OpenDirectory(dir.path().string()));
  SP_ASSERT_OK_AND_ASSIGN(common::UniqueFd second, common::OpenDirectory(dir.path().string()));
  SP_ASSERT_OK_AND_ASSIGN(common::LockResult lock, common::TryLockExclusive(first.get(), "d"));
  if (lock == common::LockResult::kUnsupported) GTEST_SKIP() << "no flock() on this file system";
  EXPECT_EQ(lock, common::LockResult::kLocked);
  SP_ASSERT_OK_AND_ASSIGN(lock, common::TryLockExclusive(second.get(), "d"));
  EXPECT_EQ(lock, common::LockResult::kBusy);
  first = common::UniqueFd();
  SP_ASSERT_OK_AND_ASSIGN(lock, common::TryLockExclusive(second.get(), "d"));
  EXPECT_EQ(lock, common::LockResult::kLocked);
}

// More entries than one read of the directory returns, long names: all go
// but the one kept, without another descriptor.
TEST(PosixIoTest, RemoveFilesAtEmptiesADirectoryButTheKeptName) {
  testing::TempDir dir;
  const std::string long_name(150, 'n');
  for (int i = 0; i < 500; ++i) WriteText(dir.Join(long_name + std::to_string(i)), "x");
  WriteText(dir.Join(".marker"), "kept");
  SP_ASSERT_OK_AND_ASSIGN(common::UniqueFd fd, common::OpenDirectory(dir.path().string()));
  SP_ASSERT_OK(common::RemoveFilesAt(fd.get(), dir.path().string(), ".marker"));
  SP_ASSERT_OK_AND_ASSIGN(std::vector<common::DirectoryEntry> left,
                          common::ListDirectory(dir.path().string()));
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].name, ".marker");
  fs::create_directories(dir.Join("sub"));
  EXPECT_THAT(std::string(common::RemoveFilesAt(fd.get(), dir.path().string()).message()),
              ::testing::StartsWith("remove " + dir.Join("sub") + ": "));
  EXPECT_TRUE(fs::is_directory(dir.Join("sub")));
}

TEST(PosixIoTest, RenamesNameBothPathsAndKeepOrSwapWhatIsThere) {
  testing::TempDir dir;
  const std::string a = dir.Join("a"), b = dir.Join("b");
  fs::create_directories(a);
  fs::create_directories(b);
  WriteText(a + "/in-a", "");
  WriteText(b + "/in-b", "");
  const absl::Status kept = common::RenamePath(a, b, common::RenameMode::kNoReplace);
  EXPECT_THAT(kept.code(), ::testing::AnyOf(absl::StatusCode::kAlreadyExists,
                                            absl::StatusCode::kUnimplemented));
  EXPECT_THAT(std::string(kept.message()),
              ::testing::StartsWith("rename " + a + " to " + b + ": "));
  EXPECT_TRUE(fs::exists(a + "/in-a"));
  EXPECT_TRUE(fs::exists(b + "/in-b"));
  absl::Status swapped = common::RenamePath(a, b, common::RenameMode::kExchange);
  if (!absl::IsUnimplemented(swapped)) {
    SP_ASSERT_OK(swapped);
    EXPECT_TRUE(fs::exists(a + "/in-b"));
    EXPECT_TRUE(fs::exists(b + "/in-a"));
  }
  EXPECT_THAT(common::RenamePath(dir.Join("none"), dir.Join("c")),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("rename " + dir.Join("none") + " to " + dir.Join("c"))));
  fs::remove_all(b);
  SP_ASSERT_OK(common::RenamePath(a, b, common::RenameMode::kNoReplace));
  EXPECT_TRUE(fs::is_directory(b));
  EXPECT_FALSE(fs::exists(a));
}

}  // namespace
}  // namespace shardpack::format
