// RecordReader on records with fields: every field of every record, on every
// backend and through a view, each checked (record CRC-32C, section, content)
// before it is handed out; a flipped byte is damage naming the record.
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>

#include "absl/strings/str_cat.h"
#include "backends/store.h"
#include "common/coding.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/dataset.h"
#include "shardpack/fields.h"
#include "shardpack/file.h"
#include "shardpack/records.h"
#include "tests/testing/field_fixtures.h"
#include "tests/testing/jpeg_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "turbojpeg.h"

// Heap allocations made by this process, to show that a warm read makes none.
namespace {
std::atomic<uint64_t> allocations{0};
}  // namespace
// Out of line, new and delete alike, so that GCC does not pair the malloc
// and free inside them with the new and delete outside.
__attribute__((noinline)) void* operator new(size_t n) {
  ++allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
__attribute__((noinline)) void operator delete(void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace shardpack {
namespace {

using testing::FieldSample;
using testing::IsOk;
using testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int kRecords = 12;

std::string_view Text(ByteSpan b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

template <typename T>
ByteSpan Bytes(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

const std::vector<uint8_t>& Jpeg() {
  static const std::vector<uint8_t> jpeg = testing::TjSceneJpeg(40, 24, TJSAMP_420);
  return jpeg;
}
constexpr ImageInfo kJpegInfo{Encoding::kJpeg, Layout::kHWC, 24, 40, 3};

// Records of testing::EveryFieldType(), 5 a shard, blocks of about 2.
Manifest WriteFields(const std::string& dir, Backend backend = Backend::kShard, int n = kRecords,
                     Compression compression = Compression::kNone) {
  std::filesystem::create_directories(dir);
  DatasetWriterOptions o;
  o.directory = dir;
  o.shard_max_records = 5;
  o.shard.block_size = 512;
  o.shard.compression = compression;
  backends::UseBackend(&o, backend);
  auto m = testing::WriteFieldsDataset(o, n, Jpeg(), kJpegInfo);
  EXPECT_THAT(m, IsOk());
  return m.ok() ? *m : Manifest{};
}

void ExpectSample(const RecordBuffer& b, uint64_t i) {
  const FieldSample s = testing::SampleOf(i, Jpeg(), kJpegInfo);
  const std::vector<FieldValue> want = s.Values();
  ASSERT_EQ(b.fields().size(), want.size());
  EXPECT_EQ(b.record().key, s.key);
  for (size_t f = 0; f < want.size(); ++f) {
    const FieldValue& got = b.fields()[f];
    EXPECT_EQ(got.present, want[f].present) << i << " field " << f;
    if (!got.present) continue;
    EXPECT_TRUE(std::ranges::equal(got.bytes, want[f].bytes)) << i << " field " << f;
    EXPECT_EQ(got.label, want[f].label) << i << " field " << f;
  }
  EXPECT_EQ(b.fields()[testing::kPhoto].image, kJpegInfo);
  EXPECT_EQ(Text(b.fields()[testing::kCaption].bytes), testing::SampleCaption(i));
  EXPECT_EQ(b.fields()[testing::kBoxes].rows, i % 3);
  EXPECT_EQ(b.fields()[testing::kEmbedding].rows, 4u);
}

class RecordReaderFieldsTest : public ::testing::TestWithParam<Backend> {};

TEST_P(RecordReaderFieldsTest, EveryFieldOfEveryRecordByIndexAndByKey) {
  testing::TempDir dir;
  WriteFields(dir.path().string(), GetParam());
  SP_ASSERT_OK_AND_ASSIGN(auto reader, RecordReader::Open(dir.path().string()));
  EXPECT_EQ(reader->fields(), testing::EveryFieldType());
  EXPECT_EQ(reader->schema().fields, testing::EveryFieldType());
  RecordBuffer buffer;
  for (uint64_t i = 0; i < kRecords; ++i) {
    ASSERT_THAT(reader->Read(i, &buffer), IsOk()) << i;
    ExpectSample(buffer, i);
    EXPECT_TRUE(buffer.images().empty());
    SP_ASSERT_OK_AND_ASSIGN(uint64_t found, reader->Find(absl::StrCat("s/", i)));
    EXPECT_EQ(found, i);
  }
}

// decode = true decodes every image field: the photo (JPEG, the record's
// payload) and the mask (raw, in the field section).
TEST_P(RecordReaderFieldsTest, DecodeGivesEveryImageField) {
  testing::TempDir dir;
  WriteFields(dir.path().string(), GetParam());
  SP_ASSERT_OK_AND_ASSIGN(auto reader, RecordReader::Open(dir.path().string()));
  RecordBuffer buffer;
  const std::vector<uint8_t> want = testing::TjDecode(Jpeg(), 40, 24, TJPF_RGB);
  for (uint64_t i : {0, 1, 2}) {
    ASSERT_THAT(reader->Read(i, &buffer, /*decode=*/true), IsOk());
    ASSERT_EQ(buffer.images().size(), size_t{testing::kSampleFields});
    const DecodedImage& photo = buffer.images()[testing::kPhoto];
    EXPECT_EQ(photo.data, buffer.image().data);
    ASSERT_EQ(photo.bytes(), want.size());
    int far = 0;
    for (size_t p = 0; p < want.size(); ++p) far += std::abs(want[p] - photo.data[p]) > 2;
    EXPECT_EQ(far, 0);
    const DecodedImage& mask = buffer.images()[testing::kMask];
    if (i % 3 == 2) {
      EXPECT_EQ(mask.data, nullptr);  // absent
      continue;
    }
    ASSERT_EQ(mask.bytes(), 6u);
    EXPECT_EQ(mask.height, 2u);
    EXPECT_EQ(mask.width, 3u);
    EXPECT_EQ(mask.data[5], static_cast<uint8_t>(i));
    EXPECT_EQ(buffer.images()[testing::kCaption].data, nullptr);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, RecordReaderFieldsTest,
                         ::testing::Values(Backend::kShard, Backend::kLmdb, Backend::kHdf5),
                         [](const auto& p) { return std::string(BackendName(p.param)); });

TEST(RecordReaderFieldsTest, CompressedAndMappedShardsReadTheSame) {
  testing::TempDir dir;
  WriteFields(dir.path().string(), Backend::kShard, kRecords, Compression::kZstd);
  for (bool mmap : {false, true}) {
    RecordReaderOptions options;
    options.mmap = mmap;
    SP_ASSERT_OK_AND_ASSIGN(auto reader, RecordReader::Open(dir.path().string(), options));
    RecordBuffer buffer;
    for (uint64_t i = 0; i < kRecords; ++i) {
      ASSERT_THAT(reader->Read(i, &buffer), IsOk());
      ExpectSample(buffer, i);
    }
  }
}

// The offset of the only occurrence of `text` in `bytes`.
size_t FindOnce(const std::string& bytes, std::string_view text) {
  const size_t at = bytes.find(text);
  EXPECT_NE(at, std::string::npos) << text;
  EXPECT_EQ(bytes.find(text, at + 1), std::string::npos) << text;
  return at;
}

// A byte of a caption flipped in an uncompressed block: the block's CRC-32C
// is not read with one record, the record's own CRC-32C finds it.
TEST(RecordReaderFieldsTest, AFlippedCaptionByteIsARecordCrcMismatch) {
  testing::TempDir dir;
  Manifest m = WriteFields(dir.path().string());
  const std::string shard = dir.Join(m.shards[0].path);
  std::string bytes = *ReadSmallFile(shard);
  bytes[FindOnce(bytes, testing::SampleCaption(3)) + 4] ^= 0x20;
  ASSERT_THAT(WriteFileAtomically(shard, bytes), IsOk());
  SP_ASSERT_OK_AND_ASSIGN(auto reader, RecordReader::Open(dir.path().string()));
  RecordBuffer buffer;
  EXPECT_THAT(reader->Read(3, &buffer, /*decode=*/true),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("shard-00000.shard @"), HasSubstr(": record 3 (index 3): "),
                             HasSubstr("record CRC-32C mismatch"))));
  EXPECT_TRUE(buffer.fields().empty());
  EXPECT_TRUE(buffer.record().key.empty());
  for (uint64_t i : {2, 4, 7}) {
    ASSERT_THAT(reader->Read(i, &buffer), IsOk());
    ExpectSample(buffer, i);
  }
  // By key: the table finds it, the read refuses it.
  SP_ASSERT_OK_AND_ASSIGN(uint64_t found, reader->Find("s/3"));
  EXPECT_THAT(reader->Read(found, &buffer),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("record CRC-32C mismatch")));
}

// A record whose CRC-32C agrees with bytes that break the schema's content
// rules (as a writer that skipped its checks would leave): the content
// check names the field.
TEST(RecordReaderFieldsTest, ACaptionThatIsNotUtf8IsDamageNamingTheField) {
  testing::TempDir dir;
  DatasetWriterOptions o;
  o.directory = dir.path().string();
  SP_ASSERT_OK_AND_ASSIGN(o.schema, MakeSchema(testing::EveryFieldType()));
  SP_ASSERT_OK_AND_ASSIGN(auto writer, DatasetWriter::Create(o));
  RecordFields fields(o.schema);
  for (uint64_t i = 0; i < 3; ++i) {
    const FieldSample s = testing::SampleOf(i, Jpeg(), kJpegInfo);
    SP_ASSERT_OK_AND_ASSIGN(Record r, fields.Build(s.key, s.Values()));
    std::vector<uint8_t> extra(r.extra.begin(), r.extra.end());
    if (i == 1) {
      const size_t at = FindOnce(std::string(extra.begin(), extra.end()), "caf");
      extra[at + 3] = 0xff;  // the first byte of "é" (C3 A9)
      r.extra = extra;
      common::StoreLE<uint32_t>(extra.data(), RecordCrc(r));
    }
    r.extra = extra;
    SP_ASSERT_OK(writer->Add(r));
  }
  SP_ASSERT_OK(writer->Finish().status());
  SP_ASSERT_OK_AND_ASSIGN(auto reader, RecordReader::Open(dir.path().string()));
  RecordBuffer buffer;
  EXPECT_THAT(reader->Read(1, &buffer),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(": record 1 (index 1): "),
                             HasSubstr("field 'caption': not UTF-8"))));
  EXPECT_THAT(reader->Read(2, &buffer), IsOk());
}

// A lone LMDB or HDF5 shard has no manifest entry whose CRC-32C the gate
// could check: a flipped caption byte reaches the reader, whose record CRC
// finds it.
TEST(RecordReaderFieldsTest, AFlippedByteInALoneLmdbOrHdf5ShardIsFound) {
  for (Backend backend : {Backend::kLmdb, Backend::kHdf5}) {
    testing::TempDir dir;
    Manifest m = WriteFields(dir.Join("ds"), backend, 4);
    // Alone: a shard file beside its manifest is checked against its entry.
    const std::string shard = dir.Join(m.shards[0].path);
    std::string bytes = *ReadSmallFile(dir.Join("ds/" + m.shards[0].path));
    bytes[FindOnce(bytes, testing::SampleCaption(2)) + 1] ^= 0x01;
    ASSERT_THAT(WriteFileAtomically(shard, bytes), IsOk());
    SP_ASSERT_OK_AND_ASSIGN(auto reader, RecordReader::Open(shard));
    ASSERT_EQ(reader->fields().size(), size_t{testing::kSampleFields}) << BackendName(backend);
    RecordBuffer buffer;
    EXPECT_THAT(reader->Read(2, &buffer),
                StatusIs(absl::StatusCode::kDataLoss,
                         AllOf(HasSubstr(": record 2 (index 2): record CRC-32C mismatch"))))
        << BackendName(backend);
    EXPECT_THAT(reader->Read(1, &buffer), IsOk());
  }
}

// A view relabels after the CRC check (which covers the stored labels), in
// the record's labels, its label field's value and the fields' classes.
TEST(RecordReaderFieldsTest, AViewRelabelsCheckedRecords) {
  testing::TempDir dir;
  WriteFields(dir.Join("a"));
  const std::string view = dir.Join("v.view.json");
  std::ofstream(view) << R"({"shardpack_view": 1, "datasets": ["a"],
                            "classes": {"field": "category", "names": ["bird", "cat"]}})";
  SP_ASSERT_OK_AND_ASSIGN(auto reader, RecordReader::Open(view));
  ASSERT_EQ(reader->size(), 8u);  // categories 2 and 0 of 12
  EXPECT_EQ(reader->fields()[testing::kCategory].classes,
            (std::vector<std::string>{"bird", "cat"}));
  EXPECT_EQ(reader->schema().fields, reader->fields());
  RecordBuffer buffer;
  for (uint64_t i = 0; i < reader->size(); ++i) {
    ASSERT_THAT(reader->Read(i, &buffer), IsOk()) << i;
    const uint64_t base = i / 2 * 3 + (i % 2 == 0 ? 0 : 2);  // 0, 2, 3, 5, ...
    EXPECT_EQ(buffer.record().key, absl::StrCat("s/", base));
    const int64_t want = base % 3 == 2 ? 0 : 1;
    EXPECT_EQ(buffer.record().labels[0], want);
    EXPECT_EQ(buffer.fields()[testing::kCategory].label, want);
    EXPECT_EQ(Text(buffer.fields()[testing::kCaption].bytes), testing::SampleCaption(base));
  }
}

// A view's label conditions name a dataset's label fields, as they name a
// classic dataset's: the records of one category, their labels unchanged.
TEST(RecordReaderFieldsTest, AViewSelectsByALabelField) {
  testing::TempDir dir;
  WriteFields(dir.Join("a"));
  const std::string view = dir.Join("dogs.view.json");
  std::ofstream(view) << R"({"shardpack_view": 1, "datasets": ["a"],
                            "where": {"labels": {"field": "category", "in": ["dog"]}}})";
  SP_ASSERT_OK_AND_ASSIGN(auto reader, RecordReader::Open(view));
  ASSERT_EQ(reader->size(), 4u);  // 1, 4, 7, 10
  EXPECT_EQ(reader->fields(), testing::EveryFieldType());
  RecordBuffer buffer;
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_THAT(reader->Read(i, &buffer), IsOk());
    ExpectSample(buffer, 3 * i + 1);
  }
}

// Once a buffer has read (and decoded) the largest record, reading more
// records into it allocates nothing, but for the check of a JSON field's
// text: nlohmann's parser allocates its own small stacks and buffers.
// Records 1, 3, ... have no JSON value.
TEST(RecordReaderFieldsTest, AWarmReadAllocatesNothing) {
  testing::TempDir dir;
  WriteFields(dir.path().string());
  SP_ASSERT_OK_AND_ASSIGN(auto reader, RecordReader::Open(dir.path().string()));
  RecordBuffer buffer;
  for (bool decode : {false, true}) {
    for (int pass = 0; pass < 2; ++pass) {
      int failed = 0;
      const uint64_t before = allocations.load();
      for (uint64_t i = 1; i < kRecords; i += 2) failed += !reader->Read(i, &buffer, decode).ok();
      const uint64_t made = allocations.load() - before;
      EXPECT_EQ(failed, 0);
      if (pass == 1) {
        EXPECT_EQ(made, 0u) << "decode " << decode;
      }
    }
  }
}

}  // namespace
}  // namespace shardpack
