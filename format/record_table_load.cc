// RecordTable::Load: the file read whole, its size and CRC-32C checked against
// the manifest, then every count and offset, so that no accessor trusts a
// number Load has not checked.
#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "format/record_table.h"
#include "shardpack/crc32c.h"

namespace shardpack::format {

using common::DataLossAt;
using common::LoadLE;

absl::StatusOr<RecordTable> RecordTable::Load(const std::string& directory,
                                              const Manifest& manifest) {
  if (!manifest.record_table.has_value()) {
    return absl::NotFoundError(absl::StrCat(directory, ": the manifest lists no record table"));
  }
  const std::string path =
      (std::filesystem::path(directory) / manifest.record_table->path).string();
  SP_ASSIGN_OR_RETURN(auto file, OpenPosixFile(path));
  return Parse(*file, *manifest.record_table, manifest);
}

absl::StatusOr<RecordTable> RecordTable::Parse(const RandomAccessFile& file,
                                               const RecordTableEntry& expected,
                                               const Manifest& manifest) {
  RecordTable t;
  t.name_ = file.name();
  if (file.size() != expected.bytes) {
    return DataLossAt(t.name_, file.size(),
                      absl::StrCat("record table of ", file.size(), " bytes, the manifest says ",
                                   expected.bytes));
  }
  t.bytes_.resize(file.size());
  SP_RETURN_IF_ERROR(file.ReadExact(0, t.bytes_));
  const uint32_t crc = Crc32c(t.bytes_);
  if (crc != expected.crc32c) {
    char text[64];
    std::snprintf(text, sizeof(text), "record table CRC-32C %08x, the manifest says %08x", crc,
                  expected.crc32c);
    return DataLossAt(t.name_, 0, text);
  }
  SP_RETURN_IF_ERROR(t.CheckHeader());
  if (t.fields_ != static_cast<int>(manifest.schema.labels.size())) {
    return DataLossAt(t.name_, 12, absl::StrCat(t.fields_, " label fields, the schema has ",
                                                manifest.schema.labels.size()));
  }
  if (t.records_ != manifest.records()) {
    return DataLossAt(t.name_, 16, absl::StrCat(t.records_, " records, the manifest's shards hold ",
                                                manifest.records()));
  }
  SP_RETURN_IF_ERROR(t.CheckKeys());
  SP_RETURN_IF_ERROR(t.CheckSlots());
  return t;
}

absl::Status RecordTable::CheckHeader() {
  const uint64_t size = bytes_.size();
  if (size < kRecordTableHeaderSize) {
    return DataLossAt(name_, size, absl::StrCat("truncated: ", size, " bytes, the header has ",
                                                kRecordTableHeaderSize));
  }
  const uint8_t* h = bytes_.data();
  if (std::memcmp(h, kRecordTableMagic.data(), kRecordTableMagic.size()) != 0) {
    return DataLossAt(name_, 0, "not a record table (bad magic)");
  }
  if (LoadLE<uint32_t>(h + kRecordTableHeaderCrcOffset) !=
      Crc32c({h, kRecordTableHeaderCrcOffset})) {
    return DataLossAt(name_, 0, "record table header checksum mismatch");
  }
  const uint16_t major = LoadLE<uint16_t>(h + 8);
  if (major != kRecordTableMajorVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(name_, ": record table version ", major, ".", LoadLE<uint16_t>(h + 10),
                     " is not supported (this build reads ", kRecordTableMajorVersion, ".x)"));
  }
  for (size_t i = 40; i < kRecordTableHeaderCrcOffset; ++i) {
    if (h[i] != 0) return DataLossAt(name_, i, "reserved header bytes not zero");
  }
  const uint32_t fields = LoadLE<uint32_t>(h + 12);
  if (fields > kMaxLabels) return DataLossAt(name_, 12, absl::StrCat(fields, " label fields"));
  fields_ = static_cast<int>(fields);
  records_ = LoadLE<uint64_t>(h + 16);
  key_bytes_ = LoadLE<uint64_t>(h + 24);
  slots_ = LoadLE<uint64_t>(h + 32);
  // Each count is bounded by the file's size before any product is taken.
  if (records_ > size / 8 || key_bytes_ > size || slots_ > size / kRecordTableSlotSize) {
    return DataLossAt(name_, 16, absl::StrCat("counts (", records_, " records, ", key_bytes_,
                                              " key bytes, ", slots_,
                                              " slots) larger than the file, ", size, " bytes"));
  }
  if (!std::has_single_bit(slots_) || slots_ <= records_) {
    return DataLossAt(name_, 32, absl::StrCat(slots_, " hash slots for ", records_,
                                              " records (a power of two above it)"));
  }
  offsets_at_ = kRecordTableHeaderSize + 8 * records_ * fields_;
  keys_at_ = offsets_at_ + 8 * (records_ + 1);
  slots_at_ = keys_at_ + common::AlignUp(key_bytes_, 8);
  const uint64_t want = slots_at_ + kRecordTableSlotSize * slots_;
  if (want != size) {
    return DataLossAt(name_, size, absl::StrCat("record table of ", size,
                                                " bytes, its header's counts make ", want));
  }
  return absl::OkStatus();
}

absl::Status RecordTable::CheckKeys() const {
  uint64_t previous = 0;
  for (uint64_t r = 0; r <= records_; ++r) {
    const uint64_t at = offsets_at_ + 8 * r;
    const uint64_t off = U64(at);
    if ((r == 0 && off != 0) || off < previous || off > key_bytes_ ||
        (r == records_ && off != key_bytes_) || off - previous > 65535) {
      return DataLossAt(name_, at, absl::StrCat("key offset ", r, " is ", off, " (previous ",
                                                previous, ", key bytes ", key_bytes_, ")"));
    }
    previous = off;
  }
  for (uint64_t i = keys_at_ + key_bytes_; i < slots_at_; ++i) {
    if (bytes_[i] != 0) return DataLossAt(name_, i, "key padding not zero");
  }
  return absl::OkStatus();
}

absl::Status RecordTable::CheckSlots() const {
  std::vector<bool> seen(records_, false);
  uint64_t filled = 0;
  for (uint64_t s = 0; s < slots_; ++s) {
    const uint64_t at = slots_at_ + kRecordTableSlotSize * s;
    const uint64_t hash = U64(at), r = U64(at + 8);
    if (r == kEmptySlot) {
      if (hash != 0) return DataLossAt(name_, at, absl::StrCat("empty slot ", s, " has a hash"));
      continue;
    }
    if (r >= records_ || seen[r]) {
      return DataLossAt(name_, at + 8, absl::StrCat("slot ", s, " names record ", r,
                                                    r >= records_ ? " past the end" : " twice"));
    }
    if (hash != KeyHash(key(r))) {
      return DataLossAt(name_, at, absl::StrCat("slot ", s, ": hash of record ", r,
                                                " is not its key's"));
    }
    seen[r] = true;
    ++filled;
  }
  if (filled != records_) {
    return DataLossAt(name_, slots_at_, absl::StrCat(filled, " slots filled for ", records_,
                                                     " records"));
  }
  return CheckProbes();
}

// Every record is where Find looks for it: no empty slot between its home
// slot and its own on the probe (wrapping). One pass from an empty slot
// (there is one: slots > records), counting the filled slots since.
absl::Status RecordTable::CheckProbes() const {
  const uint64_t mask = slots_ - 1;
  auto record_at = [&](uint64_t s) { return U64(slots_at_ + kRecordTableSlotSize * s + 8); };
  uint64_t empty = 0;
  while (record_at(empty) != kEmptySlot) ++empty;
  uint64_t run = 0;
  for (uint64_t k = 1; k < slots_; ++k) {
    const uint64_t s = (empty + k) & mask;
    const uint64_t r = record_at(s);
    if (r == kEmptySlot) {
      run = 0;
      continue;
    }
    const uint64_t home = U64(slots_at_ + kRecordTableSlotSize * s) & mask;
    if (((s - home) & mask) > run) {
      return DataLossAt(name_, slots_at_ + kRecordTableSlotSize * s,
                        absl::StrCat("slot ", s, ": record ", r, " lies past an empty slot on its "
                                     "probe from slot ", home, " (a lookup would miss it)"));
    }
    ++run;
  }
  return absl::OkStatus();
}

}  // namespace shardpack::format
