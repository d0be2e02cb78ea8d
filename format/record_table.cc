// The record table: its writer and its checked loader (layout in
// record_table.h, specification in docs/format.md section 16).
#include "format/record_table.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/coding.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "shardpack/crc32c.h"

namespace shardpack::format {

using common::DataLossAt;
using common::LoadLE;
using common::StoreLE;

uint64_t KeyHash(std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64's offset basis
  for (char c : key) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ULL;
  h ^= h >> 30;  // splitmix64's finalizer
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

uint64_t RecordTableSlots(uint64_t records) {
  return std::bit_ceil(records + records / 2 + 1);
}

RecordTableBuilder::RecordTableBuilder(int label_fields) : fields_(label_fields) {
  SP_DCHECK(label_fields >= 0 && label_fields <= kMaxLabels);
}

void RecordTableBuilder::Add(std::span<const int64_t> labels, std::string_view key) {
  SP_DCHECK(labels.size() == static_cast<size_t>(fields_));
  labels_.insert(labels_.end(), labels.begin(), labels.end());
  keys_.append(key);
  key_offsets_.push_back(keys_.size());
}

std::string_view RecordTableBuilder::Key(uint64_t r) const {
  return {keys_.data() + key_offsets_[r], key_offsets_[r + 1] - key_offsets_[r]};
}

// The record of each slot (kEmptySlot where none): 8 bytes a slot while the
// table is written; Write recomputes each slot's hash from its key.
std::vector<uint64_t> RecordTableBuilder::Slots() const {
  const uint64_t n = records();
  const uint64_t s = RecordTableSlots(n);
  std::vector<uint64_t> slots(s, kEmptySlot);
  for (uint64_t r = 0; r < n; ++r) {
    uint64_t at = KeyHash(Key(r)) & (s - 1);
    while (slots[at] != kEmptySlot) at = (at + 1) & (s - 1);
    slots[at] = r;
  }
  return slots;
}

namespace {

// Appends little-endian values to a file through a buffer, keeping the CRC.
class TableOut {
 public:
  explicit TableOut(WritableFile* file) : file_(file) { buffer_.reserve(kBuffer); }
  absl::Status Bytes(const uint8_t* p, size_t n) {
    crc_ = Crc32cExtend(crc_, p, n);
    bytes_ += n;
    if (buffer_.size() + n > kBuffer) SP_RETURN_IF_ERROR(Flush());
    if (n >= kBuffer) return file_->Append({p, n});
    buffer_.insert(buffer_.end(), p, p + n);
    return absl::OkStatus();
  }
  absl::Status U64(uint64_t v) {
    uint8_t b[8];
    StoreLE(b, v);
    return Bytes(b, 8);
  }
  absl::Status Flush() {
    SP_RETURN_IF_ERROR(file_->Append(buffer_));
    buffer_.clear();
    return absl::OkStatus();
  }
  uint64_t bytes() const { return bytes_; }
  uint32_t crc() const { return crc_; }

 private:
  static constexpr size_t kBuffer = size_t{1} << 20;
  WritableFile* file_;
  std::vector<uint8_t> buffer_;
  uint64_t bytes_ = 0;
  uint32_t crc_ = 0;
};

}  // namespace

absl::StatusOr<RecordTableEntry> RecordTableBuilder::Write(WritableFile* file) const {
  const std::vector<uint64_t> slots = Slots();
  uint8_t header[kRecordTableHeaderSize] = {};
  std::memcpy(header, kRecordTableMagic.data(), kRecordTableMagic.size());
  StoreLE<uint16_t>(header + 8, kRecordTableMajorVersion);
  StoreLE<uint16_t>(header + 10, kRecordTableMinorVersion);
  StoreLE<uint32_t>(header + 12, static_cast<uint32_t>(fields_));
  StoreLE<uint64_t>(header + 16, records());
  StoreLE<uint64_t>(header + 24, keys_.size());
  StoreLE<uint64_t>(header + 32, slots.size());
  StoreLE<uint32_t>(header + kRecordTableHeaderCrcOffset,
                    Crc32c({header, kRecordTableHeaderCrcOffset}));
  TableOut out(file);
  SP_RETURN_IF_ERROR(out.Bytes(header, sizeof(header)));
  for (int64_t v : labels_) SP_RETURN_IF_ERROR(out.U64(static_cast<uint64_t>(v)));
  for (uint64_t v : key_offsets_) SP_RETURN_IF_ERROR(out.U64(v));
  SP_RETURN_IF_ERROR(out.Bytes(reinterpret_cast<const uint8_t*>(keys_.data()), keys_.size()));
  const uint8_t zeros[8] = {};
  SP_RETURN_IF_ERROR(out.Bytes(zeros, common::AlignUp(keys_.size(), 8) - keys_.size()));
  for (uint64_t r : slots) {
    SP_RETURN_IF_ERROR(out.U64(r == kEmptySlot ? 0 : KeyHash(Key(r))));
    SP_RETURN_IF_ERROR(out.U64(r));
  }
  SP_RETURN_IF_ERROR(out.Flush());
  RecordTableEntry entry;
  entry.bytes = out.bytes();
  entry.crc32c = out.crc();
  return entry;
}

absl::StatusOr<RecordTableEntry> WriteRecordTable(const RecordTableBuilder& builder,
                                                  const std::string& directory) {
  SP_ASSIGN_OR_RETURN(auto file, AtomicFile::Create(
                                     (std::filesystem::path(directory) / kRecordTableFileName)));
  SP_ASSIGN_OR_RETURN(RecordTableEntry entry, builder.Write(file.get()));
  SP_RETURN_IF_ERROR(file->Commit());
  entry.path = kRecordTableFileName;
  return entry;
}

uint64_t RecordTable::U64(uint64_t offset) const { return LoadLE<uint64_t>(&bytes_[offset]); }

int64_t RecordTable::label(uint64_t r, int field) const {
  SP_DCHECK(r < records_ && field >= 0 && field < fields_);
  return static_cast<int64_t>(U64(kRecordTableHeaderSize + 8 * (r * fields_ + field)));
}

std::string_view RecordTable::key(uint64_t r) const {
  SP_DCHECK(r < records_);
  const uint64_t begin = U64(offsets_at_ + 8 * r), end = U64(offsets_at_ + 8 * r + 8);
  return {reinterpret_cast<const char*>(bytes_.data() + keys_at_ + begin), end - begin};
}

std::optional<uint64_t> RecordTable::Find(std::string_view key) const {
  const uint64_t h = KeyHash(key);
  uint64_t at = h & (slots_ - 1);
  // Load checked that some slot is empty: the probe ends.
  for (;;) {
    const uint64_t slot = slots_at_ + kRecordTableSlotSize * at;
    const uint64_t r = U64(slot + 8);
    if (r == kEmptySlot) return std::nullopt;
    if (U64(slot) == h && this->key(r) == key) return r;
    at = (at + 1) & (slots_ - 1);
  }
}

}  // namespace shardpack::format
