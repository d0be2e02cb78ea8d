// Packing on many machines: `--part auto` from the scheduler's variables,
// what a part records, retried parts, and `merge`, which checks that its
// parts make one pack before it links anything.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "datasets/demo.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "shardpack/dataset.h"
#include "tests/testing/file_snapshot.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::FileBytes;
using testing::Snapshot;
using testing::RunResult;
using Env = std::map<std::string, std::string>;

constexpr const char* kSchedulerVars[] = {"SLURM_ARRAY_TASK_ID",   "SLURM_ARRAY_TASK_MIN",
                                          "SLURM_ARRAY_TASK_MAX",  "SLURM_ARRAY_TASK_COUNT",
                                          "SLURM_ARRAY_TASK_STEP", "JOB_COMPLETION_INDEX"};

nlohmann::json PackOf(const std::string& dataset) {
  return nlohmann::json::parse(FileBytes(fs::path(dataset) / "manifest.json"))["pack"];
}

class PartsTest : public ::testing::Test {
 protected:
  // A CIFAR-10 file of n records whose pixels depend on `salt`.
  std::string WriteCifar(const std::string& name, int n, int salt = 0) {
    fs::create_directories(dir_.path() / name);
    const std::string path = (dir_.path() / name / "data_batch_1.bin").string();
    std::string bytes;
    for (int i = 0; i < n; ++i) {
      bytes += static_cast<char>(i % 10);
      for (int k = 0; k < 3072; ++k) bytes += static_cast<char>((i * 7 + k + salt) & 255);
    }
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  // shardpack with exactly `env` of the scheduler's variables set.
  RunResult Shardpack(std::vector<std::string> args, const Env& env = {}) {
    return testing::RunTool(SHARDPACK_PATH, std::move(args), [env] {
      for (const char* name : kSchedulerVars) unsetenv(name);
      for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    });
  }

  // Packs `input` as `count` parts with `extra` flags; returns their paths.
  std::vector<std::string> PackParts(const std::string& input, int count, const std::string& tag,
                                     std::vector<std::string> extra = {"--seed", "9"}) {
    std::vector<std::string> parts;
    for (int i = 1; i <= count; ++i) {
      const std::string out = Out(absl::StrCat(tag, "-", i));
      std::vector<std::string> args = {
          "cifar", input, "-o", out, "--part", absl::StrCat(i, "/", count), "-q"};
      args.insert(args.end(), extra.begin(), extra.end());
      RunResult r = Shardpack(args);
      EXPECT_EQ(r.exit_code, 0) << r.err;
      parts.push_back(out);
    }
    return parts;
  }

  // `merge PARTS -o OUT` must fail saying `what`, leaving nothing at OUT.
  void ExpectMergeRefused(const std::vector<std::string>& parts, const std::string& what) {
    for (bool check : {false, true}) {
      std::vector<std::string> args = {"merge"};
      args.insert(args.end(), parts.begin(), parts.end());
      if (check) {
        args.push_back("--check");
      } else {
        args.insert(args.end(), {"-o", Out("merged")});
      }
      RunResult r = Shardpack(args);
      EXPECT_EQ(r.exit_code, 1) << (check ? "--check: " : "") << r.err;
      EXPECT_THAT(r.err, HasSubstr(what)) << (check ? "--check" : "");
      EXPECT_FALSE(fs::exists(Out("merged")));
      EXPECT_FALSE(fs::exists(Out("merged.partial")));
    }
  }

  std::string Out(const std::string& name) const { return dir_.Join(name); }

  testing::TempDir dir_;
};

// `sharddump ls` without its shard and offset columns (7 and 8).
std::string Listing(const RunResult& ls) {
  std::string out;
  size_t start = 0;
  while (start < ls.out.size()) {
    size_t end = ls.out.find('\n', start);
    std::string line = ls.out.substr(start, end - start);
    size_t cut = 0;
    for (int tabs = 0; tabs < 6 && cut != std::string::npos; ++tabs) cut = line.find('\t', cut + 1);
    out += line.substr(0, cut) + "\n";
    start = end + 1;
  }
  return out;
}

TEST_F(PartsTest, SlurmArraysStartingAnywhereGiveTheParts) {
  const std::string input = WriteCifar("cifar", 50);
  for (int min : {0, 1, 7}) {
    std::vector<std::string> parts;
    for (int id = min + 2; id >= min; --id) {  // any order: tasks run as they please
      const std::string out = Out(absl::StrCat("slurm", min, "-", id));
      Env env = {{"SLURM_ARRAY_TASK_ID", std::to_string(id)},
                 {"SLURM_ARRAY_TASK_MIN", std::to_string(min)},
                 {"SLURM_ARRAY_TASK_MAX", std::to_string(min + 2)},
                 {"SLURM_ARRAY_TASK_COUNT", "3"},
                 {"SLURM_ARRAY_TASK_STEP", "1"}};
      RunResult r = Shardpack({"cifar", input, "-o", out, "--part", "auto", "-q"}, env);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(PackOf(out)["part"], (nlohmann::json{{"index", id - min + 1}, {"count", 3}}));
      parts.push_back(out);
    }
    std::vector<std::string> args = {"merge"};
    args.insert(args.end(), parts.begin(), parts.end());
    args.insert(args.end(), {"-o", Out(absl::StrCat("merged", min))});
    RunResult merged = Shardpack(args);
    ASSERT_EQ(merged.exit_code, 0) << merged.err;
    SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(Out(absl::StrCat("merged", min))));
    EXPECT_EQ(m.records(), 50u);
  }
}

TEST_F(PartsTest, JobCompletionIndexWithPartsGivesThePart) {
  const std::string input = WriteCifar("cifar", 20);
  for (int index : {0, 3}) {
    const std::string out = Out(absl::StrCat("k8s", index));
    RunResult r = Shardpack({"cifar", input, "-o", out, "--part", "auto", "--parts", "4", "-q"},
                            {{"JOB_COMPLETION_INDEX", std::to_string(index)}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(PackOf(out)["part"], (nlohmann::json{{"index", index + 1}, {"count", 4}}));
  }
}

// Every hostile or inconsistent value is refused by name, before anything
// is written.
TEST_F(PartsTest, PartAutoRefusesHostileSchedulerValuesNamingThem) {
  const std::string input = WriteCifar("cifar", 10);
  const Env slurm = {
      {"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_MIN", "1"}, {"SLURM_ARRAY_TASK_COUNT", "4"}};
  auto with = [&](Env env, const std::string& name, const std::string& value) {
    if (value == "<unset>") {
      env.erase(name);
    } else {
      env[name] = value;
    }
    return env;
  };
  const std::vector<std::pair<Env, std::string>> cases = {
      {with(slurm, "SLURM_ARRAY_TASK_ID", "two"), "SLURM_ARRAY_TASK_ID='two' is not a whole"},
      {with(slurm, "SLURM_ARRAY_TASK_ID", "-1"), "SLURM_ARRAY_TASK_ID='-1' is not a whole"},
      {with(slurm, "SLURM_ARRAY_TASK_ID", " 2"), "SLURM_ARRAY_TASK_ID=' 2' is not a whole"},
      {with(slurm, "SLURM_ARRAY_TASK_ID", ""), "SLURM_ARRAY_TASK_ID='' is set but empty"},
      {with(slurm, "SLURM_ARRAY_TASK_ID", "99999999999999999999999"),
       "SLURM_ARRAY_TASK_ID='99999999999999999999999' is out of range"},
      {with(slurm, "SLURM_ARRAY_TASK_COUNT", "4294967296"),
       "SLURM_ARRAY_TASK_COUNT='4294967296' is out of range"},
      {with(slurm, "SLURM_ARRAY_TASK_COUNT", "<unset>"), "SLURM_ARRAY_TASK_COUNT is not"},
      {with(slurm, "SLURM_ARRAY_TASK_MIN", "<unset>"), "SLURM_ARRAY_TASK_MIN is not"},
      {with(slurm, "SLURM_ARRAY_TASK_COUNT", "0"), "SLURM_ARRAY_TASK_COUNT='0'"},
      {with(slurm, "SLURM_ARRAY_TASK_MIN", "3"), "task ID is below MIN"},
      {with(slurm, "SLURM_ARRAY_TASK_ID", "5"), "not one task of a contiguous array"},
      {with(slurm, "SLURM_ARRAY_TASK_MAX", "9"), "SLURM_ARRAY_TASK_MAX=9"},
      {with(slurm, "SLURM_ARRAY_TASK_STEP", "2"), "SLURM_ARRAY_TASK_STEP=2"},
      {with(slurm, "JOB_COMPLETION_INDEX", "1"), "both SLURM_ARRAY_TASK_ID=2 (Slurm) and"},
      {{{"JOB_COMPLETION_INDEX", "x1"}}, "JOB_COMPLETION_INDEX='x1' is not a whole number"},
      {{{"JOB_COMPLETION_INDEX", "1"}}, "give the number of parts with --parts N"},
      {{}, "set SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT"},
  };
  for (const auto& [env, want] : cases) {
    RunResult r = Shardpack({"cifar", input, "-o", Out("ds"), "--part", "auto", "-q"}, env);
    EXPECT_EQ(r.exit_code, 1) << want << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(want));
    EXPECT_FALSE(fs::exists(Out("ds")));
    EXPECT_FALSE(fs::exists(Out("ds.partial")));
  }
  const std::vector<std::tuple<Env, std::string, std::string>> with_parts = {
      {{{"JOB_COMPLETION_INDEX", "4"}}, "4", "JOB_COMPLETION_INDEX=4 is not below --parts 4"},
      {slurm, "3", "--parts 3 but SLURM_ARRAY_TASK_ID=2"}};
  for (const auto& [env, parts, want] : with_parts) {
    RunResult r =
        Shardpack({"cifar", input, "-o", Out("ds"), "--part", "auto", "--parts", parts, "-q"}, env);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr(want));
    EXPECT_FALSE(fs::exists(Out("ds")));
  }
  // Flags that do not go together are usage errors.
  EXPECT_EQ(Shardpack({"cifar", input, "-o", Out("ds"), "--part", "1/2", "--parts", "2"}).exit_code,
            2);
  EXPECT_EQ(Shardpack({"cifar", input, "-o", Out("ds"), "--part", "auto", "--parts", "0"},
                      {{"JOB_COMPLETION_INDEX", "0"}})
                .exit_code,
            2);
}

// A part records what it is a part of; the fingerprint tells inputs apart.
TEST_F(PartsTest, PartRecordsIndexCountSeedAndInputFingerprint) {
  const std::string a = WriteCifar("a", 30), b = WriteCifar("b", 30, 1);
  const std::vector<std::string> parts = PackParts(a, 2, "a");
  const std::vector<std::string> other = PackParts(b, 2, "b");
  const nlohmann::json pack = PackOf(parts[1]);
  EXPECT_EQ(pack["part"], (nlohmann::json{{"index", 2}, {"count", 2}}));
  EXPECT_EQ(pack["seed"], 9);
  EXPECT_EQ(pack["input"]["items"], 30);
  EXPECT_EQ(pack["input"]["bytes"], 30 * 3073);
  const std::string fingerprint = pack["input"]["fingerprint"];
  EXPECT_THAT(fingerprint, ::testing::MatchesRegex("crc32c:[0-9a-f]{8}"));
  EXPECT_EQ(PackOf(parts[0])["input"], pack["input"]);
  EXPECT_NE(PackOf(other[0])["input"]["fingerprint"], fingerprint);
}

// An image folder's fingerprint follows its files' paths, labels and sizes,
// not where the folder is: parts packed from copies at other paths merge.
TEST_F(PartsTest, ImageFingerprintFollowsTheInputNotItsPath) {
  datasets::DemoImagesOptions demo;
  demo.classes = 2;
  demo.images_per_class = 3;
  demo.width = 16;
  demo.height = 16;
  ASSERT_TRUE(datasets::WriteDemoImageFolder(Out("a"), demo).ok());
  fs::copy(Out("a"), Out("b"), fs::copy_options::recursive);
  auto pack = [&](const std::string& root, const std::string& out, const std::string& part) {
    RunResult r = Shardpack({"images", root, "-o", Out(out), "--part", part, "-q"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return PackOf(Out(out))["input"]["fingerprint"].get<std::string>();
  };
  const std::string a = pack(Out("a"), "a1", "1/2");
  EXPECT_EQ(pack(Out("b"), "b2", "2/2"), a);
  RunResult merged = Shardpack({"merge", Out("a1"), Out("b2"), "--check"});
  EXPECT_EQ(merged.exit_code, 0) << merged.err;
  // One byte more in one file; a file renamed: other input.
  ASSERT_TRUE(fs::exists(Out("b/class_01/img_0002.JPEG")));
  std::ofstream(Out("b/class_01/img_0002.JPEG"), std::ios::app) << '\0';
  const std::string grown = pack(Out("b"), "grown", "2/2");
  EXPECT_NE(grown, a);
  fs::rename(Out("b/class_01/img_0002.JPEG"), Out("b/class_01/img_0009.JPEG"));
  const std::string renamed = pack(Out("b"), "renamed", "2/2");
  EXPECT_NE(renamed, a);
  EXPECT_NE(renamed, grown);
  ExpectMergeRefused({Out("a1"), Out("grown")}, "was packed from other input than");
}

// A retried task replaces its own output (whole, or cut short before the
// manifest) with the same bytes, and nothing else.
TEST_F(PartsTest, RetriedPartWritesTheSameBytesAndReplacesOnlyItsOwnOutput) {
  const std::string input = WriteCifar("cifar", 40);
  const Env task = {
      {"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_MIN", "1"}, {"SLURM_ARRAY_TASK_COUNT", "3"}};
  const std::vector<std::string> args = {
      "cifar", input, "-o", Out("p2"), "--part", "auto", "--shard-records", "5", "-q"};
  ASSERT_EQ(Shardpack(args, task).exit_code, 0);
  const auto first = Snapshot(Out("p2"));
  RunResult again = Shardpack(args, task);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(Snapshot(Out("p2")), first);
  // Cut short after the rename, before the manifest: the marker names the pack.
  const std::string pack = PackOf(Out("p2")).dump();
  fs::remove(Out("p2/manifest.json"));
  fs::resize_file(Out("p2/shard-00001.shard"), 100);
  std::ofstream(Out("p2/.shardpack-staging"))
      << "shardpack staging directory\npack " << pack << "\n";
  RunResult retry = Shardpack(args, task);
  ASSERT_EQ(retry.exit_code, 0) << retry.err;
  EXPECT_EQ(Snapshot(Out("p2")), first);
  // Another part's output, or ours holding a file of the user's, is refused.
  Env other = task;
  other["SLURM_ARRAY_TASK_ID"] = "3";
  RunResult foreign = Shardpack(args, other);
  EXPECT_EQ(foreign.exit_code, 1);
  EXPECT_THAT(foreign.err, HasSubstr("was not written by this pack"));
  EXPECT_EQ(Snapshot(Out("p2")), first);
  std::ofstream(Out("p2/notes.txt")) << "mine";
  RunResult mine = Shardpack(args, task);
  EXPECT_EQ(mine.exit_code, 1);
  EXPECT_THAT(mine.err, HasSubstr("holds notes.txt, which shardpack did not write"));
  EXPECT_EQ(FileBytes(Out("p2/notes.txt")), "mine");
}

TEST_F(PartsTest, MergeInAnyOrderEqualsOnePackAndSaysItWasMerged) {
  const std::string input = WriteCifar("cifar", 101);
  ASSERT_EQ(Shardpack({"cifar", input, "-o", Out("whole"), "--seed", "9", "-q"}).exit_code, 0);
  std::vector<std::string> parts = PackParts(input, 4, "p");
  RunResult check = Shardpack({"merge", parts[2], parts[0], parts[3], parts[1], "--check"});
  ASSERT_EQ(check.exit_code, 0) << check.err;
  EXPECT_THAT(check.err, HasSubstr("checked 4 parts of one pack"));
  EXPECT_FALSE(fs::exists(Out("merged")));
  RunResult r = Shardpack({"merge", parts[2], parts[0], parts[3], parts[1], "-o", Out("merged")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  RunResult whole = testing::RunTool(SHARDDUMP_PATH, {"ls", Out("whole")}),
            merged = testing::RunTool(SHARDDUMP_PATH, {"ls", Out("merged")});
  ASSERT_EQ(whole.exit_code, 0);
  ASSERT_EQ(merged.exit_code, 0);
  EXPECT_EQ(Listing(merged), Listing(whole));
  EXPECT_EQ(std::count(whole.out.begin(), whole.out.end(), '\n'), 101);
  // The parts' record tables, concatenated, are the one pack's table.
  EXPECT_EQ(*ReadSmallFile(Out("merged") + "/records.idx"),
            *ReadSmallFile(Out("whole") + "/records.idx"));
  const nlohmann::json pack = PackOf(Out("merged"));
  EXPECT_FALSE(pack.contains("part"));
  EXPECT_EQ(pack["merged"]["count"], 4);
  EXPECT_EQ(pack["merged"]["parts"][1]["path"], parts[1]);
  EXPECT_EQ(pack["input"], PackOf(parts[0])["input"]);
  RunResult info = testing::RunTool(SHARDDUMP_PATH, {"info", Out("merged")});
  EXPECT_THAT(info.out, HasSubstr("merged         from 4 parts (by shardpack"));
  EXPECT_THAT(info.out, HasSubstr("1 " + parts[0] + " (25 records), 2 " + parts[1]));
  // A merged dataset is not a part of anything.
  RunResult again = Shardpack({"merge", Out("merged"), "--check"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr("it is a merged dataset, not a part"));
}

// The input fingerprint merge reports comes from the parts' manifests: an
// edited one holding ESC[31m and a newline was printed raw.
TEST_F(PartsTest, MergePrintsTheManifestsFingerprintEscaped) {
  const std::string input = WriteCifar("cifar", 20);
  std::vector<std::string> parts = PackParts(input, 2, "p");
  for (const std::string& part : parts) {
    const fs::path manifest = fs::path(part) / "manifest.json";
    const std::string text = FileBytes(manifest);
    ASSERT_NE(text.find("\"crc32c:"), std::string::npos);
    std::ofstream(manifest, std::ios::trunc)
        << absl::StrReplaceAll(text, {{"\"crc32c:", "\"\\u001b[31m\\n"}});
  }
  RunResult check = Shardpack({"merge", parts[0], parts[1], "--check"});
  ASSERT_EQ(check.exit_code, 0) << check.err;
  EXPECT_THAT(check.err, ::testing::StartsWith("checked 2 parts of one pack (input \\x1b[31m\\n"));
  EXPECT_THAT(check.err, ::testing::EndsWith("): 20 records in 2 shards\n"));
  EXPECT_EQ(std::count(check.err.begin(), check.err.end(), '\n'), 1) << check.err;
}

// A part converted to another backend is the same part: merge converts the
// others to the output's backend and keeps the record order.
TEST_F(PartsTest, MergeTakesAPartConvertedToAnotherBackend) {
  const std::string input = WriteCifar("cifar", 30);
  ASSERT_EQ(Shardpack({"cifar", input, "-o", Out("whole"), "--seed", "9", "-q"}).exit_code, 0);
  const std::vector<std::string> p = PackParts(input, 3, "p");
  RunResult convert = Shardpack({"convert", p[1], "-o", Out("p2-lmdb"), "--format", "lmdb", "-q"});
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  RunResult r = Shardpack({"merge", p[2], Out("p2-lmdb"), p[0], "-o", Out("merged")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Listing(testing::RunTool(SHARDDUMP_PATH, {"ls", Out("merged")})),
            Listing(testing::RunTool(SHARDDUMP_PATH, {"ls", Out("whole")})));
  EXPECT_EQ(PackOf(Out("merged"))["merged"]["parts"][1]["path"], Out("p2-lmdb"));
}

TEST_F(PartsTest, MergeRefusesAMissingOrDuplicatedPart) {
  const std::string input = WriteCifar("cifar", 40);
  const std::vector<std::string> p = PackParts(input, 4, "p");
  ExpectMergeRefused({p[0], p[1], p[3]}, "part 3 of 4 is missing (3 of 4 parts given)");
  ExpectMergeRefused({p[0]}, "parts 2, 3, 4 of 4 are missing");
  ExpectMergeRefused({p[0], p[1], p[2], p[3], p[1]}, "part 2 of 4 is given twice: " + p[1]);
  fs::copy(p[2], Out("copy-of-3"));
  ExpectMergeRefused({p[0], p[1], p[2], Out("copy-of-3")},
                     "part 3 of 4 is given twice: " + p[2] + " and " + Out("copy-of-3"));
}

TEST_F(PartsTest, MergeRefusesPartsOfAnotherSeedInputOrN) {
  const std::string input = WriteCifar("cifar", 40), other = WriteCifar("other", 40, 5);
  const std::vector<std::string> p = PackParts(input, 3, "p");
  const std::vector<std::string> seed = PackParts(input, 3, "seed", {"--seed", "10"});
  const std::vector<std::string> foreign = PackParts(other, 3, "foreign");
  const std::vector<std::string> four = PackParts(input, 4, "four");
  const std::vector<std::string> options =
      PackParts(input, 3, "opt", {"--seed", "9", "--block-size", "8KiB"});
  ExpectMergeRefused({p[0], seed[1], p[2]}, "part 2 of 3 (" + seed[1] +
                                                ") was packed with other parameters than part 1 "
                                                "of 3 (" +
                                                p[0] + "): seed is 10, not 9");
  ExpectMergeRefused({p[0], p[1], foreign[2]},
                     "part 3 of 3 (" + foreign[2] + ") was packed from other input than part 1");
  ExpectMergeRefused({p[0], p[1], foreign[2]}, "input.fingerprint is \"crc32c:");
  ExpectMergeRefused({p[0], four[1], p[2]}, "parts of different packs: part 2 of 4 (" + four[1] +
                                                ") but part 1 of 3 (" + p[0] + "): N differs");
  ExpectMergeRefused({p[0], p[1], options[2]}, "block_size is 8192, not 4194304");
}

// The pack order's shape is part of what parts agree on: a part packed by a
// shardpack with another order (an older one wrote no "order") is refused,
// since its records would not fit between the others'.
TEST_F(PartsTest, MergeRefusesAPartOfAnotherPackOrder) {
  const std::string input = WriteCifar("cifar", 30);
  const std::vector<std::string> p = PackParts(input, 3, "p");
  const std::string manifest = (fs::path(p[1]) / "manifest.json").string();
  const std::string original = FileBytes(manifest);
  const std::string order = "\"window_chunks\": 128";
  ASSERT_NE(original.find(order), std::string::npos) << original;
  std::ofstream(manifest, std::ios::trunc)
      << absl::StrReplaceAll(original, {{order, "\"window_chunks\": 64"}});
  ExpectMergeRefused(p, "was packed with other parameters than part 1 of 3 (" + p[0] +
                            "): order.window_chunks is 64, not 128");
  // No "order" in part 2: what a part of an older shardpack looks like.
  std::ofstream(manifest, std::ios::trunc)
      << absl::StrReplaceAll(original, {{"\"order\":", "\"older\":"}});
  ExpectMergeRefused(p, "was packed with other parameters than part 1 of 3 (" + p[0] + ")");
  std::ofstream(manifest, std::ios::trunc) << original;
  std::vector<std::string> args = {"merge", p[0], p[1], p[2], "--check"};
  RunResult r = Shardpack(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// Edited manifests and damaged shard files are caught before anything is linked.
TEST_F(PartsTest, MergeRefusesATamperedPart) {
  const std::string input = WriteCifar("cifar", 30);
  const std::vector<std::string> p = PackParts(input, 3, "p");
  const std::string manifest = (fs::path(p[1]) / "manifest.json").string();
  const std::string original = FileBytes(manifest);
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string text = original;
    ASSERT_NE(text.find(from), std::string::npos) << from;
    text = absl::StrReplaceAll(text, {{from, to}});
    std::ofstream(manifest, std::ios::trunc) << text;
  };
  edit("\"index\": 2", "\"index\": 3");
  ExpectMergeRefused(p, "part 3 of 3 is given twice: " + p[1] + " and " + p[2]);
  edit("\"index\": 2", "\"index\": 0");
  ExpectMergeRefused(p, p[1] + ": pack.part.index 0 is not in 1..3");
  edit("\"index\": 2", "\"index\": 2.0");
  ExpectMergeRefused(p, "pack.part.index 2.0 is not in 1..3");
  edit("\"count\": 3", "\"count\": 99999999999");
  ExpectMergeRefused(p, "pack.part.count 99999999999 is not in 1..4294967295");
  edit("\"fingerprint\"", "\"print\"");
  ExpectMergeRefused(p, "pack.input has no fingerprint");
  edit("\"part\": {", "\"parts\": {");
  ExpectMergeRefused(p, p[1] + ": not a part merge can check");
  edit("\"seed\": 9", "\"seed\": 8");
  ExpectMergeRefused(p, "seed is 8, not 9");
  // A key holding NUL was looked up through c_str(), cut at the NUL ("x",
  // absent from both parts): the difference went unseen.
  edit("\"seed\": 9", "\"seed\": 9, \"x\\u0000y\": 1");
  ExpectMergeRefused(p, "x\\x00y is 1, not null");
  // More records than the part's share of the input (30 inputs, 10 a part).
  edit("\"records\": 10,", "\"records\": 12,");
  ExpectMergeRefused(p, p[1] + ": 12 records, but part 2 of 3 of 30 inputs holds at most 10");
  std::ofstream(manifest, std::ios::trunc) << original;
  fs::resize_file(fs::path(p[1]) / "shard-00000.shard", 4096);
  ExpectMergeRefused(p, p[1] + "/shard-00000.shard: 4096 bytes, but the part's manifest says");
  fs::remove(fs::path(p[1]) / "shard-00000.shard");
  ExpectMergeRefused(p, p[1] + "/shard-00000.shard");
}

}  // namespace
}  // namespace shardpack
