// The one record scan: the records of one shard of any backend, in order,
// each with where it lives, and the damage a scan steps over told to a
// reporter, as LevelDB's log::Reader tells its Reporter and Riegeli's
// readers give a SkippedRegion.
//
//   SP_ASSIGN_OR_RETURN(auto scanner, backends::OpenShardScanner(path, backend, expected));
//   SP_RETURN_IF_ERROR(scanner->Scan(0, scanner->size(),
//       [&](uint64_t i, const Record& r, const RecordLocation& where) { ... }));
//
// Users: sharddump (ls, show, extract, info, verify --decode: through
// dump::OpenedDataset::OpenShard), shardpack convert, the
// gate's vetting child (backends/shard_gate.h), tests and benchmarks.
//
// Not used by the reader's unit sources (reader/unit_source.h), on purpose:
// they load whole read units (a `.shard` block, a run of LMDB keys, a run of
// HDF5 chunk rows) with asynchronous I/O engines into buffers the loader
// owns, and their records are parsed by the transform workers, many threads
// at once, with no call per record between. A visitor called per record is
// the cost the reader is built to avoid. They report damage in the same
// type: a damaged sample the reader skips reaches
// ReaderOptions::corrupt_reporter as a Damage (shardpack/damage.h).
#ifndef SHARDPACK_BACKENDS_RECORD_SCAN_H_
#define SHARDPACK_BACKENDS_RECORD_SCAN_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "format/file_system.h"
#include "shardpack/damage.h"
#include "shardpack/dataset.h"
#include "shardpack/file.h"
#include "shardpack/record.h"

namespace shardpack::backends {

// Where a record lives in its shard file.
struct RecordLocation {
  uint64_t block_offset = 0;  // file offset of the record's block
  uint32_t in_block = 0;      // offset in the block's raw (decompressed) payload
  bool compressed = false;    // the block is stored compressed
  // False for LMDB and HDF5 shards, whose records have no file offset of
  // their own; Text() is then "-".
  bool has_offset = true;

  // The record's own file offset (of its record header) when its block is
  // stored uncompressed: block_offset + 32 (block header) + in_block. A
  // record of a compressed block has no file offset of its own; this is then
  // block_offset.
  uint64_t file_offset() const;
  // file_offset() as text: "4128", or "4096:1200" (block at 4096, record
  // 1200 bytes into its decompressed payload) for a compressed block.
  std::string Text() const;
};

// Payload bytes of a shard's blocks, from its index (no data read).
struct StorageStats {
  uint64_t blocks = 0;
  uint64_t compressed_blocks = 0;
  uint64_t raw_bytes = 0;     // block payloads after decompression
  uint64_t stored_bytes = 0;  // block payloads as stored
};

// Told of the damage a scan steps over. Called on the scanning thread,
// during Scan, in record order. The Damage names the shard, the offset (a
// `.shard` block's or record's; 0 for LMDB and HDF5), the first record lost
// and the error.
class ScanReporter {
 public:
  virtual ~ScanReporter() = default;
  virtual void Corruption(const Damage& damage) = 0;
};

// Visits one record: its index in the shard, the record (views valid for the
// call only) and where it lives. A non-OK status stops the scan and is
// returned by Scan.
using RecordVisitor =
    absl::FunctionRef<absl::Status(uint64_t, const Record&, const RecordLocation&)>;
// The same without the location.
using ShardRecordVisitor = absl::FunctionRef<absl::Status(uint64_t, const Record&)>;

// One shard's records, read a block (`.shard`), a cursor walk (LMDB) or a
// chunk of rows (HDF5) at a time. Not thread-safe: open one per thread.
class ShardScanner {
 public:
  // The raw opener: for LMDB and HDF5 files that passed the gate
  // (OpenShardScanner in backends/shard_gate.h opens through it), the
  // vetting child, tests and benchmarks. Errors name the path: NotFoundError
  // when missing, DataLossError when damaged or of another kind. A URL is
  // opened through `files` (a `.shard` object read through its cache, an
  // LMDB or HDF5 object as its local copy); with none, it is not found.
  static absl::StatusOr<std::unique_ptr<ShardScanner>> Open(const std::string& path,
                                                            Backend backend,
                                                            format::FileSystem* files = nullptr);
  virtual ~ShardScanner() = default;

  virtual const std::string& path() const = 0;
  virtual uint64_t size() const = 0;        // records
  virtual uint64_t file_bytes() const = 0;  // size of the file
  // LMDB and HDF5: no blocks, no compression; the file is its own storage.
  virtual StorageStats storage() const = 0;
  // The shard's own format version, e.g. "1.0".
  virtual std::string format_version() const = 0;
  // How the file's contents were recognized, for `sharddump info`: HDF5's
  // Hdf5ShardReader::LayoutText() (its layout and the datasets it ignores);
  // empty for backends of one layout.
  virtual std::string LayoutText() const { return {}; }

  // Visits records [begin, end) in order. Damage stops the scan with its
  // DataLossError naming the path and the record, unless `reporter` is
  // given: it is then told, and the scan goes on past the damaged block or
  // record of a `.shard` file (LMDB and HDF5 give no way to step past
  // damage: their scan ends there, OK). Precondition: begin <= end <= size().
  virtual absl::Status Scan(uint64_t begin, uint64_t end, RecordVisitor visit,
                            ScanReporter* reporter = nullptr) = 0;
  // As above, without locations or a reporter.
  absl::Status Scan(uint64_t begin, uint64_t end, ShardRecordVisitor visit) {
    return Scan(begin, end,
                [&](uint64_t i, const Record& r, const RecordLocation&) { return visit(i, r); });
  }
};

// Maps a `.shard` file at `path` (no copy: the format code reads the
// mapping), falling back to pread where the file cannot be mapped. A URL is
// read through `files` (NotFoundError with none).
absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenShardBytes(
    const std::string& path, format::FileSystem* files = nullptr);

}  // namespace shardpack::backends

#endif  // SHARDPACK_BACKENDS_RECORD_SCAN_H_
