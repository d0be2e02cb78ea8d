// The one POSIX layer (format/posix_io.h): full reads stop at the end of the
// file with an error naming the file and offset, full writes land whole,
// every fsync failure is reported, and a failed publish leaves no partial.
#include "format/posix_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "format/errors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/file.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack::internal {
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
UniqueFd OpenText(const std::string& path, std::string_view text) {
  WriteText(path, text);
  return UniqueFd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
}

TEST(PosixIoTest, FullReadReadsTheRangeAndNamesFileAndOffsetPastTheEnd) {
  testing::TempDir dir;
  const std::string path = dir.Join("f");
  const UniqueFd fd = OpenText(path, "0123456789");
  ASSERT_GE(fd.get(), 0);
  std::vector<uint8_t> four(4);
  SP_ASSERT_OK(PreadFull(fd.get(), path, 3, four));
  EXPECT_EQ(std::string(four.begin(), four.end()), "3456");
  std::vector<uint8_t> dst(8);
  // Bytes 6..9 exist, 10..13 do not: the error is at offset 10, 4 missing.
  absl::Status s = PreadFull(fd.get(), path, 6, dst);
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kDataLoss,
                          AllOf(HasSubstr(path + " @10:"), HasSubstr("ended 4 bytes early"))));
  EXPECT_EQ(ErrorOffset(s), 10u);
  // PreadSome reports the end of the file as 0 bytes, not as an error.
  SP_ASSERT_OK_AND_ASSIGN(size_t n, PreadSome(fd.get(), path, 10, dst));
  EXPECT_EQ(n, 0u);
}

TEST(PosixIoTest, ReadErrorNamesFileAndOffset) {
  testing::TempDir dir;
  // A directory's descriptor: pread fails with EISDIR.
  UniqueFd fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_GE(fd.get(), 0);
  std::vector<uint8_t> dst(4);
  EXPECT_THAT(PreadFull(fd.get(), "the-dir", 4096, dst),
              StatusIs(absl::StatusCode::kUnknown, HasSubstr("the-dir @4096: read failed: ")));
}

TEST(PosixIoTest, PosixFileReadsAndRefusesRangesPastItsSize) {
  testing::TempDir dir;
  const std::string path = dir.Join("f");
  WriteText(path, "abcdef");
  SP_ASSERT_OK_AND_ASSIGN(auto file, PosixFile::Open(path));
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
  UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  ASSERT_GE(fd.get(), 0);
  SP_ASSERT_OK(WriteFull(fd.get(), path, Bytes("hello world")));
  SP_ASSERT_OK(PwriteFull(fd.get(), path, 6, Bytes("WORLD")));
  SP_ASSERT_OK(SyncFile(fd.get(), path));
  SP_ASSERT_OK(SyncFileData(fd.get(), path));
  EXPECT_EQ(Contents(path), "hello WORLD");
}

TEST(PosixIoTest, WriteErrorNamesTheFile) {
  testing::TempDir dir;
  const std::string path = dir.Join("f");
  const UniqueFd fd = OpenText(path, "x");  // not open for writing
  ASSERT_GE(fd.get(), 0);
  EXPECT_THAT(WriteFull(fd.get(), path, Bytes("y")),
              StatusIs(absl::StatusCode::kUnknown, HasSubstr("write " + path)));
  EXPECT_THAT(PwriteFull(fd.get(), path, 0, Bytes("y")),
              StatusIs(absl::StatusCode::kUnknown, HasSubstr("write " + path)));
}

TEST(PosixIoTest, DirectoryFsyncFailureIsReported) {
  EXPECT_THAT(
      SyncDirectory("/nonexistent-dir/sub"),
      StatusIs(absl::StatusCode::kNotFound, HasSubstr("open directory /nonexistent-dir/sub")));
  EXPECT_THAT(SyncParentDirectory("/nonexistent-dir/x.shard"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent-dir")));
  testing::TempDir dir;
  SP_EXPECT_OK(SyncDirectory(dir.path().string()));
  SP_EXPECT_OK(SyncParentDirectory(dir.Join("x")));
}

TEST(PosixIoTest, PublishRenamesAndSyncs) {
  testing::TempDir dir;
  const std::string path = dir.Join("out");
  WriteText(path + ".partial", "whole");
  SP_ASSERT_OK(PublishFile(path + ".partial", path));
  EXPECT_EQ(Contents(path), "whole");
  EXPECT_FALSE(fs::exists(path + ".partial"));
}

TEST(PosixIoTest, FailedPublishLeavesNoPartial) {
  testing::TempDir dir;
  const std::string partial = dir.Join("out.partial");
  WriteText(partial, "half");
  EXPECT_THAT(PublishFile(partial, "/nonexistent-dir/out"),
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

}  // namespace
}  // namespace shardpack::internal
