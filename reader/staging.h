// GPU staging: the last stage of the reader, a BatchRing (reader/ring.h)
// in place of the host ring. Finished batches in the host ring are copied,
// as soon as they are built, into a ring of device buffers through a
// CopyEngine (CUDA, or a fake in the tests); the host slot goes back to the
// host ring once its copy has completed, and a device buffer is reused only
// after the consumer released its Batch.
//
//   host ring (pinned host slots) --CopyEngine::Issue--> device buffers
//        ^ released when the copy completed        released by ~Batch ^
//
// Synchronization is by atomics with wait/notify, as in the pipeline: one
// issuing thread, the engine's completion callbacks, the consumer.
#ifndef SHARDPACK_READER_STAGING_H_
#define SHARDPACK_READER_STAGING_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "reader/host_ring.h"
#include "reader/ring.h"
#include "reader/wait.h"
#include "shardpack/reader.h"

namespace shardpack::reader {

// The on-device finish: uint8 NHWC in, `half` ? float16 : float32 out, NCHW
// or NHWC, value = pixel * scale[c] + bias[c] (scale = 1 / (255 std),
// bias = -mean / std, as the host transform computes float32).
struct FinishParams {
  bool enabled = false;
  bool half = false;
  bool nchw = false;
  int height = 0, width = 0, channels = 0;
  std::array<float, 3> scale{}, bias{};

  size_t out_element_bytes() const { return half ? 2 : 4; }
  // scale and bias for (pixel / 255 - mean[c]) / std[c], as the host
  // transform computes them (reader/transform.cc).
  void Normalize(const std::array<float, 3>& mean, const std::array<float, 3>& stddev) {
    for (int c = 0; c < 3; ++c) {
      scale[c] = 1.f / (255.f * stddev[c]);
      bias[c] = -mean[c] / stddev[c];
    }
  }
};

// The finish on the CPU: the reference the device tests compare against, and
// what the fake engine runs. `dst` holds n samples of the output layout.
void FinishOnHost(const FinishParams& p, int n, const uint8_t* src, void* dst);
// IEEE binary16 bits of `f`, rounded to nearest even (as __float2half_rn).
uint16_t HalfBits(float f);

// Where staging memory comes from and how a batch reaches the device. One
// stream of work: copies (and finishes) complete in the order issued.
class CopyEngine {
 public:
  // Called once per Issue when the copy completed or failed, from a thread
  // of the engine's. Must not call back into the engine.
  using DoneFn = void (*)(void* arg);

  virtual ~CopyEngine() = default;
  // "cuda:0", "fake": for messages.
  virtual std::string name() const = 0;
  // Host memory for ring slots (pinned for a device). Freed by HostFree,
  // which may be called from any thread, after every copy from it completed.
  virtual uint8_t* HostAlloc(size_t bytes) = 0;
  virtual void HostFree(uint8_t* p) = 0;
  // Allocates `buffers` device buffers for batches of `in_bytes` host bytes
  // made into `out_bytes` device bytes (the same without a finish).
  virtual absl::Status Init(int buffers, size_t in_bytes, size_t out_bytes,
                            const FinishParams& finish) = 0;
  virtual void* buffer(int b) = 0;  // device address of buffer b
  virtual void* event(int b) = 0;   // the CUevent (cudaEvent_t) after b's last work, or null
  // Queues the copy of `bytes` from `src` (HostAlloc memory) into buffer b,
  // then the finish of `samples` samples if enabled. `done(arg)` follows
  // once the copy completed (`src` is free again). One thread issues.
  // An error here means nothing was queued and `done` will not be called.
  virtual absl::Status Issue(int b, const uint8_t* src, size_t bytes, int samples, DoneFn done,
                             void* arg) = 0;
  // Waits for buffer b's last issued work; its error, if any.
  virtual absl::Status Wait(int b) = 0;
  // The consumer gave buffer b back (consumer thread). The next copy into b
  // must come after the consumer's work on it (ReaderOptions::consumer_stream).
  virtual void Released(int /*b*/) {}
};

// The CUDA engine on `device` (reader/cuda/: the driver loaded at run time),
// or the reason there is none (no driver, too old a driver, no such device).
// `consumer_stream` as in ReaderOptions.
absl::StatusOr<std::unique_ptr<CopyEngine>> MakeCudaCopyEngine(int device, void* consumer_stream);

// Reader::Open with the GPU staging copying through `engine` (tests: a fake
// engine) instead of the CUDA one made for options.device; with a null
// engine, Reader::Open itself.
absl::StatusOr<std::unique_ptr<Reader>> OpenReaderWithEngine(const ReaderOptions& options,
                                                             std::unique_ptr<CopyEngine> engine);
// Copies `bytes` of device memory of `device` to the host (tests).
absl::Status CopyDeviceToHost(int device, void* dst, const void* src, size_t bytes);

// The device buffers for ReaderOptions::device_buffers `requested` and
// device batches of `batch_bytes`: `requested`, or for kAutoDeviceBuffers 3,
// or as many up to 16 as fit in 32 MiB. Each batch's copy ends with waking
// a thread (the completion thread, the consumer); with small batches those
// wake-ups, not the bus, set the pace unless many copies are queued (CIFAR
// on 16 cores: docs/benchmarks.md, "The reader on 16 cores").
int DeviceBuffersFor(int requested, uint64_t batch_bytes);

// The ring of device buffers between the host ring and Reader::Next().
class Stager final : public BatchRing {
 public:
  // `host`, `engine` and `fields` outlive the stager; engine->Init has been
  // called with `buffers` buffers. A batch of n samples is n * sample_bytes
  // bytes. The fields stay in host memory: a staged batch's fields are the
  // host slot's, swapped out of it (no copy).
  Stager(HostRing* host, CopyEngine* engine, int buffers, size_t sample_bytes, int batch_size,
         int num_labels, bool keys, const FieldPlan& fields);
  ~Stager() override;

  // Starts the issuing thread at pipeline sequence number 0; the pipeline
  // has been started.
  // ResourceExhaustedError when the system will not start its thread.
  absl::Status Start() override;
  // Asks the issuing thread to stop; call before Pipeline::Stop, which wakes
  // it if it waits for a build.
  void RequestStop() override;
  // Joins the thread and waits for every copy in flight. No-op when stopped.
  void Join() override;

  // Consumer: the metadata of `seq`, once its copy completed, with the
  // copy's error in `status` (naming the batch and the engine); null when
  // the batch was not built and issued within `timeout` (the wait for the
  // copy itself is the device's).
  RingSlot* Take(uint64_t seq, std::chrono::nanoseconds timeout) override;
  // Consumer: gives the device buffer of `seq` back.
  void Release(uint64_t seq) override;

  void* device_buffer(uint64_t seq) override {
    return engine_->buffer(static_cast<int>(seq % slots_.size()));
  }
  void* device_event(uint64_t seq) override {
    return engine_->event(static_cast<int>(seq % slots_.size()));
  }
  int slots() const override { return static_cast<int>(slots_.size()); }
  const char* slot_name() const override { return "device buffers"; }
  double consumer_wait_s() const override { return consumer_wait_ns_.load() * 1e-9; }

 private:
  // What a completion callback needs: which sequence number's host slot to
  // give back. One copy per device buffer is in flight at a time.
  struct Pending {
    Stager* stager = nullptr;
    uint64_t seq = 0;
  };
  static void OnCopied(void* arg);
  void IssueMain();
  void Stage(uint64_t seq, RingSlot& built, RingSlot& staged);

  HostRing* host_;
  CopyEngine* engine_;
  const size_t sample_bytes_;
  std::vector<RingSlot> slots_;     // per device buffer: metadata, ready, free_for
  std::vector<Pending> pending_;    // per device buffer
  std::vector<uint8_t> issued_ok_;  // per device buffer: Wait() applies
  std::atomic<int64_t> in_flight_{0};
  std::atomic<bool> stop_{false};
  Doorbell issued_;  // a slot's `ready` was stored
  std::thread thread_;
  std::atomic<uint64_t> consumer_wait_ns_{0};
};

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_STAGING_H_
