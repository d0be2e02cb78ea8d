// The local cache of a remote dataset's bytes, on disk or tmpfs, shared by
// the processes of one node (the ranks of a job point at one cache_dir).
//
// Layout: <dir>/shardpack-cache/<space>/<entry>.spc, one file per entry (a
// shard block, a shard's head or tail, or a whole object), where <space>
// names one dataset at one URL with one fingerprint. An entry appears by
// rename of a complete file, so a process sees a whole entry or none; its
// bytes were checked against their CRC-32C before they were kept and are
// checked again when read (remote/remote_dataset.h), so a torn or damaged
// entry is dropped and fetched again, never used.
//
// The budget: entries are kept while the cache's files stay within `bytes`;
// past it, the oldest entries (by modification time, any dataset's) are
// removed down to 90% of it, under an exclusive lock on
// <dir>/shardpack-cache/lock. Only files named *.spc under
// <dir>/shardpack-cache/ are ever removed: nothing else in `dir` (a user's
// files, a local dataset) is touched. A process that finds the lock held
// keeps nothing that round instead of waiting. An entry larger than the
// budget is never kept: its bytes are used and dropped, so a budget smaller
// than a shard still streams.
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

  bool enabled() const { return !space_dir_.empty(); }
  const CacheOptions& options() const { return options_; }
  // Where whole-object entries live as files (for liblmdb and libhdf5).
  std::string PathOf(std::string_view entry) const;

  // Entry `entry` of exactly dst.size() bytes into dst: true if it was
  // there. An entry of another size is removed (a miss).
  bool Read(std::string_view entry, std::span<uint8_t> dst);
  // Whether a whole-object entry of `size` bytes is there.
  bool Contains(std::string_view entry, uint64_t size);

  // Keeps `bytes` as `entry` when the budget allows (after eviction). False
  // when it was not kept; never an error for the caller, whose bytes are
  // good either way.
  // With `capacity` >= bytes' size rounded up to 4096 and 4096-aligned bytes
  // (a reader's block buffer), the file is written with O_DIRECT where the
  // file system allows: no copy into the page cache.
  bool Put(std::string_view entry, std::span<const uint8_t> bytes, size_t capacity = 0);
  // Makes room for `size` more bytes of a whole-object entry, which is kept
  // even past the budget (liblmdb and libhdf5 need the file whole): the
  // caller writes it at PathOf(entry) (an AtomicFile), then calls
  // Settle(all it reserved, whether the entry is there now).
  void Reserve(uint64_t size) { MakeRoom(size, /*force=*/true); }
  void Settle(uint64_t reserved, bool kept);
  // Removes a damaged entry.
  void Drop(std::string_view entry);

  CacheStats stats() const;

 private:
  BlockCache(CacheOptions options, std::string root, std::string space_dir);
  // Makes room for `incoming` bytes: false when the lock is held elsewhere
  // or the entry alone is over budget.
  bool MakeRoom(uint64_t incoming, bool force);
  uint64_t ScanUsage() const;

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
  };
  static std::shared_ptr<Budget> BudgetOf(const std::string& root);

  std::shared_ptr<Budget> budget_;
  std::atomic<uint64_t> hits_{0}, misses_{0}, kept_{0}, dropped_{0}, evicted_{0};
};

}  // namespace shardpack::remote

#endif  // SHARDPACK_REMOTE_BLOCK_CACHE_H_
