// Fields: the schema, the field section of a record, its CRC, and the checks
// of each field type, written and read back through DatasetWriter.
#include "shardpack/fields.h"

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/dataset.h"
#include "shardpack/file.h"
#include "shardpack/manifest.h"
#include "shardpack/shard.h"
#include "tests/testing/field_fixtures.h"
#include "tests/testing/shard_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

using ::testing::HasSubstr;
using testing::FieldOf;
using testing::StatusIs;

ByteSpan Bytes(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

// image (JPEG, varying), caption, boxes [n, 4] f32, category [label, 3
// classes], mask (raw 1-channel, varying, optional), meta (json, optional),
// embedding [4] f16.
std::vector<Field> DetectionFields() {
  std::vector<Field> f;
  f.push_back(FieldOf("photo", FieldType::kImage));
  f.back().image.encoding = Encoding::kJpeg;
  f.push_back(FieldOf("caption", FieldType::kString));
  f.push_back(FieldOf("boxes", FieldType::kArray));
  f.back().dtype = ArrayDType::kF32;
  f.back().shape = {0, 4};
  f.push_back(FieldOf("category", FieldType::kLabel));
  f.back().classes = {"cat", "dog", "bird"};
  f.push_back(FieldOf("mask", FieldType::kImage));
  f.back().optional = true;
  f.back().image = {Encoding::kRaw, Layout::kHWC, 0, 0, 1};
  f.push_back(FieldOf("meta", FieldType::kJson));
  f.back().optional = true;
  f.push_back(FieldOf("embedding", FieldType::kArray));
  f.back().dtype = ArrayDType::kF16;
  f.back().shape = {4};
  return f;
}

// The values of one sample, owning what the views point at.
struct Sample {
  std::string jpeg = std::string("\xff\xd8\xff\xd9", 4);
  std::string caption = "a cat on a mat";
  std::vector<float> boxes = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<uint8_t> mask = {0, 1, 1, 0, 2, 2};
  std::string meta = R"({"id": 7})";
  std::vector<uint16_t> embedding = {0x3c00, 0x4000, 0x4200, 0x4400};
  std::vector<FieldValue> values;

  Sample() : values(7) {
    values[0].present = true;
    values[0].image = {Encoding::kJpeg, Layout::kHWC, 2, 3, 3};
    values[0].bytes = Bytes(jpeg);
    values[1].present = true;
    values[1].bytes = Bytes(caption);
    values[2].present = true;
    values[2].bytes = {reinterpret_cast<const uint8_t*>(boxes.data()), boxes.size() * 4};
    values[3].present = true;
    values[3].label = 1;
    values[4].present = true;
    values[4].image = {Encoding::kRaw, Layout::kHWC, 2, 3, 1};
    values[4].bytes = mask;
    values[5].present = true;
    values[5].bytes = Bytes(meta);
    values[6].present = true;
    values[6].bytes = {reinterpret_cast<const uint8_t*>(embedding.data()), 8};
  }
};

Schema DetectionSchema() {
  absl::StatusOr<Schema> s = MakeSchema(DetectionFields());
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

TEST(FieldsTest, AnImageAndLabelsMakeAClassicSchema) {
  std::vector<Field> fields = {FieldOf("image", FieldType::kImage),
                               FieldOf("fine", FieldType::kLabel),
                               FieldOf("coarse", FieldType::kLabel)};
  fields[0].image = {Encoding::kRaw, Layout::kHWC, 32, 32, 3};
  fields[1].classes = {"a", "b"};
  SP_ASSERT_OK_AND_ASSIGN(Schema schema, MakeSchema(fields));
  EXPECT_TRUE(schema.fields.empty());
  EXPECT_EQ(schema.image, fields[0].image);
  ASSERT_EQ(schema.labels.size(), 2u);
  EXPECT_EQ(schema.labels[0].classes, fields[1].classes);
  EXPECT_EQ(FieldsOf(schema), fields);
  // Renamed, reordered or optional, it is no longer classic.
  fields[0].name = "photo";
  EXPECT_FALSE(MakeSchema(fields)->fields.empty());
}

TEST(FieldsTest, DeclarationsThatCannotHoldAreRefusedNamingTheField) {
  auto refused = [](std::vector<Field> fields) { return MakeSchema(std::move(fields)).status(); };
  std::vector<Field> twice = {FieldOf("a", FieldType::kString),
                              FieldOf("a", FieldType::kBytes)};
  EXPECT_THAT(refused(twice), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("field 'a': declared twice")));
  for (std::string bad : std::vector<std::string>{"", "__key__", "a b", "caption\n", std::string(65, 'x')}) {
    EXPECT_THAT(refused({FieldOf(bad, FieldType::kString)}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("field name"))) << bad;
  }
  Field array = FieldOf("boxes", FieldType::kArray);
  EXPECT_THAT(refused({array}), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("field 'boxes': an array needs 1 to 8")));
  array.shape = {0, 0};
  EXPECT_THAT(refused({array}), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("only the first dimension may vary")));
  array.shape = {1u << 20, 1u << 20, 1u << 20};
  EXPECT_THAT(refused({array}), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("4 GiB")));
  std::vector<Field> many;
  for (int i = 0; i <= kMaxFields; ++i) {
    many.push_back(FieldOf("f" + std::to_string(i), FieldType::kBytes));
  }
  EXPECT_THAT(refused(many), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("65 fields")));
  std::vector<Field> labels;
  for (int i = 0; i <= kMaxLabels; ++i) {
    labels.push_back(FieldOf("l" + std::to_string(i), FieldType::kLabel));
  }
  EXPECT_THAT(refused(labels), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("more than 8 label fields")));
  Field label = FieldOf("l", FieldType::kLabel);
  label.classes = {"ok", "\xff"};
  EXPECT_THAT(refused({label}), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("class 1 is not UTF-8")));
}

TEST(FieldsTest, ARecordOfEveryTypeReadsBackAsWritten) {
  const Schema schema = DetectionSchema();
  ASSERT_EQ(schema.fields.size(), 7u);
  EXPECT_EQ(schema.image.encoding, Encoding::kJpeg);
  ASSERT_EQ(schema.labels.size(), 1u);
  RecordFields fields(schema);
  Sample sample;
  SP_ASSERT_OK_AND_ASSIGN(Record record, fields.Build("k/1", sample.values));
  EXPECT_EQ(record.key, "k/1");
  EXPECT_TRUE(std::ranges::equal(record.payload, Bytes(sample.jpeg)));
  ASSERT_EQ(record.labels.size(), 1);
  EXPECT_EQ(record.labels[0], 1);
  SP_EXPECT_OK(CheckRecordAgainstSchema(record, schema));

  std::vector<FieldValue> got(7);
  SP_ASSERT_OK(fields.Decode(record, got, /*check_crc=*/true));
  SP_EXPECT_OK(fields.CheckValues(got));
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(got[i].present) << i;
    EXPECT_TRUE(std::ranges::equal(got[i].bytes, sample.values[i].bytes)) << i;
  }
  EXPECT_EQ(got[0].image, sample.values[0].image);
  EXPECT_EQ(got[4].image, sample.values[4].image);
  EXPECT_EQ(got[3].label, 1);
  EXPECT_EQ(got[2].rows, 2u);
  EXPECT_EQ(got[6].rows, 4u);
}

TEST(FieldsTest, AnOptionalFieldsAbsenceIsRecordedAndARequiredOneIsRefused) {
  const Schema schema = DetectionSchema();
  RecordFields fields(schema);
  Sample sample;
  sample.values[4].present = false;
  sample.values[5].present = false;
  SP_ASSERT_OK_AND_ASSIGN(Record record, fields.Build("k", sample.values));
  std::vector<FieldValue> got(7);
  SP_ASSERT_OK(fields.Decode(record, got, true));
  EXPECT_FALSE(got[4].present);
  EXPECT_FALSE(got[5].present);
  EXPECT_TRUE(got[1].present);
  sample.values[1].present = false;
  EXPECT_THAT(fields.Build("k", sample.values).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("field 'caption': missing, and not optional")));
}

TEST(FieldsTest, ValuesThatDisagreeWithTheirFieldAreRefusedNamingIt) {
  RecordFields fields(DetectionSchema());
  auto refused = [&](int i, auto&& change) {
    Sample sample;
    change(sample.values[static_cast<size_t>(i)]);
    return fields.Build("k", sample.values).status();
  };
  const std::string not_utf8 = "caf\xe9";
  EXPECT_THAT(refused(1, [&](FieldValue& v) { v.bytes = Bytes(not_utf8); }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("field 'caption': not UTF-8")));
  const std::string bad_json = "{\"id\": ";
  EXPECT_THAT(refused(5, [&](FieldValue& v) { v.bytes = Bytes(bad_json); }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("field 'meta': not valid JSON")));
  EXPECT_THAT(refused(2, [](FieldValue& v) { v.bytes = v.bytes.first(12); }),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("field 'boxes': 12 bytes, not a whole number of 16-byte rows")));
  EXPECT_THAT(refused(6, [](FieldValue& v) { v.bytes = v.bytes.first(6); }),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("field 'embedding': 3 rows, the schema says 4")));
  EXPECT_THAT(refused(3, [](FieldValue& v) { v.label = 3; }),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("field 'category': label 3 is outside its 3 classes")));
  EXPECT_THAT(refused(4, [](FieldValue& v) { v.image.channels = 3; }),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("field 'mask': raw image of 6 bytes for raw 2x3x3")));
  EXPECT_THAT(refused(0, [](FieldValue& v) { v.image.encoding = Encoding::kRaw; }),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("field 'photo': raw image of 4 bytes")));
  Sample sample;
  EXPECT_THAT(fields.Build("k", std::span(sample.values).first(6)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("6 values for 7 fields")));
}

// Every byte of a record with fields is covered: a flipped byte anywhere is
// found by the record's CRC, and damage to the section's structure is told
// even without it.
TEST(FieldsTest, AFlippedByteAnywhereInTheRecordFailsItsCrc) {
  const Schema schema = DetectionSchema();
  RecordFields fields(schema);
  Sample sample;
  SP_ASSERT_OK_AND_ASSIGN(Record built, fields.Build("key", sample.values));
  std::vector<uint8_t> extra(built.extra.begin(), built.extra.end());
  std::vector<uint8_t> payload(built.payload.begin(), built.payload.end());
  std::string key(built.key);
  std::vector<FieldValue> got(7);
  for (size_t part = 0; part < 3; ++part) {
    size_t n = part == 0 ? extra.size() : part == 1 ? payload.size() : key.size();
    for (size_t i = 0; i < n; ++i) {
      Record r = built;
      std::vector<uint8_t> e = extra, p = payload;
      std::string k = key;
      if (part == 0) e[i] ^= 0x10;
      if (part == 1) p[i] ^= 0x10;
      if (part == 2) k[i] ^= 0x10;
      r.extra = e;
      r.payload = p;
      r.key = k;
      EXPECT_THAT(fields.Decode(r, got, true), StatusIs(absl::StatusCode::kDataLoss, ::testing::_))
          << "part " << part << " byte " << i;
    }
  }
  Record r = built;
  r.labels = {2};
  EXPECT_THAT(fields.Decode(r, got, true),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("record CRC-32C mismatch")));
}

TEST(FieldsTest, ADamagedSectionIsToldWithoutTheCrc) {
  const Schema schema = DetectionSchema();
  RecordFields fields(schema);
  Sample sample;
  SP_ASSERT_OK_AND_ASSIGN(Record built, fields.Build("key", sample.values));
  std::vector<uint8_t> extra(built.extra.begin(), built.extra.end());
  auto decoded = [&](std::vector<uint8_t> e) {
    Record r = built;
    r.extra = e;
    return CheckRecordAgainstSchema(r, schema);
  };
  auto put32 = [](std::vector<uint8_t> e, size_t at, uint32_t v) {
    std::memcpy(e.data() + at, &v, 4);
    return e;
  };
  EXPECT_THAT(decoded({extra.begin(), extra.begin() + 20}),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("less than the 32 its 5 fields need")));
  EXPECT_THAT(decoded(put32(extra, 12, 0xffffff00u)),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("run past the field section")));
  EXPECT_THAT(decoded(put32(extra, 12 + 4 * 4, 7)),  // embedding: 8 bytes
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr(absl::StrCat("field section of ", extra.size(), " bytes holds ",
                                              extra.size() - 1, " bytes of fields"))));
  std::vector<uint8_t> marks = extra;
  marks[4] |= 0x80;  // field 7: not declared
  EXPECT_THAT(decoded(marks), StatusIs(absl::StatusCode::kDataLoss,
                                       HasSubstr("marks fields the schema does not have")));
  std::vector<uint8_t> missing = extra;
  missing[4] &= ~0x02;  // caption absent but required
  EXPECT_THAT(decoded(missing), StatusIs(absl::StatusCode::kDataLoss,
                                         HasSubstr("field 'caption': missing, and not optional")));
  std::vector<uint8_t> absent = extra;
  absent[4] &= ~0x10;  // mask absent, yet it has bytes
  EXPECT_THAT(decoded(absent), StatusIs(absl::StatusCode::kDataLoss,
                                        HasSubstr("field 'mask': absent, but it has bytes")));
}

TEST(FieldsTest, ManifestWithFieldsIsVersionOneTwoAndRoundTrips) {
  Manifest m;
  m.schema = DetectionSchema();
  const std::string text = SerializeManifest(m);
  EXPECT_THAT(text, HasSubstr("\"version\": \"1.2\""));
  EXPECT_THAT(text, HasSubstr("\"shape\": [\n"));
  SP_ASSERT_OK_AND_ASSIGN(Manifest back, ParseManifest(text, "m"));
  EXPECT_EQ(back.schema, m.schema);
  EXPECT_EQ(SerializeManifest(back), text);
  // A classic schema keeps manifest 1.1 and the fingerprint it had.
  Manifest classic;
  classic.schema.image = {Encoding::kRaw, Layout::kHWC, 32, 32, 3};
  EXPECT_THAT(SerializeManifest(classic), HasSubstr("\"version\": \"1.1\""));
  EXPECT_THAT(SerializeManifest(classic), ::testing::Not(HasSubstr("fields")));
  EXPECT_NE(ManifestFingerprint(m), ManifestFingerprint(back.schema == m.schema ? classic : m));
}

TEST(FieldsTest, ManifestFieldsThatDisagreeOrCannotHoldAreDamage) {
  Manifest m;
  m.schema = DetectionSchema();
  const std::string text = SerializeManifest(m);
  auto parsed = [&](std::string from, std::string to) {
    std::string t = text;
    size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
    return ParseManifest(t, "ds/manifest.json").status();
  };
  EXPECT_THAT(parsed("\"type\": \"string\"", "\"type\": \"text\""),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("ds/manifest.json.schema.fields[1].type: unknown field type")));
  EXPECT_THAT(parsed("\"dtype\": \"f32\"", "\"dtype\": \"f128\""),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("fields[2].dtype")));
  EXPECT_THAT(parsed("\"name\": \"caption\"", "\"name\": \"boxes\""),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("field 'boxes': declared twice")));
  EXPECT_THAT(parsed("\"cat\"", "\"lion\""),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("disagree with the schema's")));
  EXPECT_THAT(parsed("\"optional\": false", "\"optional\": 0"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("fields[0].optional: expected boolean")));
}

// An integer array may name its elements' classes (COCO's category ids of a
// record's boxes): each element is then checked against them, and the
// names round-trip through the manifest.
TEST(FieldsTest, IntegerArraysMayNameTheirClasses) {
  Field ids = FieldOf("category_ids", FieldType::kArray);
  ids.dtype = ArrayDType::kI32;
  ids.shape = {0};
  ids.classes = {"person", "bicycle", "car"};
  SP_ASSERT_OK_AND_ASSIGN(Schema schema, MakeSchema({ids}));
  Manifest m;
  m.schema = schema;
  SP_ASSERT_OK_AND_ASSIGN(Manifest back, ParseManifest(SerializeManifest(m), "m"));
  EXPECT_EQ(back.schema, schema);
  RecordFields fields(schema);
  std::vector<int32_t> good = {0, 2, 1}, bad = {0, 3};
  std::vector<FieldValue> v(1);
  v[0].present = true;
  v[0].bytes = {reinterpret_cast<const uint8_t*>(good.data()), good.size() * 4};
  SP_EXPECT_OK(fields.Build("k", v).status());
  v[0].bytes = {reinterpret_cast<const uint8_t*>(bad.data()), bad.size() * 4};
  EXPECT_THAT(fields.Build("k", v).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("field 'category_ids': element 1 is 3, outside its 3 classes")));
  ids.dtype = ArrayDType::kF32;
  EXPECT_THAT(MakeSchema({ids}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not of i32 or i64")));
}

// DatasetWriter writes records with fields into every backend's .shard
// path; the records read back are the ones written, checked by their CRC.
TEST(FieldsTest, ADatasetOfFieldsIsWrittenAndReadBack) {
  testing::TempDir dir;
  DatasetWriterOptions options;
  options.directory = dir.path().string();
  options.schema = DetectionSchema();
  SP_ASSERT_OK_AND_ASSIGN(auto writer, DatasetWriter::Create(options));
  RecordFields fields(options.schema);
  Sample sample;
  for (int i = 0; i < 5; ++i) {
    sample.values[5].present = i % 2 == 0;
    const std::string key = "k" + std::to_string(i);  // the record views it
    SP_ASSERT_OK_AND_ASSIGN(Record r, fields.Build(key, sample.values));
    SP_ASSERT_OK(writer->Add(r));
  }
  SP_ASSERT_OK_AND_ASSIGN(Manifest written, writer->Finish());
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(options.directory));
  EXPECT_EQ(m.schema, options.schema);
  SP_ASSERT_OK_AND_ASSIGN(auto file, OpenPosixFile(dir.Join(m.shards[0].path)));
  SP_ASSERT_OK_AND_ASSIGN(auto reader, ShardReader::Open(file.get()));
  RecordFields read(m.schema);
  std::vector<FieldValue> got(7);
  for (uint64_t i = 0; i < 5; ++i) {
    SP_ASSERT_OK_AND_ASSIGN(Record r, reader->ReadRecord(i));
    SP_ASSERT_OK(read.Decode(r, got, true));
    EXPECT_EQ(got[5].present, i % 2 == 0);
    EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(got[1].bytes.data()), got[1].bytes.size()),
              sample.caption);
  }
}

}  // namespace
}  // namespace shardpack
