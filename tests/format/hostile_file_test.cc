// Files that are not what they claim: FIFOs and devices where a regular file
// belongs (an error at once, never a blocked open), files too large for
// what they hold, and mapped files that shrink while they are read (an error,
// never SIGBUS).
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "format/mapping_guard.h"
#include "format/posix_open.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/file.h"
#include "shardpack/dataset.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::StatusIs;

std::string MakeFifo(const testing::TempDir& dir, const std::string& name) {
  std::string path = dir.Join(name);
  EXPECT_EQ(mkfifo(path.c_str(), 0600), 0) << strerror(errno);
  return path;
}

void WriteBytes(const std::string& path, size_t n, uint8_t fill) {
  std::string bytes(n, static_cast<char>(fill));
  SP_ASSERT_OK(WriteFileAtomically(path, bytes));
}

// Every way the format library opens a path refuses a FIFO (with no writer,
// an open without O_NONBLOCK would block for ever).
TEST(HostileFileTest, FifoIsRefusedByEveryOpener) {
  testing::TempDir dir;
  const std::string fifo = MakeFifo(dir, "train-00000.shard");
  const auto is_fifo_error = StatusIs(absl::StatusCode::kFailedPrecondition,
                                      AllOf(HasSubstr(fifo), HasSubstr("a FIFO, not a regular file")));
  EXPECT_THAT(OpenPosixFile(fifo).status(), is_fifo_error);
  EXPECT_THAT(OpenMappedFile(fifo).status(), is_fifo_error);
  EXPECT_THAT(ReadSmallFile(fifo).status(), is_fifo_error);
  EXPECT_THAT(internal::CheckRegularFile(fifo), is_fifo_error);
  uint64_t size = 0;
  EXPECT_THAT(internal::OpenRegularFile(fifo, 0, &size).status(), is_fifo_error);
}

TEST(HostileFileTest, FifoManifestIsAnErrorNotAHang) {
  testing::TempDir dir;
  MakeFifo(dir, "manifest.json");
  EXPECT_THAT(ReadManifest(dir.path().string()).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("a FIFO")));
}

TEST(HostileFileTest, DirectoryAndDeviceAreNamedForWhatTheyAre) {
  testing::TempDir dir;
  EXPECT_THAT(OpenPosixFile(dir.path().string()).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("a directory")));
  EXPECT_THAT(OpenPosixFile("/dev/null").status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("a character device")));
}

TEST(HostileFileTest, ReadSmallFileRefusesAFilePastItsBound) {
  testing::TempDir dir;
  const std::string path = dir.Join("manifest.json");
  // A sparse file: claims the size without using the disk.
  int fd = open(path.c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(kMaxSmallFileBytes + 1)), 0);
  close(fd);
  EXPECT_THAT(ReadSmallFile(path).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(path), HasSubstr("more than"))));
}

// A list file may come from a pipe: it is read to its end.
TEST(HostileFileTest, ReadStreamReadsAPipeToItsEnd) {
  testing::TempDir dir;
  const std::string fifo = MakeFifo(dir, "list.txt");
  std::thread writer([&] {
    int fd = open(fifo.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    const std::string text = "a/x.jpg 0\nb/y.jpg 1\n";
    ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    close(fd);
  });
  absl::StatusOr<std::string> text = internal::ReadStream(fifo, 1 << 20);
  writer.join();
  SP_ASSERT_OK(text.status());
  EXPECT_EQ(*text, "a/x.jpg 0\nb/y.jpg 1\n");
}

TEST(HostileFileTest, ReadStreamStopsAtItsBound) {
  EXPECT_THAT(internal::ReadStream("/dev/zero", 1 << 20).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/dev/zero"), HasSubstr("more than 1048576 bytes"))));
}

// The SIGBUS case: a mapped file truncated under the reader.
TEST(HostileFileTest, MappedFileTruncatedWhileReadIsAnErrorNotSigbus) {
  testing::TempDir dir;
  const std::string path = dir.Join("train-00000.shard");
  const size_t n = 64 * 4096;
  WriteBytes(path, n, 0x5a);
  SP_ASSERT_OK_AND_ASSIGN(auto file, OpenMappedFile(path));
  ASSERT_NE(file->data(), nullptr);
  SP_EXPECT_OK(file->CheckIntact());
  EXPECT_EQ(file->data()[n - 1], 0x5a);
  ASSERT_EQ(truncate(path.c_str(), 4096), 0);
  const uint64_t faults = internal::ContainedMappingFaults();
  // Pages past the new end: read as zeros instead of killing the process...
  EXPECT_EQ(file->data()[n - 1], 0);
  EXPECT_GT(internal::ContainedMappingFaults(), faults);
  // ... and reported by name.
  const auto shrank = StatusIs(absl::StatusCode::kDataLoss,
                               AllOf(HasSubstr(path), HasSubstr("shrank while it was mapped")));
  EXPECT_THAT(file->CheckIntact(), shrank);
  std::vector<uint8_t> dst(4096);
  EXPECT_THAT(file->ReadExact(8 * 4096, dst), shrank);
}

TEST(HostileFileTest, MappedFileUntouchedPagesStayIntact) {
  testing::TempDir dir;
  const std::string path = dir.Join("a.shard");
  WriteBytes(path, 8 * 4096, 0x11);
  SP_ASSERT_OK_AND_ASSIGN(auto file, OpenMappedFile(path));
  ASSERT_EQ(truncate(path.c_str(), 4 * 4096), 0);
  // Reads within the new size still work and do not mark the file damaged.
  EXPECT_EQ(file->data()[100], 0x11);
  SP_EXPECT_OK(file->CheckIntact());
}

// A SIGBUS in a mapping nobody registered is not swallowed: the process dies
// as it would without the guard.
TEST(HostileFileDeathTest, UnguardedSigbusStillKills) {
  testing::TempDir dir;
  const std::string path = dir.Join("b.bin");
  WriteBytes(path, 8 * 4096, 0x22);
  { internal::MappingGuard install_handler(nullptr, 0, "none"); }
  EXPECT_DEATH(
      {
        int fd = open(path.c_str(), O_RDONLY);
        auto* p = static_cast<volatile uint8_t*>(
            mmap(nullptr, 8 * 4096, PROT_READ, MAP_SHARED, fd, 0));
        if (ftruncate(open(path.c_str(), O_WRONLY), 0) != 0) _exit(3);
        (void)p[5 * 4096];
        _exit(0);
      },
      "");
}

}  // namespace
}  // namespace shardpack
