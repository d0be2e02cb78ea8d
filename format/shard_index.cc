// ShardIndex::Load: header, trailer and footer, each validated before use so
// that no later code trusts an offset or count it has not checked.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/coding.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "format/shard_layout.h"
#include "shardpack/crc32c.h"
#include "shardpack/shard.h"

namespace shardpack {

using common::AlignUp;
using common::DataLossAt;
using common::LoadLE;

namespace {

// The smallest complete shard: header page, empty footer, trailer.
constexpr uint64_t kMinShardSize =
    kShardAlignment + format::kFooterFixedSize + format::kTrailerSize;

absl::Status CheckHeader(const std::string& name, uint64_t size,
                         std::span<const uint8_t> h, uint16_t* minor) {
  if (size == 0) return DataLossAt(name, 0, "empty file, not a shard");
  if (h.size() < format::kShardMagic.size() &&
      std::memcmp(h.data(), format::kShardMagic.data(), h.size()) == 0) {
    return DataLossAt(name, h.size(), "truncated inside the magic");
  }
  if (h.size() < format::kShardMagic.size() ||
      std::memcmp(h.data(), format::kShardMagic.data(), format::kShardMagic.size()) != 0) {
    return DataLossAt(name, 0, "not a shard (bad magic)");
  }
  if (h.size() < format::kFileHeaderSize) {
    return DataLossAt(name, h.size(), "truncated inside the file header");
  }
  if (LoadLE<uint32_t>(&h[format::kFileHeaderCrcOffset]) !=
      Crc32c(h.first(format::kFileHeaderCrcOffset))) {
    return DataLossAt(name, 0, "file header checksum mismatch");
  }
  uint16_t major = LoadLE<uint16_t>(&h[8]);
  *minor = LoadLE<uint16_t>(&h[10]);
  if (major != kShardMajorVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        name, ": shard format version ", major, ".", *minor,
        " is not supported (this build reads ", kShardMajorVersion, ".x)"));
  }
  if (LoadLE<uint32_t>(&h[12]) != kShardAlignment) {
    return DataLossAt(name, 12, absl::StrCat("alignment ", LoadLE<uint32_t>(&h[12]),
                                             ", expected ", kShardAlignment));
  }
  if (LoadLE<uint32_t>(&h[16]) != 0 || LoadLE<uint64_t>(&h[20]) != 0) {
    return DataLossAt(name, 16, "reserved header bytes not zero");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ShardIndex> ShardIndex::Load(const RandomAccessFile& file) {
  ShardIndex index;
  index.name_ = file.name();
  const std::string& name = index.name_;
  const uint64_t size = file.size();
  index.file_size_ = size;

  uint8_t header[format::kFileHeaderSize];
  size_t header_bytes = std::min<uint64_t>(size, sizeof(header));
  SP_RETURN_IF_ERROR(file.ReadExact(0, {header, header_bytes}));
  SP_RETURN_IF_ERROR(CheckHeader(name, size, {header, header_bytes}, &index.minor_version_));
  if (size < kMinShardSize) {
    return DataLossAt(name, size, absl::StrCat("truncated: ", size,
                                               " bytes, a complete shard has at least ",
                                               kMinShardSize));
  }

  const uint64_t trailer_at = size - format::kTrailerSize;
  uint8_t t[format::kTrailerSize];
  SP_RETURN_IF_ERROR(file.ReadExact(trailer_at, t));
  if (std::memcmp(t + 24, format::kShardMagic.data(), format::kShardMagic.size()) != 0) {
    return DataLossAt(name, trailer_at,
                      "no trailer: the shard is truncated or was never finished");
  }
  if (LoadLE<uint32_t>(t + format::kTrailerCrcOffset) !=
      Crc32c({t, format::kTrailerCrcOffset})) {
    return DataLossAt(name, trailer_at, "trailer checksum mismatch");
  }
  const uint64_t footer_offset = LoadLE<uint64_t>(t);
  const uint64_t footer_size = LoadLE<uint64_t>(t + 8);
  if (footer_offset < kShardAlignment || footer_offset % kShardAlignment != 0 ||
      footer_offset > trailer_at || footer_size != trailer_at - footer_offset ||
      footer_size < format::kFooterFixedSize) {
    return DataLossAt(name, trailer_at,
                      absl::StrCat("trailer places the footer at ", footer_offset, " (",
                                   footer_size, " bytes), outside the file"));
  }
  index.footer_offset_ = footer_offset;

  std::vector<uint8_t> footer(footer_size);
  SP_RETURN_IF_ERROR(file.ReadExact(footer_offset, footer));
  if (LoadLE<uint32_t>(t + 16) != Crc32c(footer)) {
    return DataLossAt(name, footer_offset, "footer checksum mismatch");
  }
  if (LoadLE<uint32_t>(footer.data()) != format::kFooterMagic) {
    return DataLossAt(name, footer_offset, "bad footer magic");
  }
  const uint64_t block_count = LoadLE<uint32_t>(&footer[4]);
  const uint64_t record_count = LoadLE<uint64_t>(&footer[8]);
  const uint64_t body = footer_size - format::kFooterFixedSize;
  if (block_count > body / format::kBlockEntrySize ||
      record_count > body / 4 ||
      body != block_count * format::kBlockEntrySize + 4 * record_count) {
    return DataLossAt(name, footer_offset,
                      absl::StrCat("footer of ", footer_size, " bytes cannot hold ",
                                   block_count, " blocks and ", record_count, " records"));
  }
  index.num_records_ = record_count;

  // Blocks tile the file from the first aligned offset to the footer.
  index.blocks_.resize(block_count);
  const uint8_t* e = footer.data() + format::kFooterFixedSize;
  uint64_t expected_offset = kShardAlignment;
  uint64_t first_record = 0;
  for (uint64_t b = 0; b < block_count; ++b, e += format::kBlockEntrySize) {
    BlockInfo& info = index.blocks_[b];
    info.offset = LoadLE<uint64_t>(e);
    info.stored_size = LoadLE<uint32_t>(e + 8);
    info.raw_size = LoadLE<uint32_t>(e + 12);
    info.record_count = LoadLE<uint32_t>(e + 16);
    info.payload_crc32c = LoadLE<uint32_t>(e + 20);
    info.first_record = first_record;
    uint64_t entry_at = e - footer.data() + footer_offset;
    if (info.offset != expected_offset || info.stored_size < format::kBlockHeaderSize ||
        info.record_count == 0 || info.offset + info.stored_size > footer_offset ||
        info.raw_size % format::kRecordAlignment != 0 ||
        info.raw_size < uint64_t{info.record_count} * format::kRecordHeaderSize ||
        info.record_count > record_count - first_record) {
      return DataLossAt(name, entry_at,
                        absl::StrCat("index entry of block ", b, " is inconsistent (offset ",
                                     info.offset, ", ", info.stored_size, " bytes, ",
                                     info.record_count, " records)"));
    }
    expected_offset = AlignUp(info.offset + info.stored_size, kShardAlignment);
    first_record += info.record_count;
  }
  if (expected_offset != footer_offset || first_record != record_count) {
    return DataLossAt(name, footer_offset,
                      "index does not account for every block and record");
  }

  // Record offsets: each block's start at 0, 8-aligned, leaving room for a
  // record header before the next one.
  index.record_offsets_.resize(record_count);
  const uint8_t* o = e;
  for (uint64_t b = 0; b < block_count; ++b) {
    const BlockInfo& info = index.blocks_[b];
    uint32_t* offsets = &index.record_offsets_[info.first_record];
    for (uint32_t i = 0; i < info.record_count; ++i, o += 4) offsets[i] = LoadLE<uint32_t>(o);
    for (uint32_t i = 0; i < info.record_count; ++i) {
      uint64_t next = i + 1 < info.record_count ? offsets[i + 1] : info.raw_size;
      bool ok = (i == 0 ? offsets[0] == 0 : true) &&
                offsets[i] % format::kRecordAlignment == 0 &&
                uint64_t{offsets[i]} + format::kRecordHeaderSize <= next;
      if (!ok) {
        return DataLossAt(name, o - footer.data() + footer_offset - 4 * (info.record_count - i),
                          absl::StrCat("bad offset of record ", info.first_record + i,
                                       " in block ", b));
      }
    }
  }
  return index;
}

bool BlockInfo::compressed() const {
  return stored_size - format::kBlockHeaderSize != raw_size;
}

std::span<const uint32_t> ShardIndex::record_offsets(size_t b) const {
  const BlockInfo& info = blocks_[b];
  return {record_offsets_.data() + info.first_record, info.record_count};
}

size_t ShardIndex::BlockOf(uint64_t r) const {
  SP_DCHECK(r < num_records());
  auto it = std::upper_bound(blocks_.begin(), blocks_.end(), r,
                             [](uint64_t v, const BlockInfo& b) { return v < b.first_record; });
  return static_cast<size_t>(it - blocks_.begin()) - 1;
}

}  // namespace shardpack
