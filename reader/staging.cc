#include "reader/staging.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/errors.h"
#include "common/threads.h"
#include "reader/wait.h"

namespace shardpack::reader {

uint16_t HalfBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof(x));
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7fffffff;
  if (abs >= 0x7f800000) return sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0);  // inf, NaN
  if (abs < 0x38800000) {
    // Below 2^-14: a half subnormal, in units of 2^-24. The scaling is exact
    // and nearbyint rounds to nearest even; 1024 is the smallest normal's
    // encoding, as it should be.
    float a;
    std::memcpy(&a, &abs, sizeof(a));
    return sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f));
  }
  const uint32_t exponent = (abs >> 23) - 127 + 15;
  if (exponent >= 31) return sign | 0x7c00;
  const uint32_t mantissa = abs & 0x7fffff;
  uint32_t h = (exponent << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // a carry may make it inf: right
  return sign | static_cast<uint16_t>(h);
}

void FinishOnHost(const FinishParams& p, int n, const uint8_t* src, void* dst) {
  const size_t plane = size_t(p.height) * p.width;
  const size_t sample = plane * p.channels;
  for (size_t i = 0; i < size_t(n); ++i) {
    for (size_t pixel = 0; pixel < plane; ++pixel) {
      for (int c = 0; c < p.channels; ++c) {
        const size_t in = i * sample + pixel * p.channels + c;
        const size_t out = p.nchw ? i * sample + c * plane + pixel : in;
        // Two roundings, never an FMA (-ffp-contract=off, reader/CMakeLists): the
        // kernel does the same (__fmul_rn, __fadd_rn), so results are equal.
        const float v = float(src[in]) * p.scale[c] + p.bias[c];
        if (p.half) {
          static_cast<uint16_t*>(dst)[out] = HalfBits(v);
        } else {
          static_cast<float*>(dst)[out] = v;
        }
      }
    }
  }
}

int DeviceBuffersFor(int requested, uint64_t batch_bytes) {
  if (requested != kAutoDeviceBuffers) return requested;
  constexpr uint64_t kBufferBytes = uint64_t{32} << 20;
  return static_cast<int>(
      std::clamp<uint64_t>(kBufferBytes / std::max<uint64_t>(batch_bytes, 1), 3, 16));
}

// ---- Stager -----------------------------------------------------------------

namespace {

absl::Status CopyError(const absl::Status& s, const RingSlot& staged, const CopyEngine& engine) {
  return common::WithMessage(s, absl::StrCat("copy of batch ", staged.batch, " of epoch ",
                                            staged.epoch, " to ", engine.name(), ": ",
                                            s.message()));
}

}  // namespace

Stager::Stager(HostRing* host, CopyEngine* engine, int buffers, size_t sample_bytes,
               int batch_size, int num_labels, bool keys, const FieldPlan& fields)
    : host_(host),
      engine_(engine),
      sample_bytes_(sample_bytes),
      slots_(static_cast<size_t>(buffers)),
      pending_(static_cast<size_t>(buffers)),
      issued_ok_(static_cast<size_t>(buffers), 0) {
  for (RingSlot& s : slots_) {
    s.labels.resize(size_t(batch_size) * num_labels);
    s.records.resize(batch_size);
    if (keys) s.keys.resize(batch_size);
    s.fields.Size(fields, batch_size);  // the host slot it is swapped with gets these
  }
}

Stager::~Stager() {
  // The reader stops the pipeline in between; a thread still running here
  // would wait for a build forever.
  SP_DCHECK(!thread_.joinable());
}

absl::Status Stager::Start() {
  stop_ = false;
  for (size_t k = 0; k < slots_.size(); ++k) {
    slots_[k].ready = 0;
    slots_[k].free_for = k;
    issued_ok_[k] = 0;
  }
  return common::StartThread(&thread_, "the reader's staging thread", [this] { IssueMain(); });
}

void Stager::RequestStop() {
  stop_ = true;
  for (RingSlot& s : slots_) {
    s.free_for.store(UINT64_MAX);
    s.free_for.notify_all();
  }
  issued_.Ring();
}

void Stager::Join() {
  if (!thread_.joinable()) return;
  thread_.join();
  // Copies still in flight read pinned slots and call back into the
  // pipeline: both must outlive them. Wait returns after the callback ran.
  for (size_t b = 0; b < slots_.size(); ++b) {
    if (issued_ok_[b]) (void)engine_->Wait(static_cast<int>(b));
    issued_ok_[b] = 0;
  }
}

void Stager::IssueMain() {
  std::atomic<uint64_t> issue_wait_ns{0};
  for (uint64_t seq = 0;; ++seq) {
    RingSlot& built = *host_->Take(seq, kNoTimeout);  // no timeout: never null
    if (stop_.load()) return;
    RingSlot& staged = slots_[seq % slots_.size()];
    // The consumer still holds this device buffer's previous batch.
    if (!WaitFor(staged.free_for, seq, stop_, &issue_wait_ns)) return;
    Stage(seq, built, staged);
    staged.ready.store(seq + 1, std::memory_order_release);
    issued_.Ring();
  }
}

// Copies the metadata out of the host slot (it goes back to the pipeline
// when the copy completes, before the consumer is done with the batch), then
// issues the copy.
void Stager::Stage(uint64_t seq, RingSlot& built, RingSlot& staged) {
  const size_t b = seq % slots_.size();
  staged.epoch = built.epoch;
  staged.batch = built.batch;
  staged.size = built.size;
  staged.skipped = built.skipped;
  staged.status = built.status;
  staged.labels = built.labels;  // same sizes: no allocation
  staged.records = built.records;
  staged.sources = built.sources;  // sized once per slot
  for (size_t i = 0; i < staged.keys.size(); ++i) staged.keys[i] = built.keys[i];
  // This buffer's previous batch was released: its fields' memory goes to
  // the host slot, to be built into again.
  std::swap(staged.fields, built.fields);
  issued_ok_[b] = 0;
  if (!built.status.ok()) {
    host_->Release(seq);
    return;
  }
  pending_[b] = {this, seq};
  absl::Status s = engine_->Issue(static_cast<int>(b), built.images.get(),
                                  size_t(built.size) * sample_bytes_, built.size, &OnCopied,
                                  &pending_[b]);
  if (!s.ok()) {
    staged.status = CopyError(s, staged, *engine_);
    host_->Release(seq);
    return;
  }
  issued_ok_[b] = 1;
}

void Stager::OnCopied(void* arg) {
  const Pending* p = static_cast<const Pending*>(arg);
  p->stager->host_->Release(p->seq);
}

RingSlot* Stager::Take(uint64_t seq, std::chrono::nanoseconds timeout) {
  const size_t b = seq % slots_.size();
  RingSlot& staged = slots_[b];
  if (!issued_.Wait(staged.ready, seq + 1, stop_, &consumer_wait_ns_, timeout) && !stop_.load()) {
    return nullptr;
  }
  if (issued_ok_[b]) {
    const uint64_t start = NowNs();
    absl::Status s = engine_->Wait(static_cast<int>(b));
    consumer_wait_ns_.fetch_add(NowNs() - start, std::memory_order_relaxed);
    if (!s.ok() && staged.status.ok()) {
      staged.status = CopyError(s, staged, *engine_);
    }
  }
  return &staged;
}

void Stager::Release(uint64_t seq) {
  const size_t b = seq % slots_.size();
  engine_->Released(static_cast<int>(b));
  slots_[b].free_for.store(seq + slots_.size(), std::memory_order_release);
  slots_[b].free_for.notify_all();
}

}  // namespace shardpack::reader
