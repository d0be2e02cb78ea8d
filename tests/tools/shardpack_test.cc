// shardpack end to end: the binary is run on inputs made here and its output
// is read back with the format library.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/jpeg_decoder.h"
#include "datasets/demo.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "shardpack/dataset.h"
#include "shardpack/shard.h"
#include "tests/testing/cli_expect.h"
#include "tests/testing/file_snapshot.h"
#include "tests/testing/shard_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

namespace fs = std::filesystem;
using testing::FileBytes;
using testing::Snapshot;
using ::testing::HasSubstr;
using testing::RunResult;
using testing::RunTool;

constexpr int kCifarRecord = 1 + 3072;

// A record read back, owning its bytes.
struct Stored {
  std::string key;
  std::vector<int64_t> labels;
  ImageInfo image;
  std::vector<uint8_t> payload;
  bool operator==(const Stored&) const = default;
};

std::vector<Stored> ReadAll(const std::string& dataset) {
  std::vector<Stored> out;
  auto manifest = ReadManifest(dataset);
  EXPECT_TRUE(manifest.ok()) << manifest.status();
  if (!manifest.ok()) return out;
  for (const ShardEntry& shard : manifest->shards) {
    auto file = OpenPosixFile((fs::path(dataset) / shard.path).string());
    EXPECT_TRUE(file.ok()) << file.status();
    auto reader = ShardReader::Open(file->get());
    EXPECT_TRUE(reader.ok()) << reader.status();
    EXPECT_EQ((*reader)->index().num_records(), shard.records);
    for (uint64_t i = 0; i < shard.records; ++i) {
      auto r = (*reader)->ReadRecord(i);
      EXPECT_TRUE(r.ok()) << r.status();
      out.push_back({std::string(r->key), {r->labels.begin(), r->labels.end()}, r->image,
                     {r->payload.begin(), r->payload.end()}});
    }
  }
  return out;
}

class ShardpackTest : public ::testing::Test {
 protected:
  // A CIFAR-10 file of n records: label i % 10, pixel (c, y, x) of record i
  // = (i + 3c + 5y + 7x) mod 256. Returns its path.
  std::string WriteCifar10(const std::string& name, int n, size_t extra_bytes = 0) {
    fs::create_directories(dir_.path() / "cifar");
    std::string path = (dir_.path() / "cifar" / name).string();
    std::string bytes;
    for (int i = 0; i < n; ++i) {
      bytes += static_cast<char>(i % 10);
      for (int c = 0; c < 3; ++c)
        for (int y = 0; y < 32; ++y)
          for (int x = 0; x < 32; ++x) bytes += static_cast<char>((i + 3 * c + 5 * y + 7 * x) & 255);
    }
    bytes.append(extra_bytes, '\x01');
    std::ofstream(path, std::ios::binary) << bytes;
    std::ofstream(dir_.path() / "cifar" / "batches.meta.txt")
        << "airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n\n";
    return path;
  }

  std::string Out(const std::string& name) const { return dir_.Join(name); }

  // An ImageFolder of demo JPEGs under Out("images"); empty on failure.
  std::string DemoImages(int classes, int per_class, int width, int height) {
    datasets::DemoImagesOptions demo;
    demo.classes = classes;
    demo.images_per_class = per_class;
    demo.width = width;
    demo.height = height;
    const std::string root = Out("images");
    absl::Status s = datasets::WriteDemoImageFolder(root, demo);
    EXPECT_TRUE(s.ok()) << s;
    return s.ok() ? root : "";
  }

  testing::TempDir dir_;
};

TEST_F(ShardpackTest, CifarIsStoredAsHwcPixelsWithLabelsAndClassNames) {
  std::string input = WriteCifar10("data_batch_1.bin", 30);
  RunResult r = RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("ds"), "--no-shuffle", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<Stored> records = ReadAll(Out("ds"));
  ASSERT_EQ(records.size(), 30u);
  for (int i = 0; i < 30; ++i) {
    const Stored& s = records[i];
    ASSERT_EQ(s.labels, std::vector<int64_t>{i % 10});
    ASSERT_EQ(s.image, (ImageInfo{Encoding::kRaw, Layout::kHWC, 32, 32, 3}));
    for (int y : {0, 13, 31})
      for (int x : {0, 20, 31})
        for (int c = 0; c < 3; ++c)
          ASSERT_EQ(s.payload[(y * 32 + x) * 3 + c], (i + 3 * c + 5 * y + 7 * x) & 255);
  }
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(Out("ds")));
  ASSERT_EQ(m.schema.labels.size(), 1u);
  EXPECT_EQ(m.schema.labels[0].classes.front(), "airplane");
  EXPECT_EQ(m.schema.labels[0].classes.size(), 10u);
  EXPECT_TRUE(fs::exists(Out("ds/skipped.tsv")));
  EXPECT_FALSE(fs::exists(Out("ds.partial")));
}

TEST_F(ShardpackTest, ShuffleIsASeededPermutation) {
  std::string input = WriteCifar10("data_batch_1.bin", 200);
  ASSERT_EQ(
      RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("a"), "--seed", "1", "-q"}).exit_code, 0);
  ASSERT_EQ(
      RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("b"), "--seed", "2", "-q"}).exit_code, 0);
  std::vector<Stored> a = ReadAll(Out("a")), b = ReadAll(Out("b"));
  std::set<std::string> keys_a, keys_b;
  for (const Stored& s : a) keys_a.insert(s.key);
  for (const Stored& s : b) keys_b.insert(s.key);
  EXPECT_EQ(keys_a.size(), 200u);
  EXPECT_EQ(keys_a, keys_b);
  EXPECT_NE(a, b);
}

TEST_F(ShardpackTest, OutputIsByteIdenticalWhateverTheThreadCount) {
  std::string input = WriteCifar10("data_batch_1.bin", 500);
  for (std::string threads : {"1", "2", "8"}) {
    RunResult r =
        RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("t" + threads), "--threads", threads,
                                 "--shard-records", "128", "--block-size", "64KiB", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  for (const auto& entry : fs::directory_iterator(Out("t1"))) {
    std::string name = entry.path().filename().string();
    EXPECT_EQ(FileBytes(entry.path()), FileBytes(fs::path(Out("t2")) / name)) << name;
    EXPECT_EQ(FileBytes(entry.path()), FileBytes(fs::path(Out("t8")) / name)) << name;
  }
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(Out("t1")));
  EXPECT_EQ(m.shards.size(), 4u);  // 500 records, 128 a shard
}

TEST_F(ShardpackTest, MergedPartsEqualASinglePackRecordForRecord) {
  std::string input = WriteCifar10("data_batch_1.bin", 301);
  ASSERT_EQ(
      RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("whole"), "--seed", "9", "-q"}).exit_code,
      0);
  std::vector<std::string> merge = {"merge"};
  for (int i = 1; i <= 3; ++i) {
    std::string part = Out(absl::StrCat("part", i));
    RunResult r = RunTool(SHARDPACK_PATH, {"cifar", input, "-o", part, "--seed", "9", "--part",
                                           absl::StrCat(i, "/3"), "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    merge.push_back(part);
  }
  merge.insert(merge.end(), {"-o", Out("merged")});
  RunResult r = RunTool(SHARDPACK_PATH, merge);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<Stored> whole = ReadAll(Out("whole")), merged = ReadAll(Out("merged"));
  ASSERT_EQ(merged.size(), 301u);
  EXPECT_TRUE(whole == merged);
  // Shards were linked, not rewritten.
  EXPECT_EQ(fs::hard_link_count(Out("merged/shard-00000.shard")), 2u);
}

TEST_F(ShardpackTest, ExistingOutputIsRefusedWithoutOverwrite) {
  std::string input = WriteCifar10("data_batch_1.bin", 10);
  ASSERT_EQ(RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("ds"), "-q"}).exit_code, 0);
  RunResult again = RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("ds"), "-q"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr("already exists; use --overwrite"));
  RunResult over = RunTool(SHARDPACK_PATH,
                           {"cifar", input, "-o", Out("ds"), "--overwrite", "--no-shuffle", "-q"});
  EXPECT_EQ(over.exit_code, 0) << over.err;
  EXPECT_EQ(ReadAll(Out("ds")).size(), 10u);
}

TEST_F(ShardpackTest, TruncatedCifarFailsNamingTheOffsetAndLeavesNothing) {
  std::string input = WriteCifar10("data_batch_1.bin", 7, 100);
  RunResult r = RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("ds"), "--on-error", "fail"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("data_batch_1.bin"));
  EXPECT_THAT(r.err, HasSubstr(std::to_string(7 * kCifarRecord)));
  EXPECT_FALSE(fs::exists(Out("ds")));
  EXPECT_FALSE(fs::exists(Out("ds.partial")));
}

TEST_F(ShardpackTest, TruncatedCifarIsSkippedWithAWarningKeepingWholeRecords) {
  std::string input = WriteCifar10("data_batch_1.bin", 7, 100);
  RunResult r = RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("ds")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("warning"));
  EXPECT_THAT(r.err, HasSubstr("skipped 1 input"));
  EXPECT_EQ(ReadAll(Out("ds")).size(), 7u);
  std::string skipped = FileBytes(Out("ds/skipped.tsv"));
  EXPECT_THAT(skipped, HasSubstr("data_batch_1.bin\t"));
  EXPECT_THAT(skipped, HasSubstr(std::to_string(7 * kCifarRecord)));
}

// Shard files (finished or being written) in a pack's staging folder.
int ShardFilesIn(const fs::path& staging) {
  std::error_code ec;
  int n = 0;
  for (fs::directory_iterator it(staging, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().starts_with("shard-")) ++n;
  }
  return n;
}

// Kills a pack at points it has provably reached (before it starts, once its
// staging folder exists, once it writes its 1st, 3rd and 6th shard of 10):
// each kill must land on a running pack, or the test fails, since a pack that
// finished first would prove nothing about being killed.
TEST_F(ShardpackTest, KilledPackNeverLeavesADataset) {
  std::string input = WriteCifar10("data_batch_1.bin", 20000);
  for (int stage : {-1, 0, 1, 3, 6}) {
    SCOPED_TRACE(absl::StrCat("killed at stage ", stage));
    std::string out = Out(absl::StrCat("killed", stage + 1));
    const fs::path staging = out + ".partial";
    int pid = testing::Spawn({SHARDPACK_PATH, "cifar", input, "-o", out, "--threads", "2",
                              "--block-size", "64KiB", "--shard-records", "2000"});
    // Polls for the stage (no timing is asserted); a pack that ends first
    // leaves `out` and stops the wait.
    for (int ms = 0; stage >= 0 && ms < 60000 && !fs::exists(out); ++ms) {
      if (fs::exists(staging) && ShardFilesIn(staging) >= stage) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    const bool killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    ASSERT_TRUE(killed) << "the pack was not killed (it finished or failed first): status "
                        << status;
    EXPECT_THAT(ReadManifest(out),
                testing::StatusIs(absl::StatusCode::kNotFound, HasSubstr("not a dataset")));
  }
}

TEST_F(ShardpackTest, FullDiskIsAClearErrorAndRemovesThePartialOutput) {
  std::string input = WriteCifar10("data_batch_1.bin", 2000);
  // A file size limit makes writes fail past 1 MiB, as a full disk would.
  RunResult r = testing::Run({SHARDPACK_PATH, "cifar", input, "-o", Out("ds"), "-q"}, [] {
    signal(SIGXFSZ, SIG_IGN);
    rlimit limit{1 << 20, 1 << 20};
    setrlimit(RLIMIT_FSIZE, &limit);
  });
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("shardpack: write "));
  EXPECT_THAT(r.err, HasSubstr("File too large"));
  EXPECT_FALSE(fs::exists(Out("ds")));
  EXPECT_FALSE(fs::exists(Out("ds.partial")));
}

TEST_F(ShardpackTest, RealFullDiskIsAClearErrorAndLeavesNothing) {
  std::string input = WriteCifar10("data_batch_1.bin", 2000);
  std::string mnt = Out("small");
  fs::create_directories(mnt);
  // A 1 MiB tmpfs in a private mount namespace: writes really hit ENOSPC.
  std::string script = absl::StrCat(
      "mount -t tmpfs -o size=1m tmpfs ", mnt, " || exit 77; ", SHARDPACK_PATH, " cifar ", input,
      " -o ", mnt, "/ds -q; rc=$?; ls -A ", mnt, "; exit $rc");
  RunResult r = testing::Run({"/usr/bin/unshare", "-rm", "/bin/sh", "-c", script});
  if (r.exit_code == 77 || r.err.find("unshare") != std::string::npos) {
    GTEST_SKIP() << "cannot mount a tmpfs in a user namespace here: " << r.err;
  }
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("No space left on device"));
  EXPECT_EQ(r.out, "") << "left behind on the full file system";
}

TEST_F(ShardpackTest, JsonSummaryAndUnknownBackends) {
  std::string input = WriteCifar10("data_batch_1.bin", 12);
  RunResult r = RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("ds"), "--json", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["records"], 12);
  EXPECT_EQ(j["classes"], 10);
  EXPECT_EQ(j["shards"], 1);
  EXPECT_EQ(j["skipped"], 0);
  EXPECT_GT(j["bytes_out"].get<uint64_t>(), 12u * 3072);
  RunResult lmdb =
      RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("l"), "--format", "lmdb", "--json", "-q"});
  ASSERT_EQ(lmdb.exit_code, 0) << lmdb.err;
  EXPECT_EQ(nlohmann::json::parse(lmdb.out)["records"], 12);
  RunResult tfrecord =
      RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("t"), "--format", "tfrecord"});
  EXPECT_EQ(tfrecord.exit_code, 2);
  RunResult usage = RunTool(SHARDPACK_PATH, {"cifar", input});
  EXPECT_EQ(usage.exit_code, 2);
}

TEST_F(ShardpackTest, ImageFolderPassthroughStoresTheFilesUntouched) {
  const std::string root = DemoImages(3, 4, 64, 48);
  ASSERT_FALSE(root.empty());
  std::ofstream(fs::path(root) / fs::directory_iterator(root)->path().filename() / "empty.jpg");
  RunResult r = RunTool(SHARDPACK_PATH, {"images", root, "-o", Out("ds"), "--no-shuffle"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("skipped 1 input"));
  std::vector<Stored> records = ReadAll(Out("ds"));
  ASSERT_EQ(records.size(), 12u);
  for (const Stored& s : records) {
    EXPECT_EQ(s.image.encoding, Encoding::kJpeg);
    EXPECT_EQ(s.image.width, 64u);
    EXPECT_EQ(s.image.height, 48u);
    std::string file = FileBytes(fs::path(root) / s.key);
    EXPECT_EQ(std::string(s.payload.begin(), s.payload.end()), file) << s.key;
  }
  EXPECT_THAT(FileBytes(Out("ds/skipped.tsv")), HasSubstr("empty.jpg"));
  RunResult fail = RunTool(SHARDPACK_PATH, {"images", root, "-o", Out("f"), "--on-error", "fail"});
  EXPECT_EQ(fail.exit_code, 1);
  EXPECT_THAT(fail.err, HasSubstr("empty.jpg"));
  EXPECT_FALSE(fs::exists(Out("f")));
}

// --restart-markers: every record re-coded (a DRI of one MCU), the same
// pixels as the file; the flag is in the manifest's pack parameters, and raw
// mode refuses it by name.
TEST_F(ShardpackTest, RestartMarkersRecodeEveryImageKeepingItsPixels) {
  const std::string root = DemoImages(2, 3, 120, 90);
  ASSERT_FALSE(root.empty());
  RunResult r =
      RunTool(SHARDPACK_PATH, {"images", root, "-o", Out("ds"), "--restart-markers", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string dri = "\xFF\xDD\x00\x04\x00\x01";
  codec::JpegDecoder decoder;
  std::vector<Stored> records = ReadAll(Out("ds"));
  ASSERT_EQ(records.size(), 6u);
  for (const Stored& s : records) {
    const std::string stored(s.payload.begin(), s.payload.end());
    const std::string file = FileBytes(fs::path(root) / s.key);
    EXPECT_NE(stored, file) << s.key;
    EXPECT_NE(stored.find(dri), std::string::npos) << s.key;
    const std::vector<uint8_t> file_bytes(file.begin(), file.end());
    SP_ASSERT_OK_AND_ASSIGN(codec::PixelView want, decoder.Decode(file_bytes));
    const std::vector<uint8_t> want_pixels(want.data, want.data + want.bytes());
    SP_ASSERT_OK_AND_ASSIGN(codec::PixelView got, decoder.Decode(s.payload));
    EXPECT_TRUE(std::vector<uint8_t>(got.data, got.data + got.bytes()) == want_pixels) << s.key;
  }
  EXPECT_THAT(FileBytes(Out("ds/manifest.json")), HasSubstr("\"restart_markers\": true"));
  RunResult raw = RunTool(SHARDPACK_PATH, {"images", root, "-o", Out("raw"), "--mode", "raw",
                                           "--size", "8x8", "--restart-markers"});
  EXPECT_NE(raw.exit_code, 0);
  EXPECT_THAT(raw.err, HasSubstr("raw mode stores pixels: restart markers do not apply"));
  EXPECT_FALSE(fs::exists(Out("raw")));
}


// --- Output safety: --overwrite, the staging directory, output vs input ---

// Holds a directory flock()ed as a running pack does, until destroyed.
class DirLock {
 public:
  explicit DirLock(const std::string& dir)
      : fd_(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    EXPECT_GE(fd_, 0) << dir;
    EXPECT_EQ(flock(fd_, LOCK_EX | LOCK_NB), 0) << dir;
  }
  ~DirLock() { close(fd_); }

 private:
  int fd_;
};

TEST_F(ShardpackTest, OverwriteRefusesAFolderOfTheUsersFiles) {
  std::string input = WriteCifar10("data_batch_1.bin", 10);
  fs::create_directories(Out("mine/sub"));
  std::ofstream(Out("mine/notes.txt")) << "precious";
  std::ofstream(Out("mine/sub/more.txt")) << "also precious";
  const auto before = Snapshot(Out("mine"));
  for (bool overwrite : {false, true}) {
    std::vector<std::string> args = {"cifar", input, "-o", Out("mine"), "-q"};
    if (overwrite) args.push_back("--overwrite");
    RunResult r = RunTool(SHARDPACK_PATH, args);
    EXPECT_EQ(r.exit_code, 1) << overwrite;
    EXPECT_THAT(r.err, HasSubstr(Out("mine") + " "));
    EXPECT_THAT(r.err, HasSubstr("no manifest.json"));
    EXPECT_THAT(r.err, HasSubstr("--overwrite replaces only a dataset shardpack wrote"));
    EXPECT_EQ(Snapshot(Out("mine")), before);
    EXPECT_FALSE(fs::exists(Out("mine.partial")));
  }
}

TEST_F(ShardpackTest, OverwriteRefusesADatasetHoldingAFileOfTheUsers) {
  std::string input = WriteCifar10("data_batch_1.bin", 10);
  ASSERT_EQ(RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("ds"), "-q"}).exit_code, 0);
  std::ofstream(Out("ds/README")) << "my notes on this dataset";
  const auto before = Snapshot(Out("ds"));
  RunResult r = RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("ds"), "-q", "--overwrite"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("holds README, which shardpack did not write"));
  EXPECT_THAT(r.err, HasSubstr("nothing was deleted"));
  EXPECT_EQ(Snapshot(Out("ds")), before);
  // A manifest that is not ours (or a folder where a shard should be) is refused too.
  fs::remove(Out("ds/README"));
  fs::create_directories(Out("other"));
  std::ofstream(Out("other/manifest.json")) << "{\"name\": \"someone else's\"}";
  EXPECT_THAT(
      RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("other"), "-q", "--overwrite"}).err,
      HasSubstr("not one of shardpack's"));
  EXPECT_TRUE(fs::exists(Out("other/manifest.json")));
}

TEST_F(ShardpackTest, OverwriteRefusesAFileAndASymlink) {
  std::string input = WriteCifar10("data_batch_1.bin", 10);
  std::ofstream(Out("file")) << "a file of mine";
  RunResult file =
      RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("file"), "-q", "--overwrite"});
  EXPECT_EQ(file.exit_code, 1);
  EXPECT_THAT(file.err, HasSubstr(Out("file") + " is not a directory"));
  EXPECT_EQ(FileBytes(Out("file")), "a file of mine");
  ASSERT_EQ(RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("ds"), "-q"}).exit_code, 0);
  fs::create_directory_symlink(Out("ds"), Out("link"));
  RunResult link =
      RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("link"), "-q", "--overwrite"});
  EXPECT_EQ(link.exit_code, 1);
  EXPECT_THAT(link.err, HasSubstr("is a symbolic link"));
  EXPECT_TRUE(fs::is_symlink(Out("link")));
}

// What --overwrite does replace: an empty folder, a dataset of ours (an
// LMDB reader's lock file beside a shard included), one whose publish was
// cut short before its manifest; nothing of ours is left behind.
TEST_F(ShardpackTest, OverwriteReplacesOnlyWhatShardpackWrote) {
  std::string input = WriteCifar10("data_batch_1.bin", 10);
  fs::create_directories(Out("empty"));
  ASSERT_EQ(RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("lmdb"), "--format", "lmdb", "-q"})
                .exit_code,
            0);
  std::ofstream(Out("lmdb/shard-00000.lmdb-lock")) << "lock";
  fs::create_directories(Out("cut"));
  std::ofstream(Out("cut/.shardpack-staging")) << "";
  std::ofstream(Out("cut/shard-00000.shard")) << "";
  std::ofstream(Out("cut/skipped.tsv")) << "";
  // Never a whole dataset: the same pack replaces it without --overwrite
  // (it used to say "an interrupted pack?" and want --overwrite).
  RunResult cut = RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("cut"), "-q"});
  ASSERT_EQ(cut.exit_code, 0) << cut.err;
  EXPECT_EQ(ReadAll(Out("cut")).size(), 10u);
  for (std::string out : {"empty", "lmdb", "cut"}) {
    RunResult r = RunTool(SHARDPACK_PATH,
                          {"cifar", input, "-o", Out(out), "-q", "--overwrite", "--no-shuffle"});
    ASSERT_EQ(r.exit_code, 0) << out << ": " << r.err;
    EXPECT_EQ(ReadAll(Out(out)).size(), 10u);
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_.path())) {
      names.insert(e.path().filename().string());
    }
    EXPECT_EQ(names.count(out + ".partial"), 0u) << out;
    EXPECT_FALSE(fs::exists(Out(out + "/.shardpack-staging"))) << out;
    EXPECT_FALSE(fs::exists(Out(out + "/shard-00000.lmdb-lock"))) << out;
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_.path()), {}), 4);  // cifar + the three
}

TEST_F(ShardpackTest, StagingFolderOfTheUsersIsRefusedNotDeleted) {
  std::string input = WriteCifar10("data_batch_1.bin", 10);
  fs::create_directories(Out("ds.partial"));
  std::ofstream(Out("ds.partial/thesis.tex")) << "years of work";
  for (bool overwrite : {false, true}) {
    std::vector<std::string> args = {"cifar", input, "-o", Out("ds"), "-q"};
    if (overwrite) args.push_back("--overwrite");
    RunResult r = RunTool(SHARDPACK_PATH, args);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr(Out("ds.partial") + " exists and was not made by shardpack"));
    EXPECT_EQ(FileBytes(Out("ds.partial/thesis.tex")), "years of work");
    EXPECT_FALSE(fs::exists(Out("ds")));
  }
  fs::remove_all(Out("ds.partial"));
  std::ofstream(Out("ds.partial")) << "a file";
  EXPECT_THAT(RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("ds"), "-q"}).err,
              HasSubstr("exists and is not a directory shardpack made"));
  EXPECT_EQ(FileBytes(Out("ds.partial")), "a file");
}

// A pack killed between mkdir and its marker left an empty OUT.partial,
// which every later pack refused as "not made by shardpack".
TEST_F(ShardpackTest, EmptyStagingLeftByAPackKilledBeforeItsMarkerIsTaken) {
  std::string input = WriteCifar10("data_batch_1.bin", 10);
  fs::create_directories(Out("ds.partial"));
  RunResult r = RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("ds"), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadAll(Out("ds")).size(), 10u);
  EXPECT_FALSE(fs::exists(Out("ds.partial")));
}

TEST_F(ShardpackTest, StagingLeftByAKilledPackIsCleared) {
  std::string input = WriteCifar10("data_batch_1.bin", 10);
  fs::create_directories(Out("ds.partial"));
  std::ofstream(Out("ds.partial/.shardpack-staging")) << "";
  std::ofstream(Out("ds.partial/shard-00000.shard.partial")) << "half a shard";
  RunResult r = RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("ds"), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadAll(Out("ds")).size(), 10u);
  EXPECT_FALSE(fs::exists(Out("ds.partial")));
  EXPECT_FALSE(fs::exists(Out("ds/shard-00000.shard.partial")));
}

// Of two packs into one OUT, the one that comes second is told at once;
// the first is not disturbed. The test holds the locks a running pack holds.
TEST_F(ShardpackTest, OutputInUseIsSaidAtOnce) {
  std::string input = WriteCifar10("data_batch_1.bin", 10);
  fs::create_directories(Out("ds.partial"));
  std::ofstream(Out("ds.partial/.shardpack-staging")) << "";
  std::ofstream(Out("ds.partial/shard-00000.shard.partial")) << "being written";
  {
    DirLock running(Out("ds.partial"));
    for (bool overwrite : {false, true}) {
      std::vector<std::string> args = {"cifar", input, "-o", Out("ds"), "-q"};
      if (overwrite) args.push_back("--overwrite");
      RunResult r = RunTool(SHARDPACK_PATH, args);
      EXPECT_EQ(r.exit_code, 1);
      EXPECT_THAT(r.err, HasSubstr(Out("ds") + " is in use: another shardpack is writing it"));
      EXPECT_EQ(FileBytes(Out("ds.partial/shard-00000.shard.partial")), "being written");
    }
  }
  // A pack publishing into OUT (renamed, manifest not yet written) holds OUT.
  fs::rename(Out("ds.partial"), Out("ds"));
  DirLock publishing(Out("ds"));
  RunResult r = RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("ds"), "-q", "--overwrite"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("is in use"));
  EXPECT_FALSE(fs::exists(Out("ds.partial")));
}

TEST_F(ShardpackTest, TwoPacksIntoOneOutputOneGoesOn) {
  std::string input = WriteCifar10("data_batch_1.bin", 20000);
  int pid = testing::Spawn({SHARDPACK_PATH, "cifar", input, "-o", Out("ds"), "--threads", "1",
                            "--compress", "zstd:19", "-q"});
  // Start the second pack while the first one writes: once its staging
  // folder exists (and, when it has one, its marker: a moment later).
  while (!fs::exists(Out("ds.partial")) && !fs::exists(Out("ds"))) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (int ms = 0; ms < 1000 && !fs::exists(Out("ds.partial/.shardpack-staging")); ++ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_FALSE(fs::exists(Out("ds"))) << "the first pack ended too soon for this test";
  RunResult second = RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("ds"), "-q"});
  int status;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_THAT(second.err, ::testing::AnyOf(HasSubstr("is in use"), HasSubstr("already exists")));
  EXPECT_THAT(second.err, ::testing::Not(HasSubstr("rename")));
  EXPECT_EQ(ReadAll(Out("ds")).size(), 20000u);
}

TEST_F(ShardpackTest, OutputIsNeverTheInputNorAroundIt) {
  std::string input = WriteCifar10("data_batch_1.bin", 10);
  ASSERT_EQ(RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("ds"), "-q"}).exit_code, 0);
  fs::create_directory_symlink(Out("ds"), Out("alias"));
  const auto before = Snapshot(Out("ds"));
  const std::vector<std::vector<std::string>> commands = {
      {"convert", Out("ds"), "-o", Out("ds"), "--format", "lmdb", "--overwrite"},
      {"convert", Out("alias"), "-o", Out("ds"), "--format", "lmdb", "--overwrite"},
      {"convert", Out("ds/"), "-o", Out("alias/../ds"), "--format", "hdf5", "--overwrite"},
      {"merge", Out("ds"), "-o", Out("ds"), "--overwrite"},
      {"convert", Out("ds"), "-o", Out("ds/inner"), "--format", "lmdb"},
      {"cifar", Out("cifar"), "-o", dir_.path().string(), "--overwrite", "-q"},
      {"cifar", Out("cifar"), "-o", Out("cifar/out"), "-q"}};
  for (const auto& args : commands) {
    RunResult r = RunTool(SHARDPACK_PATH, args);
    EXPECT_EQ(r.exit_code, 1) << args[0] << " " << args[1] << " -o " << args[3];
    EXPECT_THAT(r.err, ::testing::AnyOf(HasSubstr("is the input"), HasSubstr("lies inside")));
  }
  EXPECT_EQ(Snapshot(Out("ds")), before);
  EXPECT_FALSE(fs::exists(Out("ds/inner")));
  // A CIFAR file's folder is not read as a whole: an output beside the file is fine.
  EXPECT_EQ(RunTool(SHARDPACK_PATH, {"cifar", input, "-o", Out("cifar/packed"), "-q"}).exit_code,
            0);
}

// The old failure: an output inside the image folder became a class on the
// next pack and shifted every label after it.
TEST_F(ShardpackTest, ImagesOutputInsideTheRootIsRefused) {
  const std::string root = DemoImages(3, 2, 16, 16);
  ASSERT_FALSE(root.empty());
  fs::create_directory_symlink(root, Out("root-link"));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {root, root + "/out"}, {root, Out("root-link/out")}, {Out("root-link"), root + "/out"},
      {root, root + "/class_00/deeper/out"}, {root, dir_.path().string()}};
  for (const auto& [in, out] : cases) {
    for (bool overwrite : {false, true}) {
      std::vector<std::string> args = {"images", in, "-o", out, "-q"};
      if (overwrite) args.push_back("--overwrite");
      RunResult r = RunTool(SHARDPACK_PATH, args);
      EXPECT_EQ(r.exit_code, 1) << in << " -o " << out;
      EXPECT_THAT(r.err, ::testing::AnyOf(HasSubstr("lies inside the input folder " + in),
                                        HasSubstr("input " + in + " lies inside the output")));
    }
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(root), {}), 3);
  // A list file's root is only where its paths start: an output inside is fine.
  std::ofstream(Out("list.txt")) << "class_00/img_0000.JPEG 0\n";
  RunResult list = RunTool(SHARDPACK_PATH, {"images", "--list", Out("list.txt"), "--root", root,
                                            "-o", root + "/packed", "-q"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
}

TEST_F(ShardpackTest, EmptyClassFolderIsRefusedInBothModes) {
  const std::string root = DemoImages(3, 2, 16, 16);
  ASSERT_FALSE(root.empty());
  fs::create_directories(fs::path(root) / "class_01a");
  std::ofstream(fs::path(root) / "class_01a" / "notes.txt") << "no images";
  for (std::string on_error : {"skip", "fail"}) {
    RunResult r =
        RunTool(SHARDPACK_PATH, {"images", root, "-o", Out("ds"), "--on-error", on_error, "-q"});
    EXPECT_EQ(r.exit_code, 1) << on_error;
    EXPECT_THAT(r.err, HasSubstr(root + "/class_01a: empty class folder"));
    EXPECT_THAT(r.err, HasSubstr("torchvision"));
    EXPECT_FALSE(fs::exists(Out("ds")));
  }
}

// A class folder whose name is not UTF-8 (Latin-1 "caf\xe9") was refused
// by the dataset writer without its name ("class 1 of label 'label' has a
// name that is not UTF-8"); the refusal now names the folder, escaped, and
// says what is accepted, before anything is read or written.
TEST_F(ShardpackTest, NonUtf8ClassFolderIsRefusedNamingIt) {
  const std::string root = DemoImages(2, 1, 16, 16);
  ASSERT_FALSE(root.empty());
  const fs::path latin1 = fs::path(root) / "caf\xe9";
  fs::create_directories(latin1);
  for (const fs::directory_entry& e : fs::directory_iterator(fs::path(root) / "class_00")) {
    fs::copy_file(e.path(), latin1 / e.path().filename());
  }
  for (std::string on_error : {"skip", "fail"}) {
    RunResult r =
        RunTool(SHARDPACK_PATH, {"images", root, "-o", Out("ds"), "--on-error", on_error, "-q"});
    EXPECT_EQ(r.exit_code, 1) << on_error;
    EXPECT_EQ(r.err, "shardpack: " + root +
                         "/caf\\xe9: class folder name is not UTF-8; class names are stored in "
                         "manifest.json, which holds UTF-8 text only: rename the folder (e.g. "
                         "convmv -f latin1 -t utf-8), or name the images in a --list\n");
    EXPECT_FALSE(fs::exists(Out("ds")));
  }
}

// Paths named with ESC[31m and a newline: every line shardpack prints about
// them is one line, escaped (they were printed raw).
TEST_F(ShardpackTest, PathsWithEscapesAndNewlinesArePrintedEscaped) {
  const std::string root = Out("in\x1b[31m\nx");
  const std::string shown_root = Out("in\\x1b[31m\\nx");
  fs::create_directories(root);
  RunResult empty = RunTool(SHARDPACK_PATH, {"images", root, "-o", Out("ds"), "-q"});
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_EQ(empty.err, "shardpack: " + shown_root + ": no class folders in the image folder\n");

  const std::string input = WriteCifar10("data_batch_1.bin", 3);
  const std::string out = Out("out\x1b[31m\nx");
  const std::string shown_out = Out("out\\x1b[31m\\nx");
  RunResult verbose = RunTool(SHARDPACK_PATH, {"cifar", input, "-o", out, "-q", "-v"});
  ASSERT_EQ(verbose.exit_code, 0) << verbose.err;
  EXPECT_EQ(verbose.err, "shardpack: 3 inputs into " + shown_out + " (built in " + shown_out +
                             ".partial), format shard\n");
  RunResult again = RunTool(SHARDPACK_PATH, {"cifar", input, "-o", out, "-q"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, ::testing::StartsWith("shardpack: " + shown_out + " "));
  EXPECT_EQ(testing::Lines(again.err).size(), 1u) << again.err;
}

// JSON holds UTF-8 only, and nlohmann's dump() throws on anything else: a
// path that is not UTF-8 (an input file, a root, a part, an output) ended
// shardpack with std::terminate (SIGABRT) where it wrote the pack's record
// of its inputs or the --json summary. Such bytes become U+FFFD in JSON.
TEST_F(ShardpackTest, NonUtf8PathsInJsonDoNotAbort) {
  const std::string input = Out("cifar/d\xff.bin");
  fs::copy_file(WriteCifar10("data_batch_1.bin", 4), input);
  const std::string out = Out("o\xff");
  RunResult cifar =
      RunTool(SHARDPACK_PATH, {"cifar", input, "--cifar", "10", "-o", out, "--json", "-q"});
  ASSERT_EQ(cifar.exit_code, 0) << cifar.err;
  EXPECT_EQ(nlohmann::json::parse(cifar.out)["output"], Out("o\xef\xbf\xbd"));
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(out));
  EXPECT_THAT(m.pack_json, HasSubstr("\"d\xef\xbf\xbd.bin\""));

  RunResult merge = RunTool(SHARDPACK_PATH, {"merge", out, "-o", Out("merged")});
  EXPECT_EQ(merge.exit_code, 0) << merge.err;
  RunResult convert =
      RunTool(SHARDPACK_PATH, {"convert", out, "-o", Out("lmdb"), "--format", "lmdb", "-q"});
  EXPECT_EQ(convert.exit_code, 0) << convert.err;

  const std::string root = DemoImages(2, 1, 16, 16);
  ASSERT_FALSE(root.empty());
  fs::rename(root, Out("img\xff"));
  RunResult images = RunTool(SHARDPACK_PATH, {"images", Out("img\xff"), "-o", Out("i"), "-q"});
  EXPECT_EQ(images.exit_code, 0) << images.err;
}

TEST_F(ShardpackTest, ListRootIsUsedOrRefusedNeverIgnored) {
  const std::string root = DemoImages(2, 1, 16, 16);
  ASSERT_FALSE(root.empty());
  std::ofstream(Out("list.txt")) << "class_00/img_0000.JPEG 0\nclass_01/img_0000.JPEG 1\n";
  // ROOT before --list is the list's root, as --root is.
  RunResult positional =
      RunTool(SHARDPACK_PATH, {"images", root, "--list", Out("list.txt"), "-o", Out("a"), "-q"});
  ASSERT_EQ(positional.exit_code, 0) << positional.err;
  EXPECT_EQ(ReadAll(Out("a")).size(), 2u);
  RunResult both = RunTool(SHARDPACK_PATH, {"images", Out("elsewhere"), "--list", Out("list.txt"),
                                            "--root", root, "-o", Out("b"), "-q"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.err, HasSubstr("given twice"));
  RunResult no_list = RunTool(SHARDPACK_PATH, {"images", "--root", root, "-o", Out("c"), "-q"});
  EXPECT_EQ(no_list.exit_code, 2);
  EXPECT_THAT(no_list.err, HasSubstr("--list"));
  RunResult no_root =
      RunTool(SHARDPACK_PATH, {"images", "--list", Out("list.txt"), "-o", Out("d"), "-q"});
  EXPECT_EQ(no_root.exit_code, 2);
  EXPECT_THAT(no_root.err, HasSubstr("give ROOT, or --list FILE --root DIR"));
}

// A list file may be a pipe (`--list <(find ...)`): read to its end. A FIFO
// in place of a CIFAR file or of an image is an error naming it, not a hang.
TEST_F(ShardpackTest, PipesAndFifosAreReadWithABoundOrRefusedNeverHang) {
  const std::string root = DemoImages(2, 1, 16, 16);
  ASSERT_FALSE(root.empty());
  const std::string fifo = Out("list.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const int writer = testing::Spawn(
      {"/bin/sh", "-c",
       "printf 'class_00/img_0000.JPEG 0\\nclass_01/img_0000.JPEG 1\\n' > " + fifo});
  RunResult listed =
      RunTool(SHARDPACK_PATH, {"images", root, "--list", fifo, "-o", Out("a"), "-q"});
  waitpid(writer, nullptr, 0);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(ReadAll(Out("a")).size(), 2u);

  WriteCifar10("data_batch_1.bin", 10);
  const std::string cifar_fifo = (dir_.path() / "cifar" / "test_batch.bin").string();
  ASSERT_EQ(mkfifo(cifar_fifo.c_str(), 0600), 0);
  RunResult cifar = RunTool(SHARDPACK_PATH, {"cifar", cifar_fifo, "-o", Out("c"), "-q"});
  EXPECT_EQ(cifar.exit_code, 1) << cifar.err;
  EXPECT_THAT(cifar.err, HasSubstr("a FIFO, not a regular file"));
  EXPECT_FALSE(fs::exists(Out("c")));
}

// convert of a dataset whose shard is a FIFO: an error, not a hang.
TEST_F(ShardpackTest, ConvertOfAFifoShardIsAnError) {
  WriteCifar10("data_batch_1.bin", 10);
  ASSERT_EQ(RunTool(SHARDPACK_PATH, {"cifar", Out("cifar/data_batch_1.bin"), "-o", Out("ds"), "-q"})
                .exit_code,
            0);
  const std::string shard = Out("ds/shard-00000.shard");
  ASSERT_TRUE(fs::remove(shard));
  ASSERT_EQ(mkfifo(shard.c_str(), 0600), 0);
  for (const char* format : {"shard", "lmdb", "hdf5"}) {
    SCOPED_TRACE(format);
    RunResult r = RunTool(SHARDPACK_PATH, {"convert", Out("ds"), "--format", format, "-o",
                                           Out(std::string("conv-") + format), "-q"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("a FIFO"));
  }
}

}  // namespace
}  // namespace shardpack
