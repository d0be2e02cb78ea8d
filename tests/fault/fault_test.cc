// The fault-injection suite: what every tool that writes does when the
// machine, not the file, says no. Beside the hostile-input tests (damaged
// bytes), these give the tools a small disk that fills mid-write, a
// file-size limit, limits on threads, memory and descriptors, and kills at
// random moments, and assert the same three things each time:
//   - the tool ends with exit 1 and one line naming what ran out and where,
//     never by a signal;
//   - nothing half-written is left, and nothing that reads as complete
//     unless it is complete (`sharddump verify` passes);
//   - the same command, run again once the machine says yes, works, without
//     anything removed by hand, and nothing of the user's was lost.
//
// The small disk is a tmpfs mounted in a mount namespace of this process's
// own (testing::PrivateTmpfs): the tools it starts see it, nothing else
// does, and it goes when the test ends. That takes root (CAP_SYS_ADMIN), as
// the pids cgroup does: where they are missing the tests say so and skip.
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "datasets/demo.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/cli_expect.h"
#include "tests/testing/private_tmpfs.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

namespace fs = std::filesystem;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using testing::RunResult;
using testing::RunTool;

constexpr char kUserFile[] = "keep.txt";
constexpr char kUserBytes[] = "the user's own file, never touched\n";

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void WriteFile(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

// Every name below `dir`, relative, sorted: what a failed run must leave as
// it found it.
std::set<std::string> Tree(const fs::path& dir) {
  std::set<std::string> names;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    names.insert(fs::relative(it->path(), dir).string());
  }
  return names;
}

// One command that writes OUT (a dataset, a folder or a file).
struct Writer {
  std::string name;
  std::string tool;                // SHARDPACK_PATH, SHARDDUMP_PATH or SHARDBENCH_PATH
  std::vector<std::string> args;   // "{IN}" and "{OUT}" are replaced
  bool dataset = true;             // OUT is a dataset that `sharddump verify` checks
};

// Inputs every test reads, made once: a CIFAR file, a folder of JPEGs, the
// same CIFAR records packed into each backend, and two parts of a pack.
class FaultTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    in_ = new testing::TempDir;
    const fs::path in = in_->path();
    ASSERT_THAT(datasets::WriteDemoCifar10((in / "data_batch_1.bin").string(), 1500, 7),
                testing::IsOk());
    datasets::DemoImagesOptions images;
    images.classes = 3;
    images.images_per_class = 20;
    images.width = 96;
    images.height = 80;
    ASSERT_THAT(datasets::WriteDemoImageFolder((in / "images").string(), images),
                testing::IsOk());
    for (const char* format : {"shard", "lmdb", "hdf5"}) {
      RunResult r = RunTool(SHARDPACK_PATH, {"cifar", (in / "data_batch_1.bin").string(), "-o",
                                             (in / absl::StrCat("ds-", format)).string(),
                                             "--format", format, "-q"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    RunResult many = RunTool(SHARDPACK_PATH, {"cifar", (in / "data_batch_1.bin").string(), "-o",
                                              (in / "ds-many").string(), "--shard-records",
                                              "100", "-q"});
    ASSERT_EQ(many.exit_code, 0) << many.err;
    for (int part = 1; part <= 2; ++part) {
      RunResult r = RunTool(SHARDPACK_PATH,
                            {"cifar", (in / "data_batch_1.bin").string(), "-o",
                             (in / absl::StrCat("part", part)).string(), "--part",
                             absl::StrCat(part, "/2"), "-q"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
  }
  static void TearDownTestSuite() {
    delete in_;
    in_ = nullptr;
  }

  static std::vector<Writer> Writers() {
    return {
        {"pack cifar into .shard", SHARDPACK_PATH, {"cifar", "{IN}/data_batch_1.bin", "-o", "{OUT}", "-q"}},
        {"pack cifar into LMDB", SHARDPACK_PATH,
         {"cifar", "{IN}/data_batch_1.bin", "-o", "{OUT}", "--format", "lmdb", "-q"}},
        {"pack cifar into HDF5", SHARDPACK_PATH,
         {"cifar", "{IN}/data_batch_1.bin", "-o", "{OUT}", "--format", "hdf5", "-q"}},
        {"pack images", SHARDPACK_PATH,
         {"images", "{IN}/images", "-o", "{OUT}", "--shard-size", "64KiB", "-q"}},
        {"convert to LMDB", SHARDPACK_PATH,
         {"convert", "{IN}/ds-shard", "-o", "{OUT}", "--format", "lmdb", "-q"}},
        {"convert to HDF5", SHARDPACK_PATH,
         {"convert", "{IN}/ds-shard", "-o", "{OUT}", "--format", "hdf5", "-q"}},
        {"convert to .shard", SHARDPACK_PATH,
         {"convert", "{IN}/ds-hdf5", "-o", "{OUT}", "--format", "shard", "-q"}},
        {"merge", SHARDPACK_PATH, {"merge", "{IN}/part1", "{IN}/part2", "-o", "{OUT}"}},
        {"extract", SHARDDUMP_PATH,
         {"extract", "{IN}/ds-lmdb", "--range", "0:1500", "-o", "{OUT}", "-q"}, false},
        {"show", SHARDDUMP_PATH,
         {"show", "{IN}/ds-shard", "--range", "0:400", "--tile", "64", "-o", "{OUT}.png", "-q"},
         false},
        {"shardbench --save-batch", SHARDBENCH_PATH,
         {"{IN}/ds-shard", "--batch-size", "400", "--epochs", "1", "--save-batch", "{OUT}.png",
          "-q"},
         false},
    };
  }

  static std::vector<std::string> Args(const Writer& w, const fs::path& out) {
    std::vector<std::string> args;
    for (std::string a : w.args) {
      for (auto [from, to] : {std::pair<std::string, std::string>{"{IN}", in_->path().string()},
                              {"{OUT}", out.string()}}) {
        if (size_t at = a.find(from); at != std::string::npos) a.replace(at, from.size(), to);
      }
      args.push_back(a);
    }
    return args;
  }

  static std::string ToolName(const Writer& w) {
    return fs::path(w.tool).filename().string();
  }

  // The output of a run that succeeded reads as whole.
  static void ExpectWhole(const Writer& w, const fs::path& out) {
    if (w.dataset) {
      RunResult v = RunTool(SHARDDUMP_PATH, {"verify", out.string(), "-q"});
      EXPECT_EQ(v.exit_code, 0) << w.name << ": " << v.out << v.err;
    } else if (w.tool == std::string(SHARDDUMP_PATH) && w.args[0] == "extract") {
      EXPECT_TRUE(fs::exists(out / "labels.tsv")) << w.name;
    } else {
      EXPECT_GT(fs::file_size(fs::path(out.string() + ".png")), 0u) << w.name;
    }
  }

  // Removes a run's output, whatever its kind.
  static void RemoveOutput(const fs::path& out) {
    fs::remove_all(out);
    fs::remove(out.string() + ".png");
  }

  testing::TempDir tmp_;
  static testing::TempDir* in_;
};

testing::TempDir* FaultTest::in_ = nullptr;

// ---------------------------------------------------------------------------
// A disk that fills

// Every writer, on disks from a fifth of what it needs to a page short of
// it: the disk fills at every stage (the first shard, a later one, the
// manifest, the labels file), and each time the run fails cleanly and the
// retry on a larger disk works.
TEST_F(FaultTest, FullDiskEveryWriterFailsCleanlyAndTheRetryWorks) {
  constexpr uint64_t kRoomy = uint64_t{256} << 20;
  for (const Writer& w : Writers()) {
    SCOPED_TRACE(w.name);
    const fs::path dir = tmp_.path() / "disk";
    testing::PrivateTmpfs disk;
    if (std::string why = disk.Mount(dir.string(), kRoomy); !why.empty()) GTEST_SKIP() << why;
    WriteFile(dir / kUserFile, kUserBytes);
    const fs::path out = dir / "out";
    const uint64_t before = disk.UsedBytes();
    RunResult fits = RunTool(w.tool, Args(w, out));
    ASSERT_EQ(fits.exit_code, 0) << fits.err;
    const uint64_t needed = disk.UsedBytes() - before;
    RemoveOutput(out);
    const std::set<std::string> user_tree = Tree(dir);

    std::vector<uint64_t> sizes;
    for (int k = 1; k <= 5; ++k) sizes.push_back(before + needed * k / 6);
    sizes.push_back(before + needed - 4096);
    int failures = 0;
    for (uint64_t size : sizes) {
      SCOPED_TRACE(absl::StrCat("a disk of ", size, " bytes, ", needed, " needed"));
      ASSERT_EQ(disk.Resize(size), "");
      RunResult r = RunTool(w.tool, Args(w, out));
      if (r.exit_code == 0) {  // it fitted after all (the sizes are estimates)
        ExpectWhole(w, out);
      } else {
        ++failures;
        testing::ExpectOneLineFailure(r, ToolName(w), "No space left on device");
        EXPECT_THAT(r.err, HasSubstr(dir.string()));
        EXPECT_EQ(Tree(dir), user_tree) << "left behind after: " << r.err;
      }
      EXPECT_EQ(ReadFile(dir / kUserFile), kUserBytes);
      // The same command once there is room.
      if (r.exit_code != 0) {
        ASSERT_EQ(disk.Resize(kRoomy), "");
        RunResult retry = RunTool(w.tool, Args(w, out));
        EXPECT_EQ(retry.exit_code, 0) << retry.err;
        ExpectWhole(w, out);
      }
      RemoveOutput(out);
    }
    EXPECT_GE(failures, 4) << "the disk sizes did not make the writer fail";
  }
}

// ---------------------------------------------------------------------------
// A file-size limit (ulimit -f)

TEST_F(FaultTest, FileSizeLimitIsAnErrorNamingTheLimitNotSigxfsz) {
  for (const Writer& w : Writers()) {
    // Beside its parts, merge hard-links their shards and writes only small
    // files: FullDiskEveryWriter... has it copy, onto another file system.
    if (w.name == "merge") continue;
    SCOPED_TRACE(w.name);
    const fs::path dir = tmp_.path() / "fsize";
    fs::create_directories(dir);
    WriteFile(dir / kUserFile, kUserBytes);
    const fs::path out = dir / "out";
    const std::set<std::string> user_tree = Tree(dir);
    // Smaller than every file these writers make but the smallest ones
    // (markers, manifests), which fit.
    const rlim_t limit = 48 << 10;
    RunResult r = RunTool(w.tool, Args(w, out), [limit] {
      struct rlimit l = {limit, limit};
      setrlimit(RLIMIT_FSIZE, &l);
    });
    testing::ExpectOneLineFailure(r, ToolName(w), "File too large");
    EXPECT_THAT(r.err, HasSubstr(absl::StrCat("ulimit -f, is ", limit, " bytes")));
    EXPECT_EQ(Tree(dir), user_tree) << "left behind after: " << r.err;
    RunResult retry = RunTool(w.tool, Args(w, out));
    EXPECT_EQ(retry.exit_code, 0) << retry.err;
    ExpectWhole(w, out);
    RemoveOutput(out);
  }
}

// ---------------------------------------------------------------------------
// Threads the system refuses (a pids cgroup, as in containers and Slurm)

// A pids cgroup (v1 or v2) holding at most `max` tasks, or the reason there
// is none.
class PidsCgroup {
 public:
  explicit PidsCgroup(int max) {
    const std::string name = absl::StrCat("shardpack-fault-", getpid());
    for (const char* root : {"/sys/fs/cgroup/pids", "/sys/fs/cgroup"}) {
      const fs::path dir = fs::path(root) / name;
      std::error_code ec;
      if (!fs::exists(fs::path(root) / "cgroup.procs") || !fs::create_directory(dir, ec)) continue;
      if (!fs::exists(dir / "pids.max")) {
        fs::remove(dir, ec);
        continue;
      }
      WriteFile(dir / "pids.max", std::to_string(max));
      dir_ = dir;
      return;
    }
  }
  ~PidsCgroup() {
    if (!dir_.empty()) rmdir(dir_.c_str());
  }
  bool ok() const { return !dir_.empty(); }
  // Moves the calling process into the cgroup (in a child, before exec).
  void Join() const {
    const std::string procs = (dir_ / "cgroup.procs").string();
    const int fd = open(procs.c_str(), O_WRONLY);
    if (fd < 0) _exit(120);
    const std::string pid = std::to_string(getpid());
    if (write(fd, pid.data(), pid.size()) != static_cast<ssize_t>(pid.size())) _exit(121);
    close(fd);
  }

 private:
  fs::path dir_;
};

TEST_F(FaultTest, ThreadsTheSystemRefusesAreAnErrorNamingTheLimit) {
  PidsCgroup cgroup(2);  // the tool's main thread and one more
  if (!cgroup.ok()) GTEST_SKIP() << "no pids cgroup can be made here (needs root)";
  const fs::path in = in_->path();
  const std::vector<std::pair<std::string, std::vector<std::string>>> runs = {
      {SHARDPACK_PATH,
       {"cifar", (in / "data_batch_1.bin").string(), "-o", (tmp_.path() / "out").string(), "--threads",
        "4", "-q"}},
      {SHARDPACK_PATH,
       {"images", (in / "images").string(), "-o", (tmp_.path() / "out").string(), "--threads",
        "4", "-q"}},
      {SHARDDUMP_PATH, {"verify", (in / "ds-many").string(), "--threads", "4", "-q"}},
      {SHARDBENCH_PATH, {(in / "ds-shard").string(), "--threads", "4", "-q"}},
      {SHARDBENCH_PATH, {(in / "ds-lmdb").string(), "--threads", "4", "-q"}},
  };
  for (const auto& [tool, args] : runs) {
    SCOPED_TRACE(absl::StrCat(fs::path(tool).filename().string(), " ", absl::StrJoin(args, " ")));
    RunResult r = RunTool(tool, args, [&cgroup] { cgroup.Join(); });
    testing::ExpectOneLineFailure(r, fs::path(tool).filename().string(), "cannot start");
    EXPECT_THAT(r.err, HasSubstr("Resource temporarily unavailable"));
    EXPECT_THAT(r.err, HasSubstr("pids or memory cgroup"));
    EXPECT_FALSE(fs::exists(tmp_.path() / "out"));
    EXPECT_FALSE(fs::exists(tmp_.path() / "out.partial"));
    // Where threads can be had, the same command works.
    RunResult retry = RunTool(tool, args);
    EXPECT_EQ(retry.exit_code, 0) << retry.err;
    fs::remove_all(tmp_.path() / "out");
  }
}

// ---------------------------------------------------------------------------
// Memory the system refuses (ulimit -v)

TEST_F(FaultTest, MemoryTheSystemRefusesIsAnErrorNotASignal) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "under the sanitizers, whose runtime in the tool needs more address space than the "
                  "limit leaves it (ASan's shadow memory, UBSan's reports)";
#endif
  const fs::path in = in_->path();
  // Enough to load the program and its libraries, not for the reader's
  // ring of 512 MiB, its threads' stacks, or the packer's buffers.
  const rlim_t limit = rlim_t{160} << 20;
  const auto limited = [limit] {
    struct rlimit l = {limit, limit};
    setrlimit(RLIMIT_AS, &l);
  };
  const std::vector<std::pair<std::string, std::vector<std::string>>> runs = {
      {SHARDBENCH_PATH,
       {(in / "ds-shard").string(), "--batch-size", "1500", "--ring-slots", "64", "--threads",
        "2", "-q"}},
      {SHARDBENCH_PATH, {(in / "ds-shard").string(), "--threads", "64", "-q"}},
      {SHARDPACK_PATH,
       {"cifar", (in / "data_batch_1.bin").string(), "-o", (tmp_.path() / "out").string(), "--threads",
        "64", "-q"}},
  };
  for (const auto& [tool, args] : runs) {
    SCOPED_TRACE(absl::StrCat(fs::path(tool).filename().string(), " ", absl::StrJoin(args, " ")));
    RunResult r = RunTool(tool, args, limited);
    testing::ExpectOneLineFailure(r, fs::path(tool).filename().string(), "");
    EXPECT_THAT(r.err, AnyOf(HasSubstr("memory"), HasSubstr("cannot start")));
    EXPECT_FALSE(fs::exists(tmp_.path() / "out"));
    EXPECT_FALSE(fs::exists(tmp_.path() / "out.partial"));
  }
}

// ---------------------------------------------------------------------------
// Descriptors the system refuses (ulimit -n)

TEST_F(FaultTest, DescriptorLimitIsAnErrorNamingTheLimit) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "under the sanitizers, whose runtime in the tool needs more descriptors than the "
                  "limit leaves it (ASan's shadow memory, UBSan's reports)";
#endif
  const fs::path in = in_->path();
  const rlim_t limit = 6;  // stdin/out/err and three more
  const std::vector<std::pair<std::string, std::vector<std::string>>> runs = {
      // pread holds a descriptor a shard (a mapping closes its own, and auto
      // maps some page-cached datasets).
      {SHARDBENCH_PATH, {(in / "ds-many").string(), "--io", "pread", "-q"}},
      {SHARDPACK_PATH,
       {"cifar", (in / "data_batch_1.bin").string(), "-o", (tmp_.path() / "out").string(),
        "--format", "lmdb", "-q"}},
  };
  for (const auto& [tool, args] : runs) {
    SCOPED_TRACE(absl::StrCat(fs::path(tool).filename().string(), " ", absl::StrJoin(args, " ")));
    RunResult r = RunTool(tool, args, [limit] {
      struct rlimit l = {limit, limit};
      setrlimit(RLIMIT_NOFILE, &l);
    });
    testing::ExpectOneLineFailure(r, fs::path(tool).filename().string(),
                                  "Too many open files (the limit on open files, ulimit -n, is 6)");
    EXPECT_FALSE(fs::exists(tmp_.path() / "out"));
    EXPECT_FALSE(fs::exists(tmp_.path() / "out.partial"));
  }
}

// ---------------------------------------------------------------------------
// Kills at any moment

// Kills a pack at moments spread over its first 100 ms and over the rest of
// its run, each time asserting that what it left either reads as whole or
// does not read as a dataset at all, that the user's file beside it is
// intact, and that the same command then works.
TEST_F(FaultTest, KilledAtAnyMomentTheRetryWorksAndNothingHalfWrittenReadsAsWhole) {
  const fs::path in = in_->path();
  const std::vector<Writer> writers = {
      {"pack cifar into .shard", SHARDPACK_PATH,
       {"cifar", "{IN}/data_batch_1.bin", "-o", "{OUT}", "--shard-size", "1MiB", "-q"}},
      {"pack cifar into LMDB", SHARDPACK_PATH,
       {"cifar", "{IN}/data_batch_1.bin", "-o", "{OUT}", "--format", "lmdb", "--shard-size", "1MiB",
        "-q"}},
      {"pack cifar into HDF5", SHARDPACK_PATH,
       {"cifar", "{IN}/data_batch_1.bin", "-o", "{OUT}", "--format", "hdf5", "--shard-size", "1MiB",
        "-q"}},
      {"convert", SHARDPACK_PATH,
       {"convert", "{IN}/ds-lmdb", "-o", "{OUT}", "--format", "shard", "-q"}},
      {"merge", SHARDPACK_PATH, {"merge", "{IN}/part1", "{IN}/part2", "-o", "{OUT}"}},
  };
  // Delays in microseconds: dense in the first 100 ms, then later.
  std::vector<int> delays;
  for (int us = 0; us < 100000; us = us * 2 + 500) delays.push_back(us);
  for (int us = 100000; us < 400000; us += 60000) delays.push_back(us);
  for (const Writer& w : writers) {
    for (bool overwrite : {false, true}) {
      for (int delay : delays) {
        SCOPED_TRACE(absl::StrCat(w.name, overwrite ? " --overwrite" : "", ", killed after ",
                                  delay, " us"));
        const fs::path dir = tmp_.path() / "kill";
        fs::remove_all(dir);
        fs::create_directories(dir);
        WriteFile(dir / kUserFile, kUserBytes);
        const fs::path out = dir / "out";
        std::vector<std::string> args = Args(w, out);
        if (overwrite) {
          // An old dataset to replace: it must survive whole, or be replaced whole.
          ASSERT_EQ(RunTool(SHARDPACK_PATH, {"cifar", (in / "data_batch_1.bin").string(), "-o",
                                             out.string(), "--format", "lmdb", "-q"})
                        .exit_code,
                    0);
          args.push_back("--overwrite");
        }
        std::vector<std::string> argv = {w.tool};
        argv.insert(argv.end(), args.begin(), args.end());
        const int pid = testing::Spawn(argv);
        std::this_thread::sleep_for(std::chrono::microseconds(delay));
        kill(pid, SIGKILL);
        int status = 0;
        waitpid(pid, &status, 0);

        EXPECT_EQ(ReadFile(dir / kUserFile), kUserBytes);
        if (fs::exists(out / "manifest.json")) {
          RunResult v = RunTool(SHARDDUMP_PATH, {"verify", out.string(), "-q"});
          EXPECT_EQ(v.exit_code, 0) << "a dataset with a manifest that is not whole: " << v.err;
        } else {
          RunResult v = RunTool(SHARDDUMP_PATH, {"info", out.string(), "-q"});
          EXPECT_NE(v.exit_code, 0) << "a dataset without a manifest reads";
        }
        // The same command again: it works, or (its first run got as far
        // as publishing) says the dataset exists.
        RunResult retry = RunTool(w.tool, args);
        if (retry.exit_code != 0) {
          EXPECT_TRUE(!overwrite && fs::exists(out / "manifest.json")) << retry.err;
          EXPECT_THAT(retry.err, HasSubstr("already exists; use --overwrite")) << retry.err;
        }
        RunResult v = RunTool(SHARDDUMP_PATH, {"verify", out.string(), "-q"});
        EXPECT_EQ(v.exit_code, 0) << v.err;
        std::set<std::string> left;
        for (const auto& e : fs::directory_iterator(dir)) left.insert(e.path().filename());
        EXPECT_EQ(left, (std::set<std::string>{kUserFile, "out"}));
      }
    }
  }
}

}  // namespace
}  // namespace shardpack
