// The LMDB shard sink: bulk load with MDB_APPEND, the map grown on demand.
#include <lmdb.h>

#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/lmdb_key.h"
#include "backends/lmdb_store.h"
#include "backends/publish.h"
#include "common/errors.h"
#include "common/posix_io.h"
#include "common/status_macros.h"
#include "format/record_codec.h"

namespace shardpack::backends {
namespace {

// liblmdb reports a short write (a full disk, a file-size limit) as EIO, and
// a failed ftruncate or mmap as their errno: the cause is found from the
// file system and named, with liblmdb's words after it.
absl::Status LmdbWriteError(const std::string& path, std::string_view what, int rc) {
  const std::string cause = shardpack::common::WriteFailureCause(path);
  if (!cause.empty()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        path, ": ", cause, " (liblmdb: ", shardpack::common::AsAbsl(what), ": ",
        mdb_strerror(rc), ")"));
  }
  if (rc > 0) {  // an errno: coded and explained as every other one is
    return shardpack::common::ErrnoError(what, path, rc);
  }
  return absl::InternalError(
      absl::StrCat(path, ": ", shardpack::common::AsAbsl(what), ": ", mdb_strerror(rc)));
}

// Records go into a transaction and, encoded, into `pending_` as well: when a
// put finds the map full, the transaction is aborted, the map doubled and the
// pending records put again. So MDB_MAP_FULL never reaches the caller, at the
// cost of one copy of each value at pack time.
class LmdbShardSink : public ShardSink {
 public:
  LmdbShardSink(std::string path, const DatasetWriterOptions& options, LmdbWriterOptions lmdb)
      : path_(std::move(path)),
        partial_(backends::PartialPath(path_)),
        options_(lmdb),
        map_bytes_(lmdb.initial_map_bytes) {
    meta_.backend = Backend::kLmdb;
    meta_.schema = options.schema;
    meta_.pack_json = options.pack_json;
  }

  ~LmdbShardSink() override {
    Close();
    if (!committed_) backends::RemoveIfExists(partial_);
  }

  absl::Status Open() {
    backends::RemoveIfExists(partial_);
    int rc = mdb_env_create(&env_);
    if (rc != 0) return LmdbWriteError(partial_, "mdb_env_create", rc);
    rc = mdb_env_set_mapsize(env_, map_bytes_);
    if (rc != 0) return LmdbWriteError(partial_, "mdb_env_set_mapsize", rc);
    // No lock file (the shard has one writer and is never written once
    // published), no sync per commit: Commit() syncs once at the end.
    rc = mdb_env_open(env_, partial_.c_str(),
                      MDB_NOSUBDIR | MDB_NOLOCK | MDB_NOSYNC | MDB_NOMETASYNC, 0644);
    if (rc != 0) return LmdbWriteError(partial_, "mdb_env_open", rc);
    return BeginTxn();
  }

  absl::Status Add(const Record& record) override {
    SP_ASSIGN_OR_RETURN(uint64_t size, shardpack::format::EncodedRecordSize(record));
    size_t offset = pending_.size();
    pending_.resize(offset + size);
    shardpack::format::EncodeRecord(record, pending_.data() + offset, size);
    pending_ends_.push_back(pending_.size());
    SP_RETURN_IF_ERROR(Put(records_, offset, size));
    ++records_;
    bytes_ += size;
    if (pending_.size() >= options_.txn_bytes) SP_RETURN_IF_ERROR(CommitTxn());
    return absl::OkStatus();
  }

  uint64_t records() const override { return records_; }
  uint64_t bytes() const override { return bytes_; }

  absl::StatusOr<ShardEntry> Commit() override {
    std::string meta = backends::ShardMetaJson(
        meta_, std::filesystem::path(path_).filename().string(), records_);
    MDB_val key{sizeof(kLmdbMetaKey) - 1, const_cast<char*>(kLmdbMetaKey)};
    MDB_val value{meta.size(), meta.data()};
    for (;;) {
      int rc = mdb_put(txn_, dbi_, &key, &value, 0);
      if (rc == 0) break;
      if (rc != MDB_MAP_FULL) return LmdbWriteError(partial_, "writing the metadata", rc);
      SP_RETURN_IF_ERROR(GrowAndReplay());
    }
    SP_RETURN_IF_ERROR(CommitTxn());
    int rc = mdb_env_sync(env_, 1);
    if (rc != 0) return LmdbWriteError(partial_, "mdb_env_sync", rc);
    Close();
    SP_ASSIGN_OR_RETURN(ShardEntry entry, backends::PublishShardFile(partial_, path_, records_));
    committed_ = true;
    return entry;
  }

 private:
  absl::Status BeginTxn() {
    int rc = mdb_txn_begin(env_, nullptr, 0, &txn_);
    if (rc != 0) return LmdbWriteError(partial_, "mdb_txn_begin", rc);
    rc = mdb_dbi_open(txn_, nullptr, 0, &dbi_);
    if (rc != 0) return LmdbWriteError(partial_, "mdb_dbi_open", rc);
    return absl::OkStatus();
  }

  absl::Status CommitTxn() {
    int rc = mdb_txn_commit(txn_);
    txn_ = nullptr;
    if (rc != 0) return LmdbWriteError(partial_, "mdb_txn_commit", rc);
    txn_first_ = records_;
    pending_.clear();
    pending_ends_.clear();
    return BeginTxn();
  }

  // Puts pending record `index` (bytes [offset, offset + size) of pending_),
  // growing the map and replaying the transaction when it is full.
  absl::Status Put(uint64_t index, size_t offset, size_t size) {
    auto k = backends::LmdbKey(index);
    MDB_val key{k.size(), k.data()};
    MDB_val value{size, pending_.data() + offset};
    int rc = mdb_put(txn_, dbi_, &key, &value, MDB_APPEND);
    if (rc == MDB_MAP_FULL) return GrowAndReplay();
    if (rc != 0) return LmdbWriteError(partial_, absl::StrCat("record ", index), rc);
    return absl::OkStatus();
  }

  // Aborts the transaction, doubles the map and puts every pending record
  // again (doubling until they fit).
  absl::Status GrowAndReplay() {
    for (;;) {
      mdb_txn_abort(txn_);
      txn_ = nullptr;
      map_bytes_ *= 2;
      int rc = mdb_env_set_mapsize(env_, map_bytes_);
      if (rc != 0) return LmdbWriteError(partial_, "mdb_env_set_mapsize", rc);
      SP_RETURN_IF_ERROR(BeginTxn());
      rc = 0;
      size_t begin = 0;
      for (size_t i = 0; i < pending_ends_.size() && rc == 0; ++i) {
        auto k = backends::LmdbKey(txn_first_ + i);
        MDB_val key{k.size(), k.data()};
        MDB_val value{pending_ends_[i] - begin, pending_.data() + begin};
        rc = mdb_put(txn_, dbi_, &key, &value, MDB_APPEND);
        begin = pending_ends_[i];
      }
      if (rc == 0) return absl::OkStatus();
      if (rc != MDB_MAP_FULL) return LmdbWriteError(partial_, "replaying a transaction", rc);
    }
  }

  void Close() {
    if (txn_ != nullptr) mdb_txn_abort(txn_);
    txn_ = nullptr;
    if (env_ != nullptr) mdb_env_close(env_);
    env_ = nullptr;
  }

  std::string path_;
  std::string partial_;
  LmdbWriterOptions options_;
  uint64_t map_bytes_;
  Manifest meta_;
  MDB_env* env_ = nullptr;
  MDB_txn* txn_ = nullptr;
  MDB_dbi dbi_ = 0;
  uint64_t records_ = 0;
  uint64_t bytes_ = 0;
  uint64_t txn_first_ = 0;            // index of the transaction's first record
  std::vector<uint8_t> pending_;      // the transaction's values, back to back
  std::vector<size_t> pending_ends_;  // end of each in pending_
  bool committed_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ShardSink>> OpenLmdbShardSink(const std::string& path,
                                                             const DatasetWriterOptions& options,
                                                             const LmdbWriterOptions& lmdb) {
  if (lmdb.initial_map_bytes == 0) {
    return absl::InvalidArgumentError("LMDB initial map size must be > 0");
  }
  auto sink = std::make_unique<LmdbShardSink>(path, options, lmdb);
  SP_RETURN_IF_ERROR(sink->Open());
  return std::unique_ptr<ShardSink>(std::move(sink));
}

}  // namespace shardpack::backends
