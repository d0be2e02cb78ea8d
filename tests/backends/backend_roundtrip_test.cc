// LMDB and HDF5 shards: write through DatasetWriter, read back every byte.
#include <hdf5.h>

#include <filesystem>
#include <fstream>

#include "backends/store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/backends/backend_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

using ::shardpack::testing::JpegLikeRecord;
using ::shardpack::testing::OwnedRecord;
using ::shardpack::testing::RawRecord;
using ::shardpack::testing::StatusIs;
using ::shardpack::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

std::vector<OwnedRecord> RawRecords(int n, Layout layout, bool with_coarse) {
  std::vector<OwnedRecord> out;
  for (int i = 0; i < n; ++i) {
    OwnedRecord r = RawRecord(i, 8, 6, 3, layout);
    if (with_coarse) r.labels.push_back(100 + i % 4);
    r.extra = testing::PatternBytes(i + 99, i % 3);  // some empty, some not
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<OwnedRecord> JpegRecords(int n) {
  std::vector<OwnedRecord> out;
  for (int i = 0; i < n; ++i) out.push_back(JpegLikeRecord(i, 100 + 37 * i));
  return out;
}

void ExpectSame(const std::vector<OwnedRecord>& a, const std::vector<OwnedRecord>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(SameContents(a[i].record(), b[i].record())) << "record " << i;
  }
}

// The directory holds exactly the manifest, these shards and the record
// table: no partial files, no LMDB lock files.
void ExpectOnlyShards(const TempDir& dir, const Manifest& m) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    names.push_back(e.path().filename().string());
  }
  std::vector<std::string> want = {kManifestFileName};
  for (const ShardEntry& s : m.shards) want.push_back(s.path);
  if (m.record_table.has_value()) want.push_back(m.record_table->path);
  EXPECT_THAT(names, ::testing::UnorderedElementsAreArray(want));
}

struct Case {
  Backend backend;
  const char* name;
};

class BackendRoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(BackendRoundTrip, RawRecordsWithKeysAndExtra) {
  TempDir dir;
  auto records = RawRecords(50, Layout::kHWC, /*with_coarse=*/true);
  SP_ASSERT_OK_AND_ASSIGN(
      Manifest m, testing::WriteDataset(dir.path(), GetParam().backend, records,
                                        testing::RawSchema(8, 6, 3, Layout::kHWC, 2), 20));
  ASSERT_EQ(m.shards.size(), 3u);
  EXPECT_EQ(m.backend, GetParam().backend);
  EXPECT_EQ(m.shards[0].path,
            absl::StrCat("shard-00000", std::string(ShardExtension(GetParam().backend))));
  EXPECT_EQ(m.shards[2].records, 10u);
  ExpectOnlyShards(dir, m);
  SP_ASSERT_OK_AND_ASSIGN(auto back, testing::ReadDataset(dir.path()));
  ExpectSame(records, back);
  // The manifest's size and CRC-32C are of the file as published.
  EXPECT_EQ(m.shards[0].bytes, fs::file_size(dir.path() / m.shards[0].path));
}

TEST_P(BackendRoundTrip, ChwRecords) {
  TempDir dir;
  auto records = RawRecords(9, Layout::kCHW, false);
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, testing::WriteDataset(
                                          dir.path(), GetParam().backend, records,
                                          testing::RawSchema(8, 6, 3, Layout::kCHW, 1)));
  SP_ASSERT_OK_AND_ASSIGN(auto back, testing::ReadDataset(dir.path()));
  ExpectSame(records, back);
}

TEST_P(BackendRoundTrip, JpegRecordsOfVaryingSize) {
  TempDir dir;
  auto records = JpegRecords(40);
  records[3].key.clear();  // an empty key survives too
  SP_ASSERT_OK_AND_ASSIGN(
      Manifest m, testing::WriteDataset(dir.path(), GetParam().backend, records,
                                        testing::JpegSchema()));
  SP_ASSERT_OK_AND_ASSIGN(auto back, testing::ReadDataset(dir.path()));
  ExpectSame(records, back);
}

TEST_P(BackendRoundTrip, EmptyShardListForNoRecords) {
  TempDir dir;
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, testing::WriteDataset(dir.path(), GetParam().backend, {},
                                                            testing::JpegSchema()));
  EXPECT_TRUE(m.shards.empty());
}

TEST_P(BackendRoundTrip, UnfinishedShardLeavesNothing) {
  TempDir dir;
  {
    DatasetWriterOptions o;
    o.directory = dir.path();
    o.schema = testing::JpegSchema();
    backends::UseBackend(&o, GetParam().backend);
    SP_ASSERT_OK_AND_ASSIGN(auto writer, DatasetWriter::Create(o));
    auto records = JpegRecords(5);
    for (const auto& r : records) SP_ASSERT_OK(writer->Add(r.record()));
    // Destroyed without Finish: a killed pack.
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

INSTANTIATE_TEST_SUITE_P(Backends, BackendRoundTrip,
                         ::testing::Values(Case{Backend::kLmdb, "lmdb"},
                                           Case{Backend::kHdf5, "hdf5"}),
                         [](const auto& p) { return std::string(p.param.name); });

TEST(LmdbShard, MapGrowsInsteadOfMapFull) {
  TempDir dir;
  auto records = JpegRecords(200);  // ~4 MB of values
  backends::BackendOptions bo;
  bo.lmdb.initial_map_bytes = 64 << 10;
  bo.lmdb.txn_bytes = 300 << 10;
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, testing::WriteDataset(dir.path(), Backend::kLmdb, records,
                                                            testing::JpegSchema(), 0, bo));
  SP_ASSERT_OK_AND_ASSIGN(auto back, testing::ReadDataset(dir.path()));
  ExpectSame(records, back);
}

TEST(LmdbShard, ScanVisitsARangeInKeyOrderWithStableViews) {
  TempDir dir;
  auto records = JpegRecords(30);
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, testing::WriteDataset(dir.path(), Backend::kLmdb, records,
                                                            testing::JpegSchema()));
  SP_ASSERT_OK_AND_ASSIGN(auto reader,
                          backends::LmdbShardReader::Open(dir.Join(m.shards[0].path)));
  EXPECT_EQ(reader->size(), 30u);
  EXPECT_EQ(reader->meta().schema, testing::JpegSchema());
  std::vector<std::pair<uint64_t, ByteSpan>> seen;
  SP_ASSERT_OK(reader->Scan(7, 19, [&](uint64_t i, ByteSpan v) {
    seen.emplace_back(i, v);
    return absl::OkStatus();
  }));
  ASSERT_EQ(seen.size(), 12u);
  // Views stay valid after the walk, for the reader's life.
  for (size_t j = 0; j < seen.size(); ++j) {
    EXPECT_EQ(seen[j].first, 7 + j);
    SP_ASSERT_OK_AND_ASSIGN(Record r,
                            backends::DecodeLmdbValue(seen[j].second, reader->path(), 7 + j));
    EXPECT_TRUE(SameContents(r, records[7 + j].record()));
  }
  SP_ASSERT_OK_AND_ASSIGN(ByteSpan v, reader->Get(29));
  SP_ASSERT_OK_AND_ASSIGN(Record last, backends::DecodeLmdbValue(v, reader->path(), 29));
  EXPECT_EQ(last.key, records[29].key);
}

TEST(Hdf5Shard, FixedShapeReadsManyRowsPerCall) {
  TempDir dir;
  auto records = RawRecords(100, Layout::kHWC, true);
  backends::BackendOptions bo;
  bo.hdf5.chunk_bytes = 144 * 16;  // 16 rows per chunk
  SP_ASSERT_OK_AND_ASSIGN(
      Manifest m, testing::WriteDataset(dir.path(), Backend::kHdf5, records,
                                        testing::RawSchema(8, 6, 3, Layout::kHWC, 2), 0, bo));
  SP_ASSERT_OK_AND_ASSIGN(auto reader,
                          backends::Hdf5ShardReader::Open(dir.Join(m.shards[0].path)));
  EXPECT_TRUE(reader->ours());
  EXPECT_TRUE(reader->fixed_shape());
  EXPECT_EQ(reader->chunk_rows(), 16u);
  EXPECT_EQ(reader->num_labels(), 2);
  EXPECT_EQ(reader->image_info().RawBytes(), 144u);
  std::vector<uint8_t> images(40 * 144);
  std::vector<int64_t> fine(40), coarse(40);
  int64_t* labels[] = {fine.data(), coarse.data()};
  SP_ASSERT_OK(reader->ReadRows(32, 72, images.data(), labels));
  for (int i = 0; i < 40; ++i) {
    const OwnedRecord& r = records[32 + i];
    EXPECT_TRUE(std::equal(r.payload.begin(), r.payload.end(), images.begin() + i * 144));
    EXPECT_EQ(fine[i], r.labels[0]);
    EXPECT_EQ(coarse[i], r.labels[1]);
  }
  std::vector<int64_t> offsets;
  std::vector<uint8_t> keys;
  SP_ASSERT_OK(reader->ReadKeys(32, 34, &offsets, &keys));
  EXPECT_EQ(std::string(keys.begin(), keys.end()), records[32].key + records[33].key);
}

TEST(Hdf5Shard, RecordOfAnotherShapeIsRefused) {
  TempDir dir;
  auto records = RawRecords(3, Layout::kHWC, false);
  records[2] = RawRecord(2, 4, 4, 3);
  auto m = testing::WriteDataset(dir.path(), Backend::kHdf5, records,
                                 testing::RawSchema(8, 6, 3, Layout::kHWC, 1));
  EXPECT_THAT(m, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("raw/2")));
}

// Bad input: one line naming the path and what is wrong.
void ExpectOneLine(const absl::Status& s, const std::string& path, const std::string& what) {
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr(path));
  EXPECT_THAT(std::string(s.message()), HasSubstr(what));
  EXPECT_THAT(std::string(s.message()), Not(HasSubstr("\n")));
}

std::string WriteOneShard(const TempDir& dir, Backend backend) {
  auto m = testing::WriteDataset(dir.path(), backend, JpegRecords(60), testing::JpegSchema());
  EXPECT_TRUE(m.ok()) << m.status();
  return dir.Join(m->shards[0].path);
}

void Truncate(const std::string& path, uint64_t keep) { fs::resize_file(path, keep); }

TEST(BadInput, TruncatedShardOfEitherBackend) {
  for (Backend backend : {Backend::kLmdb, Backend::kHdf5}) {
    TempDir dir;
    std::string path = WriteOneShard(dir, backend);
    Truncate(path, fs::file_size(path) / 2);
    absl::Status s = backend == Backend::kLmdb
                         ? backends::LmdbShardReader::Open(path).status()
                         : backends::Hdf5ShardReader::Open(path).status();
    ExpectOneLine(s, path, "truncated");
  }
}

TEST(BadInput, NotOursForBothBackends) {
  TempDir dir;
  std::string path = dir.Join("junk.bin");
  std::ofstream(path) << std::string(10000, 'x');
  ExpectOneLine(backends::LmdbShardReader::Open(path).status(), path, "not an LMDB");
  ExpectOneLine(backends::Hdf5ShardReader::Open(path).status(), path, "not an HDF5 file");
}

TEST(BadInput, MissingFileIsNotFound) {
  TempDir dir;
  EXPECT_THAT(backends::Hdf5ShardReader::Open(dir.Join("nope.h5")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope.h5")));
  EXPECT_THAT(backends::LmdbShardReader::Open(dir.Join("nope.lmdb")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope.lmdb")));
}

TEST(BadInput, Hdf5MissingDataset) {
  TempDir dir;
  std::string path = WriteOneShard(dir, Backend::kHdf5);
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  ASSERT_GE(H5Ldelete(f, "coarse_labels", H5P_DEFAULT), 0);
  H5Fclose(f);
  ExpectOneLine(backends::Hdf5ShardReader::Open(path).status(), path,
                "missing dataset 'coarse_labels'");
}

}  // namespace
}  // namespace shardpack
