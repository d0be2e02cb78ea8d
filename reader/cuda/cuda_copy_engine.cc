// The CUDA copy engine: pinned ring slots, device buffers, and a stream of
// the reader's own on which each batch is copied (cuMemcpyHtoDAsync) and
// marked by an event the consumer can wait on. With a finish
// (reader/cuda/finish_kernel.h), batches are copied into two scratch
// buffers in turn and finished on a second stream, so the kernel of one
// batch runs under the copy of the next. A thread of the engine's sleeps on
// each copy's event in turn and reports the completion: a host function on
// the stream would stall the copies behind it for the callback's round trip
// (measured on an H100, docs/benchmarks.md "GPU staging").
//
// Everything goes through the driver API, loaded at run time
// (reader/cuda/driver.h), in the device's primary context: the one the CUDA
// runtime, and so torch, uses, so that buffers, streams and events are
// theirs to use as well.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "reader/cuda/driver.h"
#include "reader/cuda/finish_kernel.h"
#include "reader/staging.h"

namespace shardpack::reader {
namespace {

// Waits for `e`: polls for up to kSpin first, then sleeps in
// cuEventSynchronize (the events are blocking-sync). Waking from that
// sleep took tens of microseconds on the H100 machine, longer than a small
// batch's copy: with CIFAR batches the wake-ups, not the bus, set the pace
// (docs/benchmarks.md, "The reader on 16 cores"). A copy of up to a few MB
// ends within the spin; a longer one costs the spin and then sleeps.
CUresult SyncEvent(const CudaDriver& d, CUevent e) {
  constexpr auto kSpin = std::chrono::microseconds(50);
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (;;) {
    const CUresult q = d.EventQuery(e);
    if (q != kCudaErrorNotReady) return q;
    if (std::chrono::steady_clock::now() >= until) break;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  return d.EventSynchronize(e);
}

void* Address(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

// One issued batch, in issue order: the event after its work, and whom to tell.
struct Completion {
  CUevent event = nullptr;
  CopyEngine::DoneFn done = nullptr;  // null: the completer stops
  void* arg = nullptr;
};

class CudaCopyEngine final : public CopyEngine {
 public:
  CudaCopyEngine(const CudaDriver& d, int device, CUdevice handle, CUcontext context,
                 CUstream consumer)
      : d_(d), device_(device), handle_(handle), context_(context), consumer_(consumer) {}
  ~CudaCopyEngine() override;

  std::string name() const override { return absl::StrCat("cuda:", device_); }
  uint8_t* HostAlloc(size_t bytes) override;
  void HostFree(uint8_t* p) override;
  absl::Status Init(int buffers, size_t in_bytes, size_t out_bytes,
                    const FinishParams& finish) override;
  void* buffer(int b) override { return Address(buffers_[b]); }
  void* event(int b) override { return done_[b]; }
  absl::Status Issue(int b, const uint8_t* src, size_t bytes, int samples, DoneFn done,
                     void* arg) override;
  absl::Status Wait(int b) override;
  void Released(int b) override;

 private:
  // "cuda:0: <what>: CUDA_ERROR_..." for a failed call.
  absl::Status Check(CUresult r, absl::string_view what) const {
    return CudaCheck(d_, r, absl::StrCat(name(), ": ", what));
  }
  absl::Status InitFinish(size_t in_bytes, const FinishParams& finish);
  CUresult LaunchFinish(int samples, CUdeviceptr src, CUdeviceptr dst);
  void CompleterMain();
  void WaitCompleted(uint64_t n);
  void StopCompleter();

  const CudaDriver& d_;
  const int device_;
  const CUdevice handle_;
  const CUcontext context_;  // the device's primary context, retained
  const CUstream consumer_;
  CUstream stream_ = nullptr;         // copies
  CUstream finish_stream_ = nullptr;  // finishes: writes the device buffers
  std::vector<CUdeviceptr> buffers_;
  std::vector<CUevent> done_, release_;
  std::vector<uint8_t> release_recorded_;
  // Completions: a ring of `buffers` entries, entry n % size for issue n.
  // Issue (one thread) writes entries and counts issued_; the completer
  // counts completed_. Wait(b) waits until completed_ passes last_issue_[b].
  std::vector<Completion> queue_;
  std::atomic<uint64_t> issued_{0}, completed_{0};
  std::unique_ptr<std::atomic<uint64_t>[]> last_issue_;  // per buffer: issue number + 1
  std::thread completer_;
  // With a finish: the uint8 batches before it, in turn; `copied_` after a
  // copy into one, `scratch_free_` after the finish that read it.
  CUdeviceptr scratch_[2] = {0, 0};
  CUevent copied_[2] = {nullptr, nullptr}, scratch_free_[2] = {nullptr, nullptr};
  CUmodule module_ = nullptr;
  CUfunction kernel_ = nullptr;
  FinishArgs finish_;
  bool finishing_ = false;
  // Slots cuMemHostAlloc refused (memory limits): plain memory still works,
  // the copies are only slower.
  std::mutex unpinned_mu_;
  std::vector<uint8_t*> unpinned_;
};

CudaCopyEngine::~CudaCopyEngine() {
  {
    CudaContextScope scope(d_, context_);
    if (stream_ != nullptr) d_.StreamSynchronize(stream_);
    if (finish_stream_ != nullptr) d_.StreamSynchronize(finish_stream_);
    StopCompleter();
    for (CUdeviceptr p : buffers_) d_.MemFree(p);
    for (CUevent e : done_) d_.EventDestroy(e);
    for (CUevent e : release_) d_.EventDestroy(e);
    for (const Completion& c : queue_) d_.EventDestroy(c.event);
    for (int s = 0; s < 2; ++s) {
      if (scratch_[s] != 0) d_.MemFree(scratch_[s]);
      if (copied_[s] != nullptr) d_.EventDestroy(copied_[s]);
      if (scratch_free_[s] != nullptr) d_.EventDestroy(scratch_free_[s]);
    }
    if (stream_ != nullptr) d_.StreamDestroy(stream_);
    if (finish_stream_ != nullptr) d_.StreamDestroy(finish_stream_);
    if (module_ != nullptr) d_.ModuleUnload(module_);
  }
  d_.PrimaryCtxRelease(handle_);
}

uint8_t* CudaCopyEngine::HostAlloc(size_t bytes) {
  CudaContextScope scope(d_, context_);
  void* p = nullptr;
  if (d_.MemHostAlloc(&p, std::max<size_t>(bytes, 1), 0) == kCudaSuccess) {
    return static_cast<uint8_t*>(p);
  }
  auto* q = static_cast<uint8_t*>(std::aligned_alloc(4096, (std::max<size_t>(bytes, 1) + 4095) / 4096 * 4096));
  std::lock_guard<std::mutex> lock(unpinned_mu_);
  unpinned_.push_back(q);
  return q;
}

void CudaCopyEngine::HostFree(uint8_t* p) {
  if (p == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(unpinned_mu_);
    auto it = std::find(unpinned_.begin(), unpinned_.end(), p);
    if (it != unpinned_.end()) {
      unpinned_.erase(it);
      std::free(p);
      return;
    }
  }
  CudaContextScope scope(d_, context_);
  d_.MemFreeHost(p);
}

absl::Status CudaCopyEngine::Init(int buffers, size_t in_bytes, size_t out_bytes,
                                  const FinishParams& finish) {
  CudaContextScope scope(d_, context_);
  SP_RETURN_IF_ERROR(Check(d_.StreamCreate(&stream_, kCudaStreamNonBlocking), "stream"));
  buffers_.assign(buffers, 0);
  done_.assign(buffers, nullptr);
  release_.assign(buffers, nullptr);
  release_recorded_.assign(buffers, 0);
  queue_.assign(buffers, {});
  last_issue_ = std::make_unique<std::atomic<uint64_t>[]>(buffers);
  // Blocking-sync events: a thread waiting on one (the completer, Wait)
  // sleeps after a short spin (SyncEvent) instead of spinning a core the
  // decode threads need.
  constexpr unsigned kEventFlags = kCudaEventDisableTiming | kCudaEventBlockingSync;
  for (int b = 0; b < buffers; ++b) {
    SP_RETURN_IF_ERROR(Check(d_.MemAlloc(&buffers_[b], std::max<size_t>(out_bytes, 1)),
                             absl::StrCat(out_bytes, " bytes for buffer ", b)));
    SP_RETURN_IF_ERROR(Check(d_.EventCreate(&done_[b], kEventFlags), "event"));
    SP_RETURN_IF_ERROR(Check(d_.EventCreate(&release_[b], kCudaEventDisableTiming), "event"));
    SP_RETURN_IF_ERROR(Check(d_.EventCreate(&queue_[b].event, kEventFlags), "event"));
  }
  completer_ = std::thread([this] { CompleterMain(); });
  if (finish.enabled) SP_RETURN_IF_ERROR(InitFinish(in_bytes, finish));
  return absl::OkStatus();
}

// Loads the kernel from the embedded fatbin, then the finish's stream,
// scratch buffers and events. The context is current.
absl::Status CudaCopyEngine::InitFinish(size_t in_bytes, const FinishParams& finish) {
  if (kFinishFatbinBytes == 0) {
    return absl::UnavailableError(absl::StrCat(
        name(), ": this shardpack was built without nvcc: it has no kernel for a float ",
        "device_dtype (stage uint8 and convert on the GPU yourself)"));
  }
  if (d_.version / 1000 < kFinishCudaVersion / 1000) {
    return absl::FailedPreconditionError(absl::StrCat(
        name(), ": the float device_dtype runs a kernel built with CUDA ",
        CudaVersionText(kFinishCudaVersion), ", which needs a driver for CUDA ",
        kFinishCudaVersion / 1000, " or newer; this driver supports CUDA ",
        CudaVersionText(d_.version), " (uint8 batches stage without the kernel)"));
  }
  SP_RETURN_IF_ERROR(Check(d_.ModuleLoadData(&module_, kFinishFatbin),
                           "loading the finish kernel (is the driver older than the GPU?)"));
  const char* kernel = FinishKernelName(finish.half, finish.nchw);
  SP_RETURN_IF_ERROR(Check(d_.ModuleGetFunction(&kernel_, module_, kernel), kernel));
  SP_RETURN_IF_ERROR(Check(d_.StreamCreate(&finish_stream_, kCudaStreamNonBlocking), "stream"));
  for (int s = 0; s < 2; ++s) {
    SP_RETURN_IF_ERROR(Check(d_.MemAlloc(&scratch_[s], std::max<size_t>(in_bytes, 1)),
                             absl::StrCat(in_bytes, " bytes of scratch")));
    SP_RETURN_IF_ERROR(Check(d_.EventCreate(&copied_[s], kCudaEventDisableTiming), "event"));
    SP_RETURN_IF_ERROR(Check(d_.EventCreate(&scratch_free_[s], kCudaEventDisableTiming), "event"));
  }
  finish_.height = finish.height;
  finish_.width = finish.width;
  finish_.channels = finish.channels;
  finish_.half = finish.half;
  finish_.nchw = finish.nchw;
  std::copy(finish.scale.begin(), finish.scale.end(), finish_.scale);
  std::copy(finish.bias.begin(), finish.bias.end(), finish_.bias);
  finishing_ = true;
  return absl::OkStatus();
}

// Queues the finish of `samples` samples from `src` into `dst` on the
// finish stream: 256 threads a block and enough blocks to fill any current
// GPU; the kernel's grid-stride loop does the rest.
CUresult CudaCopyEngine::LaunchFinish(int samples, CUdeviceptr src, CUdeviceptr dst) {
  size_t pixels = size_t(samples) * finish_.height * finish_.width;
  if (pixels == 0) return kCudaSuccess;
  constexpr unsigned kThreads = 256;
  const auto blocks = static_cast<unsigned>(std::min<size_t>(pixels / kThreads + 1, 4096));
  void* params[] = {&finish_, &src, &dst, &pixels};
  return d_.LaunchKernel(kernel_, blocks, 1, 1, kThreads, 1, 1, 0, finish_stream_, params,
                         nullptr);
}

// Issue n: the copy on `stream_`, then the completion's event (the host
// slot is free once the copy is done); with a finish, the copy goes to
// scratch n % 2 and the kernel runs on `finish_stream_`. Buffer b is written
// only after the consumer's work on it (release_[b]), a scratch buffer only
// after the finish that read it.
absl::Status CudaCopyEngine::Issue(int b, const uint8_t* src, size_t bytes, int samples,
                                   DoneFn done, void* arg) {
  CudaContextScope scope(d_, context_);
  // At most `buffers` completions outstanding: the queue entry is free.
  const uint64_t n = issued_.load(std::memory_order_relaxed);
  WaitCompleted(n + 1 - std::min<uint64_t>(n + 1, queue_.size()));
  Completion& c = queue_[n % queue_.size()];
  CUstream writer = finishing_ ? finish_stream_ : stream_;  // writes buffer b
  const int s = static_cast<int>(n % 2);
  absl::Status status;
  auto step = [&](CUresult r, absl::string_view what) {
    if (status.ok()) status = Check(r, what);
  };
  if (release_recorded_[b]) step(d_.StreamWaitEvent(writer, release_[b], 0), "wait");
  if (finishing_) {
    if (n >= 2) step(d_.StreamWaitEvent(stream_, scratch_free_[s], 0), "wait");
    step(d_.MemcpyHtoDAsync(scratch_[s], src, bytes, stream_), "cuMemcpyHtoDAsync");
    step(d_.EventRecord(copied_[s], stream_), "cuEventRecord");
    step(d_.EventRecord(c.event, stream_), "cuEventRecord");
    step(d_.StreamWaitEvent(finish_stream_, copied_[s], 0), "wait");
    step(LaunchFinish(samples, scratch_[s], buffers_[b]), "finish kernel");
    step(d_.EventRecord(scratch_free_[s], finish_stream_), "cuEventRecord");
  } else {
    step(d_.MemcpyHtoDAsync(buffers_[b], src, bytes, stream_), "cuMemcpyHtoDAsync");
    step(d_.EventRecord(c.event, stream_), "cuEventRecord");
  }
  step(d_.EventRecord(done_[b], writer), "cuEventRecord");
  if (!status.ok()) {
    // A copy already queued must not read `src` after we return: the caller
    // gives the slot back on an error.
    d_.StreamSynchronize(stream_);
    if (finishing_) d_.StreamSynchronize(finish_stream_);
    return status;
  }
  c.done = done;
  c.arg = arg;
  last_issue_[b].store(n + 1, std::memory_order_relaxed);
  issued_.store(n + 1, std::memory_order_release);
  issued_.notify_one();
  return absl::OkStatus();
}

absl::Status CudaCopyEngine::Wait(int b) {
  const CUresult e = SyncEvent(d_, done_[b]);
  WaitCompleted(last_issue_[b].load(std::memory_order_relaxed));  // `done` has run
  return Check(e, "copy");
}

// Until completions 0 .. n-1 have been reported.
void CudaCopyEngine::WaitCompleted(uint64_t n) {
  for (uint64_t c = completed_.load(std::memory_order_acquire); c < n;
       c = completed_.load(std::memory_order_acquire)) {
    completed_.wait(c, std::memory_order_acquire);
  }
}

void CudaCopyEngine::CompleterMain() {
  CudaContextScope scope(d_, context_);
  for (uint64_t n = 0;; ++n) {
    for (uint64_t i = issued_.load(std::memory_order_acquire); i == n;
         i = issued_.load(std::memory_order_acquire)) {
      issued_.wait(i, std::memory_order_acquire);
    }
    const Completion c = queue_[n % queue_.size()];
    if (c.done == nullptr) return;
    // Its error, if any, is the stream's: Wait reports it from done_[b].
    (void)SyncEvent(d_, c.event);
    c.done(c.arg);
    completed_.store(n + 1, std::memory_order_release);
    completed_.notify_all();
  }
}

// After every issued batch was reported: a null entry ends the completer.
void CudaCopyEngine::StopCompleter() {
  if (!completer_.joinable()) return;
  const uint64_t n = issued_.load(std::memory_order_relaxed);
  WaitCompleted(n);
  queue_[n % queue_.size()].done = nullptr;
  issued_.store(n + 1, std::memory_order_release);
  issued_.notify_one();
  completer_.join();
}

void CudaCopyEngine::Released(int b) {
  if (consumer_ == nullptr) return;
  // Ordering only: the next copy into b waits on the GPU for what the
  // consumer's stream held now. An event records on a stream of another
  // context, so no context need be current for the stream's device.
  CudaContextScope scope(d_, context_);
  release_recorded_[b] = d_.EventRecord(release_[b], consumer_) == kCudaSuccess;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CopyEngine>> MakeCudaCopyEngine(int device, void* consumer_stream) {
  SP_ASSIGN_OR_RETURN(const CudaDriver* d, LoadCudaDriver());
  int count = 0;
  SP_RETURN_IF_ERROR(CudaCheck(*d, d->DeviceGetCount(&count), "cuDeviceGetCount"));
  if (device >= count) {
    return absl::UnavailableError(absl::StrCat("this machine has ", count, " CUDA devices"));
  }
  CUdevice handle = 0;
  SP_RETURN_IF_ERROR(CudaCheck(*d, d->DeviceGet(&handle, device), "cuDeviceGet"));
  CUcontext context = nullptr;
  SP_RETURN_IF_ERROR(
      CudaCheck(*d, d->PrimaryCtxRetain(&context, handle), "cuDevicePrimaryCtxRetain"));
  return std::unique_ptr<CopyEngine>(new CudaCopyEngine(
      *d, device, handle, context, static_cast<CUstream>(consumer_stream)));
}

absl::Status CopyDeviceToHost(int device, void* dst, const void* src, size_t bytes) {
  SP_ASSIGN_OR_RETURN(const CudaDriver* d, LoadCudaDriver());
  CUdevice handle = 0;
  CUcontext context = nullptr;
  SP_RETURN_IF_ERROR(CudaCheck(*d, d->DeviceGet(&handle, device), "cuDeviceGet"));
  SP_RETURN_IF_ERROR(
      CudaCheck(*d, d->PrimaryCtxRetain(&context, handle), "cuDevicePrimaryCtxRetain"));
  absl::Status s;
  {
    CudaContextScope scope(*d, context);
    s = CudaCheck(*d, d->MemcpyDtoH(dst, reinterpret_cast<uintptr_t>(src), bytes), "cuMemcpyDtoH");
  }
  d->PrimaryCtxRelease(handle);
  return s;
}

}  // namespace shardpack::reader
