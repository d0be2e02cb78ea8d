// LMDB shards that are well-formed LMDB but not a well-formed shard: a
// missing record key, a value that is not a record. Made with the LMDB C API.
#include <lmdb.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "backends/lmdb_store.h"
#include "backends/publish.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/backends/backend_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

using ::shardpack::testing::StatusIs;
using ::testing::HasSubstr;

// Writes an LMDB file holding `values` under the given 8-byte indexes and
// metadata claiming `records` records.
void WriteEnv(const std::string& path, const std::vector<std::pair<uint64_t, std::string>>& values,
              uint64_t records) {
  MDB_env* env;
  ASSERT_EQ(mdb_env_create(&env), 0);
  ASSERT_EQ(mdb_env_open(env, path.c_str(), MDB_NOSUBDIR | MDB_NOLOCK, 0644), 0);
  MDB_txn* txn;
  MDB_dbi dbi;
  ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), 0);
  ASSERT_EQ(mdb_dbi_open(txn, nullptr, 0, &dbi), 0);
  for (const auto& [index, value] : values) {
    uint8_t key[8];
    for (int i = 0; i < 8; ++i) key[i] = static_cast<uint8_t>(index >> (56 - 8 * i));
    MDB_val k{8, key}, v{value.size(), const_cast<char*>(value.data())};
    ASSERT_EQ(mdb_put(txn, dbi, &k, &v, 0), 0);
  }
  Manifest m;
  m.backend = Backend::kLmdb;
  m.schema = testing::JpegSchema();
  std::string meta = backends::ShardMetaJson(m, "x.lmdb", records);
  MDB_val k{sizeof(backends::kLmdbMetaKey) - 1, const_cast<char*>(backends::kLmdbMetaKey)};
  MDB_val v{meta.size(), meta.data()};
  ASSERT_EQ(mdb_put(txn, dbi, &k, &v, 0), 0);
  ASSERT_EQ(mdb_txn_commit(txn), 0);
  mdb_env_close(env);
}

TEST(LmdbDamage, MissingKeyIsNamedByIndex) {
  testing::TempDir dir;
  // Real record values, taken from a shard written by the sink.
  auto m = testing::WriteDataset(dir.path(), Backend::kLmdb,
                                 {testing::JpegLikeRecord(0, 40), testing::JpegLikeRecord(1, 40),
                                  testing::JpegLikeRecord(2, 40)},
                                 testing::JpegSchema());
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<std::string> values;
  {
    SP_ASSERT_OK_AND_ASSIGN(auto good,
                            backends::LmdbShardReader::Open(dir.Join(m->shards[0].path)));
    SP_ASSERT_OK(good->Scan(0, 3, [&](uint64_t, ByteSpan v) {
      values.emplace_back(v.begin(), v.end());
      return absl::OkStatus();
    }));
  }
  std::string path = dir.Join("gap.lmdb");
  WriteEnv(path, {{0, values[0]}, {1, values[1]}, {3, values[2]}}, 3);
  SP_ASSERT_OK_AND_ASSIGN(auto reader, backends::LmdbShardReader::Open(path));
  uint64_t visited = 0;
  absl::Status s = reader->Scan(0, 3, [&](uint64_t, ByteSpan) {
    ++visited;
    return absl::OkStatus();
  });
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kDataLoss, HasSubstr(path + " record 2: missing")));
  EXPECT_EQ(visited, 2u);

  std::string bad = dir.Join("bad.lmdb");
  WriteEnv(bad, {{0, values[0]}, {1, "not a record at all"}}, 2);
  SP_ASSERT_OK_AND_ASSIGN(auto r2, backends::LmdbShardReader::Open(bad));
  SP_ASSERT_OK_AND_ASSIGN(ByteSpan v, r2->Get(1));
  EXPECT_THAT(backends::DecodeLmdbValue(v, bad, 1),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr(bad + " record 1: ")));

  std::string count = dir.Join("count.lmdb");
  WriteEnv(count, {{0, values[0]}}, 2);
  EXPECT_THAT(backends::LmdbShardReader::Open(count),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr(count + ": holds 1 records, its metadata says 2")));
}

// LMDB has no checksums: the entry count in its meta pages is whatever the
// file says. With metadata claiming 2^64 - 1 records and the count forged to
// 0 (= 2^64 - 1 + 1, wrapped), the count check alone passed, and a reader
// cut 2^64 records into units. The file's size bounds the count first.
TEST(LmdbDamage, RecordCountTheFileCannotHoldIsRefused) {
  testing::TempDir dir;
  std::string path = dir.Join("forged.lmdb");
  WriteEnv(path, {{0, "x"}}, UINT64_MAX);
  // The main DB's md_entries in both meta pages (mdb.c: a 16-byte page
  // header, MDB_meta's magic, version, address and map size, the free DB's
  // 48-byte MDB_db, then the main DB's pad, flags, depth and three page
  // counts): set to 0.
  constexpr uint64_t kEntriesOffset = 16 + 24 + 48 + 32;
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  for (uint64_t meta : {uint64_t{0}, page}) {
    f.seekp(static_cast<std::streamoff>(meta + kEntriesOffset));
    f.write(std::string(8, '\0').data(), 8);
  }
  f.close();
  EXPECT_THAT(backends::LmdbShardReader::Open(path),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr(path + ": its metadata says 18446744073709551615 records, "
                                        "more than its")));
}

// The last page number in a meta page is the file's word too. Set to
// 2^52 - 1, (last + 1) x 4096 wraps to 0 in 64 bits: a size check that
// multiplies passed it, and liblmdb then refused the read transaction with
// MDB_MAP_RESIZED, which the reader called an internal error (found by
// lmdb_shard_fuzzer). Any liblmdb code on a read-only shard is the file's.
TEST(LmdbDamage, LastPageTheFileCannotHoldIsRefused) {
  testing::TempDir dir;
  std::string path = dir.Join("forged.lmdb");
  WriteEnv(path, {{0, "x"}}, 1);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  // After the main DB's 48-byte MDB_db: mm_last_pg.
  constexpr uint64_t kLastPageOffset = 16 + 24 + 48 + 48;
  // Wrapping to 0, and a map of 4 PiB that liblmdb cannot reserve (ENOMEM).
  const std::pair<uint64_t, std::string> cases[] = {
      {(uint64_t{1} << 63) / page * 2 - 1, ": truncated LMDB file"},
      {uint64_t{1} << 40, ": not an LMDB environment"}};
  for (const auto& [last, message] : cases) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    for (uint64_t meta : {uint64_t{0}, page}) {
      f.seekp(static_cast<std::streamoff>(meta + kLastPageOffset));
      f.write(reinterpret_cast<const char*>(&last), 8);
    }
    f.close();
    EXPECT_THAT(backends::LmdbShardReader::Open(path),
                StatusIs(absl::StatusCode::kDataLoss, HasSubstr(path + message)))
        << "last page " << last;
  }
}

}  // namespace
}  // namespace shardpack
