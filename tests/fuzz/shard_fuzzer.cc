// libFuzzer target for the `.shard` parser. The input is a whole shard in
// memory; every reading path runs over it (ShardIndex::Load, ShardReader's
// blocks and records, random access, VerifyShard) and their answers are
// checked against each other and against what the format promises:
//
//   - damage is a DataLossError (an unknown major version a
//     FailedPreconditionError) whose message names the shard, and an offset
//     for data loss; nothing crashes, nothing reads outside its buffers;
//   - a record that parses has views inside its own bytes of its block, a
//     raw payload of exactly height * width * channels bytes, known enums;
//   - block-by-block reads, random access and VerifyShard agree on which
//     records are good, and good records are the same through each path;
//   - VerifyShard finds nothing exactly when every read succeeds and every
//     padding byte is zero, and then its whole-file CRC is the input's.
//
// Built twice from this file: shard_fuzzer takes the input as it is (the
// CRCs themselves are under test, and libFuzzer's comparison tracing learns
// to satisfy some of them); shard_fixcrc_fuzzer (SHARDPACK_REFRESH_CHECKSUMS)
// first recomputes every checksum, so that mutations reach the checks that
// lie behind the CRCs: index consistency, block headers, zstd, records.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/errors.h"
#include "format/shard_layout.h"
#include "shardpack/crc32c.h"
#include "shardpack/file.h"
#include "shardpack/record.h"
#include "shardpack/shard.h"
#include "tests/fuzz/refresh_checksums.h"

#ifndef SHARDPACK_REFRESH_CHECKSUMS
#define SHARDPACK_REFRESH_CHECKSUMS 0
#endif

namespace shardpack {
namespace {

constexpr char kName[] = "fuzz.shard";

// Zstd blocks whose index claims more than this many raw bytes are not
// decoded. BlockDecoder now checks the frame's own content size before
// allocating, so a forged index no longer costs gigabytes, but a real frame
// (an RLE block, say) can still expand a few bytes into gigabytes, which
// would stop runs at libFuzzer's malloc limit.
// SHARDPACK_FUZZ_ANY_RAW_SIZE=1 in the environment turns the guard off.
const uint64_t kMaxRawSizeDecoded =
    std::getenv("SHARDPACK_FUZZ_ANY_RAW_SIZE") != nullptr ? UINT64_MAX : uint64_t{16} << 20;

[[noreturn]] void Fail(std::string_view what, std::string_view detail = {}) {
  std::fprintf(stderr, "shard_fuzzer: invariant broken: %.*s%s%.*s\n",
               static_cast<int>(what.size()), what.data(), detail.empty() ? "" : ": ",
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

void Expect(bool ok, std::string_view what, std::string_view detail = {}) {
  if (!ok) Fail(what, detail);
}

std::string_view Message(const absl::Status& s) { return {s.message().data(), s.message().size()}; }

// A damage report: DataLoss naming the shard and the offset, or (for an
// unsupported version only) FailedPrecondition naming the shard.
void ExpectDamage(const absl::Status& s, std::string_view what, uint64_t size) {
  Expect(!s.ok(), what, "OK where an error was expected");
  std::string_view m = Message(s);
  if (s.code() == absl::StatusCode::kFailedPrecondition) {
    Expect(m.starts_with(std::string(kName) + ": shard format version "), what, m);
    return;
  }
  Expect(s.code() == absl::StatusCode::kDataLoss, what, s.ToString());
  Expect(m.starts_with(std::string(kName) + " @"), what, m);
  if (auto offset = common::ErrorOffset(s)) Expect(*offset <= size, "offset past the end", m);
}

bool Inside(std::span<const uint8_t> inner, std::span<const uint8_t> outer) {
  if (inner.empty()) return true;
  return inner.data() >= outer.data() && inner.data() + inner.size() <= outer.data() + outer.size();
}

// A digest of a record's contents, touching every byte of every view (so
// ASan sees each one).
uint32_t Digest(const Record& r) {
  uint32_t crc = Crc32cExtend(0, reinterpret_cast<const uint8_t*>(r.key.data()), r.key.size());
  crc = Crc32cExtend(crc, r.extra.data(), r.extra.size());
  crc = Crc32cExtend(crc, r.payload.data(), r.payload.size());
  const uint64_t fields[] = {static_cast<uint64_t>(r.image.encoding),
                             static_cast<uint64_t>(r.image.layout),
                             r.image.height,
                             r.image.width,
                             r.image.channels,
                             r.key.size(),
                             r.extra.size(),
                             static_cast<uint64_t>(r.labels.size())};
  crc = Crc32cExtend(crc, reinterpret_cast<const uint8_t*>(fields), sizeof(fields));
  for (int64_t label : r.labels) {
    crc = Crc32cExtend(crc, reinterpret_cast<const uint8_t*>(&label), sizeof(label));
  }
  return crc;
}

// Checks a parsed record against `bytes`, its span of the block payload.
void CheckRecord(const Record& r, std::span<const uint8_t> bytes) {
  Expect(r.image.encoding == Encoding::kRaw || r.image.encoding == Encoding::kJpeg,
         "unknown encoding returned");
  Expect(r.image.layout == Layout::kHWC || r.image.layout == Layout::kCHW,
         "unknown layout returned");
  Expect(r.labels.size() <= kMaxLabels, "too many labels");
  if (r.image.encoding == Encoding::kRaw) {
    // In 128 bits: the 64-bit product can wrap.
    unsigned __int128 pixels =
        static_cast<unsigned __int128>(r.image.height) * r.image.width * r.image.channels;
    Expect(pixels == r.payload.size(), "raw payload size is not height * width * channels");
  }
  std::span<const uint8_t> key(reinterpret_cast<const uint8_t*>(r.key.data()), r.key.size());
  Expect(Inside(key, bytes), "key outside its record");
  Expect(Inside(r.extra, bytes), "extra outside its record");
  Expect(Inside(r.payload, bytes), "payload outside its record");
  Expect(format::kRecordHeaderSize + 8 * uint64_t(r.labels.size()) + key.size() + r.extra.size() +
                 r.payload.size() <=
             bytes.size(),
         "record views larger than the record");
}

void CheckIndex(const ShardIndex& index, uint64_t size) {
  Expect(index.file_size() == size, "index file size");
  Expect(index.footer_offset() % kShardAlignment == 0 && index.footer_offset() < size,
         "footer offset");
  uint64_t next_record = 0;
  uint64_t next_offset = kShardAlignment;
  for (size_t b = 0; b < index.num_blocks(); ++b) {
    const BlockInfo& info = index.block(b);
    Expect(info.offset == next_offset, "blocks do not tile the file");
    Expect(info.stored_size >= format::kBlockHeaderSize &&
               info.offset + info.stored_size <= index.footer_offset(),
           "block outside the file");
    Expect(info.record_count > 0 && info.first_record == next_record, "block record range");
    std::span<const uint32_t> offsets = index.record_offsets(b);
    Expect(offsets.size() == info.record_count && offsets[0] == 0, "record offsets");
    for (size_t i = 0; i < offsets.size(); ++i) {
      uint64_t end = i + 1 < offsets.size() ? offsets[i + 1] : info.raw_size;
      Expect(offsets[i] % format::kRecordAlignment == 0 &&
                 offsets[i] + format::kRecordHeaderSize <= end,
             "record offset");
    }
    Expect(index.BlockOf(info.first_record) == b &&
               index.BlockOf(info.first_record + info.record_count - 1) == b,
           "BlockOf");
    next_record += info.record_count;
    next_offset =
        (info.offset + info.stored_size + kShardAlignment - 1) / kShardAlignment * kShardAlignment;
  }
  Expect(next_record == index.num_records() && next_offset == index.footer_offset(),
         "index does not add up");
}

bool PaddingIsZero(std::span<const uint8_t> bytes, const ShardIndex& index) {
  auto zero = [&](uint64_t from, uint64_t to) {
    for (uint64_t i = from; i < to; ++i) {
      if (bytes[i] != 0) return false;
    }
    return true;
  };
  bool ok = zero(format::kFileHeaderSize, kShardAlignment);
  for (size_t b = 0; b < index.num_blocks(); ++b) {
    uint64_t end = b + 1 < index.num_blocks() ? index.block(b + 1).offset : index.footer_offset();
    ok = ok && zero(index.block(b).offset + index.block(b).stored_size, end);
  }
  return ok;
}

void FuzzShard(std::span<const uint8_t> bytes) {
  const uint64_t size = bytes.size();
  auto file = NewMemoryFile(kName, bytes);
  absl::StatusOr<ShardIndex> loaded = ShardIndex::Load(*file);
  if (!loaded.ok()) {
    ExpectDamage(loaded.status(), "ShardIndex::Load", size);
    ShardVerifyResult verify = VerifyShard(*file);
    Expect(verify.problems.size() == 1 && verify.problems[0].message() == Message(loaded.status()),
           "VerifyShard disagrees with Load");
    absl::StatusOr<std::unique_ptr<ShardReader>> reader = ShardReader::Open(file.get());
    Expect(!reader.ok() && reader.status() == loaded.status(), "Open disagrees with Load");
    return;
  }
  const ShardIndex& index = *loaded;
  CheckIndex(index, size);

  bool decodable = true;
  for (const BlockInfo& info : index.blocks()) {
    decodable = decodable && info.raw_size <= kMaxRawSizeDecoded;
  }

  absl::StatusOr<std::unique_ptr<ShardReader>> opened = ShardReader::Open(file.get());
  Expect(opened.ok(), "Open fails where Load succeeds");
  ShardReader& reader = **opened;

  // Pass 1: block by block.
  std::vector<int64_t> digests(index.num_records(), -1);  // -1: bad record
  bool all_good = true;
  uint64_t good_records = 0;
  for (size_t b = 0; b < index.num_blocks(); ++b) {
    const BlockInfo& info = index.block(b);
    if (info.raw_size > kMaxRawSizeDecoded) continue;
    absl::StatusOr<BlockView> view = reader.ReadBlock(b);
    if (!view.ok()) {
      ExpectDamage(view.status(), "ReadBlock", size);
      all_good = false;
      continue;
    }
    Expect(view->size() == info.record_count && view->first_record() == info.first_record &&
               view->payload().size() == info.raw_size,
           "block view does not match the index");
    std::span<const uint8_t> block_bytes = bytes.subspan(info.offset, info.stored_size);
    if (Inside(view->payload(), bytes)) {
      Expect(Inside(view->payload(), block_bytes), "block payload outside its block");
    }
    std::span<const uint32_t> offsets = index.record_offsets(b);
    for (size_t i = 0; i < view->size(); ++i) {
      absl::StatusOr<Record> record = view->record(i);
      if (!record.ok()) {
        ExpectDamage(record.status(), "BlockView::record", size);
        all_good = false;
        continue;
      }
      uint64_t end = i + 1 < offsets.size() ? offsets[i + 1] : info.raw_size;
      CheckRecord(*record, view->payload().subspan(offsets[i], end - offsets[i]));
      digests[info.first_record + i] = Digest(*record);
      ++good_records;
    }
  }

  // Pass 2: random access (backwards, so every block is read again) must
  // give the same records.
  for (uint64_t r = index.num_records(); r-- > 0;) {
    if (index.block(index.BlockOf(r)).raw_size > kMaxRawSizeDecoded) continue;
    absl::StatusOr<Record> record = reader.ReadRecord(r);
    if (!record.ok()) {
      ExpectDamage(record.status(), "ReadRecord", size);
      Expect(digests[r] == -1, "ReadRecord fails on a record ReadBlock read");
      continue;
    }
    Expect(digests[r] >= 0, "ReadRecord reads a record ReadBlock could not");
    Expect(Digest(*record) == digests[r], "ReadRecord and ReadBlock return different records");
  }
  Expect(reader.ReadRecord(index.num_records()).status().code() == absl::StatusCode::kOutOfRange,
         "reading past the last record is not OutOfRange");

  if (!decodable) return;
  ShardVerifyResult verify = VerifyShard(*file);
  for (const Damage& p : verify.problems) {
    Expect(p.message().starts_with(std::string(kName) + " @"), "VerifyShard message", p.message());
    Expect(p.offset <= size, "VerifyShard offset past the end", p.message());
  }
  Expect(verify.records == good_records, "VerifyShard counts other records as good");
  Expect(verify.ok() == (all_good && PaddingIsZero(bytes, index)),
         "VerifyShard disagrees with the reader");
  if (verify.ok()) {
    Expect(verify.bytes == size && verify.file_crc32c == Crc32c(bytes),
           "VerifyShard whole-file CRC");
  }
}

}  // namespace
}  // namespace shardpack

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exact-size heap copy: ASan then flags any read past the input, and
  // the checksum refresh has bytes it may write.
  std::vector<uint8_t> bytes(data, data + size);
  if (SHARDPACK_REFRESH_CHECKSUMS) shardpack::testing::RefreshChecksums(bytes);
  shardpack::FuzzShard(bytes);
  return 0;
}
