// The CUDA copy engine: pinned ring slots, device buffers, and a stream of
// the reader's own on which each batch is copied (cudaMemcpyAsync) and
// marked by an event the consumer can wait on. With a finish
// (reader/cuda/finish_kernel.cu), batches are copied into two scratch
// buffers in turn and finished on a second stream, so the kernel of one
// batch runs under the copy of the next. A thread of the engine's sleeps on
// each copy's event in turn and reports the completion: a host function on
// the stream would stall the copies behind it for the callback's round trip
// (measured on an H100, docs/benchmarks.md "GPU staging").
#include <cuda_runtime.h>

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
#include "reader/cuda/finish_kernel.h"
#include "reader/staging.h"

namespace shardpack::reader {
namespace {

// Waits for `e`: polls for up to kSpin first, then sleeps in
// cudaEventSynchronize (the events are blocking-sync). Waking from that
// sleep took tens of microseconds on the H100 machine, longer than a small
// batch's copy: with CIFAR batches the wake-ups, not the bus, set the pace
// (docs/benchmarks.md, "The reader on 16 cores"). A copy of up to a few MB
// ends within the spin; a longer one costs the spin and then sleeps.
cudaError_t SyncEvent(cudaEvent_t e) {
  constexpr auto kSpin = std::chrono::microseconds(50);
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (;;) {
    const cudaError_t q = cudaEventQuery(e);
    if (q != cudaErrorNotReady) return q;
    if (std::chrono::steady_clock::now() >= until) break;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  return cudaEventSynchronize(e);
}

absl::Status CudaStatus(cudaError_t e, absl::string_view what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(what, ": ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")"));
}

// Makes `device` current for the calling thread while it lives: the reader's
// calls must not change the consumer thread's current device.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) cudaSetDevice(device);
  }
  ~DeviceScope() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};

class CudaCopyEngine final : public CopyEngine {
 public:
  CudaCopyEngine(int device, cudaStream_t consumer) : device_(device), consumer_(consumer) {}
  ~CudaCopyEngine() override;

  std::string name() const override { return absl::StrCat("cuda:", device_); }
  uint8_t* HostAlloc(size_t bytes) override;
  void HostFree(uint8_t* p) override;
  absl::Status Init(int buffers, size_t in_bytes, size_t out_bytes,
                    const FinishParams& finish) override;
  void* buffer(int b) override { return buffers_[b]; }
  void* event(int b) override { return done_[b]; }
  absl::Status Issue(int b, const uint8_t* src, size_t bytes, int samples, DoneFn done,
                     void* arg) override;
  absl::Status Wait(int b) override;
  void Released(int b) override;

 private:
  // One issued batch, in issue order: the event after its work, and whom to tell.
  struct Completion {
    cudaEvent_t event = nullptr;
    DoneFn done = nullptr;  // null: the completer stops
    void* arg = nullptr;
  };
  void CompleterMain();
  void WaitCompleted(uint64_t n);
  void StopCompleter();

  const int device_;
  const cudaStream_t consumer_;
  cudaStream_t stream_ = nullptr;         // copies
  cudaStream_t finish_stream_ = nullptr;  // finishes: writes the device buffers
  std::vector<void*> buffers_;
  std::vector<cudaEvent_t> done_, release_;
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
  uint8_t* scratch_[2] = {nullptr, nullptr};
  cudaEvent_t copied_[2] = {nullptr, nullptr}, scratch_free_[2] = {nullptr, nullptr};
  FinishArgs finish_;
  bool finishing_ = false;
  // Slots cudaHostAlloc refused (memory limits): plain memory still works,
  // the copies are only slower.
  std::mutex unpinned_mu_;
  std::vector<uint8_t*> unpinned_;
};

CudaCopyEngine::~CudaCopyEngine() {
  DeviceScope scope(device_);
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  if (finish_stream_ != nullptr) cudaStreamSynchronize(finish_stream_);
  StopCompleter();
  for (void* p : buffers_) cudaFree(p);
  for (cudaEvent_t e : done_) cudaEventDestroy(e);
  for (cudaEvent_t e : release_) cudaEventDestroy(e);
  for (const Completion& c : queue_) cudaEventDestroy(c.event);
  for (int s = 0; s < 2; ++s) {
    if (scratch_[s] != nullptr) cudaFree(scratch_[s]);
    if (copied_[s] != nullptr) cudaEventDestroy(copied_[s]);
    if (scratch_free_[s] != nullptr) cudaEventDestroy(scratch_free_[s]);
  }
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  if (finish_stream_ != nullptr) cudaStreamDestroy(finish_stream_);
}

uint8_t* CudaCopyEngine::HostAlloc(size_t bytes) {
  DeviceScope scope(device_);
  void* p = nullptr;
  if (cudaHostAlloc(&p, std::max<size_t>(bytes, 1), cudaHostAllocDefault) == cudaSuccess) {
    return static_cast<uint8_t*>(p);
  }
  cudaGetLastError();  // not sticky; clear it
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
  cudaFreeHost(p);
}

absl::Status CudaCopyEngine::Init(int buffers, size_t in_bytes, size_t out_bytes,
                                  const FinishParams& finish) {
  DeviceScope scope(device_);
  auto new_stream = [this](cudaStream_t* s) {
    return CudaStatus(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking),
                      absl::StrCat(name(), ": stream"));
  };
  auto new_event = [this](cudaEvent_t* e, unsigned flags) {
    return CudaStatus(cudaEventCreateWithFlags(e, flags), absl::StrCat(name(), ": event"));
  };
  SP_RETURN_IF_ERROR(new_stream(&stream_));
  buffers_.assign(buffers, nullptr);
  done_.assign(buffers, nullptr);
  release_.assign(buffers, nullptr);
  release_recorded_.assign(buffers, 0);
  queue_.assign(buffers, {});
  last_issue_ = std::make_unique<std::atomic<uint64_t>[]>(buffers);
  // Blocking-sync events: a thread waiting on one (the completer, Wait)
  // sleeps after a short spin (SyncEvent) instead of spinning a core the
  // decode threads need.
  constexpr unsigned kEventFlags = cudaEventDisableTiming | cudaEventBlockingSync;
  for (int b = 0; b < buffers; ++b) {
    SP_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&buffers_[b], std::max<size_t>(out_bytes, 1)),
                                  absl::StrCat(name(), ": ", out_bytes, " bytes for buffer ", b)));
    SP_RETURN_IF_ERROR(new_event(&done_[b], kEventFlags));
    SP_RETURN_IF_ERROR(new_event(&release_[b], cudaEventDisableTiming));
    SP_RETURN_IF_ERROR(new_event(&queue_[b].event, kEventFlags));
  }
  completer_ = std::thread([this] { CompleterMain(); });
  finishing_ = finish.enabled;
  if (finishing_) {
    SP_RETURN_IF_ERROR(new_stream(&finish_stream_));
    for (int s = 0; s < 2; ++s) {
      void* p = nullptr;
      SP_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&p, std::max<size_t>(in_bytes, 1)),
                                    absl::StrCat(name(), ": ", in_bytes, " bytes of scratch")));
      scratch_[s] = static_cast<uint8_t*>(p);
      SP_RETURN_IF_ERROR(new_event(&copied_[s], cudaEventDisableTiming));
      SP_RETURN_IF_ERROR(new_event(&scratch_free_[s], cudaEventDisableTiming));
    }
    finish_.height = finish.height;
    finish_.width = finish.width;
    finish_.channels = finish.channels;
    finish_.half = finish.half;
    finish_.nchw = finish.nchw;
    std::copy(finish.scale.begin(), finish.scale.end(), finish_.scale);
    std::copy(finish.bias.begin(), finish.bias.end(), finish_.bias);
  }
  return absl::OkStatus();
}

// Issue n: the copy on `stream_`, then the completion's event (the host
// slot is free once the copy is done); with a finish, the copy goes to
// scratch n % 2 and the kernel runs on `finish_stream_`. Buffer b is written
// only after the consumer's work on it (release_[b]), a scratch buffer only
// after the finish that read it.
absl::Status CudaCopyEngine::Issue(int b, const uint8_t* src, size_t bytes, int samples,
                                   DoneFn done, void* arg) {
  DeviceScope scope(device_);
  // At most `buffers` completions outstanding: the queue entry is free.
  const uint64_t n = issued_.load(std::memory_order_relaxed);
  WaitCompleted(n + 1 - std::min<uint64_t>(n + 1, queue_.size()));
  Completion& c = queue_[n % queue_.size()];
  cudaStream_t writer = finishing_ ? finish_stream_ : stream_;  // writes buffer b
  const int s = static_cast<int>(n % 2);
  absl::Status status;
  auto step = [&status](cudaError_t e, absl::string_view what) {
    if (status.ok()) status = CudaStatus(e, what);
  };
  if (release_recorded_[b]) step(cudaStreamWaitEvent(writer, release_[b], 0), "wait");
  if (finishing_) {
    if (n >= 2) step(cudaStreamWaitEvent(stream_, scratch_free_[s], 0), "wait");
    step(cudaMemcpyAsync(scratch_[s], src, bytes, cudaMemcpyHostToDevice, stream_),
         "cudaMemcpyAsync");
    step(cudaEventRecord(copied_[s], stream_), "cudaEventRecord");
    step(cudaEventRecord(c.event, stream_), "cudaEventRecord");
    step(cudaStreamWaitEvent(finish_stream_, copied_[s], 0), "wait");
    step(LaunchFinish(finish_, samples, scratch_[s], buffers_[b], finish_stream_),
         "finish kernel");
    step(cudaEventRecord(scratch_free_[s], finish_stream_), "cudaEventRecord");
  } else {
    step(cudaMemcpyAsync(buffers_[b], src, bytes, cudaMemcpyHostToDevice, stream_),
         "cudaMemcpyAsync");
    step(cudaEventRecord(c.event, stream_), "cudaEventRecord");
  }
  step(cudaEventRecord(done_[b], writer), "cudaEventRecord");
  if (!status.ok()) {
    // A copy already queued must not read `src` after we return: the caller
    // gives the slot back on an error.
    cudaStreamSynchronize(stream_);
    if (finishing_) cudaStreamSynchronize(finish_stream_);
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
  const cudaError_t e = SyncEvent(done_[b]);
  WaitCompleted(last_issue_[b].load(std::memory_order_relaxed));  // `done` has run
  return CudaStatus(e, "copy");
}

// Until completions 0 .. n-1 have been reported.
void CudaCopyEngine::WaitCompleted(uint64_t n) {
  for (uint64_t c = completed_.load(std::memory_order_acquire); c < n;
       c = completed_.load(std::memory_order_acquire)) {
    completed_.wait(c, std::memory_order_acquire);
  }
}

void CudaCopyEngine::CompleterMain() {
  cudaSetDevice(device_);
  for (uint64_t n = 0;; ++n) {
    for (uint64_t i = issued_.load(std::memory_order_acquire); i == n;
         i = issued_.load(std::memory_order_acquire)) {
      issued_.wait(i, std::memory_order_acquire);
    }
    const Completion c = queue_[n % queue_.size()];
    if (c.done == nullptr) return;
    // Its error, if any, is the stream's: Wait reports it from done_[b].
    (void)SyncEvent(c.event);
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
  // consumer's stream held now. The stream's device need not be current.
  release_recorded_[b] = cudaEventRecord(release_[b], consumer_) == cudaSuccess;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CopyEngine>> MakeCudaCopyEngine(int device, void* consumer_stream) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return absl::UnavailableError(
        absl::StrCat("cudaGetDeviceCount: ", cudaGetErrorName(e), ", ", cudaGetErrorString(e)));
  }
  if (device >= count) {
    return absl::UnavailableError(absl::StrCat("this machine has ", count, " CUDA devices"));
  }
  return std::unique_ptr<CopyEngine>(
      new CudaCopyEngine(device, static_cast<cudaStream_t>(consumer_stream)));
}

absl::Status CopyDeviceToHost(void* dst, const void* src, size_t bytes) {
  return CudaStatus(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
}

}  // namespace shardpack::reader
