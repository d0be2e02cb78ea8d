// The shards of a RecordReader (shardpack/records.h), one per backend: each
// reads one record by its index in the shard into a caller's scratch memory.
// Read is thread-safe on every part: `.shard` parts share their file (pread or
// a mapping) and immutable index with no lock; LMDB and HDF5 parts hold a
// mutex of their own around their library's calls.
#ifndef SHARDPACK_READER_RECORD_PARTS_H_
#define SHARDPACK_READER_RECORD_PARTS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/jpeg_decoder.h"
#include "codec/pixels.h"
#include "remote/storage.h"
#include "shardpack/manifest.h"
#include "shardpack/record.h"
#include "shardpack/shard.h"

namespace shardpack::reader {

// What one thread's reads reuse (a RecordBuffer's memory): buffers that
// keep their capacity, a block decoder and a JPEG decoder made on first use.
struct RecordScratch {
  codec::GrowableBuffer bytes;   // the record's stored bytes (or a whole block)
  codec::GrowableBuffer raw;     // a compressed block, decompressed
  codec::GrowableBuffer pixels;  // a decoded or interleaved image
  BlockDecoder blocks;
  std::unique_ptr<codec::JpegDecoder> jpeg;
  std::vector<int64_t> key_offsets, extra_offsets;  // HDF5
  std::vector<uint8_t> keys, extra;                 // HDF5
};

class RecordPart {
 public:
  virtual ~RecordPart() = default;
  virtual uint64_t records() const = 0;
  // Record `j` of the shard into `out` (views into `scratch`).
  // Precondition: j < records().
  virtual absl::Status Read(uint64_t j, RecordScratch* scratch, Record* out) const = 0;
  // Where record `j` lives, for a message: "PATH @OFFSET: record J" (a
  // `.shard` record's own offset, or its compressed block's), "PATH: record
  // J" for LMDB and HDF5. Precondition: j < records().
  virtual std::string Where(uint64_t j) const = 0;
};

// Opens shard `path` of `backend`: a `.shard` file through pread (or a
// mapping when `mmap`); an LMDB or HDF5 file through the gate, against
// `expected` when it is known (backends/shard_gate.h). When `records` is
// given, the shard must hold that many (DataLossError naming it otherwise).
// A URL is opened through `storage` (its cache; the part holds no
// reference to it: the caller keeps it open while the part lives).
absl::StatusOr<std::unique_ptr<RecordPart>> OpenRecordPart(const std::string& path,
                                                           Backend backend,
                                                           const std::optional<ShardEntry>& expected,
                                                           std::optional<uint64_t> records,
                                                           bool mmap, remote::Storage* storage);

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_RECORD_PARTS_H_
