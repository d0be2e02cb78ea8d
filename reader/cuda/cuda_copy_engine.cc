// The CUDA copy engine: pinned ring slots, device buffers, and one stream of
// the reader's own on which each batch is copied (cudaMemcpyAsync), finished
// (reader/cuda/finish_kernel.cu), reported (a host function) and marked by
// an event the consumer can wait on.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "reader/cuda/finish_kernel.h"
#include "reader/staging.h"
#include "format/status_macros.h"

namespace shardpack::internal {
namespace {

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
  absl::Status Wait(int b) override { return CudaStatus(cudaEventSynchronize(done_[b]), "copy"); }
  void Released(int b) override;

 private:
  const int device_;
  const cudaStream_t consumer_;
  cudaStream_t stream_ = nullptr;
  std::vector<void*> buffers_;
  std::vector<cudaEvent_t> done_, release_;
  std::vector<uint8_t> release_recorded_;
  uint8_t* scratch_ = nullptr;  // the uint8 batch before the finish
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
  for (void* p : buffers_) cudaFree(p);
  for (cudaEvent_t e : done_) cudaEventDestroy(e);
  for (cudaEvent_t e : release_) cudaEventDestroy(e);
  if (scratch_ != nullptr) cudaFree(scratch_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
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
  SP_RETURN_IF_ERROR(CudaStatus(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                                absl::StrCat(name(), ": stream")));
  buffers_.assign(buffers, nullptr);
  done_.assign(buffers, nullptr);
  release_.assign(buffers, nullptr);
  release_recorded_.assign(buffers, 0);
  for (int b = 0; b < buffers; ++b) {
    SP_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&buffers_[b], std::max<size_t>(out_bytes, 1)),
                                  absl::StrCat(name(), ": ", out_bytes, " bytes for buffer ", b)));
    SP_RETURN_IF_ERROR(CudaStatus(cudaEventCreateWithFlags(&done_[b], cudaEventDisableTiming),
                                  absl::StrCat(name(), ": event")));
    SP_RETURN_IF_ERROR(CudaStatus(cudaEventCreateWithFlags(&release_[b], cudaEventDisableTiming),
                                  absl::StrCat(name(), ": event")));
  }
  finishing_ = finish.enabled;
  if (finishing_) {
    void* p = nullptr;
    SP_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&p, std::max<size_t>(in_bytes, 1)),
                                  absl::StrCat(name(), ": ", in_bytes, " bytes of scratch")));
    scratch_ = static_cast<uint8_t*>(p);
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

// Copies of one stream run in order, so the single scratch buffer is free
// again once the previous batch's kernel ran.
absl::Status CudaCopyEngine::Issue(int b, const uint8_t* src, size_t bytes, int samples,
                                   DoneFn done, void* arg) {
  DeviceScope scope(device_);
  if (release_recorded_[b]) {
    SP_RETURN_IF_ERROR(CudaStatus(cudaStreamWaitEvent(stream_, release_[b], 0), "wait"));
  }
  void* dst = finishing_ ? scratch_ : buffers_[b];
  SP_RETURN_IF_ERROR(CudaStatus(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync"));
  if (finishing_) {
    SP_RETURN_IF_ERROR(
        CudaStatus(LaunchFinish(finish_, samples, scratch_, buffers_[b], stream_), "finish kernel"));
  }
  SP_RETURN_IF_ERROR(CudaStatus(cudaLaunchHostFunc(stream_, done, arg), "cudaLaunchHostFunc"));
  return CudaStatus(cudaEventRecord(done_[b], stream_), "cudaEventRecord");
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

}  // namespace shardpack::internal
