// shardpack --format lmdb|hdf5, shardpack convert and sharddump on every
// backend, run as the built binaries on datasets made here.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "backends/store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "shardpack/dataset.h"
#include "tests/backends/backend_fixtures.h"
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
using ::shardpack::testing::ExpectOneLineFailure;
using ::shardpack::testing::OwnedRecord;
using ::shardpack::testing::RunResult;
using ::shardpack::testing::RunTool;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using Json = nlohmann::json;

class BackendCliTest : public ::testing::Test {
 protected:
  // A CIFAR-10 file of n records (testing::Cifar10Bytes).
  std::string WriteCifar10(int n) {
    std::string path = tmp_.Join("data_batch_1.bin");
    std::ofstream(path, std::ios::binary) << testing::Cifar10Bytes(n);
    return path;
  }

  // A .shard dataset of JPEG-like records with keys, two labels and extra
  // bytes, written by the library (the packer makes no extra bytes).
  std::string WriteJpegLikeDataset(const std::string& name, int n) {
    fs::create_directories(tmp_.path() / name);
    std::vector<OwnedRecord> records;
    for (int i = 0; i < n; ++i) records.push_back(testing::JpegLikeRecord(i, 200 + 31 * i));
    auto m = testing::WriteDataset(tmp_.Join(name), Backend::kShard, records,
                                   testing::JpegSchema(), 8);
    EXPECT_TRUE(m.ok()) << m.status();
    return tmp_.Join(name);
  }

  std::string Out(const std::string& name) const { return tmp_.Join(name); }
  testing::TempDir tmp_;
};

// Every record of a dataset, byte for byte, as one comparable value each.
std::vector<std::string> RecordBytes(const std::string& dir) {
  auto records = testing::ReadDataset(dir);
  EXPECT_TRUE(records.ok()) << records.status();
  std::vector<std::string> out;
  if (!records.ok()) return out;
  for (const OwnedRecord& r : *records) {
    std::string s = absl::StrCat(r.key, "|", r.image.height, "x", r.image.width, "x",
                                 int{r.image.channels}, "|", int(r.image.encoding), "|",
                                 int(r.image.layout), "|");
    for (int64_t l : r.labels) absl::StrAppend(&s, l, ",");
    s.append(r.payload.begin(), r.payload.end());
    s += "|";
    s.append(r.extra.begin(), r.extra.end());
    out.push_back(std::move(s));
  }
  return out;
}

TEST_F(BackendCliTest, ConvertChainShardLmdbHdf5ShardIsByteForByte) {
  for (const std::string& input :
       {WriteJpegLikeDataset("jpeg", 30), [&] {
          std::string cifar = WriteCifar10(40);
          EXPECT_EQ(RunTool(SHARDPACK_PATH,
                            {"cifar", cifar, "-o", Out("cifar"), "--shard-records", "15", "-q"})
                        .exit_code,
                    0);
          return Out("cifar");
        }()}) {
    SCOPED_TRACE(input);
    std::vector<std::string> original = RecordBytes(input);
    ASSERT_FALSE(original.empty());
    std::string lmdb = input + "-lmdb", hdf5 = input + "-h5", back = input + "-back";
    ASSERT_EQ(
        RunTool(SHARDPACK_PATH, {"convert", input, "-o", lmdb, "--format", "lmdb", "-q"}).exit_code,
        0);
    ASSERT_EQ(
        RunTool(SHARDPACK_PATH, {"convert", lmdb, "-o", hdf5, "--format", "hdf5", "-q"}).exit_code,
        0);
    ASSERT_EQ(
        RunTool(SHARDPACK_PATH, {"convert", hdf5, "-o", back, "--format", "shard", "-q"}).exit_code,
        0);
    EXPECT_EQ(RecordBytes(lmdb), original);
    EXPECT_EQ(RecordBytes(hdf5), original);
    EXPECT_EQ(RecordBytes(back), original);
    // Same records, same shard boundaries, same block size: the same files.
    SP_ASSERT_OK_AND_ASSIGN(Manifest a, ReadManifest(input));
    SP_ASSERT_OK_AND_ASSIGN(Manifest b, ReadManifest(back));
    ASSERT_EQ(a.shards.size(), b.shards.size());
    EXPECT_EQ(a.schema, b.schema);
    for (size_t k = 0; k < a.shards.size(); ++k) {
      EXPECT_EQ(a.shards[k].crc32c, b.shards[k].crc32c);
      EXPECT_EQ(FileBytes(fs::path(input) / a.shards[k].path),
                FileBytes(fs::path(back) / b.shards[k].path));
    }
    SP_ASSERT_OK_AND_ASSIGN(Manifest h, ReadManifest(hdf5));
    EXPECT_EQ(h.backend, Backend::kHdf5);
    EXPECT_EQ(Json::parse(h.pack_json)["converted_from"][0]["backend"], "lmdb");
  }
}

TEST_F(BackendCliTest, PackWithFormatGivesTheSameRecordsAsShard) {
  std::string cifar = WriteCifar10(25);
  ASSERT_EQ(
      RunTool(SHARDPACK_PATH, {"cifar", cifar, "-o", Out("s"), "--seed", "3", "-q"}).exit_code, 0);
  for (std::string format : {"lmdb", "hdf5"}) {
    RunResult r = RunTool(SHARDPACK_PATH, {"cifar", cifar, "-o", Out(format), "--seed", "3",
                                           "--format", format, "--shard-records", "10", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(Out(format)));
    EXPECT_EQ(std::string(BackendName(m.backend)), format);
    ASSERT_EQ(m.shards.size(), 3u);
    EXPECT_EQ(m.shards[0].path, format == "lmdb" ? "shard-00000.lmdb" : "shard-00000.h5");
    EXPECT_EQ(RecordBytes(Out(format)), RecordBytes(Out("s")));
    EXPECT_FALSE(fs::exists(Out(format + ".partial")));
  }
  // Flags that do not go together: a usage error (exit 2), nothing written.
  RunResult usage = RunTool(SHARDPACK_PATH, {"cifar", cifar, "-o", Out("z"), "--format", "lmdb",
                                             "--compress", "zstd", "-q"});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_THAT(usage.err, StartsWith("shardpack: --compress applies to --format shard only"));
  EXPECT_FALSE(fs::exists(Out("z")));
}

TEST_F(BackendCliTest, MergeKeepsOrConvertsTheBackend) {
  std::string cifar = WriteCifar10(20);
  for (int p = 1; p <= 2; ++p) {
    ASSERT_EQ(RunTool(SHARDPACK_PATH, {"cifar", cifar, "-o", Out(absl::StrCat("p", p)), "--format",
                                       "lmdb", "--part", absl::StrCat(p, "/2"), "-q"})
                  .exit_code,
              0);
  }
  ASSERT_EQ(RunTool(SHARDPACK_PATH, {"cifar", cifar, "-o", Out("whole"), "-q"}).exit_code, 0);
  ASSERT_EQ(RunTool(SHARDPACK_PATH, {"merge", Out("p1"), Out("p2"), "-o", Out("m")}).exit_code, 0);
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(Out("m")));
  EXPECT_EQ(m.backend, Backend::kLmdb);
  EXPECT_EQ(m.shards[1].path, "shard-00001.lmdb");
  EXPECT_EQ(RecordBytes(Out("m")), RecordBytes(Out("whole")));
  ASSERT_EQ(
      RunTool(SHARDPACK_PATH, {"merge", Out("p1"), Out("p2"), "-o", Out("mh"), "--format", "hdf5"})
          .exit_code,
      0);
  SP_ASSERT_OK_AND_ASSIGN(Manifest mh, ReadManifest(Out("mh")));
  EXPECT_EQ(mh.backend, Backend::kHdf5);
  EXPECT_EQ(RecordBytes(Out("mh")), RecordBytes(Out("whole")));
}

TEST_F(BackendCliTest, SharddumpInfoLsVerifyExtractOnEveryBackend) {
  std::string jpeg = WriteJpegLikeDataset("jpeg", 20);
  for (std::string format : {"lmdb", "hdf5"}) {
    SCOPED_TRACE(format);
    std::string ds = Out(format);
    ASSERT_EQ(
        RunTool(SHARDPACK_PATH, {"convert", jpeg, "-o", ds, "--format", format, "-q"}).exit_code,
        0);
    RunResult info = RunTool(SHARDDUMP_PATH, {"info", "--json", ds});
    ASSERT_EQ(info.exit_code, 0) << info.err;
    Json j = Json::parse(info.out);
    EXPECT_EQ(j["backend"], format);
    EXPECT_EQ(j["records"], 20);
    EXPECT_EQ(j["shards"].size(), 3u);

    RunResult ls = RunTool(SHARDDUMP_PATH, {"ls", "--range", "9:11", ds});
    ASSERT_EQ(ls.exit_code, 0) << ls.err;
    std::vector<std::string> lines = absl::StrSplit(ls.out, '\n', absl::SkipEmpty());
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_THAT(lines[0], StartsWith("9\tclass_0/img_9.JPEG\t"));

    RunResult verify = RunTool(SHARDDUMP_PATH, {"verify", ds});
    EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;

    RunResult extract =
        RunTool(SHARDDUMP_PATH, {"extract", "--range", "3:4", "-o", Out(format + "-x"), ds});
    ASSERT_EQ(extract.exit_code, 0) << extract.err;
    std::vector<std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(Out(format + "-x"))) {
      if (e.is_regular_file() && e.path().filename() != "labels.tsv") {
        files.push_back(e.path().string());
      }
    }
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(FileBytes(files[0]).size(), 200u + 31 * 3);

    // A flipped byte: the file's CRC-32C no longer matches the manifest's.
    SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(ds));
    fs::path shard = fs::path(ds) / m.shards[1].path;
    std::string bytes = FileBytes(shard);
    bytes[bytes.size() / 2] ^= 0x40;
    std::ofstream(shard, std::ios::binary | std::ios::trunc) << bytes;
    RunResult bad = RunTool(SHARDDUMP_PATH, {"verify", ds});
    EXPECT_EQ(bad.exit_code, 1) << bad.out;
    EXPECT_THAT(bad.out + bad.err, HasSubstr(shard.string() + ": CRC-32C of the whole file"));
  }
}

// verify checks every LMDB and HDF5 record against the schema in its one
// scan: a manifest whose schema names fewer classes than the records use
// makes it name the first record that disagrees.
TEST_F(BackendCliTest, VerifyChecksBackendRecordsAgainstTheSchema) {
  std::string jpeg = WriteJpegLikeDataset("jpeg", 20);
  for (std::string format : {"lmdb", "hdf5"}) {
    SCOPED_TRACE(format);
    std::string ds = Out(format);
    ASSERT_EQ(
        RunTool(SHARDPACK_PATH, {"convert", jpeg, "-o", ds, "--format", format, "-q"}).exit_code,
        0);
    SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(ds));
    m.schema.labels[0].classes = {"x", "y"};  // the records' labels are 0..2
    SP_ASSERT_OK(WriteManifest(ds, m));
    RunResult r = RunTool(SHARDDUMP_PATH, {"verify", "--json", ds});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    Json doc = Json::parse(r.out);
    ASSERT_FALSE(doc["problems"].empty()) << r.out;
    EXPECT_THAT(doc["problems"][0]["message"].get<std::string>(),
                HasSubstr("record 2: disagrees with the schema: label 'label' is 2, outside its 2 "
                          "classes (0..1)"));
    EXPECT_EQ(doc["problems"][0]["record"], 2);
  }
}

// A plain h5py file (no manifest, not made by us) is a dataset to sharddump
// info and to shardpack convert.
TEST_F(BackendCliTest, PlainH5pyFileInSharddumpInfoAndConvert) {
  const char* python = "/usr/bin/python3";
  if (access(python, X_OK) != 0 || testing::Run({python, "-c", "import h5py"}).exit_code != 0) {
    GTEST_SKIP() << python << " cannot import h5py (scripts/setup installs python3-h5py)";
  }
  std::string path = Out("plain.h5");
  RunResult w = testing::Run({python, "-c", R"(
import h5py, numpy as np, sys
with h5py.File(sys.argv[1], "w") as f:
    f["images"] = (np.arange(12 * 32 * 32 * 3) % 253).astype(np.uint8).reshape(12, 32, 32, 3)
    f["labels"] = np.arange(12) % 4
)", path});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  RunResult info = RunTool(SHARDDUMP_PATH, {"info", "--json", path});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  Json j = Json::parse(info.out);
  EXPECT_EQ(j["backend"], "hdf5");
  EXPECT_EQ(j["records"], 12);
  EXPECT_EQ(j["schema"]["height"], 32);
  RunResult text = RunTool(SHARDDUMP_PATH, {"info", path});
  EXPECT_THAT(text.out, HasSubstr("raw/hwc 32x32x3"));

  ASSERT_EQ(
      RunTool(SHARDPACK_PATH, {"convert", path, "-o", Out("from-plain"), "--format", "shard", "-q"})
          .exit_code,
      0);
  auto records = testing::ReadDataset(Out("from-plain"));
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 12u);
  EXPECT_EQ((*records)[5].labels[0], 1);
  EXPECT_EQ((*records)[5].payload[0], (5 * 3072) % 253);
}

TEST_F(BackendCliTest, BadShardFilesGetOneLineNamingThePath) {
  std::string jpeg = WriteJpegLikeDataset("jpeg", 20);
  ASSERT_EQ(RunTool(SHARDPACK_PATH, {"convert", jpeg, "-o", Out("h"), "--format", "hdf5", "-q"})
                .exit_code,
            0);
  ASSERT_EQ(RunTool(SHARDPACK_PATH, {"convert", jpeg, "-o", Out("l"), "--format", "lmdb", "-q"})
                .exit_code,
            0);
  for (std::string shard : {Out("h/shard-00000.h5"), Out("l/shard-00000.lmdb")}) {
    fs::resize_file(shard, fs::file_size(shard) / 2);
    ExpectOneLineFailure(RunTool(SHARDDUMP_PATH, {"info", shard}), "sharddump", shard);
    ExpectOneLineFailure(RunTool(SHARDDUMP_PATH, {"ls", fs::path(shard).parent_path().string()}),
                         "sharddump", shard);
  }
  std::string junk = Out("junk.h5");
  std::ofstream(junk) << "\x89HDF\r\n\x1a\n" << std::string(100, 'x');
  RunResult r = RunTool(SHARDDUMP_PATH, {"info", junk});
  ExpectOneLineFailure(r, "sharddump", junk);
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("HDF5-DIAG")));
}

// The CRC gate in sharddump: a shard grown by one byte, and a manifest whose
// CRC-32C is wrong, are named with both values; the shard never reaches
// liblmdb or libhdf5.
TEST_F(BackendCliTest, SharddumpNamesASizeOrCrcThatDisagreesWithTheManifest) {
  std::string jpeg = WriteJpegLikeDataset("jpeg", 12);
  for (const char* format : {"lmdb", "hdf5"}) {
    const std::string out = Out(format);
    ASSERT_EQ(
        RunTool(SHARDPACK_PATH, {"convert", jpeg, "-o", out, "--format", format, "-q"}).exit_code,
        0);
    auto m = ReadManifest(out);
    ASSERT_TRUE(m.ok()) << m.status();
    const std::string shard = (fs::path(out) / m->shards[0].path).string();
    std::ofstream(shard, std::ios::binary | std::ios::app) << "x";
    RunResult r = RunTool(SHARDDUMP_PATH, {"verify", out});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.out, HasSubstr(absl::StrCat(shard, ": ", m->shards[0].bytes + 1,
                                              " bytes, the manifest says ", m->shards[0].bytes)));
    ExpectOneLineFailure(RunTool(SHARDDUMP_PATH, {"ls", out}), "sharddump",
                         "bytes, the manifest says");
    fs::resize_file(shard, m->shards[0].bytes);
    Manifest wrong = *m;
    wrong.shards[0].crc32c ^= 1;
    std::ofstream(fs::path(out) / kManifestFileName, std::ios::trunc) << SerializeManifest(wrong);
    r = RunTool(SHARDDUMP_PATH, {"verify", out});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.out, HasSubstr(absl::StrFormat("%s: CRC-32C of the whole file is %08x, the "
                                                 "manifest says %08x",
                                                 shard, m->shards[0].crc32c, wrong.shards[0].crc32c)));
    ExpectOneLineFailure(RunTool(SHARDDUMP_PATH, {"info", out}), "sharddump",
                         "CRC-32C of the whole file");
    ExpectOneLineFailure(RunTool(SHARDDUMP_PATH, {"extract", out, "-o", Out("x"), "--index", "0"}),
                         "sharddump", "CRC-32C of the whole file");
  }
}

}  // namespace
}  // namespace shardpack
