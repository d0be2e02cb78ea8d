// The Writer (shardpack/writer.h): every field type through each backend and
// back, atomic publish and the output folder's rules, parts merged by the
// `shardpack merge` CLI, on_error, and each bad sample refused naming the
// sample and the field.
#include "shardpack/writer.h"

#include <turbojpeg.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/child_process.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/dataset.h"
#include "shardpack/records.h"
#include "tests/testing/jpeg_fixtures.h"
#include "tests/testing/png_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"
#include "writer/pack_identity.h"

namespace shardpack {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::RunResult;
using testing::RunTool;
using testing::StatusIs;

// The fields of a detection-and-captioning dataset: every type, optional
// ones among them.
std::vector<Field> Fields() {
  const std::vector<std::pair<const char*, const char*>> texts = {
      {"photo", "jpeg"},   {"mask", "raw:4x6x1"}, {"caption", "string"}, {"blob", "bytes?"},
      {"meta", "json"},    {"boxes", "f32[n,4]"}, {"ids", "i32[n]?"},    {"label", "label"},
      {"emb", "f16[3]"}};
  std::vector<Field> fields;
  for (auto [name, text] : texts) {
    absl::StatusOr<Field> f = ParseFieldText(name, text);
    EXPECT_TRUE(f.ok()) << f.status();
    fields.push_back(*f);
  }
  fields[7].classes = {"cat", "dog", "bird"};
  return fields;
}

enum FieldIndex { kPhoto, kMask, kCaption, kBlob, kMeta, kBoxes, kIds, kLabel, kEmb };

// Sample i of the test data, owning its bytes; values view them.
struct Sample {
  explicit Sample(int i) : key("s" + std::to_string(i)) {
    bytes.resize(9);
    bytes[kPhoto] = testing::TjSceneJpeg(16 + i, 8, TJSAMP_420);
    bytes[kMask].resize(4 * 6);
    for (size_t p = 0; p < bytes[kMask].size(); ++p) bytes[kMask][p] = uint8_t((p + i) % 5);
    bytes[kCaption] = Text("caption " + std::to_string(i) + " \xc3\xbc");
    if (i % 3 != 0) bytes[kBlob] = {uint8_t(i), 0, 255};
    bytes[kMeta] = Text("{\"i\":" + std::to_string(i) + "}");
    for (int r = 0; r < i % 4; ++r) {
      const float box[4] = {float(r), float(i), 0.5f, 1.0f};
      const uint8_t* b = reinterpret_cast<const uint8_t*>(box);
      bytes[kBoxes].insert(bytes[kBoxes].end(), b, b + sizeof(box));
    }
    if (i % 2 == 1) bytes[kIds] = {uint8_t(i), 0, 0, 0, 7, 0, 0, 0};
    bytes[kEmb] = {0x00, 0x3c, 0x00, 0xc0, uint8_t(i), 0x01};  // 1.0, -2.0, a subnormal
    values.resize(9);
    for (int f = 0; f < 9; ++f) {
      values[f].present = true;
      values[f].bytes = bytes[f];
    }
    values[kPhoto].image = {Encoding::kJpeg, Layout::kHWC, 8, uint32_t(16 + i), 3};
    values[kMask].image = {Encoding::kRaw, Layout::kHWC, 4, 6, 1};
    values[kBlob].present = i % 3 != 0;
    values[kIds].present = i % 2 == 1;
    values[kLabel].label = i % 3;
    values[kLabel].bytes = {};
  }
  static std::vector<uint8_t> Text(const std::string& s) { return {s.begin(), s.end()}; }

  std::string key;
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<FieldValue> values;
};

std::vector<uint8_t> Bytes(ByteSpan s) { return {s.begin(), s.end()}; }

class WriterTest : public ::testing::Test {
 protected:
  std::string Out(const std::string& name) const { return dir_.Join(name); }

  // Writes samples [first, last) to `out`.
  absl::StatusOr<Manifest> Write(const std::string& out, const WriterOptions& o, int first = 0,
                                 int last = 10) {
    absl::StatusOr<std::unique_ptr<Writer>> w = Writer::Create(out, Fields(), o);
    if (!w.ok()) return w.status();
    for (int i = first; i < last; ++i) {
      Sample s(i);
      if (absl::Status st = (*w)->Write(s.key, s.values); !st.ok()) return st;
    }
    return (*w)->Finish();
  }

  // Every record of `path` as written: fields decoded (CRC checked) and
  // compared with Sample(first + i).
  void ExpectSamples(const std::string& path, int first, int count) {
    SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(path));
    EXPECT_EQ(m.schema.fields, Fields());
    SP_ASSERT_OK_AND_ASSIGN(auto records, RecordReader::Open(path));
    ASSERT_EQ(records->size(), uint64_t(count));
    RecordFields fields(m.schema);
    std::vector<FieldValue> got(fields.fields().size());
    RecordBuffer buffer;
    for (int i = 0; i < count; ++i) {
      const Sample want(first + i);
      SP_ASSERT_OK(records->Read(uint64_t(i), &buffer));
      EXPECT_EQ(buffer.record().key, want.key);
      SP_ASSERT_OK(fields.Decode(buffer.record(), got, /*check_crc=*/true));
      SP_ASSERT_OK(fields.CheckValues(got));
      for (size_t f = 0; f < got.size(); ++f) {
        SCOPED_TRACE(want.key + " field " + fields.fields()[f].name);
        ASSERT_EQ(got[f].present, want.values[f].present);
        if (!got[f].present) continue;
        if (f == kLabel) {
          EXPECT_EQ(got[f].label, want.values[f].label);
        } else {
          EXPECT_EQ(Bytes(got[f].bytes), want.bytes[f]);
        }
        if (f == kPhoto || f == kMask) {
          EXPECT_EQ(got[f].image, want.values[f].image);
        }
      }
    }
  }

  testing::TempDir dir_;
};

class WriterBackendTest : public WriterTest, public ::testing::WithParamInterface<Backend> {};

TEST_P(WriterBackendTest, EveryFieldTypeReadsBackAsWritten) {
  WriterOptions o;
  o.backend = GetParam();
  o.shard_max_records = 3;
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, Write(Out("ds"), o));
  EXPECT_EQ(m.records(), 10u);
  EXPECT_EQ(m.shards.size(), 4u);
  EXPECT_EQ(m.backend, GetParam());
  ASSERT_TRUE(m.record_table.has_value());
  ExpectSamples(Out("ds"), 0, 10);
  EXPECT_FALSE(fs::exists(Out("ds.partial")));
  const RunResult verify = RunTool(SHARDDUMP_PATH, {"verify", Out("ds")});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  SP_ASSERT_OK_AND_ASSIGN(auto records, RecordReader::Open(Out("ds")));
  SP_ASSERT_OK_AND_ASSIGN(uint64_t found, records->Find("s7"));
  EXPECT_EQ(found, 7u);
}

INSTANTIATE_TEST_SUITE_P(Backends, WriterBackendTest,
                         ::testing::Values(Backend::kShard, Backend::kLmdb, Backend::kHdf5),
                         [](const ::testing::TestParamInfo<Backend>& p) {
                           return std::string(BackendName(p.param));
                         });

// An image and labels: the classic dataset, byte for byte what a pack of
// the same records writes (manifest 1.1, no field section).
TEST_F(WriterTest, AnImageAndLabelsMakeAClassicDataset) {
  std::vector<Field> fields = {*ParseFieldText("image", "raw:2x2x3"),
                               *ParseFieldText("label", "label")};
  SP_ASSERT_OK_AND_ASSIGN(auto w, Writer::Create(Out("ds"), fields, {}));
  const std::vector<uint8_t> pixels(12, 9);
  std::vector<FieldValue> values(2);
  values[0] = {true, {Encoding::kRaw, Layout::kHWC, 2, 2, 3}, 0, pixels};
  values[1] = {true, {}, 4, {}};
  SP_ASSERT_OK(w->Write("a", values));
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, w->Finish());
  EXPECT_TRUE(m.schema.fields.empty());
  EXPECT_EQ(m.version_minor, 1);
  SP_ASSERT_OK_AND_ASSIGN(auto records, RecordReader::Open(Out("ds")));
  RecordBuffer b;
  SP_ASSERT_OK(records->Read(0, &b));
  EXPECT_EQ(Bytes(b.record().payload), pixels);
  EXPECT_EQ(b.record().labels, Labels{4});
  EXPECT_TRUE(b.record().extra.empty());
}

// How it was written is in the manifest's "pack": the options that decide
// the records' form, and the user's metadata.
TEST_F(WriterTest, ThePackObjectRecordsOptionsAndMetadata) {
  WriterOptions o;
  o.metadata_json = R"({"license":"cc-by","v":2})";
  o.shard.compression = Compression::kZstd;
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, Write(Out("ds"), o, 0, 2));
  SP_ASSERT_OK_AND_ASSIGN(writer::PackIdentity p,
                          writer::PackIdentity::FromJson(m.pack_json, "ds"));
  EXPECT_EQ(p.tool, "shardpack " SHARDPACK_VERSION);
  EXPECT_EQ(*p.source, writer::PackJson::parse(R"({"kind":"writer"})"));
  EXPECT_EQ(p.compression, "zstd:3");
  EXPECT_EQ(p.block_size, 4u << 20);
  EXPECT_EQ(p.format, Backend::kShard);
  EXPECT_EQ(p.on_error, OnError::kFail);
  EXPECT_FALSE(p.part.has_value());
  ASSERT_TRUE(p.metadata.has_value());
  EXPECT_EQ(*p.metadata, writer::PackJson::parse(o.metadata_json));
  EXPECT_TRUE(p.extra.empty());
}

TEST_F(WriterTest, BadOptionsAreRefusedNamingTheOption) {
  auto refused = [&](const WriterOptions& o, const std::string& message) {
    EXPECT_THAT(Writer::Create(Out("ds"), Fields(), o),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)));
    EXPECT_FALSE(fs::exists(Out("ds.partial")));
  };
  WriterOptions o;
  o.shard.block_size = 0;
  refused(o, "Writer: block_size 0 is not in 1..1073741824");
  o = {};
  o.backend = Backend::kLmdb;
  o.shard.compression = Compression::kZstd;
  refused(o, "Writer: compression applies to the shard format only, not lmdb");
  o = {};
  o.part = WriterPart{1, 3};
  refused(o, "Writer: job is required with part");
  o.job = "j";
  o.part = WriterPart{4, 3};
  refused(o, "Writer: part 4/3 is not a part I/N");
  o = {};
  o.metadata_json = "[1]";
  refused(o, "Writer: metadata_json is not a JSON object");
  o.metadata_json = "{";
  refused(o, "metadata_json");
  o = {};
  o.job = std::string(300, 'j');
  refused(o, "Writer: job must be 1 to 256 bytes of UTF-8");
  o = {};
  o.backend = Backend::kHdf5;
  std::vector<Field> optional_image = {*ParseFieldText("image", "raw:2x2x3?")};
  EXPECT_THAT(Writer::Create(Out("ds"), optional_image, o),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("make field 'image' required, or give it no fixed shape")));
  std::vector<Field> twice = Fields();
  twice[1].name = "photo";
  EXPECT_THAT(Writer::Create(Out("ds"), twice, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("field 'photo': declared twice")));
}

// --- Atomic publish and the output folder ---------------------------------

TEST_F(WriterTest, AWriterDestroyedWithoutFinishLeavesNothing) {
  {
    SP_ASSERT_OK_AND_ASSIGN(auto w, Writer::Create(Out("ds"), Fields(), {}));
    for (int i = 0; i < 3; ++i) {
      Sample s(i);
      SP_ASSERT_OK(w->Write(s.key, s.values));
    }
    EXPECT_TRUE(fs::exists(Out("ds.partial")));
    EXPECT_FALSE(fs::exists(Out("ds")));
  }
  EXPECT_FALSE(fs::exists(Out("ds")));
  EXPECT_FALSE(fs::exists(Out("ds.partial")));
}

// A process that dies while writing (here: leaves without destroying its
// writer) leaves no dataset, and the next writer of OUT takes its place.
TEST_F(WriterTest, AKilledWriterLeavesNoDatasetAndTheNextOneWrites) {
  const std::string out = Out("ds");
  SP_ASSERT_OK_AND_ASSIGN(
      common::ChildOutcome child,
      common::RunInChild(
          [&]() -> std::string {
            absl::StatusOr<std::unique_ptr<Writer>> w = Writer::Create(out, Fields(), {});
            if (!w.ok()) return std::string(w.status().message());
            for (int i = 0; i < 4; ++i) {
              Sample s(i);
              if (!(*w)->Write(s.key, s.values).ok()) return "write failed";
            }
            (void)w->release();  // as killed: no destructor, no Finish
            return "written";
          },
          std::chrono::steady_clock::now() + std::chrono::seconds(60), 256, "test", "writer"));
  ASSERT_EQ(child.output, "written");
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(fs::exists(out + ".partial/.shardpack-staging"));
  EXPECT_THAT(ReadManifest(out), StatusIs(absl::StatusCode::kNotFound, HasSubstr(out)));
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, Write(out, {}, 0, 3));
  EXPECT_EQ(m.records(), 3u);
  ExpectSamples(out, 0, 3);
  EXPECT_FALSE(fs::exists(out + ".partial"));
}

TEST_F(WriterTest, AnExistingOutputIsReplacedOnlyAsPackReplacesIt) {
  SP_ASSERT_OK(Write(Out("ds"), {}, 0, 2).status());
  EXPECT_THAT(Write(Out("ds"), {}, 0, 3),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("already exists")));
  WriterOptions o;
  o.overwrite = true;
  SP_ASSERT_OK(Write(Out("ds"), o, 2, 5).status());
  ExpectSamples(Out("ds"), 2, 3);
  // A folder of the user's is never replaced, with or without overwrite.
  fs::create_directories(Out("mine"));
  std::ofstream(Out("mine/notes.txt")) << "mine";
  EXPECT_THAT(Write(Out("mine"), {}, 0, 1),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("already exists")));
  EXPECT_THAT(Write(Out("mine"), o, 0, 1),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("holds no manifest.json: it is not a dataset")));
  EXPECT_TRUE(fs::exists(Out("mine/notes.txt")));
  // One writer at a time.
  SP_ASSERT_OK_AND_ASSIGN(auto first, Writer::Create(Out("busy"), Fields(), {}));
  EXPECT_THAT(Writer::Create(Out("busy"), Fields(), {}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("is in use")));
}

// --- Parts and `shardpack merge` ---------------------------------------------

// The datasets at `a` and `b` hold the same records in the same order.
void ExpectSameRecords(const std::string& a, const std::string& b) {
  SP_ASSERT_OK_AND_ASSIGN(auto first, RecordReader::Open(a));
  SP_ASSERT_OK_AND_ASSIGN(auto second, RecordReader::Open(b));
  ASSERT_EQ(first->size(), second->size());
  RecordBuffer x, y;
  for (uint64_t i = 0; i < first->size(); ++i) {
    SP_ASSERT_OK(first->Read(i, &x));
    SP_ASSERT_OK(second->Read(i, &y));
    EXPECT_TRUE(SameContents(x.record(), y.record())) << i;
  }
}

WriterOptions PartOptions(uint32_t index, uint32_t count, const std::string& job = "run-1") {
  WriterOptions o;
  o.part = WriterPart{index, count};
  o.job = job;
  o.shard_max_records = 2;
  return o;
}

TEST_F(WriterTest, PartsMergeIntoTheDatasetOfOneWrite) {
  WriterOptions whole;
  whole.shard_max_records = 2;
  SP_ASSERT_OK(Write(Out("whole"), whole).status());
  const int bounds[] = {0, 3, 3, 10};  // part 2 holds no sample
  for (uint32_t k = 0; k < 3; ++k) {
    SP_ASSERT_OK(Write(Out("p" + std::to_string(k + 1)), PartOptions(k + 1, 3), bounds[k],
                       bounds[k + 1])
                     .status());
  }
  const RunResult check = RunTool(SHARDPACK_PATH, {"merge", Out("p3"), Out("p1"), Out("p2"),
                                                   "--check"});
  ASSERT_EQ(check.exit_code, 0) << check.err;
  EXPECT_EQ(check.err, "checked 3 parts of one write (job run-1): 10 records in 6 shards\n");
  const RunResult merge =
      RunTool(SHARDPACK_PATH, {"merge", Out("p3"), Out("p1"), Out("p2"), "-o", Out("merged")});
  ASSERT_EQ(merge.exit_code, 0) << merge.err;
  ExpectSamples(Out("merged"), 0, 10);
  ExpectSameRecords(Out("merged"), Out("whole"));
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(Out("merged")));
  SP_ASSERT_OK_AND_ASSIGN(writer::PackIdentity p, writer::PackIdentity::FromJson(m.pack_json, "m"));
  EXPECT_EQ(p.job, "run-1");
  ASSERT_TRUE(p.merged.has_value());
  EXPECT_EQ(p.merged->parts.size(), 3u);
  EXPECT_FALSE(p.part.has_value());
  const RunResult verify = RunTool(SHARDDUMP_PATH, {"verify", Out("merged")});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
}

TEST_F(WriterTest, MergeRefusesPartsOfAnotherJobSchemaOrOptionsAndMissingParts) {
  SP_ASSERT_OK(Write(Out("p1"), PartOptions(1, 2), 0, 5).status());
  SP_ASSERT_OK(Write(Out("p2"), PartOptions(2, 2), 5, 10).status());
  SP_ASSERT_OK(Write(Out("other"), PartOptions(2, 2, "run-2"), 5, 10).status());
  WriterOptions zstd = PartOptions(2, 2);
  zstd.shard.compression = Compression::kZstd;
  SP_ASSERT_OK(Write(Out("zstd"), zstd, 5, 10).status());
  SP_ASSERT_OK(Write(Out("whole"), {}, 0, 5).status());
  auto refused = [&](std::vector<std::string> args, const std::string& message) {
    args.insert(args.begin(), "merge");
    args.push_back("--check");
    const RunResult r = RunTool(SHARDPACK_PATH, args);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr(message));
  };
  refused({Out("p1"), Out("other")},
          "belongs to another write (job) than part 1 of 2 (" + Out("p1") +
              "): job is \"run-2\", not \"run-1\"");
  refused({Out("p1"), Out("zstd")}, "compression is \"zstd:3\", not \"none\"");
  refused({Out("p1")}, "part 2 of 2 is missing");
  refused({Out("whole")}, Out("whole") + ": not a part merge can check");
  refused({Out("p1"), Out("p2"), Out("p2")}, "part 2 of 2 is given twice");
}

// Parts written without knowing N (a Ray Data write task) merge when merge
// is told N, and only then: a part beyond N, a missing one, a mix with
// closed parts of another N, and a pack's part claiming an open count are
// refused, naming the part.
TEST_F(WriterTest, PartsOfAnOpenCountMergeWithTheCountGiven) {
  WriterOptions whole;
  whole.shard_max_records = 2;
  SP_ASSERT_OK(Write(Out("whole"), whole).status());
  const int bounds[] = {0, 4, 4, 10};
  for (uint32_t k = 0; k < 3; ++k) {
    SP_ASSERT_OK(Write(Out("p" + std::to_string(k + 1)), PartOptions(k + 1, kOpenPartCount),
                       bounds[k], bounds[k + 1])
                     .status());
  }
  SP_ASSERT_OK_AND_ASSIGN(Manifest part, ReadManifest(Out("p2")));
  EXPECT_THAT(part.pack_json, HasSubstr("\"part\":{\"index\":2}"));
  auto merge = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "merge");
    return RunTool(SHARDPACK_PATH, args);
  };
  RunResult r = merge({Out("p1"), Out("p2"), Out("p3"), "--check"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(Out("p1") + ": part 1 of an open count"));
  EXPECT_THAT(r.err, HasSubstr("merge --count N"));
  r = merge({Out("p1"), Out("p2"), Out("p3"), "--check", "--count", "2"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(Out("p3") + ": part 3, beyond --count 2"));
  r = merge({Out("p1"), Out("p3"), "--check", "--count", "3"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("part 2 of 3 is missing"));
  SP_ASSERT_OK(Write(Out("closed"), PartOptions(2, 2), 4, 10).status());
  r = merge({Out("closed"), "--check", "--count", "3"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--count 3, but " + Out("closed") + " is part 2 of 2"));

  r = merge({Out("p3"), Out("p1"), Out("p2"), "-o", Out("merged"), "--count", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "merged 3 parts of one write (job run-1): 10 records in 5 shards\n");
  ExpectSameRecords(Out("merged"), Out("whole"));
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(Out("merged")));
  SP_ASSERT_OK_AND_ASSIGN(writer::PackIdentity p, writer::PackIdentity::FromJson(m.pack_json, "m"));
  ASSERT_TRUE(p.merged.has_value());
  EXPECT_EQ(p.merged->count, 3u);

  // A pack's part (with an input) never has an open count: an edit.
  SP_ASSERT_OK_AND_ASSIGN(writer::PackIdentity edited,
                          writer::PackIdentity::FromJson(part.pack_json, "p2"));
  edited.input = writer::PackInput{10, 100, "crc32c:00000000"};
  part.pack_json = edited.ToJson();
  SP_ASSERT_OK(WriteManifest(Out("p2"), part));
  r = merge({Out("p1"), Out("p2"), Out("p3"), "--check", "--count", "3"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(Out("p2") + ": a pack's part of an open count"));
}

// A retried task (the same job, part and options) replaces its own output
// without overwrite; another part's is refused.
TEST_F(WriterTest, ARetriedPartReplacesItsOwnOutputOnly) {
  SP_ASSERT_OK(Write(Out("p1"), PartOptions(1, 2), 0, 5).status());
  SP_ASSERT_OK(Write(Out("p1"), PartOptions(1, 2), 0, 5).status());
  ExpectSamples(Out("p1"), 0, 5);
  EXPECT_THAT(Write(Out("p1"), PartOptions(2, 2), 5, 10),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       HasSubstr("was not written by this pack")));
  EXPECT_THAT(Write(Out("p1"), PartOptions(1, 2, "run-2"), 0, 5),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("already exists")));
  ExpectSamples(Out("p1"), 0, 5);
}

// --- Bad samples -------------------------------------------------------------

// Each bad sample is refused naming the sample and the field; nothing of it
// is written, and the writer goes on.
TEST_F(WriterTest, EachBadSampleIsRefusedNamingTheSampleAndTheField) {
  SP_ASSERT_OK_AND_ASSIGN(auto w, Writer::Create(Out("ds"), Fields(), {}));
  SP_ASSERT_OK_AND_ASSIGN(auto images, ImageConverter::Create());
  EXPECT_EQ(w->Find("caption"), kCaption);
  EXPECT_EQ(w->Find("nope"), -1);
  uint64_t index = 0;
  auto refused = [&](Sample& s, const std::string& message) {
    EXPECT_THAT(w->Write(s.key, s.values),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("sample " + std::to_string(index++) + " ('" + s.key +
                                   "'): " + message)));
  };
  Sample s(1);
  s.values[kCaption].present = false;
  refused(s, "field 'caption': missing, and not optional");
  s = Sample(1);
  s.values[kPhoto].image.encoding = Encoding::kRaw;
  refused(s, "field 'photo': raw image of");
  s = Sample(1);
  s.values[kPhoto].image = {Encoding::kRaw, Layout::kHWC, 4, 6, 1};
  s.values[kPhoto].bytes = s.bytes[kMask];
  refused(s, "field 'photo': a raw image in a field of jpeg images");
  s = Sample(1);
  s.values[kMask].image.width = 5;
  s.values[kMask].bytes = ByteSpan(s.bytes[kMask]).first(20);
  refused(s, "field 'mask': image raw 4x5x1 hwc, the schema says raw 4x6x1 hwc");
  s = Sample(1);
  s.values[kBoxes].bytes = ByteSpan(s.bytes[kBoxes]).first(12);
  refused(s, "field 'boxes': 12 bytes, not a whole number of 16-byte rows");
  s = Sample(1);
  s.bytes[kCaption] = {'a', 0xff, 'b'};
  s.values[kCaption].bytes = s.bytes[kCaption];
  refused(s, "field 'caption': not UTF-8");
  s = Sample(1);
  s.bytes[kMeta] = Sample::Text("{\"i\": ");
  s.values[kMeta].bytes = s.bytes[kMeta];
  refused(s, "field 'meta': not valid JSON");
  s = Sample(1);
  s.values[kLabel].label = 3;
  refused(s, "field 'label': label 3 is outside its 3 classes (0..2)");
  s = Sample(1);
  s.values[kEmb].bytes = ByteSpan(s.bytes[kEmb]).first(4);
  refused(s, "field 'emb': 2 rows, the schema says 3");
  // An image the converter refuses: Reject, with its reason.
  s = Sample(1);
  std::vector<uint8_t> storage;
  const std::vector<uint8_t> png =
      testing::EncodePng(std::vector<uint8_t>(6 * 4 * 3, 80), 6, 4, 3);  // RGB
  absl::StatusOr<FieldValue> mask = images->FromFile(w->fields()[kMask], png, &storage);
  ASSERT_FALSE(mask.ok());
  EXPECT_THAT(w->Reject(s.key, mask.status()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("sample " + std::to_string(index++) +
                                 " ('s1'): field 'mask': a 3-channel (RGB) PNG image, the field "
                                 "holds 1-channel (gray) images")));
  // The writer goes on: the good samples, and only they, are written.
  for (int i = 0; i < 2; ++i) {
    Sample good(i);
    SP_ASSERT_OK(w->Write(good.key, good.values));
  }
  EXPECT_EQ(w->samples(), index + 2);
  EXPECT_EQ(w->records(), 2u);
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, w->Finish());
  EXPECT_EQ(m.records(), 2u);
  ExpectSamples(Out("ds"), 0, 2);
  EXPECT_THAT(w->Write("late", Sample(0).values),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("already finished")));
}

TEST_F(WriterTest, SkipLeavesBadSamplesOutAndListsThem) {
  std::vector<std::pair<std::string, std::string>> reported;
  WriterOptions o;
  o.on_error = OnError::kSkip;
  o.on_skip = [&](std::string_view key, const absl::Status& reason) {
    reported.emplace_back(std::string(key), std::string(reason.message()));
  };
  SP_ASSERT_OK_AND_ASSIGN(auto w, Writer::Create(Out("ds"), Fields(), o));
  for (int i = 0; i < 5; ++i) {
    Sample s(i);
    if (i == 1) s.values[kCaption].present = false;
    if (i == 3) {
      SP_ASSERT_OK(w->Reject(s.key, absl::DataLossError("field 'photo': corrupt\tJPEG")));
      continue;
    }
    SP_ASSERT_OK(w->Write(s.key, s.values));
  }
  ASSERT_EQ(reported.size(), 2u);
  EXPECT_EQ(reported[0].first, "s1");
  EXPECT_EQ(reported[0].second, "field 'caption': missing, and not optional");
  EXPECT_EQ(reported[1].first, "s3");
  EXPECT_EQ(w->skipped().size(), 2u);
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, w->Finish());
  EXPECT_EQ(m.records(), 3u);
  std::ifstream in(Out("ds/skipped.tsv"));
  const std::string tsv{std::istreambuf_iterator<char>(in), {}};
  EXPECT_EQ(tsv,
            "path\treason\n"
            "s1\tfield 'caption': missing, and not optional\n"
            "s3\tfield 'photo': corrupt\\tJPEG\n");
  SP_ASSERT_OK_AND_ASSIGN(auto records, RecordReader::Open(Out("ds")));
  RecordBuffer b;
  SP_ASSERT_OK(records->Read(1, &b));
  EXPECT_EQ(b.record().key, "s2");
}

}  // namespace
}  // namespace shardpack
