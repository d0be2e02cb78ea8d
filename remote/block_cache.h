// The local cache of a remote dataset's bytes, on disk or tmpfs, shared by
// the processes of one node (the ranks of a job point at one cache_dir).
//
// Layout: <dir>/shardpack-cache/<space>/<entry>.spc, one file per entry (a
// shard block, a shard's ends, or a whole object), where <space> names one
// dataset at one URL with one fingerprint. An entry appears by rename of a
// complete file, so a process sees a whole entry or none.
//
// What the cache promises (docs/reliability.md): an entry is used only when
// it is ours, whole and checked, else it is fetched again.
//  - Checked: a block against its header's CRC-32C and the footer's payload
//    CRC-32C (which also binds it to this shard: another's block fails);
//    a shard's ends against a trailer binding them to the object (its
//    manifest size and CRC-32C) and their own CRC-32C; a whole object
//    against the manifest's size and CRC-32C before each process first
//    uses it (remote/remote_dataset.h). One that fails is dropped.
//  - Never through a link: the cache's folders and entries are opened with
//    O_NOFOLLOW or checked with lstat; a link found in the cache is removed
//    (never its target), and a FIFO or folder where an entry should be is
//    a miss.
//  - In use is kept: a whole-object entry handed to liblmdb or libhdf5 by
//    path is held (a shared flock on an open descriptor) for as long as its
//    dataset is open, and eviction passes over held entries, so the path
//    stays valid however small the budget.
//
// The budget: every regular file under <dir>/shardpack-cache counts
// (entries, entries being written, anything else put there); past it, the
// oldest entries not in use (by modification time) of other datasets are
// removed down to 90% of it, under an exclusive lock on
// <dir>/shardpack-cache/lock, and with them the partial files of writers
// that died (unlocked and untouched for a minute). A process never evicts
// the entries of the datasets it has open for more of them (only down to
// a budget lowered since they were kept): a dataset larger than the
// budget, or a mixture of several, keeps
// what fitted first and streams the rest, so every epoch hits that part
// and writes nothing (evicting the oldest would write every block of every
// epoch and hit almost none). Only files named *.spc
// and their partials under <dir>/shardpack-cache/ are ever removed: nothing
// else in `dir` (a user's files, a local dataset) is touched. A process
// that finds the lock held keeps nothing that round instead of waiting. An
// entry larger than the budget is never kept (its bytes are used and
// dropped), so a budget smaller than a shard still streams; a whole object
// is kept past the budget while in use (liblmdb and libhdf5 need it whole).
#ifndef SHARDPACK_REMOTE_BLOCK_CACHE_H_
#define SHARDPACK_REMOTE_BLOCK_CACHE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/unique_fd.h"

namespace shardpack::remote {

struct CacheOptions {
  std::string dir;     // "" or bytes == 0: no cache (every byte fetched)
  uint64_t bytes = 0;  // the budget, in bytes
};

inline bool SameCache(const CacheOptions& a, const CacheOptions& b) {
  return a.dir == b.dir && a.bytes == b.bytes;
}

// The defaults: SHARDPACK_CACHE_DIR, else $XDG_CACHE_HOME/shardpack, else
// $HOME/.cache/shardpack; SHARDPACK_CACHE_BYTES (a size as flags take it,
// common::ParseSize: 200GiB, 512M, 4096; "0" turns the cache off), else
// 16 GiB. A bad
// value is an InvalidArgumentError naming the variable. `getenv` is
// injectable for tests.
absl::StatusOr<CacheOptions> CacheOptionsFromEnvironment(
    const std::function<const char*(const char*)>& getenv);


struct CacheStats {
  uint64_t hits = 0;         // entries read from the cache
  uint64_t misses = 0;       // entries looked for and not there
  uint64_t kept = 0;         // entries this process added
  uint64_t dropped = 0;      // entries found damaged, or not kept (budget, lock)
  uint64_t evicted = 0;      // entries this process removed for the budget
};

// Thread-safe.
class BlockCache {
 public:
  // The cache for one dataset: `space` (letters, digits, '-') names it.
  // Creates the folders. With no cache configured, every Read misses and
  // every Put is dropped.
  static absl::StatusOr<std::unique_ptr<BlockCache>> Open(const CacheOptions& options,
                                                          std::string_view space);
  ~BlockCache();

  bool enabled() const { return !space_dir_.empty(); }
  const CacheOptions& options() const { return options_; }
  // Where whole-object entries live as files (for liblmdb and libhdf5).
  std::string PathOf(std::string_view entry) const;

  // Entry `entry` of exactly dst.size() bytes into dst: true if it was
  // there. An entry of another size is removed (a miss). The caller checks
  // the bytes and Drop()s them when they fail.
  bool Read(std::string_view entry, std::span<uint8_t> dst);

  // Keeps `bytes` as `entry` when the budget allows (after eviction). False
  // when it was not kept; never an error for the caller, whose bytes are
  // good either way.
  // With `capacity` >= bytes' size rounded up to 4096 and 4096-aligned bytes
  // (a reader's block buffer), the file is written with O_DIRECT where the
  // file system allows: no copy into the page cache.
  bool Put(std::string_view entry, std::span<const uint8_t> bytes, size_t capacity = 0);

  // A whole-object entry held in use: while `fd` stays open (a shared
  // flock), no process evicts it, so PathOf(entry) stays this file.
  struct Held {
    common::UniqueFd fd;
    uint64_t size = 0;
  };
  // Entry `entry` as it is now, held: NotFoundError when it is not there,
  // is not a regular file, or went (evicted) before it could be held.
  absl::StatusOr<Held> Hold(std::string_view entry);
  // A new whole-object entry: its partial file, created and held (so that
  // no one takes it for a dead writer's), for the caller to fill through
  // `file.fd`, making room as it goes with Reserve (kept past the budget);
  // EndWhole renames it into place, where it stays held.
  struct Writing {
    Held file;
    std::string partial;
    uint64_t reserved = 0;  // what Reserve took for it
  };
  absl::StatusOr<Writing> BeginWhole(std::string_view entry);
  void Reserve(Writing& w, uint64_t size) {
    MakeRoom(size, /*force=*/true);
    w.reserved += size;
  }
  // Ends a BeginWhole: renamed to PathOf(entry) when `keep`, else removed.
  // Returns the held entry, or the rename's error.
  absl::StatusOr<Held> EndWhole(std::string_view entry, Writing writing, bool keep);
  // Removes a damaged entry.
  void Drop(std::string_view entry);

  CacheStats stats() const;

 private:
  BlockCache(CacheOptions options, std::string root, std::string space_dir);
  // Makes room for `incoming` bytes: false when the lock is held elsewhere
  // or the entry alone is over budget.
  bool MakeRoom(uint64_t incoming, bool force);
  // Gives back bytes reserved by MakeRoom: now on disk (`kept`) or not.
  void Settle(uint64_t reserved, bool kept);
  uint64_t ScanUsage() const;
  // Under the cache's lock: removes links, dead writers' partials and the
  // oldest entries not in use until `incoming` more fits 90% of the budget
  // (or nothing more can go). With `spare_own`, the entries of the
  // datasets open in this process go only while the cache is over its
  // budget without `incoming`.
  // Returns the bytes left, reserved included.
  uint64_t Evict(uint64_t incoming, bool spare_own);

  const CacheOptions options_;
  const std::string root_;       // <dir>/shardpack-cache
  const std::string space_dir_;  // root_/<space>, "" when disabled
  // What this process knows of the cache's bytes, shared by every BlockCache
  // of one folder in the process: a rescan sees only the entries on disk,
  // so bytes reserved for entries still being written are added to it.
  struct Budget {
    std::mutex mu;          // and eviction, in this process
    uint64_t used = 0;      // entries on disk + reserved
    uint64_t reserved = 0;  // reserved for entries not yet on disk
    // The space folders of the caches open on this folder in this process,
    // once for each.
    std::vector<std::string> open;
  };
  // The one exception to "no state keyed by strings": the folder is the
  // key because the folder is what is shared. Its budget is a property of
  // the disk, held in common by every process that names the folder (they
  // meet through the files and the rescan); within one process, readers
  // whose Storages were made apart (two Python readers given the same
  // cache_dir) cannot be handed one object by any caller, yet must not
  // count each other's reservations twice or lose them. A cache never reads
  // another's entries through this table: it carries byte counts only,
  // never which dataset or cache a file is read through.
  static std::shared_ptr<Budget> BudgetOf(const std::string& root);

  std::shared_ptr<Budget> budget_;
  // Guarded by budget_->mu: the last look found no room that this dataset
  // may take (only the entries of datasets open here left to evict), and
  // the bytes refused since.
  bool full_of_own_ = false;
  uint64_t refused_since_look_ = 0;
  std::atomic<uint64_t> hits_{0}, misses_{0}, kept_{0}, dropped_{0}, evicted_{0};
};

}  // namespace shardpack::remote

#endif  // SHARDPACK_REMOTE_BLOCK_CACHE_H_
