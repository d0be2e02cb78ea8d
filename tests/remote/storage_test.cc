// remote::Storage, the value that says which cache a path is read through:
// it opens only what it was asked to (no process-wide list of datasets, no
// hook in common/), local paths are plain files, and a cache folder spelled
// as a URL is refused when the storage is made.
#include "remote/storage.h"

#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack::remote {
namespace {

using ::shardpack::testing::StatusIs;
using ::testing::HasSubstr;

TEST(Storage, ACacheFolderSpelledAsAUrlIsRefused) {
  EXPECT_THAT(Storage::Make("s3://bucket/cache", 1 << 20),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a URL")));
}

TEST(Storage, AUrlOfNoDatasetItOpenedIsNotFound) {
  SP_ASSERT_OK_AND_ASSIGN(std::shared_ptr<Storage> storage, Storage::Make());
  const std::string url = "http://127.0.0.1:1/ds/train-00000.shard";
  EXPECT_THAT(storage->OpenFile(url),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no dataset is open at this URL")));
  EXPECT_THAT(storage->LocalPath(url), StatusIs(absl::StatusCode::kNotFound, ::testing::_));
  std::vector<std::string> urls = {url};
  EXPECT_THAT(storage->OpenFiles(urls), StatusIs(absl::StatusCode::kNotFound, ::testing::_));
  EXPECT_TRUE(storage->datasets().empty());
}

// common/ opens local files only: a URL given to it is a path like any other.
TEST(Storage, CommonOpensNoUrl) {
  EXPECT_THAT(OpenPosixFile("s3://bucket/ds/manifest.json"),
              StatusIs(absl::StatusCode::kNotFound, ::testing::_));
}

TEST(Storage, LocalPathsAreTheirFiles) {
  testing::TempDir dir;
  const std::string path = dir.Join("f");
  std::ofstream(path) << "bytes";
  SP_ASSERT_OK_AND_ASSIGN(std::shared_ptr<Storage> storage, Storage::Make(dir.Join("cache"), 0));
  SP_ASSERT_OK_AND_ASSIGN(std::string local, storage->LocalPath(path));
  EXPECT_EQ(local, path);
  for (bool mmap : {false, true}) {
    SP_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RandomAccessFile> file, storage->OpenFile(path, mmap));
    EXPECT_EQ(file->size(), 5u);
  }
  std::vector<std::string> paths = {path, path};
  SP_ASSERT_OK_AND_ASSIGN(auto files, storage->OpenFiles(paths));
  EXPECT_EQ(files.size(), 2u);
}

}  // namespace
}  // namespace shardpack::remote
