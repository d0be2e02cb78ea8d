// Write then read: every record comes back as it went in, through random
// access, block iteration and verification, with and without zstd.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/crc32c.h"
#include "shardpack/shard.h"
#include "tests/testing/shard_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/write_shard.h"

namespace shardpack {
namespace {

using testing::OwnedRecord;
using ::testing::HasSubstr;

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// Reads every record back by index and checks it, and checks verification.
void ExpectShardHolds(const std::string& bytes, const std::vector<OwnedRecord>& records) {
  auto file = NewMemoryFile("mem.shard", Bytes(bytes));
  SP_ASSERT_OK_AND_ASSIGN(auto reader, ShardReader::Open(file.get()));
  ASSERT_EQ(reader->index().num_records(), records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    SP_ASSERT_OK_AND_ASSIGN(Record got, reader->ReadRecord(i));
    ASSERT_TRUE(SameContents(got, records[i].record())) << "record " << i;
  }
  EXPECT_THAT(reader->ReadRecord(records.size()),
              testing::StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("no record")));
  ShardVerifyResult v = VerifyShard(*file);
  EXPECT_TRUE(v.ok()) << (v.problems.empty() ? "" : v.problems[0].message());
  EXPECT_EQ(v.records, records.size());
  EXPECT_EQ(v.file_crc32c, Crc32c(Bytes(bytes)));
}

class ShardRoundTripTest : public ::testing::TestWithParam<Compression> {
 protected:
  ShardWriterOptions Options(uint32_t block_size = 4 << 20) const {
    ShardWriterOptions o;
    o.block_size = block_size;
    o.compression = GetParam();
    return o;
  }
};

TEST_P(ShardRoundTripTest, EmptyShard) {
  std::string bytes = testing::WriteShard({}, Options());
  EXPECT_EQ(bytes.size(), 4096u + 16 + 32);
  ExpectShardHolds(bytes, {});
}

TEST_P(ShardRoundTripTest, OneRecord) {
  std::vector<OwnedRecord> records = {testing::RawRecord(0, 32, 32, 3)};
  ExpectShardHolds(testing::WriteShard(records, Options()), records);
}

TEST_P(ShardRoundTripTest, EveryEncodingAndLayout) {
  std::vector<OwnedRecord> records = {
      testing::RawRecord(0, 32, 32, 3, Layout::kHWC),
      testing::RawRecord(1, 32, 32, 3, Layout::kCHW),
      testing::RawRecord(2, 28, 28, 1),
      testing::RawRecord(3, 0, 0, 0),  // an empty image is still a record
      testing::JpegLikeRecord(4, 1000),
  };
  OwnedRecord many_labels = testing::RawRecord(5, 2, 2, 4);
  many_labels.labels = {1, 2, 3, 4, 5, 6, 7, -8};
  records.push_back(many_labels);
  OwnedRecord no_labels = testing::JpegLikeRecord(6, 10);
  no_labels.labels = {};
  no_labels.key = "";
  records.push_back(no_labels);
  ExpectShardHolds(testing::WriteShard(records, Options()), records);
}

TEST_P(ShardRoundTripTest, RecordLargerThanABlockGetsItsOwnBlock) {
  std::vector<OwnedRecord> records = {
      testing::JpegLikeRecord(0, 100),
      testing::JpegLikeRecord(1, 50000),  // block size is 8 KiB below
      testing::JpegLikeRecord(2, 100),
  };
  std::string bytes = testing::WriteShard(records, Options(8192));
  ExpectShardHolds(bytes, records);
  auto file = NewMemoryFile("mem.shard", Bytes(bytes));
  SP_ASSERT_OK_AND_ASSIGN(ShardIndex index, ShardIndex::Load(*file));
  ASSERT_EQ(index.num_blocks(), 3u);
  EXPECT_EQ(index.block(1).record_count, 1u);
  for (const BlockInfo& b : index.blocks()) EXPECT_EQ(b.offset % kShardAlignment, 0u);
}

TEST_P(ShardRoundTripTest, BlocksRespectTheTargetSize) {
  std::vector<OwnedRecord> records;
  for (int i = 0; i < 200; ++i) records.push_back(testing::RawRecord(i, 32, 32, 3));
  std::string bytes = testing::WriteShard(records, Options(64 << 10));
  ExpectShardHolds(bytes, records);
  auto file = NewMemoryFile("mem.shard", Bytes(bytes));
  SP_ASSERT_OK_AND_ASSIGN(ShardIndex index, ShardIndex::Load(*file));
  // 3072 pixels + 24 header + 8 label + key, padded: 21 records fit in 64 KiB.
  EXPECT_EQ(index.num_blocks(), 10u);
  for (size_t b = 0; b < index.num_blocks(); ++b) {
    EXPECT_LE(index.block(b).raw_size, 64u << 10);
    for (uint64_t r = index.block(b).first_record;
         r < index.block(b).first_record + index.block(b).record_count; ++r) {
      EXPECT_EQ(index.BlockOf(r), b);
    }
  }
}

TEST_P(ShardRoundTripTest, MillionTinyRecords) {
  std::string bytes;
  auto out = NewStringWritableFile("mem.shard", &bytes);
  SP_ASSERT_OK_AND_ASSIGN(auto writer, ShardWriter::Create(out.get(), Options()));
  uint8_t pixel[1];
  char key[16];
  for (int i = 0; i < 1000000; ++i) {
    pixel[0] = static_cast<uint8_t>(i * 7);
    int n = snprintf(key, sizeof(key), "%d", i);
    Record r{std::string_view(key, n), {i}, {Encoding::kRaw, Layout::kHWC, 1, 1, 1}, pixel, {}};
    SP_ASSERT_OK(writer->Add(r));
  }
  SP_ASSERT_OK(writer->Finish());
  EXPECT_EQ(writer->bytes_written(), bytes.size());
  EXPECT_EQ(writer->file_crc32c(), Crc32c(Bytes(bytes)));

  auto file = NewMemoryFile("mem.shard", Bytes(bytes));
  SP_ASSERT_OK_AND_ASSIGN(auto reader, ShardReader::Open(file.get()));
  ASSERT_EQ(reader->index().num_records(), 1000000u);
  uint64_t seen = 0;
  for (size_t b = 0; b < reader->index().num_blocks(); ++b) {
    SP_ASSERT_OK_AND_ASSIGN(BlockView view, reader->ReadBlock(b));
    for (size_t i = 0; i < view.size(); ++i, ++seen) {
      SP_ASSERT_OK_AND_ASSIGN(Record r, view.record(i));
      ASSERT_EQ(r.labels[0], static_cast<int64_t>(seen));
      ASSERT_EQ(r.payload[0], static_cast<uint8_t>(seen * 7));
      ASSERT_EQ(r.key, std::to_string(seen));
    }
  }
  EXPECT_EQ(seen, 1000000u);
  SP_ASSERT_OK_AND_ASSIGN(Record last, reader->ReadRecord(999999));
  EXPECT_EQ(last.key, "999999");
  EXPECT_TRUE(VerifyShard(*file).ok());
}

INSTANTIATE_TEST_SUITE_P(Compression, ShardRoundTripTest,
                         ::testing::Values(Compression::kNone, Compression::kZstd),
                         [](const auto& param_info) {
                           return param_info.param == Compression::kNone ? "None" : "Zstd";
                         });

TEST(ShardWriterTest, ZstdShrinksCompressibleBlocksAndStoresIncompressibleOnes) {
  std::vector<OwnedRecord> flat;
  for (int i = 0; i < 50; ++i) {
    OwnedRecord r = testing::RawRecord(i, 32, 32, 3);
    std::fill(r.payload.begin(), r.payload.end(), static_cast<uint8_t>(i));
    flat.push_back(r);
  }
  ShardWriterOptions zstd{.block_size = 4 << 20, .compression = Compression::kZstd};
  std::string plain = testing::WriteShard(flat, {});
  std::string packed = testing::WriteShard(flat, zstd);
  EXPECT_LT(packed.size(), plain.size() / 4);
  ExpectShardHolds(packed, flat);

  std::vector<OwnedRecord> noise = {testing::JpegLikeRecord(0, 100000)};
  EXPECT_EQ(testing::WriteShard(noise, zstd), testing::WriteShard(noise, {}));
}

TEST(ShardWriterTest, RejectsRecordsTheFormatCannotHold) {
  std::string bytes;
  auto out = NewStringWritableFile("mem.shard", &bytes);
  SP_ASSERT_OK_AND_ASSIGN(auto writer, ShardWriter::Create(out.get(), {}));
  OwnedRecord bad_shape = testing::RawRecord(0, 32, 32, 3);
  bad_shape.payload.pop_back();
  EXPECT_THAT(writer->Add(bad_shape.record()),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("does not match 32x32x3")));
  OwnedRecord long_key = testing::JpegLikeRecord(1, 10);
  long_key.key.assign(70000, 'k');
  EXPECT_THAT(writer->Add(long_key.record()),
              testing::StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("key")));
  SP_EXPECT_OK(writer->Finish());
  EXPECT_THAT(writer->Add(testing::RawRecord(2, 1, 1, 1).record()),
              testing::StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("Finish")));
  ShardWriterOptions zero_block;
  zero_block.block_size = 0;
  EXPECT_THAT(ShardWriter::Create(out.get(), zero_block),
              testing::StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("block size")));
}

TEST(ShardWriterTest, SameRecordsGiveIdenticalBytes) {
  std::vector<OwnedRecord> records;
  for (int i = 0; i < 100; ++i) records.push_back(testing::JpegLikeRecord(i, 3000 + i));
  ShardWriterOptions zstd{.block_size = 32 << 10, .compression = Compression::kZstd};
  EXPECT_EQ(testing::WriteShard(records, zstd), testing::WriteShard(records, zstd));
}

}  // namespace
}  // namespace shardpack
