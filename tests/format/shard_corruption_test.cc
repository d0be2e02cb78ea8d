// Damaged shards, the LevelDB way: flip every byte, truncate at every length,
// break the magic and the versions, and damage fields behind refreshed
// checksums. Every damage must be reported with the shard's name and an
// offset, and no damage may ever come back as good but different data.
#include <zstd.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "format/shard_layout.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/crc32c.h"
#include "shardpack/shard.h"
#include "tests/fuzz/refresh_checksums.h"
#include "tests/testing/shard_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/write_shard.h"

namespace shardpack {
namespace {

using common::LoadLE;
using common::StoreLE;
using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using testing::OwnedRecord;
using testing::StatusIs;

constexpr char kName[] = "mem.shard";
// Every damage report names the shard and a byte offset: "mem.shard @123: ...".
constexpr char kWhere[] = "mem.shard @";

// A record whose payload zstd shrinks: a smooth gradient.
OwnedRecord GradientRecord(uint64_t i, uint32_t h, uint32_t w, uint8_t c) {
  OwnedRecord r = testing::RawRecord(i, h, w, c);
  for (size_t j = 0; j < r.payload.size(); ++j) {
    r.payload[j] = static_cast<uint8_t>(j / 7 + i);
  }
  return r;
}

// Incompressible records of every kind the format holds: raw HWC and CHW,
// odd sizes that need record padding, jpeg-like payloads with extra bytes,
// eight labels, no labels and an empty key, an empty image.
std::vector<OwnedRecord> MixedRecords() {
  std::vector<OwnedRecord> records;
  for (uint64_t i = 0; i < 20; ++i) {
    switch (i % 3) {
      case 0:
        records.push_back(testing::RawRecord(i, 8, 8, 3));
        break;
      case 1:
        records.push_back(testing::RawRecord(i, 5, 7, 1, Layout::kCHW));
        break;
      default:
        records.push_back(testing::JpegLikeRecord(i, 90 + 41 * i));
        break;
    }
  }
  OwnedRecord many_labels = testing::RawRecord(20, 3, 3, 4);
  many_labels.labels = {1, -2, 3, -4, 5, -6, 7, INT64_MIN};
  records.push_back(many_labels);
  OwnedRecord bare = testing::JpegLikeRecord(21, 33);
  bare.key.clear();
  bare.labels = {};
  records.push_back(bare);
  records.push_back(testing::RawRecord(22, 0, 0, 0));
  return records;
}

// Compressible records first (zstd blocks), then noise (a block zstd cannot
// shrink, stored as it is inside the zstd shard).
std::vector<OwnedRecord> CompressibleRecords() {
  std::vector<OwnedRecord> records;
  for (uint64_t i = 0; i < 16; ++i) {
    if (i % 4 == 3) {
      OwnedRecord r = testing::JpegLikeRecord(i, 300);
      for (size_t j = 0; j < r.payload.size(); ++j) r.payload[j] = "SHARDPACK"[j % 9];
      records.push_back(r);
    } else {
      records.push_back(GradientRecord(i, 12, 12, 3));
    }
  }
  records.push_back(testing::JpegLikeRecord(16, 3800));
  return records;
}

// A small shard (~16 KiB, several blocks) and what it holds.
struct Fixture {
  std::vector<OwnedRecord> records;
  std::string bytes;
  // True for the bytes no reader looks at: zero padding after the file
  // header and after each block. Only VerifyShard checks them.
  std::vector<bool> padding;
};

const Fixture& GetFixture(Compression compression) {
  static const auto* fixtures = [] {
    auto* made = new std::map<Compression, Fixture>;
    for (Compression c : {Compression::kNone, Compression::kZstd}) {
      Fixture& f = (*made)[c];
      ShardWriterOptions options;
      options.compression = c;
      options.block_size = c == Compression::kNone ? 2500 : 4000;
      f.records = c == Compression::kNone ? MixedRecords() : CompressibleRecords();
      f.bytes = testing::WriteShard(f.records, options);
      f.padding.assign(f.bytes.size(), false);
      std::fill(f.padding.begin() + format::kFileHeaderSize, f.padding.begin() + kShardAlignment,
                true);
      auto file =
          NewMemoryFile(kName, {reinterpret_cast<const uint8_t*>(f.bytes.data()), f.bytes.size()});
      auto index = ShardIndex::Load(*file);
      EXPECT_TRUE(index.ok()) << index.status();
      for (size_t b = 0; index.ok() && b < index->num_blocks(); ++b) {
        uint64_t end =
            b + 1 < index->num_blocks() ? index->block(b + 1).offset : index->footer_offset();
        std::fill(f.padding.begin() + index->block(b).offset + index->block(b).stored_size,
                  f.padding.begin() + end, true);
      }
    }
    return made;
  }();
  return fixtures->at(compression);
}

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
std::vector<uint8_t> Copy(const std::string& s) { return {s.begin(), s.end()}; }

// Sets a u16 of the file header and recomputes the header CRC, as a writer of
// another version would have.
void SetHeaderU16(std::vector<uint8_t>& bytes, size_t at, uint16_t value) {
  StoreLE<uint16_t>(&bytes[at], value);
  StoreLE<uint32_t>(&bytes[format::kFileHeaderCrcOffset],
                    Crc32c({bytes.data(), format::kFileHeaderCrcOffset}));
}

// What went wrong with one damaged shard: (kind, example) pairs. Kinds are
// fixed strings so that positions can be grouped by kind in the report.
using Misbehaviour = std::vector<std::pair<std::string, std::string>>;

Misbehaviour Check(std::span<const uint8_t> damaged, const std::vector<OwnedRecord>& records,
                   bool padding, uint64_t position) {
  Misbehaviour out;
  auto file = NewMemoryFile(kName, damaged);

  ShardVerifyResult verify = VerifyShard(*file);
  if (verify.ok()) out.emplace_back("VerifyShard found no problem", "");
  for (const Damage& p : verify.problems) {
    if (p.message().find(kWhere) == std::string::npos) {
      out.emplace_back("VerifyShard message does not name shard and offset", p.message());
      break;
    }
  }
  if (padding && (verify.ok() || verify.problems[0].offset != position)) {
    out.emplace_back("VerifyShard did not point at the damaged padding byte",
                     verify.ok() ? "" : verify.problems[0].message());
  }

  bool reader_error = false;
  auto expect_damage = [&](const absl::Status& s, const char* what) {
    reader_error = true;
    if (s.code() != absl::StatusCode::kDataLoss ||
        s.message().find(kWhere) == absl::string_view::npos) {
      out.emplace_back(absl::StrCat(what, " error is not DataLoss naming shard and offset"),
                       s.ToString());
    }
  };
  auto reader = ShardReader::Open(file.get());
  if (!reader.ok()) {
    expect_damage(reader.status(), "Open");
  } else if ((*reader)->index().num_records() != records.size()) {
    out.emplace_back("reader opened with a different record count",
                     absl::StrCat((*reader)->index().num_records()));
  } else {
    for (uint64_t r = 0; r < records.size(); ++r) {
      absl::StatusOr<Record> got = (*reader)->ReadRecord(r);
      if (!got.ok()) {
        expect_damage(got.status(), "ReadRecord");
      } else if (!SameContents(*got, records[r].record())) {
        out.emplace_back("ReadRecord returned different data as OK", absl::StrCat("record ", r));
      }
    }
  }
  // Every byte but padding is under a CRC the reader checks on its way.
  if (!padding && !reader_error) {
    out.emplace_back("reader read damaged checked bytes without an error", "");
  }
  return out;
}

// "kind: 3 positions (4096, 4100-4101), e.g. <example>" for each kind.
std::string Summarize(
    const std::map<std::string, std::pair<std::vector<uint64_t>, std::string>>& failures) {
  std::string s;
  for (const auto& [kind, found] : failures) {
    const auto& [positions, example] = found;
    absl::StrAppend(&s, "\n  ", kind, ": ", positions.size(), " positions (");
    for (size_t i = 0, shown = 0; i < positions.size() && shown < 12; ++shown) {
      size_t j = i;
      while (j + 1 < positions.size() && positions[j + 1] == positions[j] + 1) ++j;
      absl::StrAppend(&s, shown ? ", " : "", positions[i]);
      if (j > i) absl::StrAppend(&s, "-", positions[j]);
      i = j + 1;
    }
    absl::StrAppend(&s, "), e.g. ", example);
  }
  return s;
}

class ShardCorruptionTest : public ::testing::TestWithParam<Compression> {
 protected:
  const Fixture& fixture() const { return GetFixture(GetParam()); }
};

TEST_P(ShardCorruptionTest, FixtureIsSmallAndHasSeveralBlocks) {
  const Fixture& f = fixture();
  EXPECT_LE(f.bytes.size(), 20u << 10);
  auto file = NewMemoryFile(kName, Bytes(f.bytes));
  SP_ASSERT_OK_AND_ASSIGN(ShardIndex index, ShardIndex::Load(*file));
  EXPECT_GE(index.num_blocks(), 3u);
  int zstd_blocks = 0;
  for (const BlockInfo& b : index.blocks()) {
    zstd_blocks += f.bytes[b.offset + 4] == static_cast<char>(Compression::kZstd);
  }
  if (GetParam() == Compression::kZstd) {
    EXPECT_GE(zstd_blocks, 2);
    EXPECT_LT(zstd_blocks, static_cast<int>(index.num_blocks()));  // and a stored one
  } else {
    EXPECT_EQ(zstd_blocks, 0);
  }
  ShardVerifyResult verify = VerifyShard(*file);
  EXPECT_TRUE(verify.ok());
  EXPECT_EQ(verify.records, f.records.size());
  SP_ASSERT_OK_AND_ASSIGN(auto reader, ShardReader::Open(file.get()));
  for (uint64_t r = 0; r < f.records.size(); ++r) {
    SP_ASSERT_OK_AND_ASSIGN(Record got, reader->ReadRecord(r));
    EXPECT_TRUE(SameContents(got, f.records[r].record())) << "record " << r;
  }
}

// DecodeInto's payload_checked: a caller that checked the payload's CRC-32C
// (the remote engine, as it fetches) spares the decoder the same check; the
// header is checked all the same. Without it a flipped payload byte is
// reported; with it the decoder trusts the caller (whose check would have
// caught the flip) and decodes what it was given.
TEST_P(ShardCorruptionTest, ACheckedPayloadIsNotCheckedAgainButItsHeaderIs) {
  const Fixture& f = fixture();
  auto file = NewMemoryFile(kName, Bytes(f.bytes));
  SP_ASSERT_OK_AND_ASSIGN(ShardIndex index, ShardIndex::Load(*file));
  const BlockInfo& b = index.block(0);
  std::vector<uint8_t> stored(f.bytes.begin() + b.offset, f.bytes.begin() + b.offset + b.stored_size);
  std::vector<uint8_t> raw(b.raw_size);
  BlockDecoder decoder;
  SP_ASSERT_OK(decoder.DecodeInto(index, 0, stored, raw.data(), /*payload_checked=*/true).status());
  std::vector<uint8_t> payload_flipped = stored;
  payload_flipped[format::kBlockHeaderSize + 3] ^= 0x10;
  EXPECT_THAT(decoder.DecodeInto(index, 0, payload_flipped, raw.data()),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("checksum mismatch in block 0")));
  if (GetParam() == Compression::kNone) {  // a zstd frame may refuse the flip itself
    EXPECT_TRUE(decoder.DecodeInto(index, 0, payload_flipped, raw.data(), true).ok());
  }
  std::vector<uint8_t> header_flipped = stored;
  header_flipped[9] ^= 0x01;
  EXPECT_THAT(decoder.DecodeInto(index, 0, header_flipped, raw.data(), true),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("header checksum mismatch")));
}

// Every byte is under a CRC or a zero-padding check, so every flip is found
// by VerifyShard; the reader either reports it or, for padding it never
// reads, returns exactly the original records.
TEST_P(ShardCorruptionTest, EveryByteFlipIsDetected) {
  const Fixture& f = fixture();
  std::vector<uint8_t> bytes = Copy(f.bytes);
  for (uint8_t mask : {uint8_t{0xff}, uint8_t{0x01}, uint8_t{0x80}}) {
    SCOPED_TRACE(absl::StrCat("xor 0x", absl::Hex(mask)));
    std::map<std::string, std::pair<std::vector<uint64_t>, std::string>> failures;
    for (uint64_t pos = 0; pos < bytes.size(); ++pos) {
      bytes[pos] ^= mask;
      for (auto& [kind, example] : Check(bytes, f.records, f.padding[pos], pos)) {
        auto& entry = failures[kind];
        entry.first.push_back(pos);
        if (entry.second.empty()) entry.second = absl::StrCat("@", pos, " ", example);
      }
      bytes[pos] ^= mask;
    }
    EXPECT_TRUE(failures.empty()) << "of " << bytes.size() << " bytes:" << Summarize(failures);
  }
}

TEST_P(ShardCorruptionTest, EveryTruncationIsDetected) {
  const Fixture& f = fixture();
  for (uint64_t len = 0; len < f.bytes.size(); ++len) {
    SCOPED_TRACE(absl::StrCat("cut to ", len, " bytes"));
    auto file = NewMemoryFile(kName, Bytes(f.bytes).first(len));
    auto index = ShardIndex::Load(*file);
    // A cut inside the 8 magic bytes still matches the magic's start.
    auto message = len == 0 ? HasSubstr("empty") : HasSubstr("truncated");
    ASSERT_THAT(index, StatusIs(absl::StatusCode::kDataLoss, AllOf(HasSubstr(kWhere), message)));
    if (len >= kShardAlignment + format::kFooterFixedSize + format::kTrailerSize) {
      ASSERT_THAT(index.status().message(), HasSubstr("never finished"));
    }
    ShardVerifyResult verify = VerifyShard(*file);
    ASSERT_FALSE(verify.ok());
    ASSERT_EQ(verify.problems[0].message(), std::string(index.status().message()));
    ASSERT_FALSE(ShardReader::Open(file.get()).ok());
  }
}

TEST_P(ShardCorruptionTest, BytesAfterTheTrailerAreDetected) {
  const Fixture& f = fixture();
  std::string trailer = f.bytes.substr(f.bytes.size() - format::kTrailerSize);
  for (const std::string& tail :
       {std::string(1, '\0'), std::string(4096, '\0'), trailer, f.bytes}) {
    std::string longer = f.bytes + tail;
    auto file = NewMemoryFile(kName, Bytes(longer));
    EXPECT_THAT(ShardIndex::Load(*file), StatusIs(absl::StatusCode::kDataLoss, HasSubstr(kWhere)))
        << tail.size() << " bytes appended";
    EXPECT_FALSE(VerifyShard(*file).ok());
  }
}

TEST_P(ShardCorruptionTest, WrongMagicIsNotAShard) {
  const Fixture& f = fixture();
  for (size_t i = 0; i < format::kShardMagic.size(); ++i) {
    std::vector<uint8_t> bytes = Copy(f.bytes);
    bytes[i] ^= 0x20;  // e.g. 'S' -> 's'
    auto file = NewMemoryFile(kName, bytes);
    EXPECT_THAT(ShardIndex::Load(*file),
                StatusIs(absl::StatusCode::kDataLoss, HasSubstr("mem.shard @0: not a shard")));
  }
  std::string text(20000, 'x');
  text.replace(0, 12, "hello world\n");
  auto file = NewMemoryFile(kName, Bytes(text));
  EXPECT_THAT(ShardIndex::Load(*file),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("not a shard")));
  EXPECT_THAT(VerifyShard(*file).problems, ::testing::ElementsAre(::testing::Property(
                                               &Damage::message, HasSubstr("not a shard"))));
}

TEST_P(ShardCorruptionTest, WrongTrailerMagicIsAnUnfinishedShard) {
  std::vector<uint8_t> bytes = Copy(fixture().bytes);
  bytes[bytes.size() - 1] ^= 0x20;
  auto file = NewMemoryFile(kName, bytes);
  EXPECT_THAT(ShardIndex::Load(*file),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(absl::StrCat(kWhere, bytes.size() - 32)),
                             HasSubstr("never finished"))));
}

TEST_P(ShardCorruptionTest, NextMajorVersionIsRejectedNamingBothVersions) {
  for (uint16_t major : {uint16_t{2}, uint16_t{0}, uint16_t{0xffff}}) {
    std::vector<uint8_t> bytes = Copy(fixture().bytes);
    SetHeaderU16(bytes, 8, major);
    auto file = NewMemoryFile(kName, bytes);
    auto expected =
        StatusIs(absl::StatusCode::kFailedPrecondition,
                 AllOf(HasSubstr(kName), HasSubstr(absl::StrCat(major, ".0")), HasSubstr("1.x")));
    EXPECT_THAT(ShardIndex::Load(*file), expected);
    EXPECT_THAT(ShardReader::Open(file.get()), expected);
    ShardVerifyResult verify = VerifyShard(*file);
    ASSERT_EQ(verify.problems.size(), 1u);
    EXPECT_THAT(verify.problems[0].message(), HasSubstr("1.x"));
  }
}

TEST_P(ShardCorruptionTest, NewerMinorVersionStillOpens) {
  const Fixture& f = fixture();
  std::vector<uint8_t> bytes = Copy(f.bytes);
  SetHeaderU16(bytes, 10, 5);
  auto file = NewMemoryFile(kName, bytes);
  SP_ASSERT_OK_AND_ASSIGN(auto reader, ShardReader::Open(file.get()));
  EXPECT_EQ(reader->index().minor_version(), 5);
  ASSERT_EQ(reader->index().num_records(), f.records.size());
  for (uint64_t r = 0; r < f.records.size(); ++r) {
    SP_ASSERT_OK_AND_ASSIGN(Record got, reader->ReadRecord(r));
    EXPECT_TRUE(SameContents(got, f.records[r].record())) << "record " << r;
  }
  ShardVerifyResult verify = VerifyShard(*file);
  EXPECT_TRUE(verify.ok()) << verify.problems[0].message();
  EXPECT_EQ(verify.file_crc32c, Crc32c(bytes));
}

TEST_P(ShardCorruptionTest, OtherHeaderFieldsAreCheckedBehindTheCrc) {
  std::vector<uint8_t> bytes = Copy(fixture().bytes);
  SetHeaderU16(bytes, 12, 512);  // alignment 4096 -> 512
  EXPECT_THAT(ShardIndex::Load(*NewMemoryFile(kName, bytes)),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("mem.shard @12: alignment 512")));
  bytes = Copy(fixture().bytes);
  SetHeaderU16(bytes, 22, 1);
  EXPECT_THAT(ShardIndex::Load(*NewMemoryFile(kName, bytes)),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("reserved header bytes")));
}

INSTANTIATE_TEST_SUITE_P(Compression, ShardCorruptionTest,
                         ::testing::Values(Compression::kNone, Compression::kZstd),
                         [](const auto& param_info) {
                           return param_info.param == Compression::kNone ? "None" : "Zstd";
                         });

// Fields damaged together with their checksums (as a buggy writer or a
// deliberate forgery would): the checks behind the CRCs must still hold.
class RefreshedChecksumsTest : public ::testing::Test {
 protected:
  RefreshedChecksumsTest() : bytes_(Copy(GetFixture(Compression::kNone).bytes)) {
    const std::vector<OwnedRecord>& records = GetFixture(Compression::kNone).records;
    auto file = NewMemoryFile(kName, bytes_);
    auto index = ShardIndex::Load(*file);
    EXPECT_TRUE(index.ok()) << index.status();
    footer_ = index->footer_offset();
    block1_ = index->block(1).offset;
    // A raw 5x7x1 CHW record of block 1, not the block's first, with
    // record padding (a 6-byte key: 24 + 8 + 6 + 35 = 73 bytes).
    for (uint32_t i = 1; i < index->block(1).record_count; ++i) {
      uint64_t r = index->block(1).first_record + i;
      if (records[r].image.height == 5 && records[r].key.size() == 6) {
        record_index_ = r;
        record_ = block1_ + format::kBlockHeaderSize + index->record_offsets(1)[i];
        break;
      }
    }
    EXPECT_NE(record_, 0u);
  }

  // Refreshes the checksums and returns the first error of load, reading
  // every record and verifying (the same error must come from both).
  absl::Status Reload() {
    testing::RefreshChecksums(bytes_);
    auto file = NewMemoryFile(kName, bytes_);
    absl::Status status;
    auto reader = ShardReader::Open(file.get());
    if (!reader.ok()) {
      status = reader.status();
    } else {
      for (uint64_t r = 0; r < (*reader)->index().num_records() && status.ok(); ++r) {
        status = (*reader)->ReadRecord(r).status();
      }
    }
    ShardVerifyResult verify = VerifyShard(*file);
    EXPECT_EQ(verify.ok(), status.ok());
    if (!verify.ok()) {
      EXPECT_EQ(verify.problems[0].message(), std::string(status.message()));
    }
    return status;
  }
  template <typename T>
  void Set(uint64_t at, T value) {
    StoreLE<T>(&bytes_[at], value);
  }
  template <typename T>
  T Get(uint64_t at) const {
    return LoadLE<T>(&bytes_[at]);
  }
  uint64_t entry(size_t b) const {
    return footer_ + format::kFooterFixedSize + b * format::kBlockEntrySize;
  }

  std::vector<uint8_t> bytes_;
  uint64_t footer_ = 0;
  uint64_t block1_ = 0;        // offset of block 1
  uint64_t record_index_ = 0;  // a raw 5x7x1 record inside block 1
  uint64_t record_ = 0;        // its offset in the file
};

TEST_F(RefreshedChecksumsTest, RefreshingAnIntactShardChangesNothing) {
  SP_EXPECT_OK(Reload());
  EXPECT_EQ(bytes_, Copy(GetFixture(Compression::kNone).bytes));
  std::vector<uint8_t> zstd = Copy(GetFixture(Compression::kZstd).bytes);
  testing::RefreshChecksums(zstd);
  EXPECT_EQ(zstd, Copy(GetFixture(Compression::kZstd).bytes));
}

TEST_F(RefreshedChecksumsTest, FooterCountsThatDoNotFitItsSize) {
  Set<uint64_t>(footer_ + 8, Get<uint64_t>(footer_ + 8) + 1);
  EXPECT_THAT(Reload(), StatusIs(absl::StatusCode::kDataLoss,
                                 HasSubstr(absl::StrCat(kWhere, footer_, ": footer of"))));
}

TEST_F(RefreshedChecksumsTest, BadFooterMagic) {
  Set<uint32_t>(footer_, 0);
  EXPECT_THAT(Reload(), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("bad footer magic")));
}

TEST_F(RefreshedChecksumsTest, IndexEntryOutOfPlace) {
  Set<uint64_t>(entry(1), block1_ + kShardAlignment);
  EXPECT_THAT(Reload(),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr(absl::StrCat(kWhere, entry(1), ": index entry of block 1"))));
}

TEST_F(RefreshedChecksumsTest, IndexEntryRecordCountMovedBetweenBlocks) {
  Set<uint32_t>(entry(0) + 16, Get<uint32_t>(entry(0) + 16) + 1);
  Set<uint32_t>(entry(1) + 16, Get<uint32_t>(entry(1) + 16) - 1);
  EXPECT_THAT(Reload(), StatusIs(absl::StatusCode::kDataLoss, HasSubstr(kWhere)));
}

TEST_F(RefreshedChecksumsTest, UnalignedRecordOffset) {
  const uint64_t offsets = entry(Get<uint32_t>(footer_ + 4));  // after the last entry
  const uint64_t at = offsets + 4 * record_index_;
  Set<uint32_t>(at, Get<uint32_t>(at) + 4);
  EXPECT_THAT(Reload(), StatusIs(absl::StatusCode::kDataLoss,
                                 HasSubstr(absl::StrCat(kWhere, at, ": bad offset of record ",
                                                        record_index_, " in block 1"))));
}

TEST_F(RefreshedChecksumsTest, BlockHeaderDisagreesWithTheIndex) {
  for (uint64_t field : {4, 5, 8, 16, 24}) {  // compression, reserved, count, raw size
    bytes_ = Copy(GetFixture(Compression::kNone).bytes);
    bytes_[block1_ + field] ^= 0x02;
    EXPECT_THAT(Reload(),
                StatusIs(absl::StatusCode::kDataLoss,
                         HasSubstr(absl::StrCat(kWhere, block1_, ": header of block 1 disagrees"))))
        << "block header byte " << field;
  }
}

TEST_F(RefreshedChecksumsTest, BadBlockMagic) {
  bytes_[block1_] ^= 0x01;
  EXPECT_THAT(Reload(), StatusIs(absl::StatusCode::kDataLoss,
                                 HasSubstr(absl::StrCat(kWhere, block1_, ": bad magic"))));
}

TEST_F(RefreshedChecksumsTest, RecordFieldsAreChecked) {
  struct Case {
    uint64_t field;  // byte of the record header
    uint8_t add;     // added to it
    const char* message;
  };
  for (const Case& c : {Case{0, 8, "record lengths add up"},  // payload length
                        Case{4, 8, "record lengths add up"},  // extra length
                        Case{8, 1, "raw payload of 35 bytes for a 6x7x1 image"},
                        Case{16, 8, "record lengths add up"},  // key length
                        Case{18, 7, "unknown encoding 7"}, Case{19, 1, "unknown layout 2"},
                        Case{20, 2, "raw payload of 35 bytes for a 5x7x3 image"},
                        Case{21, 8, "9 labels"}, Case{22, 1, "reserved record bytes"}}) {
    bytes_ = Copy(GetFixture(Compression::kNone).bytes);
    ASSERT_EQ(Get<uint32_t>(record_), 35u);
    bytes_[record_ + c.field] += c.add;
    EXPECT_THAT(Reload(),
                StatusIs(absl::StatusCode::kDataLoss,
                         AllOf(HasSubstr(absl::StrCat(kWhere, block1_, " record ", record_index_)),
                               HasSubstr(c.message))))
        << "record header byte " << c.field;
  }
}

TEST_F(RefreshedChecksumsTest, RecordPaddingIsChecked) {
  const OwnedRecord& r = GetFixture(Compression::kNone).records[record_index_];
  uint64_t used = format::kRecordHeaderSize + 8 * r.labels.size() + r.key.size() +
                  r.extra.size() + r.payload.size();
  ASSERT_NE(used % format::kRecordAlignment, 0u) << "the record must have padding";
  bytes_[record_ + used] = 1;
  EXPECT_THAT(Reload(),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(absl::StrCat(kWhere, block1_, " record ", record_index_)),
                             HasSubstr("padding"))));
}

TEST_F(RefreshedChecksumsTest, ZstdBlockThatDoesNotDecompressToItsRawSize) {
  bytes_ = Copy(GetFixture(Compression::kZstd).bytes);
  auto index = ShardIndex::Load(*NewMemoryFile(kName, bytes_));
  SP_ASSERT_OK(index.status());
  const BlockInfo& b0 = index->block(0);
  ASSERT_EQ(bytes_[b0.offset + 4], 1) << "block 0 must be zstd";
  uint64_t e0 = index->footer_offset() + format::kFooterFixedSize;
  Set<uint32_t>(b0.offset + 16, b0.raw_size + 8);
  Set<uint32_t>(e0 + 12, b0.raw_size + 8);
  // The frame says how much it holds; the forged size is refused before
  // anything is decompressed or allocated.
  EXPECT_THAT(Reload(), StatusIs(absl::StatusCode::kDataLoss,
                                 HasSubstr(absl::StrCat(kWhere, b0.offset + 32,
                                                        ": block 0 is not one zstd frame"))));
  bytes_ = Copy(GetFixture(Compression::kZstd).bytes);
  bytes_[b0.offset + 32] ^= 0xff;  // the zstd frame magic
  EXPECT_THAT(
      Reload(),
      StatusIs(absl::StatusCode::kDataLoss,
               AllOf(HasSubstr(absl::StrCat(kWhere, b0.offset + 32)),
                     AnyOf(HasSubstr("does not decompress"), HasSubstr("not one zstd frame")))));
}

// Puts `frame` in place of zstd block `b`'s stored payload, with `raw_size`
// as its raw size in the block header and the index, and zeros after it up
// to where the block used to end. The block must keep its pages, so the
// blocks after it stay where they are.
void ReplaceFrame(std::vector<uint8_t>* bytes, size_t b, std::span<const uint8_t> frame,
                  uint32_t raw_size) {
  auto index = ShardIndex::Load(*NewMemoryFile(kName, *bytes));
  ASSERT_TRUE(index.ok()) << index.status();
  const BlockInfo& info = index->block(b);
  ASSERT_EQ((*bytes)[info.offset + 4], 1) << "block " << b << " must be zstd";
  const uint64_t stored = format::kBlockHeaderSize + frame.size();
  ASSERT_EQ(common::AlignUp(info.offset + stored, kShardAlignment),
            common::AlignUp(info.offset + info.stored_size, kShardAlignment));
  uint8_t* h = bytes->data() + info.offset;
  std::fill(h + format::kBlockHeaderSize, h + std::max<uint64_t>(stored, info.stored_size), 0);
  std::copy(frame.begin(), frame.end(), h + format::kBlockHeaderSize);
  uint8_t* e = bytes->data() + index->footer_offset() + format::kFooterFixedSize +
               b * format::kBlockEntrySize;
  StoreLE<uint32_t>(h + 12, static_cast<uint32_t>(frame.size()));
  StoreLE<uint32_t>(e + 8, static_cast<uint32_t>(stored));
  StoreLE<uint32_t>(h + 16, raw_size);
  StoreLE<uint32_t>(e + 12, raw_size);
}

// docs/format.md leaves the frame's content-size field to the writer: a
// frame without it (zstd --no-content-size, streaming compressors) is read.
TEST_F(RefreshedChecksumsTest, ZstdFrameWithoutContentSizeIsRead) {
  bytes_ = Copy(GetFixture(Compression::kZstd).bytes);
  auto file = NewMemoryFile(kName, bytes_);
  SP_ASSERT_OK_AND_ASSIGN(auto reader, ShardReader::Open(file.get()));
  SP_ASSERT_OK_AND_ASSIGN(BlockView view, reader->ReadBlock(0));
  std::vector<uint8_t> raw(view.payload().begin(), view.payload().end());
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
  std::vector<uint8_t> frame(ZSTD_compressBound(raw.size()));
  size_t n = ZSTD_compress2(cctx, frame.data(), frame.size(), raw.data(), raw.size());
  ZSTD_freeCCtx(cctx);
  ASSERT_FALSE(ZSTD_isError(n));
  frame.resize(n);
  ASSERT_EQ(ZSTD_getFrameContentSize(frame.data(), n), ZSTD_CONTENTSIZE_UNKNOWN);
  ReplaceFrame(&bytes_, 0, frame, static_cast<uint32_t>(raw.size()));
  SP_EXPECT_OK(Reload());
  auto edited = NewMemoryFile(kName, bytes_);
  SP_ASSERT_OK_AND_ASSIGN(auto again, ShardReader::Open(edited.get()));
  const std::vector<OwnedRecord>& records = GetFixture(Compression::kZstd).records;
  for (uint64_t r = 0; r < again->index().num_records(); ++r) {
    SP_ASSERT_OK_AND_ASSIGN(Record got, again->ReadRecord(r));
    EXPECT_TRUE(SameContents(got, records[r].record())) << "record " << r;
  }
}

// A 13-byte frame (one RLE block) whose header claims 1 GiB, behind a
// forged index that agrees: refused from the frame's own blocks, before the
// gibibyte is allocated.
TEST_F(RefreshedChecksumsTest, ZstdFrameClaimingAGibibyteIsRefusedBeforeAllocating) {
  bytes_ = Copy(GetFixture(Compression::kZstd).bytes);
  ASSERT_LT(bytes_.size(), 64u << 10);
  constexpr uint32_t kGiB = 1u << 30;
  std::vector<uint8_t> frame = {0x28, 0xb5, 0x2f, 0xfd,  // magic
                                0xa0,                    // 4-byte content size, one segment
                                0,    0,    0,    0x40,  // content size 2^30
                                0,    0,    0,    0};    // last RLE block (size below), byte 0
  StoreLE<uint32_t>(&frame[9], (4096u << 3) | (1u << 1) | 1u);
  frame.resize(13);
  ASSERT_EQ(ZSTD_getFrameContentSize(frame.data(), frame.size()), kGiB);
  ReplaceFrame(&bytes_, 0, frame, kGiB);
  EXPECT_THAT(Reload(), StatusIs(absl::StatusCode::kDataLoss,
                                 HasSubstr("block 0 claims 1073741824 raw bytes, but its zstd "
                                           "frame of 13 bytes can hold at most 4096")));
  // The same without the content size: bounded by the blocks all the same.
  frame[4] = 0x00;  // no content size, window descriptor follows
  frame.erase(frame.begin() + 6, frame.begin() + 9);
  frame[5] = 0x00;  // 1 KiB window
  ReplaceFrame(&bytes_, 0, frame, kGiB);
  EXPECT_THAT(Reload(), StatusIs(absl::StatusCode::kDataLoss,
                                 HasSubstr("block 0 claims 1073741824 raw bytes, but its zstd "
                                           "frame of 10 bytes can hold at most 4096")));
}

// ImageInfo::RawBytes() multiplies in 64 bits, so 2^31 x 2^31 x 4 would wrap
// to 0 and an empty payload "match" an absurd shape, which the writer would
// accept and the reader return as good, to code that trusts height * width *
// channels: both refuse it.
TEST(RawShapeOverflowTest, ShapeWhoseByteCountWrapsIsRejected) {
  Record huge{"huge", {}, {Encoding::kRaw, Layout::kHWC, 1u << 31, 1u << 31, 4}, {}, {}};
  std::string out;
  auto file = NewStringWritableFile(kName, &out);
  SP_ASSERT_OK_AND_ASSIGN(auto writer, ShardWriter::Create(file.get(), {}));
  EXPECT_THAT(writer->Add(huge), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("huge")));

  // The same shape behind refreshed checksums.
  std::vector<uint8_t> bytes = Copy(testing::WriteShard({testing::RawRecord(0, 0, 0, 0)}));
  uint64_t record = kShardAlignment + format::kBlockHeaderSize;
  StoreLE<uint32_t>(&bytes[record + 8], 1u << 31);
  StoreLE<uint32_t>(&bytes[record + 12], 1u << 31);
  bytes[record + 20] = 4;
  testing::RefreshChecksums(bytes);
  auto shard = NewMemoryFile(kName, bytes);
  SP_ASSERT_OK_AND_ASSIGN(auto reader, ShardReader::Open(shard.get()));
  EXPECT_THAT(reader->ReadRecord(0),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("raw payload of 0 bytes")));
  EXPECT_FALSE(VerifyShard(*shard).ok());
}

}  // namespace
}  // namespace shardpack
