// Views of datasets of fields (dataset/view.h): conditions on string fields
// (where.strings), their canonical text, a damaged record met while
// selecting, and datasets of other fields refused naming the field.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dataset/view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/dataset.h"
#include "shardpack/fields.h"
#include "tests/dataset/view_fixtures.h"
#include "tests/testing/field_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack::dataset {
namespace {

using ::shardpack::testing::IsOk;
using ::shardpack::testing::SampleCaption;
using ::shardpack::testing::StatusIs;
using ::testing::HasSubstr;

constexpr uint64_t kRecords = 40;
// The photo's bytes: nothing here decodes it.
const std::vector<uint8_t> kPhoto = {0xff, 0xd8, 0xff, 0xd9};
constexpr ImageInfo kPhotoInfo{Encoding::kJpeg, Layout::kHWC, 24, 40, 3};

// Records of testing::EveryFieldType() (captions "record <i>: a café
// scene", categories cat/dog/bird by i % 3, keys "s/<i>"), 16 a shard.
absl::StatusOr<Manifest> WriteFields(const std::string& dir, uint64_t n = kRecords) {
  std::filesystem::create_directories(dir);
  DatasetWriterOptions o;
  o.directory = dir;
  o.shard_max_records = 16;
  return testing::WriteFieldsDataset(o, n, kPhoto, kPhotoInfo);
}

class ViewFieldsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_THAT(WriteFields(dir_.Join("f")), IsOk()); }
  absl::StatusOr<DatasetView> Open(const std::string& body, const std::string& name = "v.json") {
    testing::WriteText(dir_.Join(name), absl::StrCat(R"({"shardpack_view": 1, )", body, "}"));
    return OpenView(dir_.Join(name));
  }
  testing::TempDir dir_;
};

TEST_F(ViewFieldsTest, AGlobOnACaptionSelectsTheRecordsWhoseCaptionMatches) {
  SP_ASSERT_OK_AND_ASSIGN(
      DatasetView v,
      Open(R"("datasets": ["f"], "where": {"strings": [{"field": "caption", "glob": "record 1*"}]})"));
  uint64_t n = 0;
  for (uint64_t r = 0; r < kRecords; ++r) {
    const bool in = SampleCaption(r).starts_with("record 1");
    EXPECT_EQ(v.Selected(r), in) << r;
    n += in;
  }
  EXPECT_EQ(n, 11u);  // 1 and 10..19
  EXPECT_EQ(v.records, n);
  EXPECT_THAT(v.canonical,
              HasSubstr(R"("where":{"strings":[{"field":"caption","glob":"record 1*"}]})"));
}

TEST_F(ViewFieldsTest, EveryConditionMustHoldStringsLabelsAndKeysTogether) {
  // in: records 3, 4 and 30 (and a caption no record has); the prefix keeps
  // 3 and 30; category "cat" (i % 3 == 0) keeps both; the key prefix "s/3"
  // keeps both.
  const std::string in = absl::StrCat(R"([")", SampleCaption(30), R"(", ")", SampleCaption(4),
                                      R"(", "no such caption", ")", SampleCaption(3), R"("])");
  SP_ASSERT_OK_AND_ASSIGN(
      DatasetView v,
      Open(absl::StrCat(R"("datasets": ["f"], "where": {"strings": [{"field": "caption", "in": )",
                        in, R"(}, {"field": "caption", "prefix": "record 3"}],
                        "labels": {"field": "category", "in": ["cat"]}, "key_prefix": "s/3"})")));
  EXPECT_EQ(v.records, 2u);
  for (uint64_t r = 0; r < kRecords; ++r) EXPECT_EQ(v.Selected(r), r == 3 || r == 30) << r;
  // The same test in another order, with a repeat: the same view.
  const std::string reordered = absl::StrCat(R"([")", SampleCaption(3), R"(", ")",
                                             SampleCaption(3), R"(", ")", SampleCaption(30),
                                             R"(", "no such caption", ")", SampleCaption(4), R"("])");
  SP_ASSERT_OK_AND_ASSIGN(
      DatasetView w,
      Open(absl::StrCat(R"("datasets": ["f"], "where": {"key_prefix": "s/3", "strings": [{"field": "caption", "in": )",
                        reordered, R"(}, {"prefix": "record 3", "field": "caption"}],
                        "labels": {"in": [0], "field": "category"}})"),
           "w.json"));
  EXPECT_EQ(w.fingerprint, v.fingerprint);
  EXPECT_EQ(w.canonical, v.canonical);
}

TEST_F(ViewFieldsTest, AConditionOnAFieldOfAnotherTypeNamesItsTypeAndTheStringFields) {
  EXPECT_THAT(Open(R"("datasets": ["f"], "where": {"strings": [{"field": "boxes", "glob": "*"}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("where.strings[0].field: field 'boxes' is f32[n,4], not a string "
                                 "(the datasets' string fields: caption)")));
  EXPECT_THAT(Open(R"("datasets": ["f"], "where": {"strings": [{"field": "title", "glob": "*"}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("where.strings[0].field: no field 'title' (the datasets' string "
                                 "fields: caption)")));
  EXPECT_THAT(Open(R"("datasets": ["f"], "where": {"strings": [{"field": "caption", "in": ["x"]}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the view selects no record")));
}

// A flipped byte in a record's field section: reading the records to test
// their captions fails, naming the dataset, rather than selecting by a
// damaged value.
TEST_F(ViewFieldsTest, ADamagedRecordMetWhileSelectingIsAnErrorNamingTheDataset) {
  const std::string caption = SampleCaption(20);
  bool flipped = false;
  for (const auto& entry : std::filesystem::directory_iterator(dir_.Join("f"))) {
    if (entry.path().extension() != ".shard") continue;
    std::fstream f(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const size_t at = bytes.find(caption);
    if (at == std::string::npos) continue;
    f.seekp(static_cast<std::streamoff>(at + 7));
    f.put('9');  // "record 20" -> "record 90"
    flipped = true;
  }
  ASSERT_TRUE(flipped);
  EXPECT_THAT(Open(R"("datasets": ["f"], "where": {"strings": [{"field": "caption", "glob": "record 9*"}]})"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr(dir_.Join("f"))));
}

TEST_F(ViewFieldsTest, DatasetsOfOtherFieldsAreRefusedNamingTheField) {
  // A classic dataset (an image and labels) beside one of fields.
  ASSERT_THAT(testing::WriteWnidDataset(dir_.Join("classic"), 10, 3), IsOk());
  EXPECT_THAT(Open(R"("datasets": ["f", "classic"])"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has another schema than")));
  // Two datasets of fields whose declarations differ in one field only.
  std::vector<Field> fields = testing::EveryFieldType();
  fields[testing::kCaption].optional = true;
  SP_ASSERT_OK_AND_ASSIGN(Schema other, MakeSchema(fields));
  const std::string dir = dir_.Join("g");
  std::filesystem::create_directories(dir);
  DatasetWriterOptions o;
  o.directory = dir;
  o.schema = other;
  SP_ASSERT_OK_AND_ASSIGN(std::unique_ptr<DatasetWriter> writer, DatasetWriter::Create(o));
  RecordFields rf(other);
  const testing::FieldSample s = testing::SampleOf(0, kPhoto, kPhotoInfo);
  SP_ASSERT_OK_AND_ASSIGN(Record r, rf.Build(s.key, s.Values()));
  ASSERT_THAT(writer->Add(r), IsOk());
  ASSERT_THAT(writer->Finish(), IsOk());
  EXPECT_THAT(Open(R"("datasets": ["f", "g"])"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("field 1 'caption' string vs field 1 'caption' string?")));
}

}  // namespace
}  // namespace shardpack::dataset
