// Views (dataset/view.h): the selection steps, the concatenation, the
// canonical text and fingerprint, and every bad view file.
#include "dataset/view.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/rng.h"
#include "dataset/record_meta.h"
#include "dataset/view_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/dataset.h"
#include "tests/dataset/view_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack::dataset {
namespace {

using ::shardpack::testing::StatusIs;
using ::shardpack::testing::WnidName;
using ::testing::HasSubstr;

// Each base record's labels and key, in order.
struct Meta {
  std::vector<int64_t> labels;
  std::vector<std::string> keys;
};

Meta ReadMeta(const DatasetView& view) {
  Meta m;
  for (const auto& d : view.datasets) {
    EXPECT_TRUE(ForEachRecordMeta(*d, true, [&](uint64_t, const Labels& l, std::string_view key) {
                  m.labels.push_back(l[0]);
                  m.keys.emplace_back(key);
                  return absl::OkStatus();
                }).ok());
  }
  return m;
}

std::vector<uint64_t> SelectedBase(const DatasetView& view) {
  std::vector<uint64_t> out;
  EXPECT_TRUE(ForEachViewRecord(view, 0, view.records, [&](uint64_t i, uint64_t r) {
                EXPECT_EQ(i, out.size());
                out.push_back(r);
                return absl::OkStatus();
              }).ok());
  return out;
}

class ViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::WriteWnidDataset(dir_.Join("a"), 200, 10, 0, 64).ok());
    ASSERT_TRUE(testing::WriteWnidDataset(dir_.Join("b"), 100, 10, 3, 30).ok());
  }
  absl::StatusOr<DatasetView> Open(const std::string& body, const std::string& name = "v.json") {
    testing::WriteText(dir_.Join(name), absl::StrCat(R"({"shardpack_view": 1, )", body, "}"));
    return OpenView(dir_.Join(name));
  }
  testing::TempDir dir_;
};

TEST_F(ViewTest, APlainDatasetPathIsOneDatasetWithNothingSelectedOut) {
  SP_ASSERT_OK_AND_ASSIGN(DatasetView v, OpenView(dir_.Join("a")));
  EXPECT_FALSE(v.is_view);
  EXPECT_EQ(v.path, dir_.Join("a"));
  ASSERT_EQ(v.datasets.size(), 1u);
  EXPECT_EQ(v.first_record, std::vector<uint64_t>{0});
  EXPECT_EQ(v.base_records, 200u);
  EXPECT_EQ(v.records, 200u);
  EXPECT_TRUE(v.selected.empty());
  EXPECT_TRUE(v.Selected(199));
  EXPECT_EQ(v.fingerprint, 0u);
  EXPECT_EQ(v.canonical, "");
  EXPECT_EQ(v.schema, testing::WnidSchema(10));
  EXPECT_EQ(v.MapLabel(0, 7), 7);
}

TEST_F(ViewTest, ConcatenationKeepsOrderAndLocatesRecords) {
  SP_ASSERT_OK_AND_ASSIGN(DatasetView v, Open(R"("datasets": ["a", "b"])"));
  EXPECT_TRUE(v.is_view);
  EXPECT_EQ(v.first_record, (std::vector<uint64_t>{0, 200}));
  EXPECT_EQ(v.base_records, 300u);
  EXPECT_EQ(v.records, 300u);
  EXPECT_TRUE(v.selected.empty());  // everything kept: no bitmap
  EXPECT_EQ(v.Locate(199), (std::pair<size_t, uint64_t>{0, 199}));
  EXPECT_EQ(v.Locate(200), (std::pair<size_t, uint64_t>{1, 0}));
  EXPECT_EQ(v.Locate(299), (std::pair<size_t, uint64_t>{1, 99}));
  EXPECT_EQ(v.canonical, R"({"shardpack_view":1,"datasets":["a","b"]})");
  EXPECT_NE(v.fingerprint, 0u);
}

TEST_F(ViewTest, IndicesAreSinglesAndRangesOfTheConcatenationMerged) {
  SP_ASSERT_OK_AND_ASSIGN(DatasetView v,
                          Open(R"("datasets": ["a", "b"], "indices": [250, [10, 20], [15, 25], 3, [7, 7]])"));
  EXPECT_EQ(v.records, 1u + 15u + 1u);
  std::vector<uint64_t> want = {3};
  for (uint64_t r = 10; r < 25; ++r) want.push_back(r);
  want.push_back(250);
  EXPECT_EQ(SelectedBase(v), want);
  EXPECT_EQ(ViewRecordBase(v, 16), 250u);
  EXPECT_EQ(v.canonical,
            R"({"shardpack_view":1,"datasets":["a","b"],"indices":[3,[10,25],250]})");
  // The same selection written another way is the same view.
  SP_ASSERT_OK_AND_ASSIGN(DatasetView same,
                          Open(R"("datasets": ["a", "b"], "indices": [[10, 25], 250, 3])", "w.json"));
  EXPECT_EQ(same.fingerprint, v.fingerprint);
  SP_ASSERT_OK_AND_ASSIGN(DatasetView other,
                          Open(R"("datasets": ["a", "b"], "indices": [[10, 25], 251, 3])", "x.json"));
  EXPECT_NE(other.fingerprint, v.fingerprint);
}

TEST_F(ViewTest, ClassesAreSelectedAndRelabelledInTheOrderNamed) {
  SP_ASSERT_OK_AND_ASSIGN(DatasetView v,
                          Open(R"("datasets": ["a"], "classes": {"names": ["n00000007", "n00000002"]})"));
  const Meta m = ReadMeta(v);
  uint64_t n = 0;
  for (uint64_t r = 0; r < v.base_records; ++r) {
    const bool in = m.labels[r] == 7 || m.labels[r] == 2;
    EXPECT_EQ(v.Selected(r), in) << r;
    n += in;
    if (in) {
      EXPECT_EQ(v.MapLabel(0, m.labels[r]), m.labels[r] == 7 ? 0 : 1);
    }
  }
  EXPECT_EQ(v.records, n);
  EXPECT_EQ(n, 40u);
  ASSERT_EQ(v.label_map.size(), 1u);
  EXPECT_EQ(v.label_map[0].size(), 10u);
  EXPECT_EQ(v.label_map[0][3], -1);
  EXPECT_EQ(v.schema.labels[0].classes, (std::vector<std::string>{"n00000007", "n00000002"}));
  EXPECT_THAT(v.canonical, HasSubstr(R"("classes":{"field":"label","names":["n00000007","n00000002"],"relabel":true})"));
}

TEST_F(ViewTest, RelabelFalseKeepsTheSchemaAndLabels) {
  SP_ASSERT_OK_AND_ASSIGN(
      DatasetView v,
      Open(R"("datasets": ["a"], "classes": {"field": "label", "names": ["n00000007"], "relabel": false})"));
  EXPECT_EQ(v.records, 20u);
  EXPECT_EQ(v.schema, testing::WnidSchema(10));
  ASSERT_EQ(v.label_map.size(), 1u);
  EXPECT_TRUE(v.label_map[0].empty());
  EXPECT_EQ(v.MapLabel(0, 7), 7);
}

TEST_F(ViewTest, WhereConditionsMustAllHold) {
  // Keys are "<class>/<salt>-<i>.png": dataset b's salt is 3.
  SP_ASSERT_OK_AND_ASSIGN(
      DatasetView v,
      Open(R"("datasets": ["a", "b"], "where": {"labels": {"in": [1, "n00000004", 4]},
              "key_glob": "*/3-?.png"})"));
  const Meta m = ReadMeta(v);
  uint64_t n = 0;
  for (uint64_t r = 0; r < v.base_records; ++r) {
    const bool in = (m.labels[r] == 1 || m.labels[r] == 4) && r >= 200 && r < 210;
    EXPECT_EQ(v.Selected(r), in) << r << " " << m.keys[r];
    n += in;
  }
  EXPECT_EQ(v.records, n);
  EXPECT_GT(n, 0u);
  EXPECT_THAT(v.canonical, HasSubstr(R"("where":{"labels":{"field":"label","in":[1,4]},"key_glob":"*/3-?.png"})"));
  SP_ASSERT_OK_AND_ASSIGN(DatasetView p, Open(R"("datasets": ["a", "b"], "where": {"key_prefix": "n00000003/3-"})", "p.json"));
  EXPECT_EQ(p.records, 10u);
  for (uint64_t r : SelectedBase(p)) EXPECT_TRUE(m.keys[r].starts_with("n00000003/3-")) << r;
  // Labels by name or by value, in any order, with repeats: the same view.
  SP_ASSERT_OK_AND_ASSIGN(DatasetView by_name, Open(R"("datasets": ["a"], "where": {"labels": {"in": ["n00000004", 1]}})", "n.json"));
  SP_ASSERT_OK_AND_ASSIGN(DatasetView by_value, Open(R"("where": {"labels": {"field": "label", "in": [4, 1, 4]}}, "datasets": ["a"])", "m.json"));
  EXPECT_EQ(by_name.fingerprint, by_value.fingerprint);
  EXPECT_EQ(by_name.canonical, by_value.canonical);
  EXPECT_EQ(by_name.selected, by_value.selected);
}

TEST(GlobMatchTest, StarAndQuestionMark) {
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("a*b?c", "axxbyc"));
  EXPECT_TRUE(GlobMatch("*.JPEG", "n01/x.JPEG"));
  EXPECT_FALSE(GlobMatch("*.JPEG", "n01/x.JPEG2"));
  EXPECT_TRUE(GlobMatch("a**a", "aa"));
  EXPECT_TRUE(GlobMatch("*a*", "*a*"));
  EXPECT_FALSE(GlobMatch("?", ""));
  EXPECT_FALSE(GlobMatch("abc", "ab"));
  // Backtracking is bounded: a long key against many stars ends at once.
  EXPECT_FALSE(GlobMatch("*a*a*a*a*a*a*a*b", std::string(10000, 'a')));
}

// The held-out part: exactly round(f * n) of the n records the steps before
// kept, those with the smallest Draw(seed, kStreamViewSplit, index).
TEST_F(ViewTest, SplitHoldsOutTheRecordsOfSmallestHash) {
  const std::string base = R"("datasets": ["a", "b"], "classes": {"names": ["n00000001", "n00000002", "n00000003"]}, )";
  SP_ASSERT_OK_AND_ASSIGN(DatasetView kept, Open(base.substr(0, base.size() - 2)));
  const std::vector<uint64_t> all = SelectedBase(kept);
  ASSERT_EQ(all.size(), 90u);
  SP_ASSERT_OK_AND_ASSIGN(DatasetView held,
                          Open(base + R"("split": {"seed": 11, "fraction": 0.1, "take": "held_out"})", "h.json"));
  SP_ASSERT_OK_AND_ASSIGN(DatasetView rest,
                          Open(base + R"("split": {"seed": 11, "fraction": 0.1, "take": "rest"})", "r.json"));
  EXPECT_EQ(held.records, 9u);
  EXPECT_EQ(rest.records, 81u);
  std::vector<std::pair<uint64_t, uint64_t>> by_hash;
  for (uint64_t r : all) by_hash.emplace_back(common::Draw(11, common::kStreamViewSplit, r), r);
  std::sort(by_hash.begin(), by_hash.end());
  std::vector<uint64_t> want;
  for (int i = 0; i < 9; ++i) want.push_back(by_hash[i].second);
  std::sort(want.begin(), want.end());
  EXPECT_EQ(SelectedBase(held), want);
  for (uint64_t r : all) EXPECT_NE(held.Selected(r), rest.Selected(r)) << r;
  EXPECT_NE(held.fingerprint, rest.fingerprint);
  // The same file gives the same records; another seed others.
  SP_ASSERT_OK_AND_ASSIGN(DatasetView again,
                          Open(base + R"("split": {"seed": 11, "fraction": 0.1, "take": "held_out"})", "h2.json"));
  EXPECT_EQ(again.selected, held.selected);
  EXPECT_EQ(again.fingerprint, held.fingerprint);
  SP_ASSERT_OK_AND_ASSIGN(DatasetView seed12,
                          Open(base + R"("split": {"seed": 12, "fraction": 0.1, "take": "held_out"})", "s.json"));
  EXPECT_NE(seed12.selected, held.selected);
}

TEST_F(ViewTest, SplitOfEveryRecordOrNone) {
  SP_ASSERT_OK_AND_ASSIGN(DatasetView all,
                          Open(R"("datasets": ["a"], "split": {"seed": 0, "fraction": 1, "take": "held_out"})"));
  EXPECT_EQ(all.records, 200u);
  SP_ASSERT_OK_AND_ASSIGN(DatasetView rest,
                          Open(R"("datasets": ["a"], "split": {"seed": 0, "fraction": 0.0, "take": "rest"})", "r.json"));
  EXPECT_EQ(rest.records, 200u);
  // 0.5% of 200 is 1 record; 0.2% rounds to none, which selects nothing.
  SP_ASSERT_OK_AND_ASSIGN(DatasetView one,
                          Open(R"("datasets": ["a"], "split": {"seed": 5, "fraction": 0.005, "take": "held_out"})", "o.json"));
  EXPECT_EQ(one.records, 1u);
  EXPECT_THAT(Open(R"("datasets": ["a"], "split": {"seed": 5, "fraction": 0.002, "take": "held_out"})", "z.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("z.json: the view selects no record")));
}

// ImageNet-100 from a packed ImageNet-1k: 100 of 1,000 classes, relabelled
// 0..99 in the order the view names them (docs/reader.md, "Views").
TEST(ViewImageNetTest, HundredClassesOfAThousand) {
  testing::TempDir dir;
  ASSERT_TRUE(testing::WriteWnidDataset(dir.Join("imagenet-1k-train"), 3000, 1000, 0, 700).ok());
  std::vector<std::string> names;
  for (int c = 990; c >= 0; c -= 10) names.push_back("\"" + WnidName(c) + "\"");
  testing::WriteText(dir.Join("imagenet100.view.json"),
                     absl::StrCat(R"({"shardpack_view": 1, "datasets": ["imagenet-1k-train"],
                                     "classes": {"names": [)", absl::StrJoin(names, ", "), "]}}"));
  SP_ASSERT_OK_AND_ASSIGN(DatasetView v, OpenView(dir.Join("imagenet100.view.json")));
  EXPECT_EQ(v.records, 300u);
  ASSERT_EQ(v.schema.labels[0].classes.size(), 100u);
  EXPECT_EQ(v.schema.labels[0].classes[0], "n00000990");
  EXPECT_EQ(v.schema.labels[0].classes[99], "n00000000");
  const Meta m = ReadMeta(v);
  std::vector<uint64_t> per_class(100);
  for (uint64_t r : SelectedBase(v)) {
    ASSERT_EQ(m.labels[r] % 10, 0) << r;
    const int64_t label = v.MapLabel(0, m.labels[r]);
    EXPECT_EQ(label, (990 - m.labels[r]) / 10);
    ++per_class[label];
  }
  EXPECT_EQ(per_class, std::vector<uint64_t>(100, 3));
}

struct BadView {
  std::string text;  // the whole file
  absl::StatusCode code;
  std::string message;  // a part of the message, after "<dir>/v.json: "
};

// The start of a view file naming dataset "a", for the cases below.
constexpr char kViewOfA[] = R"("shardpack_view": 1, "datasets": ["a"])";

// Bad JSON, the version, unknown keys, datasets, classes and indices.
std::vector<BadView> BadHeadViews() {
  const std::string d = kViewOfA;
  const auto arg = absl::StatusCode::kInvalidArgument;
  return {
      {R"({"shardpack_view": 1, "datasets": ["a"],)", arg, "v.json:1:"},
      {R"({"shardpack_view": 1, "datasets": ["a"], "split": {"seed": 1, "fraction": NaN, "take": "rest"}})", arg, "not valid JSON"},
      {R"({"shardpack_view": 1, "datasets": ["a"], "split": {"seed": 1, "fraction": 1e400, "take": "rest"}})", arg, "not valid JSON"},
      {R"({"shardpack_view": 1, "x": )" + std::string(100, '[') + std::string(100, ']') + "}", arg,
       "nested more than 64"},
      {R"({"datasets": ["a"]})", arg, "not a shardpack view (no \"shardpack_view\": 1)"},
      {R"({"shardpack_view": 2, "datasets": ["a"]})", arg, "shardpack_view: version 2 is not supported"},
      {R"({"shardpack_view": "1", "datasets": ["a"]})", arg, "shardpack_view: expected a version number, found string"},
      {"{" + d + R"(, "clases": {}})", arg, "clases: unknown key (known: shardpack_view, datasets, classes"},
      {R"({"shardpack_view": 1})", arg, "datasets: missing"},
      {R"({"shardpack_view": 1, "datasets": []})", arg, "datasets: empty"},
      {R"({"shardpack_view": 1, "datasets": "a"})", arg, "datasets: expected an array, found string"},
      {R"({"shardpack_view": 1, "datasets": ["a", 3]})", arg, "datasets[1]: expected a string, found a non-negative integer"},
      {"{" + d + R"(, "classes": ["n00000001"]})", arg, "classes: expected an object, found array"},
      {"{" + d + R"(, "classes": {"names": []}})", arg, "classes.names: empty"},
      {"{" + d + R"(, "classes": {"names": ["n00000001", "n00000001"]}})", arg, "classes.names[1]: 'n00000001' is named twice"},
      {"{" + d + R"(, "classes": {"names": ["n00000001", "tabby"]}})", arg, "classes.names[1]: no class 'tabby' in label field 'label' (10 classes)"},
      {"{" + d + R"(, "classes": {"field": "fine", "names": ["n00000001"]}})", arg, "classes.field: no label field 'fine' (the datasets have: label)"},
      {"{" + d + R"(, "classes": {"names": ["n00000001"], "relabel": 1}})", arg, "classes.relabel: expected true or false"},
      {"{" + d + R"(, "classes": {"names": ["n00000001"], "relable": false}})", arg, "classes.relable: unknown key"},
      {"{" + d + R"(, "indices": []})", arg, "indices: empty"},
      {"{" + d + R"(, "indices": [-1]})", arg, "indices[0]: expected an index (a non-negative integer) or a range [begin, end], found a negative integer"},
      {"{" + d + R"(, "indices": [1.5]})", arg, "indices[0]: expected an index"},
      {"{" + d + R"(, "indices": ["3"]})", arg, "indices[0]: expected an index"},
      {"{" + d + R"(, "indices": [0, [5, 2]]})", arg, "indices[1]: range [5, 2) has begin > end"},
      {"{" + d + R"(, "indices": [[1, 2, 3]]})", arg, "indices[0]: a range is [begin, end]"},
      {"{" + d + R"(, "indices": [[-1, 2]]})", arg, "indices[0]: a range is [begin, end]"},
      {"{" + d + R"(, "indices": [200]})", arg, "indices[0]: index 200 is past the end (the datasets hold 200 records)"},
      {"{" + d + R"(, "indices": [18446744073709551615]})", arg, "indices[0]: index 18446744073709551615 is past the end"},
      {"{" + d + R"(, "indices": [0, [100, 201]]})", arg, "indices[1]: range [100, 201) runs past the end"},
      {"{" + d + R"(, "indices": [1e30]})", arg, "indices[0]: expected an index"},
      {"{" + d + R"(, "indices": [[5, 5]]})", arg, "the view selects no record"},
  };
}

// Where and split.
std::vector<BadView> BadSelectionViews() {
  const std::string d = kViewOfA;
  const auto arg = absl::StatusCode::kInvalidArgument;
  return {
      {"{" + d + R"(, "where": {}})", arg, "where: no condition"},
      {"{" + d + R"(, "where": {"key_prefix": 3}})", arg, "where.key_prefix: expected a string"},
      {"{" + d + R"(, "where": {"labels": {"in": []}}})", arg, "where.labels.in: empty"},
      {"{" + d + R"(, "where": {"labels": {"in": [12]}}})", arg, "where.labels.in[0]: label 12 is not a class of field 'label' (0..9)"},
      {"{" + d + R"(, "where": {"labels": {"in": [-1]}}})", arg, "where.labels.in[0]: label -1 is not a class"},
      {"{" + d + R"(, "where": {"labels": {"in": ["tabby"]}}})", arg, "where.labels.in[0]: no class 'tabby'"},
      {"{" + d + R"(, "where": {"labels": {"in": [true]}}})", arg, "where.labels.in[0]: expected a label (a 64-bit integer) or a class name, found boolean"},
      {"{" + d + R"(, "where": {"labels": {"in": [18446744073709551615]}}})", arg, "where.labels.in[0]: expected a label"},
      {"{" + d + R"(, "where": {"labels": {"is": [1]}}})", arg, "where.labels.is: unknown key"},
      {"{" + d + R"(, "where": {"key_prefix": "zzz"}})", arg, "the view selects no record"},
      {"{" + d + R"(, "where": {"strings": []}})", arg, "where.strings: empty"},
      {"{" + d + R"(, "where": {"strings": [3]}})", arg, "where.strings[0]: expected an object, found a non-negative integer"},
      {"{" + d + R"(, "where": {"strings": [{"glob": "*"}]}})", arg, "where.strings[0].field: missing"},
      {"{" + d + R"(, "where": {"strings": [{"field": "caption"}]}})", arg, "where.strings[0]: no test (in, prefix or glob)"},
      {"{" + d + R"(, "where": {"strings": [{"field": "caption", "regex": "."}]}})", arg, "where.strings[0].regex: unknown key"},
      {"{" + d + R"(, "where": {"strings": [{"field": "caption", "in": "a"}]}})", arg, "where.strings[0].in: expected an array, found string"},
      {"{" + d + R"(, "where": {"strings": [{"field": "caption", "glob": "*"}]}})", arg, "where.strings[0].field: no field 'caption' (the datasets' string fields: none)"},
      {"{" + d + R"(, "where": {"strings": [{"field": "label", "prefix": "n"}]}})", arg, "where.strings[0].field: field 'label' is label, not a string"},
      {"{" + d + R"(, "split": {"fraction": 0.1, "take": "rest"}})", arg, "split.seed: missing"},
      {"{" + d + R"(, "split": {"seed": -1, "fraction": 0.1, "take": "rest"}})", arg, "split.seed: expected an integer in [0, 2^64), found a negative integer"},
      {"{" + d + R"(, "split": {"seed": 1.5, "fraction": 0.1, "take": "rest"}})", arg, "split.seed: expected an integer"},
      {"{" + d + R"(, "split": {"seed": 1, "fraction": "NaN", "take": "rest"}})", arg, "split.fraction: expected a number, found string"},
      {"{" + d + R"(, "split": {"seed": 1, "fraction": -0.1, "take": "rest"}})", arg, "split.fraction: -0.1 is not in [0, 1]"},
      {"{" + d + R"(, "split": {"seed": 1, "fraction": 1.5, "take": "rest"}})", arg, "split.fraction: 1.5 is not in [0, 1]"},
      {"{" + d + R"(, "split": {"seed": 1, "fraction": 0.5}})", arg, "split.take: missing"},
      {"{" + d + R"(, "split": {"seed": 1, "fraction": 0.5, "take": "both"}})", arg, "split.take: 'both' is neither \"held_out\" nor \"rest\""},
      {"{" + d + R"(, "split": {"seed": 1, "fraction": 0.5, "take": "rest", "by": 2}})", arg, "split.by: unknown key"},
      {"{" + d + R"(, "split": {"seed": 1, "fraction": 0, "take": "held_out"}})", arg, "the view selects no record"},
      {R"({"shardpack_view": 1, "datasets": ["missing"]})", absl::StatusCode::kNotFound, "datasets[0]: "},
  };
}

// Every field with a wrong type, value or key: one clear error naming it.
TEST_F(ViewTest, HostileViewFilesAreRefusedNamingTheField) {
  std::vector<BadView> cases = BadHeadViews();
  for (BadView& c : BadSelectionViews()) cases.push_back(std::move(c));
  for (const BadView& c : cases) {
    SCOPED_TRACE(c.text);
    testing::WriteText(dir_.Join("v.json"), c.text);
    EXPECT_THAT(OpenView(dir_.Join("v.json")),
                StatusIs(c.code, HasSubstr(dir_.Join("v.json"))));
    EXPECT_THAT(OpenView(dir_.Join("v.json")), StatusIs(c.code, HasSubstr(c.message)));
  }
}

TEST_F(ViewTest, AMissingDatasetIsNamedByItsPath) {
  EXPECT_THAT(Open(R"("datasets": ["a", "nowhere/train"])"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr(absl::StrCat("v.json: datasets[1]: ", dir_.Join("nowhere/train"),
                                              ": no such file or directory"))));
}

TEST_F(ViewTest, DatasetsOfAnotherSchemaAreRefusedNamingBothAndTheDifference) {
  ASSERT_TRUE(testing::WriteWnidDataset(dir_.Join("c"), 50, 11).ok());
  EXPECT_THAT(Open(R"("datasets": ["a", "b", "c"])"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(absl::StrCat("datasets[2]: ", dir_.Join("c"),
                                              " has another schema than ", dir_.Join("a"),
                                              ": label field 'label' has 10 classes vs 11"))));
  std::filesystem::create_directories(dir_.Join("d"));
  std::vector<testing::OwnedRecord> rgb;
  for (int i = 0; i < 4; ++i) rgb.push_back(testing::RawRecord(i, 2, 2, 3));
  ASSERT_TRUE(testing::WriteDataset(dir_.Join("d"), Backend::kShard, rgb,
                                    testing::RawSchema(2, 2, 3, Layout::kHWC, 1)).ok());
  EXPECT_THAT(Open(R"("datasets": ["a", "d"])"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("image raw/hwc 2x2x1 vs raw/hwc 2x2x3")));
}

TEST_F(ViewTest, AViewOfAViewIsRefused) {
  testing::WriteText(dir_.Join("inner.json"), R"({"shardpack_view": 1, "datasets": ["a"]})");
  EXPECT_THAT(Open(R"("datasets": ["inner.json"])"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("datasets[0]: " + dir_.Join("inner.json") +
                                 " is a view; a view names datasets, not views")));
  // Even a view naming itself ends at once.
  EXPECT_THAT(Open(R"("datasets": ["v.json"])"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is a view")));
}

TEST_F(ViewTest, ALoneShardFileHasNoSchemaForAView) {
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(dir_.Join("a")));
  EXPECT_THAT(Open(absl::StrCat(R"("datasets": ["a/)", m.shards[0].path, R"("])")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has no schema")));
}

TEST_F(ViewTest, DatasetsOfOtherBackendsAndAbsolutePaths) {
  ASSERT_TRUE(testing::WriteWnidDataset(dir_.Join("l"), 200, 10, 0, 64, Backend::kLmdb).ok());
  SP_ASSERT_OK_AND_ASSIGN(
      DatasetView v,
      Open(absl::StrCat(R"("datasets": [")", dir_.Join("l"), R"("], "classes": {"names": ["n00000004"]})")));
  SP_ASSERT_OK_AND_ASSIGN(DatasetView s,
                          Open(R"("datasets": ["a"], "classes": {"names": ["n00000004"]})", "s.json"));
  EXPECT_EQ(v.records, 20u);
  EXPECT_EQ(v.selected, s.selected);
  // Same records, schema and selection, another backend: another dataset.
  EXPECT_NE(v.fingerprint, s.fingerprint);
}

// A shard holding another count than its manifest entry would shift every
// index after it: the scan for labels refuses it, naming the shard.
TEST_F(ViewTest, AShardOfAnotherRecordCountThanItsManifestIsRefused) {
  const std::string manifest = dir_.Join("a/manifest.json");
  std::ifstream in(manifest);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find("\"records\": 64");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 13, "\"records\": 63");
  const size_t total = text.find("\"records\": 200");  // the manifest's sum, kept consistent
  ASSERT_NE(total, std::string::npos) << text;
  text.replace(total, 14, "\"records\": 199");
  testing::WriteText(manifest, text);
  // The record table counts 200 records: it no longer agrees.
  EXPECT_THAT(Open(R"("datasets": ["a"], "classes": {"names": ["n00000001"]})"),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("records.idx @16: 200 records, the manifest's shards hold 199")));
  // Without a table the scan finds the shard that holds another count.
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(dir_.Join("a")));
  m.record_table.reset();
  ASSERT_TRUE(WriteManifest(dir_.Join("a"), m).ok());
  EXPECT_THAT(Open(R"("datasets": ["a"], "classes": {"names": ["n00000001"]})", "w.json"),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("holds 64 records, the manifest says 63")));
}

TEST_F(ViewTest, AJsonFileThatIsNoObjectIsNotAView) {
  testing::WriteText(dir_.Join("list.json"), "[1, 2]");
  EXPECT_THAT(OpenView(dir_.Join("list.json")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a dataset or shard")));
}

// Bounded JSON (docs/reliability.md): a view costs memory for what it
// means, not for its text, and text past a bound is refused naming it.
TEST_F(ViewTest, ADatasetNamedManyTimesIsOpenedOnce) {
  std::string names;
  for (int i = 0; i < 100000; ++i) absl::StrAppend(&names, i ? ", " : "", "\"a\"");
  SP_ASSERT_OK_AND_ASSIGN(DatasetView v, Open(absl::StrCat(R"("datasets": [)", names, "]")));
  ASSERT_EQ(v.datasets.size(), 100000u);
  EXPECT_EQ(v.base_records, 200u * 100000u);
  // One NamedPath (one manifest read and held) behind every naming.
  EXPECT_EQ(v.datasets[0].use_count(), 100000);
  EXPECT_EQ(v.datasets[0].get(), v.datasets[99999].get());
  EXPECT_EQ(v.Locate(200u * 99999u + 5), (std::pair<size_t, uint64_t>{99999, 5}));
}

TEST_F(ViewTest, AViewStartingWithAByteOrderMarkIsRead) {
  testing::WriteText(dir_.Join("bom.json"),
                     "\xEF\xBB\xBF" R"({"shardpack_view": 1, "datasets": ["a"]})");
  SP_ASSERT_OK_AND_ASSIGN(bool is_view, IsViewFile(dir_.Join("bom.json")));
  EXPECT_TRUE(is_view);
  SP_ASSERT_OK_AND_ASSIGN(DatasetView v, OpenView(dir_.Join("bom.json")));
  EXPECT_EQ(v.records, 200u);
}

TEST_F(ViewTest, AViewTooLargeIsRefusedAsAViewNamingTheLimit) {
  const std::string path = dir_.Join("big.json");
  testing::WriteText(path, R"({"shardpack_view": 1, "datasets": ["a"], "indices": [0)");
  std::filesystem::resize_file(path, kMaxViewBytes + 1);  // sparse: no disk
  SP_ASSERT_OK_AND_ASSIGN(bool is_view, IsViewFile(path));
  EXPECT_TRUE(is_view);
  EXPECT_THAT(OpenView(path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(path + ": 67108865 bytes, more than the 67108864 a view "
                                        "file may have")));
}

TEST_F(ViewTest, AKeyTwiceIsRefusedNamingIt) {
  EXPECT_THAT(Open(R"("datasets": ["a"], "datasets": ["b"])"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("v.json: key 'datasets' appears twice in one object")));
  EXPECT_THAT(Open(R"("datasets": ["a"], "split": {"seed": 1, "seed": 2, "fraction": 0.5, "take": "rest"})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("key 'seed' appears twice")));
}

TEST(ViewSpecTest, CountsPastTheBoundsAreRefusedAsTheTextIsParsed) {
  std::string indices;
  indices.reserve(2 * kMaxViewIndices + 2);
  for (uint64_t i = 0; i <= kMaxViewIndices; ++i) indices += i ? ",0" : "0";
  EXPECT_THAT(ParseViewSpec(absl::StrCat(R"({"shardpack_view": 1, "datasets": ["a"], "indices": [)",
                                         indices, "]}"),
                            "v.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("v.json: more than 8388608 elements in \"indices\", the most a "
                                 "view file may hold")));
  std::string names;
  for (uint64_t i = 0; i <= kMaxViewValues; ++i) names += i ? ",\"a\"" : "\"a\"";
  EXPECT_THAT(ParseViewSpec(absl::StrCat(R"({"shardpack_view": 1, "datasets": [)", names, "]}"),
                            "v.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("v.json: more than 1048576 JSON values, the most a view file "
                                 "may hold")));
  // Streamed indices are the same entries the text names.
  SP_ASSERT_OK_AND_ASSIGN(
      ViewSpec spec,
      ParseViewSpec(R"({"indices": [3, [5, 9]], "shardpack_view": 1, "datasets": ["a"]})", "v.json"));
  ASSERT_TRUE(spec.indices.has_value());
  ASSERT_EQ(spec.indices->size(), 2u);
  EXPECT_EQ((*spec.indices)[1].end, 9u);
  SP_ASSERT_OK_AND_ASSIGN(spec, ParseViewSpec(R"({"shardpack_view": 1, "datasets": ["a"]})", "v"));
  EXPECT_FALSE(spec.indices.has_value());
  EXPECT_THAT(ParseViewSpec(R"({"shardpack_view": 1, "datasets": ["a"], "indices": []})", "v"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("v: indices: empty")));
}

// A dataset packed before manifest 1.1 has no record table: its labels and
// keys are scanned. The table and the scan select the same records; a
// damaged table is an error naming it, never a wrong selection.
TEST_F(ViewTest, TheRecordTableAndAScanSelectAlike) {
  namespace fs = std::filesystem;
  fs::copy(dir_.Join("a"), dir_.Join("old"), fs::copy_options::recursive);
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(dir_.Join("old")));
  ASSERT_TRUE(m.record_table.has_value());
  m.record_table.reset();
  ASSERT_TRUE(WriteManifest(dir_.Join("old"), m).ok());
  fs::remove(dir_.Join("old/records.idx"));
  const std::string selection =
      R"("classes": {"names": ["n00000007", "n00000002"]}, "where": {"key_glob": "*1.png"})";
  SP_ASSERT_OK_AND_ASSIGN(DatasetView table,
                          Open(absl::StrCat(R"("datasets": ["a"], )", selection), "t.json"));
  SP_ASSERT_OK_AND_ASSIGN(DatasetView scan,
                          Open(absl::StrCat(R"("datasets": ["old"], )", selection), "s.json"));
  EXPECT_GT(table.records, 0u);
  EXPECT_EQ(table.selected, scan.selected);
  EXPECT_EQ(table.records, scan.records);
  // One byte of the table flipped: its CRC-32C no longer matches.
  {
    std::fstream f(dir_.Join("a/records.idx"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x5a');
  }
  absl::StatusOr<DatasetView> damaged =
      Open(absl::StrCat(R"("datasets": ["a"], )", selection), "d.json");
  ASSERT_FALSE(damaged.ok());
  EXPECT_THAT(damaged.status().message(), HasSubstr("records.idx"));
}

}  // namespace
}  // namespace shardpack::dataset
