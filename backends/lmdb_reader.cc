// LmdbShardReader: read-only, lock-free, one read transaction for life.
#include <lmdb.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "backends/lmdb_key.h"
#include "backends/lmdb_store.h"
#include "backends/publish.h"
#include "common/check.h"
#include "common/errors.h"
#include "common/mapping_guard.h"
#include "common/posix_open.h"
#include "common/status_macros.h"
#include "format/record_codec.h"
#include "shardpack/file.h"

namespace shardpack::backends {
namespace {

using backends::kLmdbKeySize;

absl::Status LmdbError(const std::string& path, std::string_view what, int rc) {
  std::string text = absl::StrCat(path, ": ", shardpack::common::AsAbsl(what), ": ",
                                  mdb_strerror(rc));
  // A shard is immutable and opened read-only by one transaction: no writer
  // can grow, fill or resize it, so every liblmdb code (MDB_MAP_RESIZED from
  // a forged page count, MDB_CORRUPTED, ...) is the file's bytes. Only errno
  // values (ENOMEM, EIO) are the machine's.
  if (rc >= MDB_KEYEXIST && rc <= MDB_LAST_ERRCODE) return absl::DataLossError(text);
  if (rc == ENOENT) return absl::NotFoundError(text);
  return absl::InternalError(text);
}

}  // namespace

struct LmdbShardReader::Env {
  MDB_env* env = nullptr;
  MDB_txn* txn = nullptr;
  MDB_dbi dbi = 0;
  MDB_cursor* cursor = nullptr;
  // liblmdb's map, registered so that a file truncated under it is an error
  // (CheckIntact), not SIGBUS. Unregistered before mdb_env_close unmaps it.
  shardpack::common::MappingGuard guard;
  ~Env() {
    guard = shardpack::common::MappingGuard();
    if (cursor != nullptr) mdb_cursor_close(cursor);
    if (txn != nullptr) mdb_txn_abort(txn);
    if (env != nullptr) mdb_env_close(env);
  }
};

LmdbShardReader::LmdbShardReader(std::string path)
    : path_(std::move(path)), env_(std::make_unique<Env>()) {}
LmdbShardReader::~LmdbShardReader() = default;

absl::StatusOr<std::unique_ptr<LmdbShardReader>> LmdbShardReader::Open(const std::string& path) {
  // liblmdb would open a FIFO and wait for a writer; a directory would be
  // taken as an environment with a lock file.
  uint64_t file_bytes = 0;
  SP_RETURN_IF_ERROR(shardpack::common::CheckRegularFile(path, &file_bytes));
  std::unique_ptr<LmdbShardReader> r(new LmdbShardReader(path));
  Env& e = *r->env_;
  int rc = mdb_env_create(&e.env);
  if (rc != 0) return LmdbError(path, "mdb_env_create", rc);
  // MDB_NOTLS: the read transaction is not tied to the opening thread.
  rc = mdb_env_open(e.env, path.c_str(), MDB_RDONLY | MDB_NOLOCK | MDB_NOSUBDIR | MDB_NOTLS, 0);
  // Past a missing or unreadable file, every failure here is the file's
  // bytes: an empty file gives EBADF, a short one EINVAL, a meta page
  // claiming a map larger than the address space ENOMEM.
  if (rc != 0 && rc != ENOENT && rc != EACCES && rc != EPERM) {
    return absl::DataLossError(absl::StrCat(path, ": not an LMDB environment: ", mdb_strerror(rc)));
  }
  if (rc != 0) return LmdbError(path, "not an LMDB environment", rc);
  // LMDB maps the file and trusts its meta page: reading a page past the end
  // of a truncated file would be SIGBUS, so check the size first.
  MDB_envinfo info;
  MDB_stat stat_;
  mdb_env_info(e.env, &info);
  mdb_env_stat(e.env, &stat_);

  // Divided, not multiplied: a forged last page times the page size wraps.
  const uint64_t page_bytes = std::max<uint64_t>(stat_.ms_psize, 1);
  if (uint64_t{info.me_last_pgno} >= file_bytes / page_bytes) {
    return absl::DataLossError(absl::StrCat(path, ": truncated LMDB file: ", file_bytes,
                                            " bytes, its meta page says page ",
                                            uint64_t{info.me_last_pgno}, " of ", page_bytes,
                                            " bytes is in use"));
  }
  rc = mdb_txn_begin(e.env, nullptr, MDB_RDONLY, &e.txn);
  if (rc != 0) return LmdbError(path, "mdb_txn_begin", rc);
  rc = mdb_dbi_open(e.txn, nullptr, 0, &e.dbi);
  if (rc != 0) return LmdbError(path, "mdb_dbi_open", rc);
  rc = mdb_cursor_open(e.txn, e.dbi, &e.cursor);
  if (rc != 0) return LmdbError(path, "mdb_cursor_open", rc);

  MDB_val key{sizeof(kLmdbMetaKey) - 1, const_cast<char*>(kLmdbMetaKey)};
  MDB_val value;
  rc = mdb_get(e.txn, e.dbi, &key, &value);
  if (rc == MDB_NOTFOUND) {
    return absl::DataLossError(absl::StrCat(path, ": an LMDB environment but not a shardpack "
                                            "shard (no '", kLmdbMetaKey, "' key)"));
  }
  if (rc != 0) return LmdbError(path, "reading the metadata", rc);
  // The value lies in liblmdb's map, which mdb_env_info does not locate.
  e.guard = shardpack::common::MappingGuard::Around(value.mv_data, path);
  SP_ASSIGN_OR_RETURN(
      r->meta_, backends::ParseShardMeta(
                    std::string_view(static_cast<const char*>(value.mv_data), value.mv_size),
                    absl::StrCat(path, " key ", kLmdbMetaKey), Backend::kLmdb));
  MDB_stat db;
  rc = mdb_stat(e.txn, e.dbi, &db);
  if (rc != 0) return LmdbError(path, "mdb_stat", rc);
  r->size_ = r->meta_.shards[0].records;
  // Each entry takes at least its 8-byte node header and 8-byte key in a
  // page of the file: a count the file cannot hold is damage (and 2^64 - 1
  // would wrap the comparison below).
  constexpr uint64_t kMinEntryBytes = 16;
  if (r->size_ > file_bytes / kMinEntryBytes) {
    return absl::DataLossError(absl::StrCat(path, ": its metadata says ", r->size_,
                                            " records, more than its ", file_bytes,
                                            " bytes can hold"));
  }
  if (db.ms_entries != r->size_ + 1) {
    return absl::DataLossError(absl::StrCat(path, ": holds ", db.ms_entries - 1,
                                            " records, its metadata says ", r->size_));
  }
  return r;
}

absl::Status LmdbShardReader::Scan(
    uint64_t begin, uint64_t end,
    absl::FunctionRef<absl::Status(uint64_t index, ByteSpan value)> visit) {
  SP_DCHECK(begin <= end && end <= size());
  if (begin >= end) return absl::OkStatus();
  // liblmdb trusts its map: a page lost to a shrunk file ends the walk
  // instead of being followed (common/mapping_guard.h).
  return env_->guard.Call([&]() -> absl::Status {
    auto first = backends::LmdbKey(begin);
    MDB_val key{first.size(), first.data()};
    MDB_val value;
    MDB_cursor_op op = MDB_SET_RANGE;
    for (uint64_t index = begin; index < end; ++index, op = MDB_NEXT) {
      int rc = mdb_cursor_get(env_->cursor, &key, &value, op);
      if (rc == MDB_NOTFOUND) {
        return absl::DataLossError(absl::StrCat(path_, " record ", index, ": missing"));
      }
      if (rc != 0) return LmdbError(path_, absl::StrCat("record ", index), rc);
      if (key.mv_size != kLmdbKeySize ||
          backends::LmdbKeyIndex(static_cast<const uint8_t*>(key.mv_data)) != index) {
        return absl::DataLossError(absl::StrCat(path_, " record ", index,
                                                ": missing (the next key is not its index)"));
      }
      SP_RETURN_IF_ERROR(visit(index, ByteSpan(static_cast<const uint8_t*>(value.mv_data),
                                               value.mv_size)));
    }
    return absl::OkStatus();
  });
}

absl::Status LmdbShardReader::CheckIntact() const { return env_->guard.Damage(); }

absl::StatusOr<ByteSpan> LmdbShardReader::Get(uint64_t index) {
  MDB_val value;
  SP_RETURN_IF_ERROR(env_->guard.Call([&]() -> absl::Status {
    auto k = backends::LmdbKey(index);
    MDB_val key{k.size(), k.data()};
    int rc = mdb_get(env_->txn, env_->dbi, &key, &value);
    if (rc == MDB_NOTFOUND) {
      return absl::DataLossError(absl::StrCat(path_, " record ", index, ": missing"));
    }
    if (rc != 0) return LmdbError(path_, absl::StrCat("record ", index), rc);
    return absl::OkStatus();
  }));
  return ByteSpan(static_cast<const uint8_t*>(value.mv_data), value.mv_size);
}

absl::StatusOr<Record> DecodeLmdbValue(ByteSpan value, const std::string& path, uint64_t index) {
  return shardpack::format::DecodeRecord(
      value, [&] { return absl::StrCat(path, " record ", index); });
}

}  // namespace shardpack::backends
