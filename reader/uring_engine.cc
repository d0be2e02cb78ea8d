// The I/O engines behind BlockIo: pread, O_DIRECT, mmap and io_uring.
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
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"
#include "format/errors.h"
#include "format/posix_open.h"
#include "format/unique_fd.h"
#include "shardpack/status.h"

#ifdef SHARDPACK_HAVE_URING
#include <liburing.h>
#endif

namespace shardpack::internal {
namespace {

// pread and mmap queue a few reads so that WILLNEED advice runs ahead of the
// reads themselves; O_DIRECT bypasses the page cache, so queueing buys nothing.
constexpr size_t kPreadInFlight = 4;
constexpr size_t kMmapInFlight = 4;
constexpr size_t kDirectInFlight = 1;

uint64_t AlignUp(uint64_t n) { return (n + kIoAlignment - 1) / kIoAlignment * kIoAlignment; }

bool IsAligned(uint64_t n) { return n % kIoAlignment == 0; }

bool IsAligned(const void* p) { return IsAligned(reinterpret_cast<uintptr_t>(p)); }

// "<name> @<offset>: read failed: <reason>", with a code matching errno.
absl::Status ReadErrorAt(const std::string& name, uint64_t offset, int err) {
  absl::Status coded = ErrnoError("read", name, err);
  return absl::Status(coded.code(),
                      absl::StrCat(name, " @", offset, ": read failed: ", strerror(err)));
}

absl::Status PastEnd(const std::string& name, uint64_t offset, uint64_t length, uint64_t size) {
  return DataLossAt(
      name, offset,
      absl::StrCat("read of ", length, " bytes past the end of the file (", size, " bytes)"));
}

absl::Status ShortRead(const std::string& name, uint64_t offset, uint64_t missing) {
  return DataLossAt(
      name, offset,
      absl::StrCat("file ended ", missing, " bytes early (did it shrink after it was opened?)"));
}

// Reads dst.size() bytes at `offset`, retrying short reads and EINTR.
absl::Status PreadFully(int fd, const std::string& name, uint64_t offset, std::span<uint8_t> dst) {
  size_t done = 0;
  while (done < dst.size()) {
    ssize_t n = pread(fd, dst.data() + done, dst.size() - done, offset + done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ReadErrorAt(name, offset + done, errno);
    if (n == 0) return ShortRead(name, offset + done, dst.size() - done);
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

// An O_DIRECT read of `length` bytes: offset and buffer aligned, the length
// rounded up to kIoAlignment (the buffer's capacity, by contract). Only the
// last read of a file may come back short, and only the rounding may be missing.
absl::Status PreadDirect(int fd, const std::string& name, uint64_t offset, uint32_t length,
                         uint8_t* buffer) {
  const uint64_t want = AlignUp(length);
  uint64_t done = 0;
  while (done < length) {
    ssize_t n = pread(fd, buffer + done, want - done, offset + done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ReadErrorAt(name, offset + done, errno);
    if (n == 0) break;
    done += static_cast<uint64_t>(n);
    // O_DIRECT cannot continue from an unaligned offset: this was end of file.
    if (!IsAligned(done)) break;
  }
  if (done < length) return ShortRead(name, offset + done, length - done);
  return absl::OkStatus();
}


// A RandomAccessFile over a descriptor we also use for block reads, so that a
// path is opened once.
class DescriptorFile : public RandomAccessFile {
 public:
  DescriptorFile(std::string name, UniqueFd fd, uint64_t size)
      : name_(std::move(name)), fd_(std::move(fd)), size_(size) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }
  int fd() const { return fd_.get(); }
  absl::Status ReadExact(uint64_t offset, std::span<uint8_t> dst) const override {
    if (offset > size_ || dst.size() > size_ - offset) {
      return PastEnd(name_, offset, dst.size(), size_);
    }
    return PreadFully(fd_.get(), name_, offset, dst);
  }

 private:
  std::string name_;
  UniqueFd fd_;
  uint64_t size_;
};

absl::StatusOr<std::unique_ptr<DescriptorFile>> OpenDescriptorFile(const std::string& path) {
  uint64_t size;
  SP_ASSIGN_OR_RETURN(int fd, OpenRegularFile(path, 0, &size));
  return std::make_unique<DescriptorFile>(path, UniqueFd(fd), size);
}

using DescriptorFiles = std::vector<std::unique_ptr<DescriptorFile>>;

absl::StatusOr<DescriptorFiles> OpenDescriptorFiles(const std::vector<std::string>& paths,
                                                    bool sequential) {
  DescriptorFiles files;
  for (const std::string& path : paths) {
    SP_ASSIGN_OR_RETURN(auto file, OpenDescriptorFile(path));
    // Doubles the kernel's readahead window; advice only, so errors are moot.
    if (sequential) posix_fadvise(file->fd(), 0, 0, POSIX_FADV_SEQUENTIAL);
    files.push_back(std::move(file));
  }
  return files;
}

// What every engine shares: the files, request checks and the byte count.
// O_DIRECT needs aligned offsets and buffers.
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

class EngineBase : public BlockIo {
 public:
  uint64_t bytes_read() const override { return bytes_read_; }
  const RandomAccessFile& file(size_t i) const override { return *files_[i]; }

 protected:
  // Misuse, reported by Submit(). `outstanding` reads are already queued.
  absl::Status CheckRequest(const IoRequest& r, size_t outstanding) const {
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

  // Damage (the index points past the file), reported by Wait().
  absl::Status CheckRange(const IoRequest& r) const {
    const RandomAccessFile& f = *files_[r.file];
    if (r.offset > f.size() || r.length > f.size() - r.offset) {
      return PastEnd(f.name(), r.offset, r.length, f.size());
    }
    return absl::OkStatus();
  }

  IoCompletion Complete(const IoRequest& r, absl::Status status, const uint8_t* bytes) {
    IoCompletion c{r.tag, std::move(status), {}};
    if (c.status.ok() && r.length > 0) {
      c.bytes = {bytes, r.length};
      bytes_read_ += r.length;
    }
    return c;
  }

  std::vector<std::unique_ptr<RandomAccessFile>> files_;
  uint64_t bytes_read_ = 0;
};

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
// submission order.
class SyncIo final : public QueuedEngine {
 public:
  SyncIo(DescriptorFiles files, std::vector<UniqueFd> direct_fds, bool direct)
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
      posix_fadvise(fds_[r.file], static_cast<off_t>(r.offset), r.length, POSIX_FADV_WILLNEED);
    }
    return absl::OkStatus();
  }

  absl::Status Read(const IoRequest& r, const uint8_t** bytes) override {
    const std::string& name = files_[r.file]->name();
    *bytes = r.buffer;
    return direct_ ? PreadDirect(direct_fds_[r.file].get(), name, r.offset, r.length, r.buffer)
                   : PreadFully(fds_[r.file], name, r.offset, {r.buffer, r.length});
  }

  bool direct_;
  std::vector<int> fds_;  // borrowed from files_
  std::vector<UniqueFd> direct_fds_;
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
  ssize_t n;
  do {
    n = pread(fd, raw, kIoAlignment, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EINVAL) return DirectUnsupported(path);
  if (n < 0) return ReadErrorAt(path, 0, errno);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<UniqueFd>> OpenDirectFds(const DescriptorFiles& files) {
  std::vector<UniqueFd> fds;
  for (const auto& file : files) {
    const std::string& path = file->name();
    // The file is known to be regular (OpenDescriptorFiles checked it).
    UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT));
    if (fd.get() < 0 && errno == EINVAL) return DirectUnsupported(path);
    if (fd.get() < 0) return ErrnoError("open (O_DIRECT)", path, errno);
    if (fds.empty()) SP_RETURN_IF_ERROR(ProbeDirect(fd.get(), path));
    fds.push_back(std::move(fd));
  }
  return fds;
}

absl::StatusOr<std::unique_ptr<BlockIo>> OpenSync(const std::vector<std::string>& paths,
                                                  bool direct) {
  // The buffered descriptor serves file(i); O_DIRECT reads bypass its cache.
  SP_ASSIGN_OR_RETURN(DescriptorFiles files, OpenDescriptorFiles(paths, !direct));
  std::vector<UniqueFd> direct_fds;
  if (direct) {
    SP_ASSIGN_OR_RETURN(direct_fds, OpenDirectFds(files));
  }
  return std::make_unique<SyncIo>(std::move(files), std::move(direct_fds), direct);
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

 private:
  // Faults the range in ahead of use (a no-op for pages already resident,
  // as on tmpfs). madvise wants a page-aligned start.
  absl::Status Prepare(const IoRequest& r) override {
    if (r.length == 0 || !CheckRange(r).ok()) return absl::OkStatus();
    static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    uint64_t begin = r.offset / page * page;
    auto* base = const_cast<uint8_t*>(files_[r.file]->data());
    madvise(base + begin, r.offset + r.length - begin, MADV_WILLNEED);
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

#ifdef SHARDPACK_HAVE_URING

// io_uring submission queue depth: enough to keep an NVMe queue busy with
// multi-MiB block reads without pinning many buffers.
constexpr unsigned kUringDepth = 16;

// io_uring: up to kUringDepth reads in flight. Completions may arrive in any
// order; each request has a slot in a ring indexed by its submission number,
// and Wait() returns the oldest slot once it is complete.
class UringIo final : public EngineBase {
 public:
  // With `direct_fds`, reads go through those O_DIRECT descriptors (the
  // kDirect engine with several reads in flight); file(i) stays buffered.
  explicit UringIo(DescriptorFiles files, std::vector<UniqueFd> direct_fds = {})
      : direct_fds_(std::move(direct_fds)) {
    for (size_t i = 0; i < files.size(); ++i) {
      fds_.push_back(direct_fds_.empty() ? files[i]->fd() : direct_fds_[i].get());
      files_.push_back(std::move(files[i]));
    }
  }
  ~UringIo() override;

  absl::Status Init();
  IoEngine engine() const override {
    return direct_fds_.empty() ? IoEngine::kUring : IoEngine::kDirect;
  }
  size_t max_in_flight() const override { return kUringDepth; }
  bool zero_copy() const override { return false; }
  absl::Status Submit(const IoRequest& r) override;
  IoCompletion Wait() override;

 private:
  struct Slot {
    IoRequest request;
    uint64_t seq = 0;       // submission number, the SQE's user_data
    uint32_t done = 0;      // bytes arrived so far
    bool complete = false;  // `status` is final
    absl::Status status;
  };

  Slot& SlotOf(uint64_t seq) { return slots_[seq % kUringDepth]; }
  static void Fail(Slot& s, absl::Status status) {
    s.status = std::move(status);
    s.complete = true;
  }
  absl::Status Queue(const Slot& s);
  void Reap();
  void Apply(uint64_t seq, int res);

  // Bytes to ask for: O_DIRECT reads whole aligned blocks (the buffer has
  // room; at the end of the file fewer arrive, and `length` is enough).
  uint32_t Wanted(const IoRequest& r) const {
    return direct_fds_.empty() ? r.length
                               : static_cast<uint32_t>(AlignUp(r.length));
  }

  std::vector<UniqueFd> direct_fds_;
  io_uring ring_{};
  bool ring_ready_ = false;
  std::vector<int> fds_;  // borrowed from files_ or direct_fds_
  std::array<Slot, kUringDepth> slots_;
  uint64_t head_ = 0;     // submission number of the oldest outstanding read
  uint64_t tail_ = 0;     // submission number of the next read
  size_t in_kernel_ = 0;  // SQEs submitted whose CQE is not yet reaped
};

absl::Status UringIo::Init() {
  unsigned flags = 0;
#ifdef IORING_SETUP_COOP_TASKRUN
  // Completions are only needed when we ask for them: skip the IPIs.
  flags |= IORING_SETUP_COOP_TASKRUN;
#endif
  int rc = io_uring_queue_init(kUringDepth, &ring_, flags);
  if (rc == -EINVAL && flags != 0) rc = io_uring_queue_init(kUringDepth, &ring_, 0);  // < 5.19
  if (rc < 0) {
    return absl::UnavailableError(
        absl::StrCat("io_uring is not available here: io_uring_queue_init: ", strerror(-rc)));
  }
  ring_ready_ = true;
  return absl::OkStatus();
}

UringIo::~UringIo() {
  if (!ring_ready_) return;
  // The kernel may still write into callers' buffers: reap every read first.
  while (in_kernel_ > 0) {
    io_uring_cqe* cqe = nullptr;
    int rc = io_uring_wait_cqe(&ring_, &cqe);
    if (rc == -EINTR) continue;
    if (rc < 0) break;
    io_uring_cqe_seen(&ring_, cqe);
    --in_kernel_;
  }
  io_uring_queue_exit(&ring_);
}

// Submits the part of s's read that has not arrived yet.
absl::Status UringIo::Queue(const Slot& s) {
  const IoRequest& r = s.request;
  const std::string& name = files_[r.file]->name();
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) {  // cannot happen: one SQE per slot at a time
    return absl::InternalError(absl::StrCat(name, " @", r.offset, ": io_uring queue full"));
  }
  io_uring_prep_read(sqe, fds_[r.file], r.buffer + s.done, Wanted(r) - s.done, r.offset + s.done);
  io_uring_sqe_set_data64(sqe, s.seq);
  int rc;
  do {
    rc = io_uring_submit(&ring_);
  } while (rc == -EINTR);
  if (rc < 0) {
    // The SQE stays queued and may go out with a later submit; Apply() then
    // ignores its completion (the slot is already complete or reused).
    absl::Status coded = ErrnoError("io_uring_submit", name, -rc);
    return absl::Status(coded.code(), absl::StrCat(name, " @", r.offset + s.done,
                                                   ": io_uring_submit failed: ", strerror(-rc)));
  }
  in_kernel_ += static_cast<size_t>(rc);
  return absl::OkStatus();
}

absl::Status UringIo::Submit(const IoRequest& r) {
  SP_RETURN_IF_ERROR(CheckRequest(r, tail_ - head_));
  if (!direct_fds_.empty()) SP_RETURN_IF_ERROR(CheckDirectRequest(files_[r.file]->name(), r));
  Slot& s = SlotOf(tail_);
  s.request = r;
  s.seq = tail_++;
  s.done = 0;
  s.status = CheckRange(r);
  s.complete = !s.status.ok() || r.length == 0;
  if (!s.complete) {
    absl::Status queued = Queue(s);
    if (!queued.ok()) Fail(s, std::move(queued));
  }
  return absl::OkStatus();
}

// Waits for one completion and applies it to its slot.
void UringIo::Reap() {
  if (in_kernel_ == 0) {  // cannot happen: an incomplete slot has a read out
    Fail(SlotOf(head_), absl::InternalError("io_uring: waiting with no read in flight"));
    return;
  }
  io_uring_cqe* cqe = nullptr;
  int rc;
  do {
    rc = io_uring_wait_cqe(&ring_, &cqe);
  } while (rc == -EINTR);
  if (rc < 0) {
    const IoRequest& r = SlotOf(head_).request;
    Fail(SlotOf(head_), ReadErrorAt(files_[r.file]->name(), r.offset, -rc));
    return;
  }
  uint64_t seq = io_uring_cqe_get_data64(cqe);
  int res = cqe->res;
  io_uring_cqe_seen(&ring_, cqe);
  --in_kernel_;
  Apply(seq, res);
}

void UringIo::Apply(uint64_t seq, int res) {
  Slot& s = SlotOf(seq);
  if (seq < head_ || seq >= tail_ || s.seq != seq || s.complete) return;  // stale
  const IoRequest& r = s.request;
  const std::string& name = files_[r.file]->name();
  if (res > 0) {
    s.done += static_cast<uint32_t>(res);
    if (s.done >= r.length) {
      s.complete = true;
      return;
    }
  } else if (res == 0) {
    Fail(s, ShortRead(name, r.offset + s.done, r.length - s.done));
    return;
  } else if (res != -EINTR && res != -EAGAIN) {
    Fail(s, ReadErrorAt(name, r.offset + s.done, -res));
    return;
  }
  // A short read, or one to retry: submit the rest.
  absl::Status queued = Queue(s);
  if (!queued.ok()) Fail(s, std::move(queued));
}

IoCompletion UringIo::Wait() {
  Slot& s = SlotOf(head_);
  while (!s.complete) Reap();
  ++head_;
  return Complete(s.request, std::move(s.status), s.request.buffer);
}

absl::StatusOr<std::unique_ptr<BlockIo>> OpenUring(const std::vector<std::string>& paths) {
  SP_ASSIGN_OR_RETURN(DescriptorFiles files, OpenDescriptorFiles(paths, /*sequential=*/true));
  auto io = std::make_unique<UringIo>(std::move(files));
  SP_RETURN_IF_ERROR(io->Init());
  return io;
}

// kDirect: O_DIRECT reads through io_uring, several in flight; where
// io_uring is refused, the synchronous O_DIRECT engine.
absl::StatusOr<std::unique_ptr<BlockIo>> OpenDirect(const std::vector<std::string>& paths) {
  SP_ASSIGN_OR_RETURN(DescriptorFiles files, OpenDescriptorFiles(paths, /*sequential=*/false));
  SP_ASSIGN_OR_RETURN(std::vector<UniqueFd> direct_fds, OpenDirectFds(files));
  auto io = std::make_unique<UringIo>(std::move(files), std::move(direct_fds));
  absl::Status ready = io->Init();
  if (absl::IsUnavailable(ready)) return OpenSync(paths, /*direct=*/true);
  SP_RETURN_IF_ERROR(ready);
  return io;
}

#else  // !SHARDPACK_HAVE_URING

absl::StatusOr<std::unique_ptr<BlockIo>> OpenUring(const std::vector<std::string>&) {
  return absl::UnavailableError("io_uring engine unavailable: built without liburing");
}

absl::StatusOr<std::unique_ptr<BlockIo>> OpenDirect(const std::vector<std::string>& paths) {
  return OpenSync(paths, /*direct=*/true);
}

#endif  // SHARDPACK_HAVE_URING

// kAuto: tmpfs and ramfs are memory already, so map them; otherwise pread.
absl::StatusOr<IoEngine> PickEngine(const std::vector<std::string>& paths) {
  if (paths.empty()) return IoEngine::kPread;
  struct statfs st;
  if (statfs(paths[0].c_str(), &st) != 0) return ErrnoError("statfs", paths[0], errno);
  auto type = static_cast<uint32_t>(st.f_type);
  if (type == uint32_t{TMPFS_MAGIC} || type == uint32_t{RAMFS_MAGIC}) return IoEngine::kMmap;
  return IoEngine::kPread;
}

}  // namespace

absl::StatusOr<std::unique_ptr<BlockIo>> BlockIo::Open(IoEngine engine,
                                                       const std::vector<std::string>& paths) {
  if (engine == IoEngine::kAuto) {
    SP_ASSIGN_OR_RETURN(engine, PickEngine(paths));
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
    case IoEngine::kAuto:
      break;
  }
  return absl::InvalidArgumentError("BlockIo::Open: unknown I/O engine");
}

}  // namespace shardpack::internal
