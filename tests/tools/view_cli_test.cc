// A view file as PATH (docs/cli.md): sharddump ls, show and verify on it,
// shardpack convert materializing it, and bad views through the tools.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "dataset/view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/dataset/view_fixtures.h"
#include "tests/testing/cli_expect.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

using ::testing::HasSubstr;
using testing::Lines;
testing::RunResult RunTool(const std::vector<std::string>& argv) { return testing::Run(argv); }

class ViewCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::WriteWnidDataset(tmp_.Join("a"), 200, 10, 0, 64).ok());
    ASSERT_TRUE(testing::WriteWnidDataset(tmp_.Join("b"), 100, 10, 3, 30).ok());
    WriteView("v.json", R"("datasets": ["a", "b"], "classes": {"names": ["n00000007", "n00000002"]},
                           "split": {"seed": 4, "fraction": 0.25, "take": "rest"})");
  }
  std::string WriteView(const std::string& name, const std::string& body) {
    testing::WriteText(tmp_.Join(name), absl::StrCat(R"({"shardpack_view": 1, )", body, "}"));
    return tmp_.Join(name);
  }
  std::string View() const { return tmp_.Join("v.json"); }
  testing::TempDir tmp_;
};

TEST_F(ViewCliTest, LsNumbersRecordsInTheViewWithTheirDatasetAndRecord) {
  SP_ASSERT_OK_AND_ASSIGN(dataset::DatasetView view, dataset::OpenView(View()));
  ASSERT_EQ(view.records, 45u);  // 40 + 20 of classes 7 and 2, less a quarter held out
  testing::RunResult r = RunTool({SHARDDUMP_PATH, "ls", View()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), view.records);
  for (uint64_t i = 0; i < lines.size(); ++i) {
    const std::vector<std::string> col = absl::StrSplit(lines[i], '\t');
    ASSERT_EQ(col.size(), 8u) << lines[i];
    EXPECT_EQ(col[0], absl::StrCat(i));
    // Relabelled: n00000007 is 0, n00000002 is 1, in the order named.
    EXPECT_EQ(col[2], col[1].starts_with("n00000007/") ? "0" : "1") << lines[i];
    const auto [dataset, record] = view.Locate(dataset::ViewRecordBase(view, i));
    EXPECT_EQ(col[6], absl::StrCat(dataset)) << lines[i];
    EXPECT_EQ(col[7], absl::StrCat(record)) << lines[i];
  }
  testing::RunResult j = RunTool({SHARDDUMP_PATH, "ls", View(), "--json", "--range", "44:45"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const nlohmann::json last = nlohmann::json::parse(j.out);
  EXPECT_EQ(last["index"], 44);
  EXPECT_EQ(last["dataset"], 1);
  EXPECT_EQ(absl::StrCat(last["record"].get<uint64_t>()), Lines(r.out)[44].substr(Lines(r.out)[44].rfind('\t') + 1));
  testing::ExpectOneLineFailure(RunTool({SHARDDUMP_PATH, "ls", View(), "--range", "40:46"}),
                                "sharddump", "46");
  testing::ExpectOneLineFailure(RunTool({SHARDDUMP_PATH, "ls", View(), "--shard", "0"}), "sharddump",
                                "is a view, whose records are numbered in the view");
}

TEST_F(ViewCliTest, ShowDrawsViewRecords) {
  testing::RunResult r = RunTool({SHARDDUMP_PATH, "show", View(), "--random", "5", "-o", tmp_.Join("s.png")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("wrote 5 records"));
  EXPECT_TRUE(std::filesystem::exists(tmp_.Join("s.png")));
  testing::ExpectOneLineFailure(
      RunTool({SHARDDUMP_PATH, "show", View(), "--range", "0:46", "-o", tmp_.Join("t.png")}),
      "sharddump", "46");
}

TEST_F(ViewCliTest, VerifyChecksTheDatasetsAndThatTheViewResolves) {
  testing::RunResult ok = RunTool({SHARDDUMP_PATH, "verify", View()});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr(absl::StrCat("dataset 1: ", tmp_.Join("b"))));
  EXPECT_THAT(ok.out, HasSubstr("view " + View() + ": 45 of 300 records, fingerprint "));
  testing::RunResult json = RunTool({SHARDDUMP_PATH, "verify", View(), "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["ok"], true);
  EXPECT_EQ(doc["datasets"].size(), 2u);
  EXPECT_EQ(doc["view"]["records"], 45);

  // A view that resolves to nothing is one problem; the datasets are fine.
  const std::string empty = WriteView("e.json", R"("datasets": ["a"], "where": {"key_prefix": "x"})");
  testing::RunResult e = RunTool({SHARDDUMP_PATH, "verify", empty});
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_THAT(e.out, HasSubstr("the view selects no record"));
  EXPECT_THAT(e.err, HasSubstr("1 problem found"));

  // Damage in a dataset is reported whether or not the view resolves.
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(tmp_.Join("b")));
  const std::string shard = (std::filesystem::path(tmp_.Join("b")) / m.shards[1].path).string();
  std::filesystem::resize_file(shard, std::filesystem::file_size(shard) - 7);
  testing::RunResult bad = RunTool({SHARDDUMP_PATH, "verify", View()});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.out, HasSubstr(shard));
  EXPECT_THAT(bad.err, HasSubstr("problems found"));
}

TEST_F(ViewCliTest, ConvertMaterializesTheViewRelabelled) {
  for (const char* format : {"shard", "lmdb"}) {
    SCOPED_TRACE(format);
    const std::string out = tmp_.Join(absl::StrCat("out-", format));
    testing::RunResult r = RunTool({SHARDPACK_PATH, "convert", View(), "-o", out, "--format", format, "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    SP_ASSERT_OK_AND_ASSIGN(std::vector<testing::OwnedRecord> records, testing::ReadDataset(out));
    SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(out));
    ASSERT_EQ(records.size(), 45u);
    EXPECT_EQ(m.schema.labels[0].classes, (std::vector<std::string>{"n00000007", "n00000002"}));
    // The same records in the same order as ls lists them.
    const std::vector<std::string> ls = Lines(RunTool({SHARDDUMP_PATH, "ls", View()}).out);
    for (size_t i = 0; i < records.size(); ++i) {
      const std::vector<std::string> col = absl::StrSplit(ls[i], '\t');
      EXPECT_EQ(records[i].key, col[1]);
      EXPECT_EQ(absl::StrCat(records[i].labels[0]), col[2]);
    }
    const nlohmann::json pack = nlohmann::json::parse(m.pack_json);
    EXPECT_EQ(pack["view"]["path"], View());
    EXPECT_EQ(pack["view"]["selection"]["classes"]["names"][1], "n00000002");
    EXPECT_EQ(pack["converted_from"].size(), 2u);
  }
  testing::ExpectOneLineFailure(
      RunTool({SHARDPACK_PATH, "convert", View(), tmp_.Join("a"), "-o", tmp_.Join("x"), "--format", "shard"}),
      "shardpack", "a view is converted alone");
}

// ImageNet-100 from a packed ImageNet-1k (docs/reader.md, "Views"), through
// the tools: 1,000 classes of small images, 100 kept and relabelled.
TEST_F(ViewCliTest, ImageNet100FromImageNet1k) {
  ASSERT_TRUE(testing::WriteWnidDataset(tmp_.Join("imagenet-1k-train"), 3000, 1000, 0, 1000).ok());
  std::vector<std::string> names;
  for (int c = 0; c < 1000; c += 10) names.push_back("\"" + testing::WnidName(c) + "\"");
  const std::string view = WriteView(
      "imagenet100.view.json",
      absl::StrCat(R"("datasets": ["imagenet-1k-train"], "classes": {"names": [)",
                   absl::StrJoin(names, ","), "]}"));
  EXPECT_EQ(Lines(RunTool({SHARDDUMP_PATH, "ls", view}).out).size(), 300u);
  testing::RunResult r = RunTool({SHARDPACK_PATH, "convert", view, "-o", tmp_.Join("in100"), "--format", "shard", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  SP_ASSERT_OK_AND_ASSIGN(std::vector<testing::OwnedRecord> records, testing::ReadDataset(tmp_.Join("in100")));
  ASSERT_EQ(records.size(), 300u);
  for (const testing::OwnedRecord& rec : records) {
    EXPECT_EQ(rec.key.substr(0, 9), testing::WnidName(rec.labels[0] * 10)) << rec.key;
  }
}

// A URL in a view is absolute: taken as it is, never joined to the view
// file's folder ("sub/deeper/http://..." would be a local path). Nothing
// listens on port 1, so the error must name the URL itself.
TEST_F(ViewCliTest, AUrlInAViewInAnyFolderIsTakenAsItIs) {
  std::filesystem::create_directories(tmp_.Join("sub/deeper"));
  for (const std::string url : {"http://127.0.0.1:1/ds/", "s3://bucket/ds/"}) {
    const std::string view =
        WriteView("sub/deeper/u.json", absl::StrCat(R"("datasets": [")", url, R"("])"));
    for (const std::string& path : {view, std::string("sub/deeper/u.json")}) {
      testing::RunResult r = testing::Run({SHARDDUMP_PATH, "ls", path}, [this] {
        setenv("SHARDPACK_REMOTE_DEADLINE_S", "1", 1);
        setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1", 1);
        setenv("SHARDPACK_CACHE_DIR", tmp_.Join("cache").c_str(), 1);
        if (chdir(tmp_.path().c_str()) != 0) _exit(99);
      });
      SCOPED_TRACE(path + " naming " + url);
      testing::ExpectOneLineFailure(r, "sharddump", "datasets[0]: ");
      EXPECT_THAT(r.err, ::testing::Not(HasSubstr("deeper/http")));
      EXPECT_THAT(r.err, ::testing::Not(HasSubstr("deeper/s3")));
      EXPECT_THAT(r.err, ::testing::AnyOf(HasSubstr("127.0.0.1:1"), HasSubstr("s3://bucket/ds/")));
    }
  }
}

// A dataset named many times is in converted_from once: the output's
// manifest stays within its own limits (docs/reliability.md, "Bounded JSON").
TEST_F(ViewCliTest, ADatasetNamedManyTimesConvertsToAManifestThatReads) {
  std::vector<std::string> names(2000, "\"a\"");
  const std::string view = WriteView(
      "many.view.json",
      absl::StrCat(R"("datasets": [)", absl::StrJoin(names, ","), R"(], "indices": [[0, 3]])"));
  testing::RunResult r =
      RunTool({SHARDPACK_PATH, "convert", view, "-o", tmp_.Join("many"), "--format", "shard", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(tmp_.Join("many")));
  EXPECT_EQ(m.records(), 3u);
  const nlohmann::json pack = nlohmann::json::parse(m.pack_json);
  EXPECT_EQ(pack["converted_from"].size(), 1u);
  EXPECT_EQ(pack["view"]["selection"]["datasets"].size(), 2000u);
}

TEST_F(ViewCliTest, BadViewsAreOneLineNamingTheFieldInEveryTool) {
  const std::string bad = WriteView("bad.json", R"("datasets": ["a"], "indices": [[0, 201]])");
  testing::ExpectOneLineFailure(RunTool({SHARDDUMP_PATH, "ls", bad}), "sharddump",
                                "bad.json: indices[0]: range [0, 201) runs past the end");
  // verify reports a view that does not resolve as a problem, after its
  // datasets' reports; a view file that does not parse names no dataset.
  testing::RunResult v = RunTool({SHARDDUMP_PATH, "verify", bad});
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_THAT(v.out, HasSubstr("bad.json: indices[0]: range [0, 201) runs past the end"));
  testing::WriteText(tmp_.Join("j.json"), R"({"shardpack_view": 1, "datasets": ["a"],)");
  testing::ExpectOneLineFailure(RunTool({SHARDDUMP_PATH, "verify", tmp_.Join("j.json")}),
                                "sharddump", "j.json:1:");
  testing::ExpectOneLineFailure(
      RunTool({SHARDDUMP_PATH, "show", bad, "-o", tmp_.Join("s.png")}), "sharddump", "indices[0]");
  testing::ExpectOneLineFailure(
      RunTool({SHARDPACK_PATH, "convert", bad, "-o", tmp_.Join("x"), "--format", "shard"}), "shardpack",
      "indices[0]");
  EXPECT_FALSE(std::filesystem::exists(tmp_.Join("x")));
  const std::string missing = WriteView("m.json", R"("datasets": ["a", "gone"])");
  testing::ExpectOneLineFailure(RunTool({SHARDDUMP_PATH, "ls", missing}), "sharddump",
                                "m.json: datasets[1]: " + tmp_.Join("gone") + ": no such file");
  testing::ExpectOneLineFailure(RunTool({SHARDDUMP_PATH, "info", View()}), "sharddump",
                                "a view file; this command takes a dataset or shard");
}

}  // namespace
}  // namespace shardpack
