// The output folder's deletion-safety rules (writer/output_dir.h),
// called directly: what it refuses to replace or clear, what it takes over,
// and that a refusal leaves every file where it was.
#include "writer/output_dir.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "common/posix_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/dataset.h"
#include "tests/testing/file_snapshot.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack::writer {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::FileBytes;
using testing::Snapshot;
using testing::StatusIs;

// A manifest of one (empty) shard, shard-00000.shard, with `identity`.
Manifest OneShard(const PackIdentity& identity = {}) {
  Manifest m;
  m.shards = {{"shard-00000.shard", 0, 4, 0}};
  m.pack_json = identity.ToJson();
  return m;
}

PackIdentity Identity(uint64_t part) {
  PackIdentity p;
  p.tool = "shardpack test";
  p.seed = 7;
  p.part = PackPart{part, 2};
  p.input = PackInput{10, 100, "crc32c:00000000"};
  return p;
}

class OutputDirTest : public ::testing::Test {
 protected:
  // A dataset as shardpack writes it, at `name`.
  std::string Dataset(const std::string& name, const PackIdentity& identity = {}) {
    const std::string dir = Out(name);
    fs::create_directories(dir);
    std::ofstream(dir + "/shard-00000.shard") << "data";
    std::ofstream(dir + "/skipped.tsv") << "path\treason\n";
    EXPECT_TRUE(WriteManifest(dir, OneShard(identity)).ok());
    return dir;
  }

  // Creates `path` (staging, locked), writes a shard, publishes it.
  absl::Status PackInto(const std::string& path, bool overwrite,
                        const PackIdentity* identity = nullptr) {
    auto out = OutputDir::Create(path, overwrite, identity);
    if (!out.ok()) return out.status();
    std::ofstream((*out)->staging() + "/shard-00000.shard") << "new!";
    return (*out)->Publish(OneShard(identity ? *identity : PackIdentity()));
  }

  std::string Out(const std::string& name) const { return dir_.Join(name); }

  testing::TempDir dir_;
};

TEST_F(OutputDirTest, OursIsAnEmptyFolderOrADatasetHoldingOnlyItsFiles) {
  fs::create_directories(Out("empty"));
  SP_EXPECT_OK(CheckOurDataset(Out("empty")));
  const std::string ds = Dataset("ds");
  std::ofstream(ds + "/shard-00000.shard-lock") << "";           // an LMDB reader's
  std::ofstream(ds + "/manifest.json.partial-0123456789ab") << "";  // a temporary of ours
  SP_EXPECT_OK(CheckOurDataset(ds));
}

TEST_F(OutputDirTest, AnythingElseIsNotOursAndSaysWhy) {
  const std::string ds = Dataset("ds");
  std::ofstream(ds + "/notes.txt") << "mine";
  EXPECT_THAT(CheckOurDataset(ds), StatusIs(absl::StatusCode::kFailedPrecondition,
                                            HasSubstr(ds + " holds notes.txt, which shardpack "
                                                           "did not write")));
  const std::string sub = Dataset("sub");
  fs::create_directories(sub + "/skipped.tsv.partial");  // a folder in the place of a file
  EXPECT_THAT(CheckOurDataset(sub), StatusIs(absl::StatusCode::kFailedPrecondition,
                                             HasSubstr("which shardpack did not write")));
  fs::create_directories(Out("folder"));
  std::ofstream(Out("folder/photo.jpg")) << "";
  EXPECT_THAT(CheckOurDataset(Out("folder")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("holds no manifest.json: it is not a dataset")));
  fs::create_directories(Out("foreign"));
  std::ofstream(Out("foreign/manifest.json")) << "{\"name\": \"someone else's\"}";
  EXPECT_THAT(CheckOurDataset(Out("foreign")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("holds a manifest.json that is not one of shardpack's")));
  fs::create_directory_symlink(ds, Out("link"));
  EXPECT_THAT(CheckOurDataset(Out("link")),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("is a symbolic link")));
  std::ofstream(Out("file")) << "x";
  EXPECT_THAT(CheckOurDataset(Out("file")),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("is not a directory")));
}

TEST_F(OutputDirTest, CreateRefusesWhatIsNotOursAndDeletesNothing) {
  const std::string ds = Dataset("ds");
  EXPECT_THAT(PackInto(ds, /*overwrite=*/false),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("use --overwrite")));
  std::ofstream(ds + "/notes.txt") << "mine";
  const auto before = Snapshot(dir_.path());
  EXPECT_THAT(PackInto(ds, /*overwrite=*/true),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("holds notes.txt, which shardpack did not write; --overwrite "
                                 "replaces only a dataset shardpack wrote or an empty folder, "
                                 "so nothing was deleted")));
  EXPECT_EQ(Snapshot(dir_.path()), before);
}

TEST_F(OutputDirTest, OverwriteReplacesOurDatasetFileByFile) {
  const std::string ds = Dataset("ds");
  SP_ASSERT_OK(PackInto(ds, /*overwrite=*/true));
  EXPECT_EQ(FileBytes(ds + "/shard-00000.shard"), "new!");
  EXPECT_TRUE(fs::exists(ds + "/manifest.json"));
  EXPECT_FALSE(fs::exists(ds + "/skipped.tsv"));  // the old dataset's, removed
  EXPECT_FALSE(fs::exists(ds + "/" + kStagingMarker));
  EXPECT_FALSE(fs::exists(ds + ".partial"));
}

TEST_F(OutputDirTest, AStagingFolderNotOursIsRefusedAndLeftAsItIs) {
  fs::create_directories(Out("ds.partial"));
  std::ofstream(Out("ds.partial/work.txt")) << "mine";
  const auto before = Snapshot(dir_.path());
  EXPECT_THAT(PackInto(Out("ds"), false),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr(Out("ds.partial") + " exists and was not made by shardpack")));
  EXPECT_EQ(Snapshot(dir_.path()), before);
  fs::remove_all(Out("ds.partial"));
  std::ofstream(Out("ds.partial")) << "a file";
  EXPECT_THAT(PackInto(Out("ds"), false),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("is not a directory shardpack made: nothing was deleted")));
  EXPECT_EQ(FileBytes(Out("ds.partial")), "a file");
}

TEST_F(OutputDirTest, AnAbandonedStagingFolderOfOursIsClearedAndTaken) {
  fs::create_directories(Out("ds.partial"));
  std::ofstream(Out("ds.partial/") + kStagingMarker) << "shardpack staging directory\n";
  std::ofstream(Out("ds.partial/shard-00003.shard.partial")) << "half";
  SP_ASSERT_OK(PackInto(Out("ds"), false));
  EXPECT_EQ(FileBytes(Out("ds/shard-00000.shard")), "new!");
  EXPECT_FALSE(fs::exists(Out("ds/shard-00003.shard.partial")));
  // Empty (killed between mkdir and its marker): nothing of anyone's to lose.
  fs::create_directories(Out("e.partial"));
  SP_EXPECT_OK(PackInto(Out("e"), false));
}

TEST_F(OutputDirTest, AStagingFolderLockedByAnotherPackIsInUse) {
  SP_ASSERT_OK_AND_ASSIGN(auto first, OutputDir::Create(Out("ds"), false));
  // flock() locks belong to an open file description: a second Create in
  // this process is refused as another process would be.
  EXPECT_THAT(OutputDir::Create(Out("ds"), false),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr(Out("ds") + " is in use: another shardpack is writing it")));
  EXPECT_TRUE(fs::exists(first->staging() + "/" + kStagingMarker));
  first.reset();  // not published: the staging folder goes
  EXPECT_FALSE(fs::exists(Out("ds.partial")));
  EXPECT_FALSE(fs::exists(Out("ds")));
}

TEST_F(OutputDirTest, PublishRefusesAnOldDatasetThatChangedDuringThePack) {
  const std::string ds = Dataset("ds");
  SP_ASSERT_OK_AND_ASSIGN(auto out, OutputDir::Create(ds, /*overwrite=*/true));
  std::ofstream(ds + "/notes.txt") << "written during the pack";
  const auto before = Snapshot(ds);
  EXPECT_THAT(out->Publish(OneShard()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("(it changed during the pack)")));
  EXPECT_EQ(Snapshot(ds), before);
  out.reset();
  EXPECT_FALSE(fs::exists(ds + ".partial"));
}

// A retry replaces, without overwrite, only what records its own identity.
TEST_F(OutputDirTest, ARetryReplacesOnlyItsOwnOutput) {
  const PackIdentity mine = Identity(1), other = Identity(2);
  const std::string ds = Dataset("ds", mine);
  SP_EXPECT_OK(PackInto(ds, false, &mine));
  EXPECT_EQ(FileBytes(ds + "/shard-00000.shard"), "new!");
  EXPECT_THAT(PackInto(ds, false, &other),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       HasSubstr("was not written by this pack (another part, input, seed or "
                                 "option)")));
  // Cut short after the rename, before the manifest: the marker's line.
  fs::remove(ds + "/manifest.json");
  std::ofstream(ds + "/" + kStagingMarker)
      << "shardpack staging directory\npack " << mine.ToJson() << "\n";
  EXPECT_THAT(PackInto(ds, false, &other),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("(without a manifest)")));
  SP_EXPECT_OK(PackInto(ds, false, &mine));
  EXPECT_TRUE(fs::exists(ds + "/manifest.json"));
  // A marker whose identity does not parse is nobody's retry.
  fs::remove(ds + "/manifest.json");
  std::ofstream(ds + "/" + kStagingMarker)
      << "shardpack staging directory\npack {\"seed\": \"seven\"}\n";
  EXPECT_THAT(PackInto(ds, false, &mine),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("was not written by this")));
  EXPECT_TRUE(fs::exists(ds + "/shard-00000.shard"));
}

TEST_F(OutputDirTest, AnInterruptedPublishIsReplacedByAnyPack) {
  fs::create_directories(Out("ds"));
  std::ofstream(Out("ds/shard-00000.shard")) << "old";
  std::ofstream(Out("ds/") + kStagingMarker) << "shardpack staging directory\n";
  SP_ASSERT_OK(PackInto(Out("ds"), false));
  EXPECT_EQ(FileBytes(Out("ds/shard-00000.shard")), "new!");
  // Held by another pack (its lock on the folder): in use, untouched.
  fs::remove(Out("ds/manifest.json"));
  std::ofstream(Out("ds/") + kStagingMarker) << "shardpack staging directory\n";
  SP_ASSERT_OK_AND_ASSIGN(const common::UniqueFd held, common::OpenDirectory(Out("ds")));
  SP_ASSERT_OK_AND_ASSIGN(common::LockResult lock,
                          common::TryLockExclusive(held.get(), Out("ds")));
  ASSERT_EQ(lock, common::LockResult::kLocked);
  EXPECT_THAT(PackInto(Out("ds"), false),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("is in use")));
  EXPECT_EQ(FileBytes(Out("ds/shard-00000.shard")), "new!");
}

}  // namespace
}  // namespace shardpack::writer
