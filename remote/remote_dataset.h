// A dataset that lives in an object store, read through the verified local
// cache (remote/block_cache.h).
//
// The manifest is fetched first, always (never from the cache): it names
// every object, its size and CRC-32C, and its fingerprint names the cache's
// space, so a prefix that now holds another dataset never reads the old
// one's bytes. Then:
//  - a `.shard` object is read by block: its head and tail (header, footer
//    index, trailer; checked by ShardIndex::Load) once at open, then each
//    block fetched whole by a block-aligned range request and checked
//    against its header's CRC-32C and the footer's payload CRC-32C before it
//    is used or kept. A block that fails is fetched once more, then every
//    read of it is a DataLossError naming the URL and the block's offset
//    (the reader's damage policy, on_corrupt, then decides): no read hands
//    out bytes that failed a check;
//  - any other object (an LMDB or HDF5 shard, the record table) is fetched
//    whole into the cache, in ranges, and checked against the manifest's
//    CRC-32C: liblmdb and libhdf5 open files, not streams.
#ifndef SHARDPACK_REMOTE_REMOTE_DATASET_H_
#define SHARDPACK_REMOTE_REMOTE_DATASET_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "remote/block_cache.h"
#include "remote/object_store.h"
#include "shardpack/file.h"
#include "shardpack/manifest.h"

namespace shardpack::remote {

struct RemoteStats {
  StoreStats store;
  CacheStats cache;
  uint64_t refetched = 0;  // pieces fetched again after failing their check
  uint64_t damaged = 0;    // pieces that failed their check twice
};

class RemoteFile;
class RemoteDataset;

// One read of a batch: `dst.size()` bytes of `file` at `offset`.
struct RemoteRead {
  const RemoteFile* file = nullptr;
  uint64_t offset = 0;
  std::span<uint8_t> dst;
  // Bytes of dst's memory usable past dst.size() (a reader's block buffer:
  // 4096-aligned, its size rounded up), else 0. Lets the cache write it with
  // O_DIRECT.
  size_t capacity = 0;
  absl::Status status;  // set by ReadRemote
  // Set by ReadRemote: every byte of dst was checked, each block in it
  // against the shard's index (header and payload CRC-32C), the rest against
  // the shard's checked ends, so a reader's decoder need not check the
  // blocks again. False for a part of a block and for other objects.
  bool checked = false;
};

// Serves every read from memory or the cache where it can and fetches the
// rest in one round of requests in flight together (per store), checking
// each block as RemoteDataset says, and keeping it, as its request ends.
// Each read gets its own status; `done` is told of each as soon as it is
// final (its status set, its bytes in dst and, fetched, kept), while the
// others are still in flight.
void ReadRemote(std::span<RemoteRead> reads, EachDone done = {});

// A remote object as a file (RemoteDataset::OpenFile). ReadExact is
// ReadRemote of one read.
class RemoteFile : public RandomAccessFile {
 public:
  absl::Status ReadExact(uint64_t offset, std::span<uint8_t> dst) const final;

  // What ReadRemote asks of a file: where a read that cannot be served
  // locally must be fetched from.
  struct Need {
    RemoteRead* read = nullptr;
    uint64_t at = 0;                   // the range fetched: [at, at + bytes.size())
    std::span<uint8_t> bytes;          // the read's dst, or `whole`
    std::vector<uint8_t> whole;        // the whole blocks holding a partial read
    const void* block = nullptr;       // the file's own: what `bytes` is checked against
    size_t blocks = 0;                 // ... and how many of them
  };
  // Serves `r` from memory or the cache: true. Else fills `need`. A read of
  // part of a block (or of several) gets the whole blocks in need.whole
  // (checked, kept), and ReadRemote copies its part.
  virtual bool ServeLocally(RemoteRead& r, Need& need) const = 0;
  // Whether fetched bytes pass their check (a DataLossError naming the URL
  // and the block's offset if not); keeps them in the cache if so.
  virtual absl::Status Check(const Need& need) const = 0;
  virtual RemoteDataset& dataset() const = 0;
  virtual const std::string& object() const = 0;
};

class RemoteDataset : public std::enable_shared_from_this<RemoteDataset> {
 public:
  // Fetches and parses the manifest of the dataset at `url` (its prefix, or
  // its manifest.json). Errors name the URL.
  static absl::StatusOr<std::shared_ptr<RemoteDataset>> Open(std::string_view url,
                                                              const CacheOptions& cache,
                                                              std::unique_ptr<ObjectStore> store);

  // The dataset's URL, ending in '/'.
  const std::string& url() const { return store_->url(); }
  const Manifest& manifest() const { return manifest_; }
  const CacheOptions& cache_options() const { return cache_->options(); }

  // Object `name` (one the manifest lists) as a file whose bytes are
  // checked as above. NotFoundError naming the URL for any other name.
  absl::StatusOr<std::unique_ptr<RemoteFile>> OpenFile(std::string_view name);
  // Several at once: every shard's head and tail in one round of requests.
  absl::StatusOr<std::vector<std::unique_ptr<RemoteFile>>> OpenFiles(
      std::span<const std::string_view> names);
  // Object `name` whole in the cache, checked against the manifest: its
  // local path, which stays this file while the dataset is open (the entry
  // is held: no process evicts it). A copy already in the cache is checked
  // against the manifest's size and CRC-32C the first time this dataset
  // uses it, and fetched again when it fails.
  absl::StatusOr<std::string> LocalCopy(std::string_view name);

  RemoteStats stats() const;

  // For the files: fetch with one retry of pieces failing `check`.
  ObjectStore& store() { return *store_; }
  BlockCache& cache() { return *cache_; }
  void CountRefetch(uint64_t n = 1) { refetched_.fetch_add(n, std::memory_order_relaxed); }
  void CountDamage(uint64_t n = 1) { damaged_.fetch_add(n, std::memory_order_relaxed); }

 private:
  RemoteDataset(std::unique_ptr<ObjectStore> store, Manifest manifest)
      : store_(std::move(store)), manifest_(std::move(manifest)) {}
  // Object `name` whole into `w`, checked against `entry`.
  absl::Status FetchWhole(std::string_view name, const ShardEntry& entry, BlockCache::Writing& w);
  // Whether the file open as `fd` (`size` bytes) is `entry`'s bytes.
  absl::Status CheckWhole(int fd, const std::string& path, const ShardEntry& entry,
                          uint64_t size) const;
  // The manifest entry of `name` and its index (its cache entries' prefix).
  absl::StatusOr<std::pair<const ShardEntry*, size_t>> EntryOf(std::string_view name) const;

  std::unique_ptr<ObjectStore> store_;
  Manifest manifest_;
  std::unique_ptr<BlockCache> cache_;
  std::atomic<uint64_t> refetched_{0}, damaged_{0};
  // The whole-object entries LocalCopy handed out, held while this lives.
  std::mutex held_mu_;
  std::map<std::string, common::UniqueFd> held_;
};

// The datasets' URL prefix: `url` ending in '/', or the folder of its
// manifest.json.
std::string PrefixOf(std::string_view url);

// CacheOptionsFromEnvironment() with `dir` (when not empty) and `bytes`
// (when >= 0) in place of its own: what ReaderOptions' and RecordReaderOptions'
// cache_dir and cache_bytes mean. The environment is read only when
// `remote_path` (a path is a URL), so that a bad variable never fails a
// local dataset. A cache folder that looks like a URL ("s3://...") is an
// InvalidArgumentError: it would be made as a local folder "s3:".
absl::StatusOr<CacheOptions> CacheOptionsWith(const std::string& dir, int64_t bytes,
                                              bool remote_path);

}  // namespace shardpack::remote

#endif  // SHARDPACK_REMOTE_REMOTE_DATASET_H_
