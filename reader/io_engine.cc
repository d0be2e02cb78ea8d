// The I/O engines behind BlockIo: pread, O_DIRECT and mmap (io_uring is in
// reader/uring_engine.cc).
//
// Every engine follows one rule about errors: Submit() fails only for misuse
// (too many reads in flight, a file index out of range, a null or misaligned
// buffer, a misaligned O_DIRECT offset) and then queues nothing. Anything
// about the data itself (a range past the end of the file, a file that shrank,
// an I/O error) comes out of Wait() with that request's completion, in
// submission order, and the engine stays usable for the next read.
#include "reader/io_engine.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/errors.h"
#include "common/os.h"
#include "common/posix_io.h"
#include "common/posix_open.h"
#include "common/status_macros.h"
#include "common/unique_fd.h"
#include "reader/io_engine_base.h"
#include "remote/object_store.h"

namespace shardpack::reader {
namespace {

// pread and mmap queue a few reads so that WILLNEED advice runs ahead of the
// reads themselves; O_DIRECT bypasses the page cache, so queueing buys nothing.
constexpr size_t kPreadInFlight = 4;
constexpr size_t kMmapInFlight = 4;
constexpr size_t kDirectInFlight = 1;

// An O_DIRECT read of `length` bytes: offset and buffer aligned, the length
// rounded up to kIoAlignment (the buffer's capacity, by contract). Only the
// last read of a file may come back short, and only the rounding may be missing.
absl::Status PreadDirect(int fd, const std::string& name, uint64_t offset, uint32_t length,
                         uint8_t* buffer) {
  const uint64_t want = AlignToIo(length);
  uint64_t done = 0;
  while (done < length) {
    SP_ASSIGN_OR_RETURN(size_t n,
                        common::PreadSome(fd, name, offset + done, {buffer + done, want - done}));
    if (n == 0) break;
    done += n;
    // O_DIRECT cannot continue from an unaligned offset: this was end of file.
    if (!IsAligned(done)) break;
  }
  if (done < length) return common::ShortReadAt(name, offset + done, length - done);
  return absl::OkStatus();
}

// Engines that do their work in Wait(): Submit checks the request, gives
// the engine's hint and queues it; Wait takes the oldest, checks its range
// and has the engine read it.
class QueuedEngine : public EngineBase {
 public:
  absl::Status Submit(const IoRequest& r) final {
    SP_RETURN_IF_ERROR(CheckRequest(r, queue_.size()));
    SP_RETURN_IF_ERROR(Prepare(r));
    queue_.push_back(r);
    return absl::OkStatus();
  }

  IoCompletion Wait() final {
    SP_CHECK(!queue_.empty());
    IoRequest r = queue_.front();
    queue_.pop_front();
    absl::Status status = CheckRange(r);
    const uint8_t* bytes = nullptr;
    if (status.ok() && r.length > 0) status = Read(r, &bytes);
    return Complete(r, std::move(status), bytes);
  }

 protected:
  // At Submit, for a well-formed request: misuse checks or read-ahead hints.
  virtual absl::Status Prepare(const IoRequest& r) = 0;
  // At Wait, for a non-empty request within its file: sets *bytes to where
  // the request's bytes are.
  virtual absl::Status Read(const IoRequest& r, const uint8_t** bytes) = 0;

 private:
  std::deque<IoRequest> queue_;
};

// pread (with fadvise) and O_DIRECT: advice at Submit, the read at Wait, in
// submission order. The advice reads a block into 4 KiB pages of the page
// cache, several blocks in flight. Faulting blocks in through a huge-page
// mapping instead leaves the cache in 2 MiB folios, which later runs map
// faster (raw streaming 0.95x memcpy against 0.65x), but each fresh 2 MiB
// folio of a VM that reports its free memory to the host faults in the host
// again: 3.5x slower cold epochs after memory rested (docs/benchmarks.md,
// "Raw streaming on one core").
class SyncIo final : public QueuedEngine {
 public:
  SyncIo(PosixFiles files, std::vector<common::UniqueFd> direct_fds, bool direct)
      : direct_(direct), direct_fds_(std::move(direct_fds)) {
    for (auto& f : files) {
      fds_.push_back(f->fd());
      files_.push_back(std::move(f));
    }
  }

  IoEngine engine() const override { return direct_ ? IoEngine::kDirect : IoEngine::kPread; }
  size_t max_in_flight() const override { return direct_ ? kDirectInFlight : kPreadInFlight; }
  bool zero_copy() const override { return false; }

 private:
  absl::Status Prepare(const IoRequest& r) override {
    if (direct_) return CheckDirectRequest(files_[r.file]->name(), r);
    if (r.length > 0 && CheckRange(r).ok()) {
      // Starts readahead of the whole block now, so that Wait() mostly copies
      // from the page cache.
      common::AdviseFile(fds_[r.file], r.offset, r.length, common::FileAdvice::kWillNeed);
    }
    return absl::OkStatus();
  }

  absl::Status Read(const IoRequest& r, const uint8_t** bytes) override {
    const std::string& name = files_[r.file]->name();
    *bytes = r.buffer;
    return direct_ ? PreadDirect(direct_fds_[r.file].get(), name, r.offset, r.length, r.buffer)
                   : common::PreadFull(fds_[r.file], name, r.offset, {r.buffer, r.length});
  }

  bool direct_;
  std::vector<int> fds_;  // borrowed from files_
  std::vector<common::UniqueFd> direct_fds_;
};

absl::Status DirectUnsupported(const std::string& path) {
  return absl::UnavailableError(
      absl::StrCat(path, ": O_DIRECT is not supported on this filesystem"));
}

// Some filesystems accept O_DIRECT at open and refuse the reads; one aligned
// read at offset 0 tells, so that the caller can fall back at open time.
absl::Status ProbeDirect(int fd, const std::string& path) {
  void* raw = nullptr;
  if (posix_memalign(&raw, kIoAlignment, kIoAlignment) != 0) {
    return absl::ResourceExhaustedError("out of memory for an O_DIRECT probe buffer");
  }
  std::unique_ptr<void, decltype(&free)> buffer(raw, &free);
  const ssize_t n = common::PreadRetrying(fd, raw, kIoAlignment, 0);
  if (n < 0 && errno == EINVAL) return DirectUnsupported(path);
  if (n < 0) return common::ReadErrorAt(path, 0, errno);
  return absl::OkStatus();
}

// Each file mapped; Wait() hands out views of the mapping.
class MmapIo final : public QueuedEngine {
 public:
  explicit MmapIo(std::vector<std::unique_ptr<RandomAccessFile>> files) {
    files_ = std::move(files);
  }

  IoEngine engine() const override { return IoEngine::kMmap; }
  size_t max_in_flight() const override { return kMmapInFlight; }
  bool zero_copy() const override { return true; }
  // Pages at the ends shared with a neighbouring block still in use go too:
  // file pages, read again from the page cache on the next touch.
  void Release(uint32_t file, uint64_t offset, uint64_t length) override {
    if (file >= files_.size() || offset > files_[file]->size() ||
        length > files_[file]->size() - offset) {
      return;
    }
    common::AdviseMemory(files_[file]->data() + offset, length, common::MemoryAdvice::kDontNeed);
  }

 private:
  // Faults the range in ahead of use (a no-op for pages already resident,
  // as on tmpfs).
  absl::Status Prepare(const IoRequest& r) override {
    if (r.length == 0 || !CheckRange(r).ok()) return absl::OkStatus();
    common::AdviseMemory(files_[r.file]->data() + r.offset, r.length,
                         common::MemoryAdvice::kWillNeed);
    return absl::OkStatus();
  }

  absl::Status Read(const IoRequest& r, const uint8_t** bytes) override {
    *bytes = files_[r.file]->data() + r.offset;
    return absl::OkStatus();
  }
};

absl::StatusOr<std::unique_ptr<BlockIo>> OpenMmap(const std::vector<std::string>& paths) {
  std::vector<std::unique_ptr<RandomAccessFile>> files;
  for (const std::string& path : paths) {
    SP_ASSIGN_OR_RETURN(auto file, OpenMappedFile(path));
    files.push_back(std::move(file));
  }
  return std::make_unique<MmapIo>(std::move(files));
}

// kAuto. Files already in memory are mapped, so that a read is no copy:
// those on tmpfs and ramfs, and a dataset that is at least 90% in the page
// cache (asked only where it could be: at most half the machine's memory).
// A dataset larger than the reader's window is read again every epoch, and
// copying it out of the page cache each time was the largest cost of a
// stream (docs/benchmarks.md, "Why the 32 MiB window streams at half the
// rate": 1.4 to 1.7x mapped). One the window holds is read once, into
// buffers on 2 MiB pages that the kernel zeroes on first touch, at a rate
// that swings with the host; it is mapped where the page cache maps it in
// 2 MiB pages too (the same TLB reach, nothing to copy or zero: raw
// streaming at 0.84x memcpy against 0.33 to 0.73x), and read where it holds
// 4 KiB pages, on which shuffled records cost 3 to 8% of the steady rate
// (docs/benchmarks.md, "Raw streaming on one core"). A dataset not in
// memory is read with pread, which does not fault page by page on a device.
absl::StatusOr<IoEngine> PickEngine(const std::vector<std::string>& paths, uint64_t window_bytes) {
  if (paths.empty()) return IoEngine::kPread;
  SP_ASSIGN_OR_RETURN(bool in_memory, common::IsMemoryFileSystem(paths[0]));
  if (in_memory) return IoEngine::kMmap;
  uint64_t total = 0, resident = 0;
  for (const std::string& path : paths) {
    SP_ASSIGN_OR_RETURN(common::FileStatus st, common::Stat(path));
    total += st.size;
  }
  if (total > common::PhysicalMemoryBytes() / 2) return IoEngine::kPread;
  for (const std::string& path : paths) {
    SP_ASSIGN_OR_RETURN(uint64_t bytes, common::ResidentBytes(path));
    resident += bytes;
  }
  if (resident < total / 10 * 9) return IoEngine::kPread;
  if (total > window_bytes) return IoEngine::kMmap;
  SP_ASSIGN_OR_RETURN(bool huge, common::PageCacheMapsHugePages(paths[0]));
  return huge ? IoEngine::kMmap : IoEngine::kPread;
}

}  // namespace

absl::Status CheckDirectRequest(const std::string& name, const IoRequest& r) {
  if (!IsAligned(r.offset)) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, " @", r.offset, ": O_DIRECT offset is not a multiple of ", kIoAlignment));
  }
  if (!IsAligned(r.buffer)) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, " @", r.offset, ": O_DIRECT buffer is not ", kIoAlignment, "-aligned"));
  }
  return absl::OkStatus();
}

absl::Status EngineBase::CheckRequest(const IoRequest& r, size_t outstanding) const {
  if (outstanding >= max_in_flight()) {
    return absl::FailedPreconditionError(absl::StrCat("BlockIo::Submit: ", outstanding,
                                                      " reads already in flight (the most is ",
                                                      max_in_flight(), ")"));
  }
  if (r.file >= files_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("BlockIo::Submit: no file ", r.file, " (", files_.size(), " files open)"));
  }
  if (!zero_copy() && r.length > 0 && r.buffer == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(files_[r.file]->name(), " @", r.offset, ": read into a null buffer"));
  }
  return absl::OkStatus();
}

absl::Status EngineBase::CheckRange(const IoRequest& r) const {
  const RandomAccessFile& f = *files_[r.file];
  if (r.offset > f.size() || r.length > f.size() - r.offset) {
    return common::ReadPastEndAt(f.name(), r.offset, r.length, f.size());
  }
  return absl::OkStatus();
}

IoCompletion EngineBase::Complete(const IoRequest& r, absl::Status status, const uint8_t* bytes) {
  IoCompletion c{r.tag, std::move(status), {}};
  if (c.status.ok() && r.length > 0) {
    c.bytes = {bytes, r.length};
    bytes_read_ += r.length;
  }
  return c;
}

absl::StatusOr<PosixFiles> OpenPosixFiles(const std::vector<std::string>& paths,
                                          bool sequential) {
  PosixFiles files;
  for (const std::string& path : paths) {
    SP_ASSIGN_OR_RETURN(auto file, common::PosixFile::Open(path));
    // Doubles the kernel's readahead window; advice only, so errors are moot.
    if (sequential) common::AdviseFile(file->fd(), 0, 0, common::FileAdvice::kSequential);
    files.push_back(std::move(file));
  }
  return files;
}

absl::StatusOr<std::vector<common::UniqueFd>> OpenDirectFds(const PosixFiles& files) {
  std::vector<common::UniqueFd> fds;
  for (const auto& file : files) {
    const std::string& path = file->name();
    // The file is known to be regular (OpenPosixFiles checked it).
    uint64_t size = 0;
    SP_ASSIGN_OR_RETURN(const int raw, common::OpenRegularFile(path, O_DIRECT, &size));
    common::UniqueFd fd(raw);
    if (fds.empty()) SP_RETURN_IF_ERROR(ProbeDirect(fd.get(), path));
    fds.push_back(std::move(fd));
  }
  return fds;
}

absl::StatusOr<std::unique_ptr<BlockIo>> OpenSync(const std::vector<std::string>& paths,
                                                  bool direct) {
  // The buffered descriptor serves file(i); O_DIRECT reads bypass its cache.
  SP_ASSIGN_OR_RETURN(PosixFiles files, OpenPosixFiles(paths, !direct));
  std::vector<common::UniqueFd> direct_fds;
  if (direct) {
    SP_ASSIGN_OR_RETURN(direct_fds, OpenDirectFds(files));
  }
  return std::make_unique<SyncIo>(std::move(files), std::move(direct_fds), direct);
}

absl::StatusOr<std::unique_ptr<BlockIo>> BlockIo::Open(IoEngine engine,
                                                       const std::vector<std::string>& paths,
                                                       remote::Storage* storage,
                                                       uint64_t window_bytes) {
  // A dataset in an object store is read through its cache, whatever the
  // engine asked for.
  if (!paths.empty() && remote::IsUrl(paths[0])) return OpenRemote(paths, storage);
  if (engine == IoEngine::kAuto) {
    SP_ASSIGN_OR_RETURN(engine, PickEngine(paths, window_bytes));
  }
  switch (engine) {
    case IoEngine::kPread:
      return OpenSync(paths, /*direct=*/false);
    case IoEngine::kDirect:
      return OpenDirect(paths);
    case IoEngine::kMmap:
      return OpenMmap(paths);
    case IoEngine::kUring:
      return OpenUring(paths);
    case IoEngine::kRemote:
      return OpenRemote(paths, storage);
    case IoEngine::kAuto:
      break;
  }
  return absl::InvalidArgumentError("BlockIo::Open: unknown I/O engine");
}

}  // namespace shardpack::reader
