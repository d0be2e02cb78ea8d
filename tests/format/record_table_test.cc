// The record table: written by DatasetWriter, found by key, and every kind of
// damage a DataLossError naming the file and offset.
#include "format/record_table.h"

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/coding.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/crc32c.h"
#include "shardpack/dataset.h"
#include "tests/testing/shard_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack::format {
namespace {

using ::shardpack::testing::IsOk;
using ::shardpack::testing::StatusIs;
using ::testing::HasSubstr;

Schema TwoLabelSchema() {
  Schema s;
  s.image = {Encoding::kRaw, Layout::kHWC, 2, 2, 1};
  s.labels = {{"fine", {}}, {"coarse", {}}};
  return s;
}

// A dataset of `n` records with keys "img/<i>" (record 3's key repeated by
// record 4 when `duplicate`), labels (i % 7, i % 3), in shards of 5.
Manifest WriteDataset(const std::string& dir, int n, bool duplicate = false) {
  DatasetWriterOptions o;
  o.directory = dir;
  o.schema = TwoLabelSchema();
  o.shard_max_records = 5;
  auto writer = DatasetWriter::Create(o);
  EXPECT_THAT(writer, IsOk());
  for (int i = 0; i < n; ++i) {
    testing::OwnedRecord r = testing::RawRecord(i, 2, 2, 1);
    r.key = absl::StrCat("img/", duplicate && i == 4 ? 3 : i);
    r.labels = {i % 7, i % 3};
    EXPECT_THAT((*writer)->Add(r.record()), IsOk());
  }
  auto m = (*writer)->Finish();
  EXPECT_THAT(m, IsOk());
  return *m;
}

std::string ReadAll(const std::string& path) { return *ReadSmallFile(path); }

// Rewrites the table with `edit` applied and the manifest's size and CRC-32C
// refreshed, so that only the structural checks can catch the edit.
absl::StatusOr<RecordTable> LoadEdited(const std::string& dir, Manifest m,
                                       void (*edit)(std::string*)) {
  std::string bytes = ReadAll(dir + "/records.idx");
  edit(&bytes);
  SP_RETURN_IF_ERROR(WriteFileAtomically(dir + "/records.idx", bytes));
  m.record_table->bytes = bytes.size();
  m.record_table->crc32c =
      Crc32c({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  return RecordTable::Load(dir, m);
}

void RefreshHeaderCrc(std::string* b) {
  auto* p = reinterpret_cast<uint8_t*>(b->data());
  common::StoreLE<uint32_t>(p + kRecordTableHeaderCrcOffset,
                            Crc32c({p, kRecordTableHeaderCrcOffset}));
}

TEST(RecordTableTest, WriterListsTableAndLookupFindsEveryKey) {
  testing::TempDir dir;
  Manifest m = WriteDataset(dir.path().string(), 23);
  ASSERT_TRUE(m.record_table.has_value());
  EXPECT_EQ(m.record_table->path, "records.idx");
  EXPECT_EQ(m.version_minor, 1);
  auto t = RecordTable::Load(dir.path().string(), m);
  ASSERT_THAT(t, IsOk());
  ASSERT_EQ(t->records(), 23u);
  EXPECT_EQ(t->label_fields(), 2);
  for (uint64_t r = 0; r < 23; ++r) {
    EXPECT_EQ(t->key(r), absl::StrCat("img/", r));
    EXPECT_EQ(t->label(r, 0), static_cast<int64_t>(r % 7));
    EXPECT_EQ(t->label(r, 1), static_cast<int64_t>(r % 3));
    EXPECT_EQ(t->Find(absl::StrCat("img/", r)), r);
  }
  EXPECT_EQ(t->Find("img/23"), std::nullopt);
  EXPECT_EQ(t->Find(""), std::nullopt);
  // The manifest round-trips with its entry.
  auto again = ReadManifest(dir.path().string());
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(*again, m);
}

TEST(RecordTableTest, DuplicateKeyFindsLowestIndex) {
  testing::TempDir dir;
  Manifest m = WriteDataset(dir.path().string(), 8, /*duplicate=*/true);
  auto t = RecordTable::Load(dir.path().string(), m);
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(t->Find("img/3"), 3u);
  EXPECT_EQ(t->Find("img/4"), std::nullopt);
}

TEST(RecordTableTest, EmptyDatasetHasEmptyTable) {
  testing::TempDir dir;
  Manifest m = WriteDataset(dir.path().string(), 0);
  auto t = RecordTable::Load(dir.path().string(), m);
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(t->records(), 0u);
  EXPECT_EQ(t->Find("x"), std::nullopt);
}

TEST(RecordTableTest, OffWhenAsked) {
  testing::TempDir dir;
  DatasetWriterOptions o;
  o.directory = dir.path().string();
  o.record_table = false;
  auto w = DatasetWriter::Create(o);
  ASSERT_THAT(w, IsOk());
  auto m = (*w)->Finish();
  ASSERT_THAT(m, IsOk());
  EXPECT_FALSE(m->record_table.has_value());
  EXPECT_FALSE(std::filesystem::exists(dir.Join("records.idx")));
  EXPECT_THAT(RecordTable::Load(dir.path().string(), *m),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("lists no record table")));
}

TEST(RecordTableTest, HostileFilesAreDataLossNamingFileAndOffset) {
  testing::TempDir dir;
  const std::string d = dir.path().string();
  Manifest m = WriteDataset(d, 12);
  const std::string good = ReadAll(d + "/records.idx");
  struct Case {
    const char* what;
    void (*edit)(std::string*);
    const char* message;
  };
  const Case cases[] = {
      {"truncated", [](std::string* b) { b->resize(40); }, "@40: truncated"},
      {"bad magic", [](std::string* b) { (*b)[1] = 'X'; }, "@0: not a record table"},
      {"header crc", [](std::string* b) { (*b)[16] ^= 1; }, "header checksum mismatch"},
      {"more records",
       [](std::string* b) {
         (*b)[16] = 13;
         RefreshHeaderCrc(b);
       },
       "@"},
      {"slots not a power of two",
       [](std::string* b) {
         (*b)[32] = 31;
         RefreshHeaderCrc(b);
       },
       "@32: 31 hash slots"},
      {"key offset backwards",
       [](std::string* b) {
         const size_t at = kRecordTableHeaderSize + 8 * 12 * 2 + 8 * 5;
         (*b)[at] = 1;
       },
       "key offset 5 is 1"},
      {"slot names record past the end",
       [](std::string* b) {
         const size_t slots_at = b->size() - kRecordTableSlotSize * RecordTableSlots(12);
         for (size_t at = slots_at; at < b->size(); at += 16) {
           if (common::LoadLE<uint64_t>(reinterpret_cast<uint8_t*>(b->data()) + at + 8) !=
               kEmptySlot) {
             common::StoreLE<uint64_t>(reinterpret_cast<uint8_t*>(b->data()) + at + 8, 99);
             return;
           }
         }
       },
       "names record 99 past the end"},
      {"record moved past an empty slot",
       [](std::string* b) {
         auto* p = reinterpret_cast<uint8_t*>(b->data());
         const uint64_t slots = RecordTableSlots(12), mask = slots - 1;
         const size_t at = b->size() - kRecordTableSlotSize * slots;
         auto slot = [&](uint64_t s) { return p + at + kRecordTableSlotSize * s; };
         auto empty = [&](uint64_t s) { return common::LoadLE<uint64_t>(slot(s) + 8) == kEmptySlot; };
         uint64_t home = 0;  // a record at its home slot
         while (empty(home) || (common::LoadLE<uint64_t>(slot(home)) & mask) != home) ++home;
         uint64_t to = 0;  // an empty slot: the record goes there, its home is emptied
         while (!empty(to)) ++to;
         std::memcpy(slot(to), slot(home), kRecordTableSlotSize);
         common::StoreLE<uint64_t>(slot(home), 0);
         common::StoreLE<uint64_t>(slot(home) + 8, kEmptySlot);
       },
       "lies past an empty slot on its probe from slot"},
      {"hash not the key's",
       [](std::string* b) {
         const size_t slots_at = b->size() - kRecordTableSlotSize * RecordTableSlots(12);
         for (size_t at = slots_at; at < b->size(); at += 16) {
           if ((*b)[at + 8] != static_cast<char>(0xff)) {
             (*b)[at] ^= 1;
             return;
           }
         }
       },
       "is not its key's"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_THAT(LoadEdited(d, m, c.edit),
                StatusIs(absl::StatusCode::kDataLoss,
                         ::testing::AllOf(HasSubstr("records.idx"), HasSubstr(c.message))));
    ASSERT_THAT(WriteFileAtomically(d + "/records.idx", good), IsOk());
  }
}

TEST(RecordTableTest, DisagreementWithManifestIsDataLoss) {
  testing::TempDir dir;
  const std::string d = dir.path().string();
  Manifest m = WriteDataset(d, 12);
  Manifest crc = m;
  crc.record_table->crc32c ^= 1;
  EXPECT_THAT(RecordTable::Load(d, crc),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("records.idx @0: record table CRC")));
  Manifest size = m;
  size.record_table->bytes += 8;
  EXPECT_THAT(RecordTable::Load(d, size),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("the manifest says")));
  Manifest fewer = m;
  fewer.shards.back().records -= 1;
  EXPECT_THAT(RecordTable::Load(d, fewer),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("records.idx @16: 12 records")));
  Manifest labels = m;
  labels.schema.labels.pop_back();
  EXPECT_THAT(RecordTable::Load(d, labels),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("@12: 2 label fields")));
  std::filesystem::remove(dir.Join("records.idx"));
  EXPECT_THAT(RecordTable::Load(d, m), StatusIs(absl::StatusCode::kNotFound, HasSubstr("records.idx")));
}

TEST(RecordTableTest, ManifestEntryIsChecked) {
  const std::string base =
      R"({"format": "shardpack", "version": "1.1", "backend": "shard", "records": 0,
          "schema": {"encoding": "raw", "layout": "hwc", "height": 0, "width": 0,
                     "channels": 0, "labels": []},
          "shards": [{"path": "a.shard", "records": 0, "bytes": 0, "crc32c": "00000000"}],
          "record_table": )";
  auto parse = [&](const std::string& entry) { return ParseManifest(base + entry + "}", "m"); };
  auto ok = parse(R"({"path": "records.idx", "bytes": 96, "crc32c": "0a0b0c0d"})");
  ASSERT_THAT(ok, IsOk());
  EXPECT_EQ(ok->record_table, (RecordTableEntry{"records.idx", 96, 0x0a0b0c0d}));
  EXPECT_THAT(parse(R"([])"), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("m.record_table: expected object")));
  EXPECT_THAT(parse(R"({"path": "../x", "bytes": 1, "crc32c": "00000000"})"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("m.record_table.path")));
  EXPECT_THAT(parse(R"({"path": "a.shard", "bytes": 1, "crc32c": "00000000"})"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("a shard's")));
  EXPECT_THAT(parse(R"({"path": "r", "bytes": -1, "crc32c": "00000000"})"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("m.record_table.bytes")));
  EXPECT_THAT(parse(R"({"path": "r", "bytes": 1, "crc32c": "0"})"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("m.record_table.crc32c")));
}

// SP_DCHECK runs in the test, sanitizer and fuzz builds (CMakeLists.txt):
// a broken precondition ends the process there, naming the condition.
TEST(RecordTableDeathTest, BrokenPreconditionEndsTheProcessWhereChecksRun) {
#ifdef SHARDPACK_DEBUG_CHECKS
  EXPECT_DEATH(RecordTableBuilder(kMaxLabels + 1, "."),
               "shardpack: check failed: label_fields >= 0 && label_fields <= kMaxLabels "
               "\\(.*record_table_builder.cc:[0-9]+\\)");
#else
  GTEST_SKIP() << "SP_DCHECK is off in this build (CMAKE_BUILD_TYPE Release or "
                  "SHARDPACK_DEBUG_CHECKS=OFF)";
#endif
}

// SP_CHECK runs in every build.
TEST(RecordTableDeathTest, AlwaysOnCheckEndsTheProcessInEveryBuild) {
  const int records = 0;
  EXPECT_DEATH(SP_CHECK(records > 0), "shardpack: check failed: records > 0");
}

}  // namespace
}  // namespace shardpack::format
