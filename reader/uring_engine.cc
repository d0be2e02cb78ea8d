// The io_uring engine (kUring), and kDirect's O_DIRECT reads through it.
// Built only with liburing (SHARDPACK_HAVE_URING); without it kUring is an
// UnavailableError and kDirect is the synchronous O_DIRECT engine.
#include <errno.h>

#include <array>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/errors.h"
#include "common/posix_io.h"
#include "common/status_macros.h"
#include "reader/io_engine_base.h"
#include "shardpack/file.h"

#ifdef SHARDPACK_HAVE_URING
#include <liburing.h>
#endif

namespace shardpack::reader {

#ifdef SHARDPACK_HAVE_URING
namespace {

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
  explicit UringIo(PosixFiles files, std::vector<common::UniqueFd> direct_fds = {})
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
    return direct_fds_.empty() ? r.length : static_cast<uint32_t>(AlignToIo(r.length));
  }

  std::vector<common::UniqueFd> direct_fds_;
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
    absl::Status coded = common::ErrnoError("io_uring_submit", name, -rc);
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
    Fail(SlotOf(head_), common::ReadErrorAt(files_[r.file]->name(), r.offset, -rc));
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
    Fail(s, common::ShortReadAt(name, r.offset + s.done, r.length - s.done));
    return;
  } else if (res != -EINTR && res != -EAGAIN) {
    Fail(s, common::ReadErrorAt(name, r.offset + s.done, -res));
    return;
  }
  // A short read, or one to retry: submit the rest.
  absl::Status queued = Queue(s);
  if (!queued.ok()) Fail(s, std::move(queued));
}

IoCompletion UringIo::Wait() {
  SP_CHECK(head_ < tail_);  // else Reap() would wait forever
  Slot& s = SlotOf(head_);
  while (!s.complete) Reap();
  ++head_;
  return Complete(s.request, std::move(s.status), s.request.buffer);
}

}  // namespace

absl::StatusOr<std::unique_ptr<BlockIo>> OpenUring(const std::vector<std::string>& paths) {
  SP_ASSIGN_OR_RETURN(PosixFiles files, OpenPosixFiles(paths, /*sequential=*/true));
  auto io = std::make_unique<UringIo>(std::move(files));
  SP_RETURN_IF_ERROR(io->Init());
  return io;
}

// kDirect: O_DIRECT reads through io_uring, several in flight; where
// io_uring is refused, the synchronous O_DIRECT engine.
absl::StatusOr<std::unique_ptr<BlockIo>> OpenDirect(const std::vector<std::string>& paths) {
  SP_ASSIGN_OR_RETURN(PosixFiles files, OpenPosixFiles(paths, /*sequential=*/false));
  SP_ASSIGN_OR_RETURN(std::vector<common::UniqueFd> direct_fds, OpenDirectFds(files));
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

}  // namespace shardpack::reader
