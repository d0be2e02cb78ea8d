// The record table's builder in bounded memory (format/record_table_builder.cc):
// spilling and the merge of sorted runs give the table the builder makes in
// memory, byte for byte; records that wrap past the last slot are found;
// the scratch files leave nothing behind; a spill that cannot be written is
// an error naming the folder.
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "format/record_table.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/crc32c.h"
#include "shardpack/file.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack::format {
namespace {

using ::shardpack::testing::IsOk;
using ::testing::HasSubstr;

// A record: its labels (two fields) and key.
struct Row {
  int64_t labels[2];
  std::string key;
};

// The table `rows` make with `memory_bytes`, as written to a string.
std::string Build(const std::vector<Row>& rows, const std::string& dir, uint64_t memory_bytes,
                  bool* spilled = nullptr) {
  RecordTableBuilder b(2, dir, memory_bytes);
  for (const Row& r : rows) EXPECT_THAT(b.Add(r.labels, r.key), IsOk());
  if (spilled != nullptr) *spilled = b.spilled();
  std::string bytes;
  auto file = NewStringWritableFile("table", &bytes);
  EXPECT_THAT(b.Write(file.get()), IsOk());
  return bytes;
}

// Loads `bytes` as a dataset's record table (through its checks) from `dir`.
absl::StatusOr<RecordTable> Load(const std::string& bytes, uint64_t records) {
  Manifest m;
  m.schema.labels = {{"a", {}}, {"b", {}}};
  m.shards.push_back({});
  m.shards[0].records = records;
  RecordTableEntry entry;
  entry.path = kRecordTableFileName;
  entry.bytes = bytes.size();
  entry.crc32c = Crc32c({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  auto file = NewMemoryFile("records.idx", {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  return RecordTable::Parse(*file, entry, m);
}

// `n` keys: "img/<i>", every seventh one repeating the key before it.
std::vector<Row> Rows(int n) {
  std::vector<Row> rows;
  for (int i = 0; i < n; ++i) {
    rows.push_back({{i % 10, -i}, absl::StrCat("img/", i % 7 == 6 ? i - 1 : i)});
  }
  return rows;
}

// `count` distinct keys whose home slot in a table of `records` is one of
// the last `within` slots: they pile up at the end and wrap.
std::vector<std::string> KeysAtTheEnd(uint64_t records, uint64_t within, int count) {
  const uint64_t mask = RecordTableSlots(records) - 1;
  std::vector<std::string> keys;
  for (uint64_t i = 0; static_cast<int>(keys.size()) < count; ++i) {
    std::string k = absl::StrCat("end/", i);
    if ((KeyHash(k) & mask) >= mask + 1 - within) keys.push_back(std::move(k));
  }
  return keys;
}

void ExpectEveryKeyFound(const RecordTable& t, const std::vector<Row>& rows) {
  ASSERT_EQ(t.records(), rows.size());
  for (uint64_t r = 0; r < rows.size(); ++r) {
    ASSERT_EQ(t.key(r), rows[r].key) << r;
    ASSERT_EQ(t.label(r, 0), rows[r].labels[0]) << r;
    ASSERT_EQ(t.label(r, 1), rows[r].labels[1]) << r;
    uint64_t first = r;  // the lowest index with this key
    while (first > 0 && rows[first - 1].key == rows[r].key) --first;
    ASSERT_EQ(t.Find(rows[r].key), first) << rows[r].key;
  }
  EXPECT_EQ(t.Find("no such key"), std::nullopt);
}

TEST(RecordTableBuilderTest, SpilledAndMergedTableIsTheInMemoryOneByteForByte) {
  testing::TempDir dir;
  const std::vector<Row> rows = Rows(50000);
  bool spilled = true;
  const std::string memory = Build(rows, dir.path().string(), uint64_t{1} << 30, &spilled);
  EXPECT_FALSE(spilled);
  // 64 KiB: spilled after ~1,600 records; runs of 4,096 entries, 13 of them.
  const std::string merged = Build(rows, dir.path().string(), 64 << 10, &spilled);
  EXPECT_TRUE(spilled);
  EXPECT_TRUE(memory == merged) << "the spilled builder wrote another table";
  auto t = Load(merged, rows.size());
  ASSERT_THAT(t, IsOk());
  ExpectEveryKeyFound(*t, rows);
  // Scratch files have no names: the folder is as it was.
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(RecordTableBuilderTest, RecordsThatWrapPastTheLastSlotAreFound) {
  testing::TempDir dir;
  for (int records : {10, 3000}) {
    SCOPED_TRACE(records);
    // Half the keys have one of the last 3 homes: most of them wrap to slot 0 on.
    std::vector<std::string> end = KeysAtTheEnd(records, 3, records / 2);
    std::vector<Row> rows;
    for (int i = 0; i < records; ++i) {
      rows.push_back({{i, i}, i % 2 == 0 ? end[i / 2] : absl::StrCat("k", i)});
    }
    for (uint64_t memory : {uint64_t{1} << 30, uint64_t{16} << 10}) {
      auto t = Load(Build(rows, dir.path().string(), memory), rows.size());
      ASSERT_THAT(t, IsOk());
      ExpectEveryKeyFound(*t, rows);
    }
  }
}

// 100,000 copies of one key whose home is near the last slot: almost all of
// them wrap, more than sweep 1 keeps (65,536), so the wrapped records come
// from a third pass over the runs; the lowest index is found.
TEST(RecordTableBuilderTest, MoreWrappedRecordsThanKeptComeFromAnotherPass) {
  testing::TempDir dir;
  const int n = 100000;
  const std::string key = KeysAtTheEnd(n, 8, 1)[0];
  std::vector<Row> rows(n, Row{{1, 2}, key});
  rows[n - 1].key = "other";
  const std::string memory = Build(rows, dir.path().string(), uint64_t{1} << 30);
  const std::string merged = Build(rows, dir.path().string(), 256 << 10);
  EXPECT_TRUE(memory == merged);
  auto t = Load(merged, n);
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(t->Find(key), 0u);
  EXPECT_EQ(t->Find("other"), uint64_t{n - 1});
}

TEST(RecordTableBuilderTest, EmptyAndOneRecordTables) {
  testing::TempDir dir;
  for (int n : {0, 1}) {
    auto t = Load(Build(Rows(n), dir.path().string(), 64 << 10), n);
    ASSERT_THAT(t, IsOk());
    ExpectEveryKeyFound(*t, Rows(n));
  }
}

TEST(RecordTableBuilderTest, ASpillThatCannotBeWrittenNamesTheFolder) {
  testing::TempDir dir;
  const std::string missing = dir.Join("no-such-folder");
  RecordTableBuilder b(2, missing, 4096);
  absl::Status s;
  const int64_t labels[2] = {0, 0};
  for (int i = 0; i < 1000 && s.ok(); ++i) s = b.Add(labels, absl::StrCat("key/", i));
  EXPECT_THAT(s, testing::StatusIs(absl::StatusCode::kNotFound,
                                   HasSubstr("create a scratch file in " + missing)));
}

}  // namespace
}  // namespace shardpack::format
