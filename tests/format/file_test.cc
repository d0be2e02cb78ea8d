// The file layer: atomic files appear only when committed; reads past the end
// and missing files give errors that name the file.
#include "shardpack/file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "common/posix_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/shard.h"
#include "tests/testing/shard_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::StatusIs;

std::span<const uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// Every test runs twice: with an O_TMPFILE temporary (no name) and with the
// named fallback of file systems that have none.
class AtomicFileTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { common::atomic_file_tries_tmpfile = GetParam(); }
  void TearDown() override { common::atomic_file_tries_tmpfile = true; }
  testing::TempDir dir;
};
INSTANTIATE_TEST_SUITE_P(Temporaries, AtomicFileTest, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "Unnamed" : "Named"; });

// The names in `dir`, sorted.
std::vector<std::string> NamesIn(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

TEST_P(AtomicFileTest, AppearsOnlyOnCommit) {
  std::string path = dir.Join("out.shard");
  SP_ASSERT_OK_AND_ASSIGN(auto file, AtomicFile::Create(path));
  SP_ASSERT_OK(file->Append(Bytes("hello ")));
  SP_ASSERT_OK(file->Append(Bytes("world")));
  EXPECT_FALSE(fs::exists(path));
  const std::vector<std::string> writing = NamesIn(dir.path());
  if (GetParam()) {
    EXPECT_TRUE(writing.empty());  // no name at all while it is written
  } else {
    ASSERT_EQ(writing.size(), 1u);
    std::string_view base;
    EXPECT_TRUE(common::IsPartialName(writing[0], &base)) << writing[0];
    EXPECT_EQ(base, "out.shard");
  }
  EXPECT_EQ(file->size(), 11u);
  SP_ASSERT_OK(file->Commit());
  EXPECT_EQ(NamesIn(dir.path()), std::vector<std::string>{"out.shard"});
  SP_ASSERT_OK_AND_ASSIGN(std::string contents, ReadSmallFile(path));
  EXPECT_EQ(contents, "hello world");
}

// The old writer opened "<path>.partial" with O_CREAT | O_TRUNC: a symbolic
// link planted there sent the bytes into its target, and a file of the
// user's by that name was truncated.
TEST_P(AtomicFileTest, NeverWritesThroughOrOverAnythingAtATemporaryName) {
  const std::string path = dir.Join("sheet.png");
  const std::string victim = dir.Join("victim.txt");
  std::ofstream(victim) << "the user's";
  fs::create_symlink(victim, path + ".partial");
  std::ofstream(path + ".partial-000000000000") << "also the user's";
  SP_ASSERT_OK(WriteFileAtomically(path, "new bytes"));
  EXPECT_EQ(ReadSmallFile(victim).value_or(""), "the user's");
  EXPECT_TRUE(fs::is_symlink(path + ".partial"));
  EXPECT_EQ(ReadSmallFile(path + ".partial-000000000000").value_or(""), "also the user's");
  EXPECT_EQ(ReadSmallFile(path).value_or(""), "new bytes");
  EXPECT_EQ(NamesIn(dir.path()).size(), 4u);
}

TEST_P(AtomicFileTest, RefuseKeepsAFileAlreadyThere) {
  const std::string path = dir.Join("out.png");
  std::ofstream(path) << "mine";
  EXPECT_THAT(WriteFileAtomically(path, "new", AtomicFile::Existing::kRefuse),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr(path + " already exists")));
  // One that appears while the file is written is kept too.
  const std::string later = dir.Join("later.png");
  SP_ASSERT_OK_AND_ASSIGN(auto file, AtomicFile::Create(later, AtomicFile::Existing::kRefuse));
  SP_ASSERT_OK(file->Append(Bytes("new")));
  std::ofstream(later) << "appeared meanwhile";
  EXPECT_THAT(file->Commit(), StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr(later)));
  EXPECT_EQ(ReadSmallFile(path).value_or(""), "mine");
  EXPECT_EQ(ReadSmallFile(later).value_or(""), "appeared meanwhile");
  EXPECT_EQ(NamesIn(dir.path()), (std::vector<std::string>{"later.png", "out.png"}));
}

TEST(PartialNameTest, FreshNamesAreDistinctAndRecognized) {
  std::set<std::string> names;
  for (int i = 0; i < 1000; ++i) names.insert(common::FreshPartialName("d/x.shard"));
  EXPECT_EQ(names.size(), 1000u);
  std::string_view base;
  const std::string fresh = common::FreshPartialName("m.json");
  EXPECT_TRUE(common::IsPartialName(fresh, &base));
  EXPECT_EQ(base, "m.json");
  EXPECT_TRUE(common::IsPartialName("shard-00001.lmdb.partial", &base));
  EXPECT_EQ(base, "shard-00001.lmdb");
  for (const char* other : {"x.partial-12345", "x.partial-ABCDEF123456", "x.partialx", "x"}) {
    EXPECT_FALSE(common::IsPartialName(other, &base)) << other;
  }
}

TEST_P(AtomicFileTest, AbandonedFileLeavesNothing) {
  std::string path = dir.Join("out.shard");
  {
    SP_ASSERT_OK_AND_ASSIGN(auto file, AtomicFile::Create(path));
    SP_ASSERT_OK(file->Append(Bytes("half a shard")));
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST_P(AtomicFileTest, ReplacesAnExistingFileWhole) {
  std::string path = dir.Join("manifest.json");
  SP_ASSERT_OK(WriteFileAtomically(path, "old contents, longer"));
  SP_ASSERT_OK(WriteFileAtomically(path, "new"));
  SP_ASSERT_OK_AND_ASSIGN(std::string contents, ReadSmallFile(path));
  EXPECT_EQ(contents, "new");
}

TEST_P(AtomicFileTest, UnwritableDirectoryIsAnErrorNamingThePath) {
  EXPECT_THAT(AtomicFile::Create("/nonexistent-dir/x.shard"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent-dir/x.shard")));
}

TEST(FileTest, MissingFileIsNotFound) {
  EXPECT_THAT(OpenPosixFile("/nonexistent/file"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/file")));
  EXPECT_THAT(OpenMappedFile("/nonexistent/file"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/file")));
  EXPECT_THAT(ReadSmallFile("/nonexistent/manifest.json"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("manifest.json")));
}

TEST(FileTest, DirectoryIsNotARegularFile) {
  testing::TempDir dir;
  EXPECT_THAT(OpenPosixFile(dir.path().string()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not a regular file")));
}

TEST(FileTest, PosixMappedAndMemoryFilesReadTheSameBytes) {
  testing::TempDir dir;
  std::string path = dir.Join("data");
  std::vector<uint8_t> data = testing::PatternBytes(3, 10000);
  SP_ASSERT_OK(WriteFileAtomically(path, {reinterpret_cast<const char*>(data.data()), data.size()}));
  SP_ASSERT_OK_AND_ASSIGN(auto posix, OpenPosixFile(path));
  SP_ASSERT_OK_AND_ASSIGN(auto mapped, OpenMappedFile(path));
  auto memory = NewMemoryFile("mem", data);
  EXPECT_EQ(posix->data(), nullptr);
  ASSERT_NE(mapped->data(), nullptr);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), mapped->data()));
  for (const RandomAccessFile* f : {posix.get(), mapped.get(), memory.get()}) {
    EXPECT_EQ(f->size(), data.size());
    std::vector<uint8_t> got(100);
    SP_ASSERT_OK(f->ReadExact(5000, got));
    EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin() + 5000));
    EXPECT_THAT(f->ReadExact(9950, got),
                StatusIs(absl::StatusCode::kDataLoss, HasSubstr("@9950: read of 100 bytes past the end")));
  }
}

TEST(FileTest, ShardWrittenAtomicallyReadsBackThroughEveryFileKind) {
  testing::TempDir dir;
  std::string path = dir.Join("train-00000.shard");
  std::vector<testing::OwnedRecord> records;
  for (int i = 0; i < 50; ++i) records.push_back(testing::JpegLikeRecord(i, 2000 + 37 * i));
  {
    SP_ASSERT_OK_AND_ASSIGN(auto file, AtomicFile::Create(path));
    SP_ASSERT_OK_AND_ASSIGN(auto writer, ShardWriter::Create(file.get(), {.block_size = 16384}));
    for (const auto& r : records) SP_ASSERT_OK(writer->Add(r.record()));
    SP_ASSERT_OK(writer->Finish());
    EXPECT_EQ(file->size(), writer->bytes_written());
    SP_ASSERT_OK(file->Commit());
  }
  SP_ASSERT_OK_AND_ASSIGN(auto posix, OpenPosixFile(path));
  SP_ASSERT_OK_AND_ASSIGN(auto mapped, OpenMappedFile(path));
  for (const RandomAccessFile* f : {posix.get(), mapped.get()}) {
    SP_ASSERT_OK_AND_ASSIGN(auto reader, ShardReader::Open(f));
    for (size_t i = 0; i < records.size(); ++i) {
      SP_ASSERT_OK_AND_ASSIGN(Record r, reader->ReadRecord(i));
      EXPECT_TRUE(SameContents(r, records[i].record())) << i;
    }
    EXPECT_TRUE(VerifyShard(*f).ok());
  }
}

}  // namespace
}  // namespace shardpack
