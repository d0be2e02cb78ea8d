// LMDB shards: one environment per shard, in one file (MDB_NOSUBDIR).
//
// Layout (docs/format.md, "LMDB shards"): the unnamed database maps each
// record's index in the shard, as an 8-byte big-endian key, to the record's
// encoding (the `.shard` record encoding, header + labels + key + extra +
// payload + zero padding to 8 bytes). One more key, kLmdbMetaKey, holds the
// shard's metadata (ShardMetaJson). Shards are written without a lock file
// (MDB_NOLOCK) and read the same way: a published shard is never written
// again, so there is nothing to lock against.
#ifndef SHARDPACK_BACKENDS_LMDB_STORE_H_
#define SHARDPACK_BACKENDS_LMDB_STORE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shardpack/dataset.h"
#include "shardpack/manifest.h"
#include "shardpack/record.h"

namespace shardpack::backends {

// The reserved key of the metadata. Record keys are exactly 8 bytes; this
// one is 14, and sorts after every record key below 0x73 << 56.
inline constexpr char kLmdbMetaKey[] = "shardpack.meta";

struct LmdbWriterOptions {
  // The map size the environment starts with; it doubles whenever a
  // transaction would not fit, so no write ever fails with MDB_MAP_FULL.
  // Default 64 MiB (tests set it tiny to exercise growth).
  uint64_t initial_map_bytes = uint64_t{64} << 20;
  // Records are committed in transactions of about this many value bytes.
  // Default 64 MiB.
  uint64_t txn_bytes = uint64_t{64} << 20;
};

// A ShardSink writing one LMDB shard at `path` (under "<path>.partial" until
// Commit). Keys are appended with MDB_APPEND in index order. Not thread-safe.
absl::StatusOr<std::unique_ptr<ShardSink>> OpenLmdbShardSink(
    const std::string& path, const DatasetWriterOptions& options,
    const LmdbWriterOptions& lmdb = {});

// Reads one LMDB shard. The environment is opened read-only with
// MDB_RDONLY | MDB_NOLOCK | MDB_NOSUBDIR | MDB_NOTLS (OS readahead left on:
// no MDB_NORDAHEAD), and one read transaction is held for the reader's life,
// so every value view it hands out stays valid until the reader is
// destroyed.
//
// Thread-compatible: any one thread at a time (MDB_NOTLS: the transaction
// is not tied to the thread that opened it), never two at once.
class LmdbShardReader {
 public:
  // NotFoundError when `path` does not exist; DataLossError naming the path
  // when it is not an LMDB file, is truncated (shorter than the pages its
  // meta page says are used), or lacks shardpack metadata.
  static absl::StatusOr<std::unique_ptr<LmdbShardReader>> Open(const std::string& path);
  ~LmdbShardReader();
  LmdbShardReader(const LmdbShardReader&) = delete;
  LmdbShardReader& operator=(const LmdbShardReader&) = delete;

  const std::string& path() const { return path_; }
  // Records in the shard.
  uint64_t size() const { return size_; }
  // The shard's metadata: a manifest of this one shard (backend, schema,
  // pack_json, shards[0].records == size(); bytes and crc32c are 0).
  const Manifest& meta() const { return meta_; }

  // Visits records [begin, end) in key order with one cursor walk
  // (MDB_SET_RANGE, then MDB_NEXT), handing each record's value bytes: a view
  // into the map, valid for the reader's life. A missing or out-of-order key
  // is a DataLossError naming the path and record index; an error returned by
  // `visit` stops the walk and is returned; so is CheckIntact()'s, before the
  // walk and when the file shrinks during it (liblmdb is left at the fault,
  // never handed the zeros: MappingGuard::Call). Precondition: begin <= end
  // <= size().
  absl::Status Scan(uint64_t begin, uint64_t end,
                    absl::FunctionRef<absl::Status(uint64_t index, ByteSpan value)> visit);

  // OK while the file has not shrunk under liblmdb's map; else the
  // DataLossError naming it (common/mapping_guard.h). Check it after using
  // value bytes. Cheap.
  absl::Status CheckIntact() const;

  // Record `index`'s value (one lookup, guarded as Scan's walk, so one
  // sigsetjmp a call: for a few records; Scan walks many). Valid for the
  // reader's life.
  absl::StatusOr<ByteSpan> Get(uint64_t index);

 private:
  struct Env;
  explicit LmdbShardReader(std::string path);
  std::string path_;
  std::unique_ptr<Env> env_;
  uint64_t size_ = 0;
  Manifest meta_;
};

// A value's bytes -> the record (views into `value`), by the `.shard` record
// codec. DataLossError "<path> record <index>: ..." when the bytes are not a
// record.
absl::StatusOr<Record> DecodeLmdbValue(ByteSpan value, const std::string& path, uint64_t index);

}  // namespace shardpack::backends

#endif  // SHARDPACK_BACKENDS_LMDB_STORE_H_
