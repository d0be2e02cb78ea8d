// I/O engines: how the reader gets a block's bytes from storage.
//
// The loader submits whole-block reads (never a record at a time) and takes
// completions in submission order. pread and O_DIRECT read into buffers the
// caller owns (4096-aligned, capacity rounded up to 4096); mmap hands back a
// view of the mapping and ignores the buffer; io_uring keeps several reads in
// flight. All engines read the same bytes; they differ in cost.
#ifndef SHARDPACK_READER_IO_ENGINE_H_
#define SHARDPACK_READER_IO_ENGINE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shardpack/file.h"
#include "shardpack/reader.h"

namespace shardpack::remote {
class Storage;
}  // namespace shardpack::remote

namespace shardpack::reader {

// Alignment of read buffers and O_DIRECT offsets and lengths.
inline constexpr size_t kIoAlignment = 4096;

struct IoRequest {
  uint32_t file = 0;      // index into the paths the engine was opened with
  uint64_t offset = 0;    // multiple of kIoAlignment for kDirect
  uint32_t length = 0;    // bytes wanted
  uint8_t* buffer = nullptr;  // kIoAlignment-aligned, capacity >= AlignToIo(length)
  uint64_t tag = 0;       // returned with the completion
};

struct IoCompletion {
  uint64_t tag = 0;
  absl::Status status;            // an error names the file and offset
  std::span<const uint8_t> bytes;  // `length` bytes: in the buffer, or the mapping
  // The engine checked the bytes already: each block in them against the
  // shard's index (the remote engine checks every block it fetches or takes
  // from its cache), so the decoder need not check its payload CRC again.
  bool checked = false;
};

// Not thread-safe: one loader thread submits and waits.
class BlockIo {
 public:
  virtual ~BlockIo() = default;

  // Opens every path. kAuto picks kMmap when the first file is on tmpfs or
  // ramfs, or when at least 90% of the files is in the page cache and either
  // they are larger than `window_bytes` (what the reader holds: every epoch
  // reads them again, and a copy would be pure cost) or the page cache maps
  // them in 2 MiB pages, as the reader's buffers are (no copy, no fresh pages
  // to zero); else kPread.
  // kUring without liburing support, or where the kernel refuses io_uring,
  // is an UnavailableError saying so. URLs (objects of datasets `storage`
  // opened) are read through `storage`'s cache by the remote engine,
  // whatever `engine` says; with no storage, a URL is not found.
  static absl::StatusOr<std::unique_ptr<BlockIo>> Open(IoEngine engine,
                                                       const std::vector<std::string>& paths,
                                                       remote::Storage* storage = nullptr,
                                                       uint64_t window_bytes = UINT64_MAX);

  // The engine actually in use (never kAuto).
  virtual IoEngine engine() const = 0;
  // Reads that may be outstanding at once (1 for synchronous engines).
  virtual size_t max_in_flight() const = 0;
  // Queues a read. Precondition: fewer than max_in_flight() outstanding.
  virtual absl::Status Submit(const IoRequest& request) = 0;
  // The oldest outstanding read, once complete. Precondition: one is
  // outstanding.
  virtual IoCompletion Wait() = 0;
  // Bytes read from storage so far (mmap: bytes handed out).
  virtual uint64_t bytes_read() const = 0;
  // Random access to file i (for loading shard indexes at open).
  virtual const RandomAccessFile& file(size_t i) const = 0;
  // Whether Wait() returns views into memory that stays valid for the
  // engine's life (mmap), so buffers need not be allocated.
  virtual bool zero_copy() const = 0;
  // The loader no longer holds `length` bytes at `offset` of file `file`:
  // a mapping lets their pages go from the process (they stay in the page
  // cache, and a later read maps them again), so that what a reader maps
  // stays within its window. A view of them must not be used after this.
  virtual void Release(uint32_t /*file*/, uint64_t /*offset*/, uint64_t /*length*/) {}
};

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_IO_ENGINE_H_
