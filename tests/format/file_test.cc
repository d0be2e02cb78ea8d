// The file layer: atomic files appear only when committed; reads past the end
// and missing files give errors that name the file.
#include "shardpack/file.h"

#include <filesystem>
#include <string>

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

TEST(AtomicFileTest, AppearsOnlyOnCommit) {
  testing::TempDir dir;
  std::string path = dir.Join("out.shard");
  SP_ASSERT_OK_AND_ASSIGN(auto file, AtomicFile::Create(path));
  SP_ASSERT_OK(file->Append(Bytes("hello ")));
  SP_ASSERT_OK(file->Append(Bytes("world")));
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::exists(path + ".partial"));
  EXPECT_EQ(file->size(), 11u);
  SP_ASSERT_OK(file->Commit());
  EXPECT_FALSE(fs::exists(path + ".partial"));
  SP_ASSERT_OK_AND_ASSIGN(std::string contents, ReadSmallFile(path));
  EXPECT_EQ(contents, "hello world");
}

TEST(AtomicFileTest, AbandonedFileLeavesNothing) {
  testing::TempDir dir;
  std::string path = dir.Join("out.shard");
  {
    SP_ASSERT_OK_AND_ASSIGN(auto file, AtomicFile::Create(path));
    SP_ASSERT_OK(file->Append(Bytes("half a shard")));
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(AtomicFileTest, ReplacesAnExistingFileWhole) {
  testing::TempDir dir;
  std::string path = dir.Join("manifest.json");
  SP_ASSERT_OK(WriteFileAtomically(path, "old contents, longer"));
  SP_ASSERT_OK(WriteFileAtomically(path, "new"));
  SP_ASSERT_OK_AND_ASSIGN(std::string contents, ReadSmallFile(path));
  EXPECT_EQ(contents, "new");
}

TEST(AtomicFileTest, UnwritableDirectoryIsAnErrorNamingThePath) {
  EXPECT_THAT(AtomicFile::Create("/nonexistent-dir/x.shard"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent-dir/x.shard.partial")));
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
