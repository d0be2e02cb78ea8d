// The record table: a file beside the shards (`records.idx`, listed in the
// manifest's "record_table") holding every record's labels and key, and an
// open-addressing hash table of 64-bit key hashes -> record index, so that a
// record is found by key, and records by label, without a scan of the shards.
// docs/format.md, section 16, is the specification; the constants below are
// its layout.
//
//   0        header (64 bytes)
//   64       labels: N x L x i64, record-major (record r's field f at
//            64 + 8 * (r * L + f))
//   then     key offsets: (N + 1) x u64; key r is keys[off[r] .. off[r+1])
//   then     keys: K bytes, zero padding to a multiple of 8
//   then     hash slots: S x {u64 key hash, u64 record}; an empty slot is
//            {0, 2^64 - 1}. S is a power of two > N; a key's probe starts at
//            hash & (S - 1), its home slot, and goes up by one slot
//            (wrapping) until its record or an empty slot. Of records with
//            equal keys the lowest index comes first on the probe, so it is
//            found first.
//
// Header:
//   0  u8[8] magic 89 'S' 'P' 'R' 'T' 'B' 0d 0a
//   8  u16   major version (1)      10  u16 minor version (0)
//  12  u32   label fields L (0..8)
//  16  u64   records N              24  u64 key bytes K
//  32  u64   hash slots S           40  u8[20] reserved, 0
//  60  u32   CRC-32C of bytes 0..59
//
// A lookup hashes the key (KeyHash), probes, and confirms the key's bytes
// before it answers: a hash collision never returns the wrong record.
#ifndef SHARDPACK_FORMAT_RECORD_TABLE_H_
#define SHARDPACK_FORMAT_RECORD_TABLE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shardpack/file.h"
#include "shardpack/manifest.h"

namespace shardpack::format {

inline constexpr std::array<uint8_t, 8> kRecordTableMagic = {0x89, 'S', 'P', 'R',
                                                             'T',  'B', '\r', '\n'};
inline constexpr uint16_t kRecordTableMajorVersion = 1;
inline constexpr uint16_t kRecordTableMinorVersion = 0;
inline constexpr size_t kRecordTableHeaderSize = 64;
inline constexpr size_t kRecordTableHeaderCrcOffset = 60;
inline constexpr size_t kRecordTableSlotSize = 16;
inline constexpr uint64_t kEmptySlot = ~uint64_t{0};

// The 64-bit hash of a key: FNV-1a 64 over its bytes, then splitmix64's
// finalizer (docs/format.md gives both).
uint64_t KeyHash(std::string_view key);

// Hash slots for N records: the smallest power of two >= N + N / 2 + 1.
uint64_t RecordTableSlots(uint64_t records);

class TableOut;  // record_table_builder.cc

// Collects every record's labels and key as records are added and writes
// the table, in memory bounded by `memory_bytes` at any record count. The
// four sections that grow with the records (labels, key offsets, keys, key
// hashes) stay in memory until they reach memory_bytes (about 40 bytes a
// record with short keys: 1.6 million records at the default), then go on
// into scratch files in `spill_directory` (common::CreateScratchFile:
// unnamed, gone with the builder whatever happens). Write places the hash
// slots by sorting the records by home slot, within the same bound: in
// memory while they fit, else as sorted runs in a scratch file merged
// twice (docs/format.md, section 16, "How the writer places records"). Not
// thread-safe.
class RecordTableBuilder {
 public:
  static constexpr uint64_t kDefaultMemoryBytes = uint64_t{64} << 20;
  // Precondition: 0 <= label_fields <= kMaxLabels.
  RecordTableBuilder(int label_fields, std::string spill_directory,
                     uint64_t memory_bytes = kDefaultMemoryBytes);
  ~RecordTableBuilder();
  RecordTableBuilder(const RecordTableBuilder&) = delete;
  RecordTableBuilder& operator=(const RecordTableBuilder&) = delete;

  // Precondition: labels.size() == label_fields (the caller checked the
  // record against its schema). Fails only when a scratch file cannot be
  // written ("<spill_directory>: ...").
  absl::Status Add(std::span<const int64_t> labels, std::string_view key);
  uint64_t records() const { return records_; }
  // Whether the records went to scratch files (more than memory_bytes).
  bool spilled() const { return spilled_; }
  // Writes the whole table to `file` (not synced). The entry's path is left
  // empty; bytes and crc32c are filled in. Once: the builder is spent after.
  absl::StatusOr<RecordTableEntry> Write(WritableFile* file);

 private:
  class Section;
  class SortedSlots;
  absl::Status Spill();
  absl::Status WriteSlots(TableOut& out);

  int fields_;
  std::string spill_directory_;
  std::string scratch_name_;  // the scratch files, in messages
  uint64_t memory_bytes_;
  std::unique_ptr<Section> labels_, offsets_, keys_, hashes_;
  uint64_t records_ = 0;
  uint64_t key_bytes_ = 0;
  bool spilled_ = false;
};

// Writes `builder`'s table as `directory`/records.idx, atomically (an
// AtomicFile, committed), and returns its manifest entry.
absl::StatusOr<RecordTableEntry> WriteRecordTable(RecordTableBuilder& builder,
                                                  const std::string& directory);

// A loaded record table. The file is read whole into memory (not mapped)
// and checked once, at Load; the accessors then trust it. Immutable:
// thread-safe to share.
class RecordTable {
 public:
  // Reads the table the manifest lists, from `directory`. NotFoundError when
  // the manifest lists none (or its file is missing); DataLossError naming
  // the file and offset when the file's size or CRC-32C disagrees with the
  // manifest, or any count or offset in it disagrees with the manifest
  // (records, label fields) or with itself.
  static absl::StatusOr<RecordTable> Load(const std::string& directory, const Manifest& manifest);
  // As Load, from a file: `expected` gives its size and CRC-32C.
  static absl::StatusOr<RecordTable> Parse(const RandomAccessFile& file,
                                           const RecordTableEntry& expected,
                                           const Manifest& manifest);

  const std::string& name() const { return name_; }
  uint64_t records() const { return records_; }
  int label_fields() const { return fields_; }
  // Preconditions: r < records(), 0 <= field < label_fields().
  int64_t label(uint64_t r, int field) const;
  // Valid for the table's life. Precondition: r < records().
  std::string_view key(uint64_t r) const;
  // The lowest record index whose key is `key`; nullopt when none has it.
  std::optional<uint64_t> Find(std::string_view key) const;

 private:
  absl::Status CheckHeader();
  absl::Status CheckKeys() const;
  absl::Status CheckSlots() const;
  absl::Status CheckProbes() const;
  uint64_t U64(uint64_t offset) const;

  std::string name_;
  std::vector<uint8_t> bytes_;
  int fields_ = 0;
  uint64_t records_ = 0;
  uint64_t key_bytes_ = 0;
  uint64_t slots_ = 0;
  uint64_t offsets_at_ = 0;  // file offsets of the sections
  uint64_t keys_at_ = 0;
  uint64_t slots_at_ = 0;
};

}  // namespace shardpack::format

#endif  // SHARDPACK_FORMAT_RECORD_TABLE_H_
