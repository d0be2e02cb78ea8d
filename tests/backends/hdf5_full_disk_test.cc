// HDF5 shards written into a full file system (a small tmpfs in a private
// mount namespace: root only, else skipped) and past RLIMIT_FSIZE.
//
// libhdf5 1.10 keeps the id of a file whose H5Fclose failed while it frees
// the file, and its atexit handler closed that id again: shardpack printed
// its error, removed its output, then died by SIGSEGV at exit, with
// libhdf5's driver dump (times, descriptors, buffer addresses) as the
// message. Now: exit 1, one line naming the file and errno's text, nothing
// left behind, and in the library no HDF5 id left open.
#include <hdf5.h>
#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "backends/hdf5_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/backends/backend_fixtures.h"
#include "tests/testing/cli_expect.h"
#include "tests/testing/private_tmpfs.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

namespace fs = std::filesystem;
using ::shardpack::testing::OwnedRecord;
using ::shardpack::testing::RunResult;
using ::shardpack::testing::RunTool;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr uint64_t kTmpfsBytes = uint64_t{3} << 20;

std::vector<std::string> Names(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    names.push_back(fs::relative(e.path(), dir).string());
  }
  return names;
}

// HDF5 ids of any kind still open in this process.
ssize_t OpenHdf5Ids() {
  auto lock = backends::LockHdf5();
  return H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
}

// A CIFAR-10 file of n records (testing::Cifar10Bytes).
std::string WriteCifar10(const testing::TempDir& dir, int n) {
  std::string path = dir.Join("data_batch_1.bin");
  std::ofstream(path, std::ios::binary) << testing::Cifar10Bytes(n);
  return path;
}

class Hdf5FullDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    full_ = tmp_.Join("full");
    std::string why = tmpfs_.Mount(full_, kTmpfsBytes);
    if (!why.empty()) GTEST_SKIP() << why;
  }

  testing::TempDir tmp_;  // outlives the mount
  testing::PrivateTmpfs tmpfs_;
  std::string full_;
};

// The disk fills at every stage of a shard's life, a step of free space at
// a time: while rows are added, while Commit closes each dataset (their
// cached chunks are written then), while the file itself is flushed. Each
// write either succeeds whole or fails with errno's text, closes every id
// it opened and leaves no file.
void SweepFreeSpace(const std::string& full, const std::vector<OwnedRecord>& records,
                    const Schema& schema) {
  int written = 0;
  std::vector<std::string> failures;
  for (uint64_t free_bytes = 64 << 10; free_bytes <= kTmpfsBytes - (64 << 10);
       free_bytes += 64 << 10) {
    SCOPED_TRACE(absl::StrCat(free_bytes, " bytes free"));
    const std::string filler = full + "/filler", dir = full + "/ds";
    std::ofstream(filler, std::ios::binary) << std::string(kTmpfsBytes - free_bytes, 'x');
    fs::create_directories(dir);
    auto m = testing::WriteDataset(dir, Backend::kHdf5, records, schema);
    if (m.ok()) {
      ++written;
      SP_ASSERT_OK_AND_ASSIGN(auto back, testing::ReadDataset(dir));
      EXPECT_EQ(back.size(), records.size());
    } else if (absl::StrContains(m.status().message(), "manifest.json") ||
               absl::StrContains(m.status().message(), "records.idx")) {
      // The shard was published; the dataset was not (no record table, or
      // no manifest).
      EXPECT_THAT(Names(dir), ::testing::ElementsAre("shard-00000.h5"));
    } else {
      EXPECT_THAT(m.status(),
                  testing::StatusIs(absl::StatusCode::kResourceExhausted,
                                    AllOf(HasSubstr(dir + "/shard-00000.h5.partial: "),
                                          HasSubstr(": No space left on device"),
                                          Not(HasSubstr("\n")), Not(HasSubstr("errno")))));
      failures.push_back(std::string(m.status().message()));
      EXPECT_THAT(Names(dir), IsEmpty());
    }
    EXPECT_EQ(OpenHdf5Ids(), 0);
    fs::remove_all(dir);
    fs::remove(filler);
  }
  // Both ends of the sweep, and the stages in between, were reached.
  EXPECT_GT(written, 0);
  EXPECT_THAT(failures, ::testing::Contains(HasSubstr(": writing '")));
  EXPECT_THAT(failures, ::testing::Contains(HasSubstr(": closing '")));
}

TEST_F(Hdf5FullDisk, FixedLayoutWriterFailsCleanlyWhereverTheDiskFills) {
  std::vector<OwnedRecord> records;
  for (int i = 0; i < 400; ++i) records.push_back(testing::RawRecord(i, 32, 32, 3));
  SweepFreeSpace(full_, records, testing::RawSchema(32, 32, 3, Layout::kHWC, 1));
}

TEST_F(Hdf5FullDisk, FlatLayoutWriterFailsCleanlyWhereverTheDiskFills) {
  std::vector<OwnedRecord> records;
  for (int i = 0; i < 300; ++i) records.push_back(testing::JpegLikeRecord(i, 4000 + i));
  SweepFreeSpace(full_, records, testing::JpegSchema());
}

// The tool's contract: exit 1 (not 139), one line naming the shard being
// written and the cause, the output and OUT.partial gone.
void ExpectCleanFailure(const RunResult& r, const std::string& out, const std::string& cause) {
  testing::ExpectOneLineFailure(r, "shardpack", cause);
  EXPECT_THAT(r.err, AllOf(HasSubstr(out + ".partial/shard-"), HasSubstr(".h5.partial: ")));
  EXPECT_THAT(r.err, Not(HasSubstr("errno")));
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".partial"));
}

TEST_F(Hdf5FullDisk, PackConvertAndMergeExitOneNotBySignal) {
  const std::string cifar = WriteCifar10(tmp_, 1000);  // 3 MB of pixels
  const std::string out = full_ + "/out";
  ExpectCleanFailure(RunTool(SHARDPACK_PATH, {"cifar", cifar, "--cifar", "10", "--format", "hdf5",
                                              "-q", "-o", out}),
                     out, "No space left on device");
  const std::string source = tmp_.Join("source");
  ASSERT_EQ(RunTool(SHARDPACK_PATH, {"cifar", cifar, "--cifar", "10", "-q", "-o", source})
                .exit_code,
            0);
  ExpectCleanFailure(RunTool(SHARDPACK_PATH, {"convert", source, "--format", "hdf5", "-q", "-o",
                                              out}),
                     out, "No space left on device");
  // Parts of another backend are converted (not linked) into the output.
  std::vector<std::string> merge = {"merge"};
  for (const char* part : {"1/2", "2/2"}) {
    const std::string dir = tmp_.Join(std::string("part") + part[0]);
    ASSERT_EQ(RunTool(SHARDPACK_PATH, {"cifar", cifar, "--cifar", "10", "-q", "--part", part,
                                       "-o", dir})
                  .exit_code,
              0);
    merge.push_back(dir);
  }
  merge.insert(merge.end(), {"--format", "hdf5", "-o", out});
  ExpectCleanFailure(RunTool(SHARDPACK_PATH, merge), out, "No space left on device");
  EXPECT_THAT(Names(full_), IsEmpty());
}

// Past RLIMIT_FSIZE (SIGXFSZ ignored, so that write() says EFBIG): even
// what libhdf5 writes on closing the abandoned file fails, so its H5Fclose
// fails and leaves its id behind; the process still exits 1. Needs no root.
TEST(Hdf5FileTooLarge, PackExitsOneNotBySignal) {
  testing::TempDir tmp;
  const std::string cifar = WriteCifar10(tmp, 1000);
  const std::string out = tmp.Join("out");
  RunResult r = RunTool(
      SHARDPACK_PATH, {"cifar", cifar, "--cifar", "10", "--format", "hdf5", "-q", "-o", out},
      [] {
        signal(SIGXFSZ, SIG_IGN);
        const rlimit limit = {1 << 20, 1 << 20};
        setrlimit(RLIMIT_FSIZE, &limit);
      });
  ExpectCleanFailure(r, out, "File too large");
}

}  // namespace
}  // namespace shardpack
