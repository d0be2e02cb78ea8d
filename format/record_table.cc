// The record table: the key hash and the loaded table's lookups (layout in
// record_table.h, specification in docs/format.md section 16; the writer is
// record_table_builder.cc, the checks of Load record_table_load.cc).
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
