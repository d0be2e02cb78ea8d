// Damage: one damaged place in a shard, as every part of shardpack reports
// it: VerifyShard (ShardVerifyResult::problems), sharddump verify and its
// record scans (backends/record_scan.h's ScanReporter), and the reader's
// ReaderOptions::corrupt_reporter (CorruptSample::damage).
//
// The shape is LevelDB's log::Reader::Reporter::Corruption(bytes, status)
// and Riegeli's SkippedRegion (where, what): the file, where in it, which
// record, and the error, whose message already says all of that in one line
// ("train-00003.shard @1048576: block crc mismatch").
#ifndef SHARDPACK_DAMAGE_H_
#define SHARDPACK_DAMAGE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"

namespace shardpack {

// A value: copy and keep it as you like. Thread-compatible.
struct Damage {
  // The file the damage is in (a shard), as its opener named it; empty when
  // the reporter does not know the file.
  std::string path;
  // Byte offset in `path` where the damage was found: the damaged byte, or
  // the start of the block or record that failed its check. 0 when there is
  // no offset to give (LMDB and HDF5 records have none of their own; a file
  // that could not be opened).
  uint64_t offset = 0;
  // The record concerned: its index in the shard `path` for VerifyShard and
  // sharddump (the first record lost, for a damaged block), its index in the
  // dataset for the reader (Batch::record_index's numbering). None when the
  // damage is not one record's (a header, the index, padding, a whole file).
  std::optional<uint64_t> record;
  // What was wrong: usually a DataLossError; its message names the file and
  // offset.
  absl::Status status;

  // status.message() as a string.
  std::string message() const { return std::string(status.message()); }
};

}  // namespace shardpack

#endif  // SHARDPACK_DAMAGE_H_
