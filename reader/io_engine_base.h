// What the I/O engines share (reader/io_engine.cc: pread, O_DIRECT, mmap;
// reader/uring_engine.cc: io_uring): request checks, the files, and the
// openers each engine calls. Internal to the engines.
#ifndef SHARDPACK_READER_IO_ENGINE_BASE_H_
#define SHARDPACK_READER_IO_ENGINE_BASE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/coding.h"
#include "common/posix_io.h"
#include "common/unique_fd.h"
#include "reader/io_engine.h"

namespace shardpack::reader {

inline uint64_t AlignToIo(uint64_t n) { return common::AlignUp(n, kIoAlignment); }
inline bool IsAligned(uint64_t n) { return n % kIoAlignment == 0; }
inline bool IsAligned(const void* p) { return IsAligned(reinterpret_cast<uintptr_t>(p)); }

// O_DIRECT needs aligned offsets and buffers: InvalidArgumentError otherwise.
absl::Status CheckDirectRequest(const std::string& name, const IoRequest& r);

using PosixFiles = std::vector<std::unique_ptr<common::PosixFile>>;

// Opens every path (buffered); with `sequential`, advises sequential reads.
absl::StatusOr<PosixFiles> OpenPosixFiles(const std::vector<std::string>& paths, bool sequential);

// An O_DIRECT descriptor per file; UnavailableError where the filesystem
// refuses O_DIRECT (at open or at the first read).
absl::StatusOr<std::vector<common::UniqueFd>> OpenDirectFds(const PosixFiles& files);

// A dataset in an object store (reader/remote_engine.cc): every path a URL.
absl::StatusOr<std::unique_ptr<BlockIo>> OpenRemote(const std::vector<std::string>& paths,
                                                    remote::Storage* storage);

// The synchronous pread (or, with `direct`, O_DIRECT) engine.
absl::StatusOr<std::unique_ptr<BlockIo>> OpenSync(const std::vector<std::string>& paths,
                                                  bool direct);

// io_uring, and kDirect (O_DIRECT through io_uring, else OpenSync(direct)):
// reader/uring_engine.cc, built with or without liburing.
absl::StatusOr<std::unique_ptr<BlockIo>> OpenUring(const std::vector<std::string>& paths);
absl::StatusOr<std::unique_ptr<BlockIo>> OpenDirect(const std::vector<std::string>& paths);

// What every engine shares: the files, request checks and the byte count.
class EngineBase : public BlockIo {
 public:
  uint64_t bytes_read() const override { return bytes_read_; }
  const RandomAccessFile& file(size_t i) const override { return *files_[i]; }

 protected:
  // Misuse, reported by Submit(). `outstanding` reads are already queued.
  absl::Status CheckRequest(const IoRequest& r, size_t outstanding) const;
  // Damage (the index points past the file), reported by Wait().
  absl::Status CheckRange(const IoRequest& r) const;
  IoCompletion Complete(const IoRequest& r, absl::Status status, const uint8_t* bytes);

  std::vector<std::unique_ptr<RandomAccessFile>> files_;
  uint64_t bytes_read_ = 0;
};

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_IO_ENGINE_BASE_H_
