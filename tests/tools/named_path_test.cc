// What a path given to the reader (ReaderOptions::path) and to sharddump
// (PATH) may name, and that both answer the same: every kind of path a user
// can hand them, opened by Reader::Open and by `sharddump info`, each
// accepted by both or refused by both with an error naming the path.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "dataset/open_path.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/reader.h"
#include "tests/backends/backend_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr int kRecords = 12;

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// What one tool made of a path: OK, or its error message.
struct Outcome {
  bool ok = false;
  std::string error;
};

Outcome OpenWithReader(const std::string& path) {
  ReaderOptions o;
  o.path = path;
  o.batch_size = 4;
  o.rank = 0;
  o.world_size = 1;
  o.threads = 1;
  o.ring_slots = 2;
  absl::StatusOr<std::unique_ptr<Reader>> reader = Reader::Open(o);
  if (reader.ok()) return {true, ""};
  return {false, std::string(reader.status().message())};
}

Outcome OpenWithSharddump(const std::string& path) {
  testing::RunResult r = testing::Run({SHARDDUMP_PATH, "info", path});
  if (r.exit_code == 0) return {true, ""};
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  return {false, r.err};
}

class NamedPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<testing::OwnedRecord> records;
    for (int i = 0; i < kRecords; ++i) records.push_back(testing::RawRecord(i, 4, 4, 3));
    const Schema schema = testing::RawSchema(4, 4, 3, Layout::kHWC, 1);
    for (Backend b : kBackends) {
      const std::string dir = Dataset(b);
      fs::create_directories(dir);
      auto m = testing::WriteDataset(dir, b, records, schema);
      ASSERT_TRUE(m.ok()) << m.status();
      ASSERT_EQ(m->shards.size(), 1u);
      shard_[static_cast<int>(b)] = (fs::path(dir) / m->shards[0].path).string();
    }
  }

  std::string Dataset(Backend b) const { return tmp_.Join("ds-" + std::string(BackendName(b))); }
  const std::string& Shard(Backend b) const { return shard_[static_cast<int>(b)]; }
  std::string Path(const std::string& name) const { return tmp_.Join(name); }

  // Both open `path`.
  void ExpectBothOpen(const std::string& path) {
    SCOPED_TRACE(path);
    Outcome reader = OpenWithReader(path);
    EXPECT_TRUE(reader.ok) << reader.error;
    Outcome dump = OpenWithSharddump(path);
    EXPECT_TRUE(dump.ok) << dump.error;
  }

  // Both refuse `path` with an error naming it and holding `needle`.
  void ExpectBothRefuse(const std::string& path, const std::string& needle) {
    SCOPED_TRACE(path);
    for (const Outcome& o : {OpenWithReader(path), OpenWithSharddump(path)}) {
      EXPECT_FALSE(o.ok);
      EXPECT_THAT(o.error, HasSubstr(path));
      EXPECT_THAT(o.error, HasSubstr(needle));
    }
  }

  testing::TempDir tmp_;
  std::string shard_[3];
};

TEST_F(NamedPathTest, DatasetDirectoryOfEveryBackend) {
  for (Backend b : kBackends) ExpectBothOpen(Dataset(b));
}

TEST_F(NamedPathTest, ManifestFileNamesItsDataset) {
  for (Backend b : kBackends) ExpectBothOpen(Dataset(b) + "/manifest.json");
}

TEST_F(NamedPathTest, LoneShardOfEveryBackend) {
  for (Backend b : kBackends) ExpectBothOpen(Shard(b));
}

// The magic decides, not the name: an HDF5 shard named `.shard`, a `.shard`
// named `.h5`, an LMDB shard named `data.mdb` (as an LMDB environment
// opened with MDB_NOSUBDIR names its file) all open as what they are.
TEST_F(NamedPathTest, TheMagicDecidesNotTheExtension) {
  const std::string hdf5_named_shard = Path("hdf5.shard");
  fs::copy_file(Shard(Backend::kHdf5), hdf5_named_shard);
  ExpectBothOpen(hdf5_named_shard);
  const std::string shard_named_h5 = Path("shard.h5");
  fs::copy_file(Shard(Backend::kShard), shard_named_h5);
  ExpectBothOpen(shard_named_h5);
  fs::create_directories(Path("env"));
  const std::string data_mdb = Path("env/data.mdb");
  fs::copy_file(Shard(Backend::kLmdb), data_mdb);
  ExpectBothOpen(data_mdb);
}

TEST_F(NamedPathTest, SymlinksAreFollowed) {
  fs::create_directory_symlink(Dataset(Backend::kShard), Path("link-ds"));
  ExpectBothOpen(Path("link-ds"));
  fs::create_symlink(Shard(Backend::kLmdb), Path("link.mdb"));
  ExpectBothOpen(Path("link.mdb"));
  fs::create_symlink(Path("nothing-here"), Path("dangling"));
  ExpectBothRefuse(Path("dangling"), "no such file or directory");
}

TEST_F(NamedPathTest, MissingPath) {
  ExpectBothRefuse(Path("no/such/path"), "no such file or directory");
}

// A path that looks like a URL but is taken as a local one (a scheme in
// capitals, another scheme) or refused as a URL is named without its
// password or signature, by the library and the tool alike.
TEST_F(NamedPathTest, APathLikeAUrlIsNamedWithoutItsSecret) {
  for (const std::string path :
       {"HTTPS://user:SECRET@127.0.0.1:1/ds/", "gs://user:SECRET@bucket/ds/?sig=SECRET",
        "s3://bucket/ds/?X-Amz-Signature=SECRET", "https://user:SECRET@127.0.0.1:1/ds/",
        "https://127.0.0.1:1/ds/#SECRET"}) {
    SCOPED_TRACE(path);
    for (const Outcome& o : {OpenWithReader(path), OpenWithSharddump(path)}) {
      EXPECT_FALSE(o.ok);
      EXPECT_THAT(o.error, ::testing::Not(HasSubstr("SECRET")));
      EXPECT_THAT(o.error, HasSubstr("***"));
    }
  }
}

TEST_F(NamedPathTest, DirectoryWithoutManifest) {
  fs::create_directories(Path("bare"));
  ExpectBothRefuse(Path("bare"), "not a dataset (no manifest.json)");
}

// A folder holding an LMDB environment (data.mdb, made without
// MDB_NOSUBDIR) but no manifest is not a dataset of ours: said so.
TEST_F(NamedPathTest, LmdbEnvironmentDirectory) {
  fs::create_directories(Path("env"));
  fs::copy_file(Shard(Backend::kLmdb), Path("env/data.mdb"));
  ExpectBothRefuse(Path("env"), "an LMDB environment directory without a shardpack manifest");
}

TEST_F(NamedPathTest, NonRegularFilesAreRefusedWithoutBlocking) {
  ASSERT_EQ(mkfifo(Path("fifo.shard").c_str(), 0600), 0);
  ExpectBothRefuse(Path("fifo.shard"), "a FIFO, not a regular file");
  ExpectBothRefuse("/dev/null", "not a regular file");
}

TEST_F(NamedPathTest, EmptyFile) {
  WriteFile(Path("empty.shard"), "");
  ExpectBothRefuse(Path("empty.shard"), "empty file");
}

// No magic of any backend, whatever the name says.
TEST_F(NamedPathTest, FileWithTheWrongMagic) {
  for (const char* name : {"notes.txt", "wrong.shard", "wrong.h5", "wrong.mdb"}) {
    WriteFile(Path(name), "hello, not a shard, but long enough to hold any magic\n");
    ExpectBothRefuse(Path(name), "not a dataset or shard");
  }
}

// A file cut short inside the shard magic is a damaged shard, and says so.
TEST_F(NamedPathTest, FileCutInsideTheShardMagic) {
  std::ifstream in(Shard(Backend::kShard), std::ios::binary);
  std::string head(5, '\0');
  in.read(head.data(), 5);
  WriteFile(Path("cut.shard"), head);
  ExpectBothRefuse(Path("cut.shard"), "cut.shard @5: truncated inside the magic");
}

// The one opener both use: what it resolved, and codes that mean something.
TEST_F(NamedPathTest, OpenerSaysWhatThePathIs) {
  for (Backend b : kBackends) {
    SP_ASSERT_OK_AND_ASSIGN(dataset::NamedPath ds, dataset::OpenNamedPath(Dataset(b)));
    EXPECT_EQ(ds.kind, dataset::PathKind::kDataset);
    EXPECT_EQ(ds.backend(), b);
    EXPECT_EQ(ds.shard_paths, std::vector<std::string>{Shard(b)});
    EXPECT_TRUE(ds.checksummed());
    SP_ASSERT_OK_AND_ASSIGN(dataset::NamedPath lone, dataset::OpenNamedPath(Shard(b)));
    EXPECT_EQ(lone.kind, dataset::PathKind::kLoneShard);
    EXPECT_EQ(lone.backend(), b);
    EXPECT_EQ(lone.directory, Dataset(b));
    EXPECT_EQ(lone.shard_paths, std::vector<std::string>{Shard(b)});
    // A lone LMDB or HDF5 file is checked against its entry beside it.
    EXPECT_EQ(lone.checksummed(), b != Backend::kShard);
    EXPECT_EQ(lone.schema_known(), b != Backend::kShard);
  }
  fs::create_directories(Path("env"));
  fs::copy_file(Shard(Backend::kLmdb), Path("env/data.mdb"));
  fs::create_directories(Path("bare"));
  ASSERT_EQ(mkfifo(Path("fifo").c_str(), 0600), 0);
  WriteFile(Path("empty"), "");
  WriteFile(Path("text.h5"), "not an HDF5 file, whatever its name says");
  using Code = absl::StatusCode;
  for (const auto& [name, code] : std::vector<std::pair<std::string, Code>>{
           {"missing", Code::kNotFound},        {"bare", Code::kNotFound},
           {"env", Code::kUnimplemented},       {"fifo", Code::kFailedPrecondition},
           {"empty", Code::kInvalidArgument},   {"text.h5", Code::kInvalidArgument}}) {
    EXPECT_THAT(dataset::OpenNamedPath(Path(name)),
                testing::StatusIs(code, HasSubstr(Path(name))))
        << name;
  }
}

}  // namespace
}  // namespace shardpack
