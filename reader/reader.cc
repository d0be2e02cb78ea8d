// Reader and Batch: the public face of the pipeline.
#include "shardpack/reader.h"

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/rng.h"
#include "format/enum_names.h"
#include "format/errors.h"
#include "reader/dataset_units.h"
#include "reader/options.h"
#include "reader/pipeline.h"
#include "reader/staging.h"
#include "reader/transform.h"
#include "format/status_macros.h"

namespace shardpack {

using internal::AsAbsl;
using internal::Pipeline;
using internal::RingSlot;

struct Batch::Slot {
  RingSlot* ring = nullptr;
  uint64_t seq = 0;
  const internal::OutputShape* shape = nullptr;
  int num_labels = 0;
  OutputLayout layout = OutputLayout::kNHWC;
  size_t sample_bytes = 0;    // of images() or, on a device, device_images()
  void* device = nullptr;     // the device buffer, when staged
  void* event = nullptr;
  // A live Batch has it. Atomic: a Batch may be destroyed on any thread.
  std::atomic<bool> held{false};
};

class Reader::Impl {
 public:
  ~Impl() { Stop(); }
  // A Reader around an initialized Impl (a nested class may call Reader's
  // private constructor; the public header names no test hook).
  static std::unique_ptr<Reader> Wrap(std::unique_ptr<Impl> impl) {
    return std::unique_ptr<Reader>(new Reader(std::move(impl)));
  }
  // `engine`: the copy engine to stage batches through (tests), else one is
  // made for options.device when it is >= 0.
  absl::Status Init(const ReaderOptions& options, std::unique_ptr<internal::CopyEngine> engine);
  absl::StatusOr<Batch> Next(Reader* reader, std::chrono::nanoseconds timeout);
  // ~Batch, on any thread: the slot goes back through atomics only.
  void Release(Batch::Slot* slot) {
    GiveBack(slot);
    outstanding_.fetch_sub(1, std::memory_order_relaxed);
    slot->held.store(false, std::memory_order_release);
  }
  ReaderState state() const;
  absl::Status Restore(const ReaderState& state);
  ReaderStats stats() const;
  uint64_t batches_per_epoch() const { return pipeline_->batches_per_epoch(); }
  int ring_slots() const { return options_.ring_slots; }
  uint64_t batches_in_epoch() const { return epoch_batches_; }
  uint64_t records() const { return dataset_.records; }
  uint64_t fingerprint() const { return fingerprint_; }
  const Schema& schema() const { return dataset_.manifest().schema; }
  std::array<int64_t, 4> output_shape() const;
  IoEngine io_engine() const { return dataset_.source->engine(); }
  const std::string& device_fallback() const { return no_device_; }

 private:
  // The options the pipeline builds with: a device finish's input is uint8
  // NHWC; with no device, it is done here on the host.
  absl::Status HostOptions(ReaderOptions* host);
  absl::Status InitStaging(int num_labels);
  size_t DeviceSampleBytes() const;
  void GiveBack(Batch::Slot* slot);
  void ResizeSlots(int n) {
    slots_ = std::make_unique<Batch::Slot[]>(static_cast<size_t>(n));
    num_slots_ = static_cast<size_t>(n);
  }
  // Tells options_.corrupt_reporter of the samples `ring` replaced.
  void ReportCorrupt(const RingSlot& ring) const;
  void Stop();
  // The segments `state` says its epoch was read in, oldest first, ending
  // with the state's own; InvalidArgumentError naming a bad field.
  absl::StatusOr<std::vector<internal::PlanSegment>> SegmentsOf(const ReaderState& state) const;
  internal::PlanOptions PlanOf(const ReadSegment& segment) const;

  ReaderOptions options_;
  internal::PlanOptions plan_;
  uint64_t fingerprint_ = 0;
  internal::StreamDataset dataset_;
  std::unique_ptr<internal::SampleTransform> transform_;
  // Before pipeline_: the ring slots are its (pinned) memory.
  std::unique_ptr<internal::CopyEngine> engine_;
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<internal::Stager> stager_;  // null: batches stay on the host
  size_t device_sample_bytes_ = 0;
  std::string no_device_;  // why there is no engine for options_.device
  std::unique_ptr<Batch::Slot[]> slots_;  // ring_slots or device_buffers of them
  size_t num_slots_ = 0;
  bool started_ = false;
  uint64_t epoch_ = 0, batch_ = 0;  // the next batch Next() delivers
  bool last_epoch_ended_ = false;   // epoch_ is kMaxEpoch and its end was told
  uint64_t epoch_batches_ = 0;      // batches of epoch_
  // After an elastic Restore: epoch_'s earlier segments and what they left
  // (null otherwise). Cleared when epoch_ ends.
  std::vector<ReadSegment> earlier_;
  std::shared_ptr<const internal::EpochRest> rest_;
  uint64_t seq_ = 0;  // its pipeline sequence number
  std::atomic<int> outstanding_{0};  // live Batches
  // Counted as batches are delivered: workers run ahead into the next epoch,
  // so counts of what was built would depend on timing.
  uint64_t delivered_ = 0;
  uint64_t delivered_samples_ = 0;
  uint64_t delivered_skipped_ = 0;
};

namespace {

// An integer option of ReaderOptions, as messages name it.
struct IntOption {
  const char* name;
  std::string accepted;  // "1 to 1048576"
};

const std::vector<IntOption>& IntOptions() {
  static const auto* options = new std::vector<IntOption>{
      {"batch_size", absl::StrCat("1 to ", kMaxBatchSize)},
      {"ring_slots", absl::StrCat("2 to ", kMaxRingSlots, ", or 0 (chosen)")},
      {"threads", absl::StrCat("0 (one per core) to ", kMaxThreads)},
      {"device_buffers", absl::StrCat("2 to ", kMaxDeviceBuffers, ", or 0 (chosen)")},
      {"device", "-1 (host memory) or a CUDA device from 0"},
      {"rank", absl::StrCat("-1 (from RANK) or 0 to world_size-1 (at most ", kMaxWorldSize - 1,
                            ")")},
      {"world_size", absl::StrCat("-1 (from WORLD_SIZE) or 1 to ", kMaxWorldSize)},
      {"transform size", absl::StrCat("1 to ", kMaxTransformSize)},
      {"transform pad", absl::StrCat("0 to ", kMaxTransformSize)},
  };
  return *options;
}

// An integer from the environment variable `name`, in [lo, hi]; `fallback`
// when it is not set. `*named` says where the value came from, for messages.
absl::StatusOr<int> FromEnvironment(const char* name, int fallback, int lo, int hi,
                                    std::string* named) {
  const char* text = std::getenv(name);
  if (text == nullptr) {
    *named = absl::StrCat(name, " unset: ", fallback);
    return fallback;
  }
  const std::string shown = internal::Excerpt(text);
  *named = absl::StrCat(name, "=", shown);
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v)) {
    // Digits that do not fit are a number out of range, not a non-number.
    const std::string_view digits = std::string_view(text).substr(text[0] == '-' || text[0] == '+');
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, "='", shown, "' is not an integer: ", lo, " to ", hi));
    }
    v = text[0] == '-' ? INT64_MIN : INT64_MAX;
  }
  if (v < lo || v > hi) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "=", shown, " is out of range: ", lo, " to ", hi));
  }
  return static_cast<int>(v);
}

// RANK / WORLD_SIZE from the environment when the option is -1; the
// options themselves are checked (CheckOptions).
absl::Status ResolveRank(ReaderOptions* o) {
  std::string world = absl::StrCat("world_size ", o->world_size);
  std::string rank = absl::StrCat("rank ", o->rank);
  if (o->world_size == -1) {
    SP_ASSIGN_OR_RETURN(o->world_size, FromEnvironment("WORLD_SIZE", 1, 1, kMaxWorldSize, &world));
  }
  if (o->rank == -1) {
    SP_ASSIGN_OR_RETURN(o->rank, FromEnvironment("RANK", 0, 0, kMaxWorldSize - 1, &rank));
  }
  if (o->rank >= o->world_size) {
    return absl::InvalidArgumentError(absl::StrCat(rank, " is out of range: 0 to ",
                                                   o->world_size - 1, " (", world, ")"));
  }
  return absl::OkStatus();
}

// The plan options of `o`, whose rank and world size are resolved.
internal::PlanOptions PlanOptionsOf(const ReaderOptions& o) {
  return {o.shuffle, o.seed, o.rank, o.world_size, o.batch_size, o.remainder, o.shuffle_bytes};
}

absl::Status CheckOptions(const ReaderOptions& o) {
  // The path goes to the system as a C string: a NUL would cut it short.
  if (const size_t nul = o.path.find('\0'); nul != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("path '", internal::Excerpt(o.path),
                                                   "' holds a NUL byte (at byte ", nul,
                                                   "): a path is text without NULs"));
  }
  if (o.path.size() >= PATH_MAX) {
    return absl::InvalidArgumentError(absl::StrCat("path '", internal::Excerpt(o.path),
                                                   "' is too long: at most ", PATH_MAX - 1,
                                                   " bytes"));
  }
  auto check = [](const char* name, int v, bool ok) {
    return ok ? absl::OkStatus() : internal::OptionOutOfRange(name, absl::StrCat(v));
  };
  auto in = [](int v, int lo, int hi) { return v >= lo && v <= hi; };
  const Transform& t = o.transform;
  SP_RETURN_IF_ERROR(check("batch_size", o.batch_size, in(o.batch_size, 1, kMaxBatchSize)));
  SP_RETURN_IF_ERROR(check("ring_slots", o.ring_slots,
                           o.ring_slots == kAutoRingSlots || in(o.ring_slots, 2, kMaxRingSlots)));
  SP_RETURN_IF_ERROR(check("threads", o.threads, in(o.threads, 0, kMaxThreads)));
  SP_RETURN_IF_ERROR(check("device", o.device, o.device >= -1));
  SP_RETURN_IF_ERROR(check("device_buffers", o.device_buffers,
                           o.device < 0 || o.device_buffers == kAutoDeviceBuffers ||
                               in(o.device_buffers, 2, kMaxDeviceBuffers)));
  SP_RETURN_IF_ERROR(check("world_size", o.world_size,
                           o.world_size == -1 || in(o.world_size, 1, kMaxWorldSize)));
  SP_RETURN_IF_ERROR(check("rank", o.rank, in(o.rank, -1, kMaxWorldSize - 1)));
  SP_RETURN_IF_ERROR(check("transform size", t.size, in(t.size, 1, kMaxTransformSize)));
  SP_RETURN_IF_ERROR(check("transform pad", t.pad, in(t.pad, 0, kMaxTransformSize)));
  if (o.device_dtype != DeviceDType::kAsHost && o.dtype != DType::kUint8) {
    return absl::InvalidArgumentError(
        "with device_dtype, dtype must stay uint8: the device converts the uint8 batch");
  }
  if (o.device_dtype != DeviceDType::kAsHost && o.device < 0) {
    return absl::InvalidArgumentError("device_dtype needs a device (ReaderOptions::device >= 0)");
  }
  return absl::OkStatus();
}

// The manifest's fingerprint; for a lone .shard file (whose manifest lists
// no shards) folded with its read units, so that two different files differ.
uint64_t DatasetFingerprint(const internal::StreamDataset& d) {
  uint64_t h = ManifestFingerprint(d.manifest());
  if (!d.manifest().shards.empty()) return h;
  for (const internal::ReadUnit& u : d.units()) {
    h = internal::Draw(h, u.first_record, u.records, u.bytes);
  }
  return h;
}

// The CUDA engine for `device`, or null with why batches stay in host
// memory in `why` (Reader::device_fallback(): the tools print it).
std::unique_ptr<internal::CopyEngine> DeviceEngine(const ReaderOptions& o, std::string* why) {
  absl::StatusOr<std::unique_ptr<internal::CopyEngine>> engine =
      internal::MakeCudaCopyEngine(o.device, o.consumer_stream);
  if (engine.ok()) return *std::move(engine);
  *why = absl::StrCat("no CUDA device ", o.device, " (", engine.status().message(),
                      "): batches stay in host memory");
  return nullptr;
}

}  // namespace

absl::Status internal::OptionOutOfRange(std::string_view option, std::string_view value) {
  for (const IntOption& o : IntOptions()) {
    if (option == o.name) {
      return absl::InvalidArgumentError(absl::StrCat(o.name, " ", Excerpt(value),
                                                     " is out of range: ", o.accepted));
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat(AsAbsl(option), " ", Excerpt(value), " is out of range"));
}

absl::StatusOr<internal::PlanOptions> internal::ReaderPlanOptions(ReaderOptions options) {
  SP_RETURN_IF_ERROR(CheckOptions(options));
  SP_RETURN_IF_ERROR(ResolveRank(&options));
  return PlanOptionsOf(options);
}

absl::Status Reader::Impl::HostOptions(ReaderOptions* host) {
  *host = options_;
  if (options_.device_dtype == DeviceDType::kAsHost) return absl::OkStatus();
  if (engine_ != nullptr) {
    host->layout = OutputLayout::kNHWC;
    return absl::OkStatus();
  }
  if (options_.device_dtype == DeviceDType::kFloat16) {
    return absl::InvalidArgumentError(
        absl::StrCat("device_dtype float16 needs CUDA device ", options_.device, ": ", no_device_));
  }
  host->dtype = DType::kFloat32;
  return absl::OkStatus();
}

absl::Status Reader::Impl::Init(const ReaderOptions& options,
                                std::unique_ptr<internal::CopyEngine> engine) {
  options_ = options;
  SP_RETURN_IF_ERROR(CheckOptions(options_));
  SP_RETURN_IF_ERROR(ResolveRank(&options_));
  engine_ = std::move(engine);
  if (engine_ == nullptr && options_.device >= 0) engine_ = DeviceEngine(options_, &no_device_);
  ReaderOptions host;
  SP_RETURN_IF_ERROR(HostOptions(&host));
  SP_ASSIGN_OR_RETURN(dataset_, internal::OpenStreamDataset(options_.path, options_.io));
  SP_ASSIGN_OR_RETURN(internal::SampleTransform t,
                      internal::SampleTransform::Make(host, dataset_.source->image()));
  transform_ = std::make_unique<internal::SampleTransform>(std::move(t));
  int workers = internal::WorkerThreads(options_.threads);
  if (engine_ != nullptr) {
    device_sample_bytes_ = DeviceSampleBytes();
    options_.device_buffers = internal::DeviceBuffersFor(
        options_.device_buffers, uint64_t(options_.batch_size) * device_sample_bytes_);
    // A host slot stays with the staging chain from its build to its copy's
    // end: up to a device buffer's worth more slots than workers are in use.
    workers += options_.device_buffers;
  }
  host.ring_slots = options_.ring_slots = internal::RingSlotsFor(
      options_.ring_slots, uint64_t(options_.batch_size) * transform_->shape().sample_bytes,
      workers);
  internal::PlanOptions& plan = plan_;
  plan = PlanOptionsOf(options_);
  fingerprint_ = DatasetFingerprint(dataset_);
  epoch_batches_ = internal::BatchesPerEpoch(dataset_.records, plan);
  if (epoch_batches_ == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        options_.path, ": ", dataset_.records, " records give rank ", options_.rank, " of ",
        options_.world_size, " no batch of ", options_.batch_size));
  }
  int num_labels = std::max<int>(1, static_cast<int>(dataset_.manifest().schema.labels.size()));
  pipeline_ = std::make_unique<Pipeline>(host, &dataset_, transform_.get(), plan, num_labels,
                                         engine_.get());
  SP_RETURN_IF_ERROR(pipeline_->CheckRing(options_.path));
  ResizeSlots(options_.ring_slots);
  if (engine_ != nullptr) SP_RETURN_IF_ERROR(InitStaging(num_labels));
  return absl::OkStatus();
}

// Bytes of a sample in a device buffer: the host's, or the finish's output.
size_t Reader::Impl::DeviceSampleBytes() const {
  const internal::OutputShape& shape = transform_->shape();
  if (options_.device_dtype == DeviceDType::kAsHost) return shape.sample_bytes;
  const size_t element = options_.device_dtype == DeviceDType::kFloat16 ? 2 : 4;
  return size_t(shape.height) * shape.width * shape.channels * element;
}

absl::Status Reader::Impl::InitStaging(int num_labels) {
  const internal::OutputShape& shape = transform_->shape();
  internal::FinishParams finish;
  finish.enabled = options_.device_dtype != DeviceDType::kAsHost;
  finish.half = options_.device_dtype == DeviceDType::kFloat16;
  finish.nchw = options_.layout == OutputLayout::kNCHW;
  finish.height = shape.height;
  finish.width = shape.width;
  finish.channels = shape.channels;
  if (finish.enabled && shape.channels > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("device_dtype: images of ", shape.channels, " channels (at most 3)"));
  }
  finish.Normalize(options_.mean, options_.std);
  const size_t batch = static_cast<size_t>(options_.batch_size);
  SP_RETURN_IF_ERROR(engine_->Init(options_.device_buffers, batch * shape.sample_bytes,
                                   batch * device_sample_bytes_, finish));
  stager_ = std::make_unique<internal::Stager>(pipeline_.get(), engine_.get(),
                                               options_.device_buffers, shape.sample_bytes,
                                               options_.batch_size, num_labels, options_.keys);
  ResizeSlots(options_.device_buffers);
  return absl::OkStatus();
}

void Reader::Impl::Stop() {
  if (stager_ != nullptr) stager_->RequestStop();
  if (pipeline_ != nullptr) pipeline_->Stop();
  if (stager_ != nullptr) stager_->Join();
  started_ = false;
}

absl::StatusOr<Batch> Reader::Impl::Next(Reader* reader, std::chrono::nanoseconds timeout) {
  if (batch_ == epoch_batches_) {
    if (epoch_ == kMaxEpoch) {  // the reader stays at its end
      if (!last_epoch_ended_) {
        last_epoch_ended_ = true;
        return absl::OutOfRangeError(absl::StrCat("end of epoch ", epoch_));
      }
      return absl::FailedPreconditionError(absl::StrCat(
          "epoch ", kMaxEpoch, " (2^63-1) was the last: a reader reads epochs 0 to 2^63-1"));
    }
    ++epoch_;
    batch_ = 0;
    epoch_batches_ = pipeline_->batches_per_epoch();
    earlier_.clear();
    rest_.reset();
    return absl::OutOfRangeError(absl::StrCat("end of epoch ", epoch_ - 1));
  }
  // The next batch goes into the slot (or device buffer) of the one
  // delivered slots_.size() calls ago: waiting while a Batch still holds it
  // would never end.
  if (const Batch::Slot& reused = slots_[seq_ % num_slots_];
      reused.held.load(std::memory_order_acquire)) {
    const char* what = stager_ ? " device buffers" : " ring slots";
    return absl::FailedPreconditionError(absl::StrCat(
        "the Batch of epoch ", reused.ring->epoch, " batch ", reused.ring->batch,
        " still holds the", what, "[", reused.seq % num_slots_,
        "] the next batch needs (", num_slots_, what, "): destroy it first; at most ",
        num_slots_ - 1, " Batches may be held across Next()"));
  }
  if (!started_) {
    absl::Status status = pipeline_->Start(epoch_, batch_, rest_);
    if (status.ok() && stager_ != nullptr) {
      status = stager_->Start();
      if (!status.ok()) pipeline_->Stop();
    }
    // Nothing was delivered: the next call tries again from here.
    if (!status.ok()) return status;
    started_ = true;
  }
  RingSlot* built = stager_ ? stager_->Take(seq_, timeout) : pipeline_->WaitBuilt(seq_, timeout);
  if (built == nullptr) {
    return absl::DeadlineExceededError(absl::StrCat(
        "batch ", batch_, " of epoch ", epoch_, " was not ready within ",
        std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count(), " ms"));
  }
  RingSlot& ring = *built;
  Batch::Slot& slot = slots_[seq_ % num_slots_];
  slot.ring = &ring;
  slot.seq = seq_;
  slot.shape = &transform_->shape();
  slot.num_labels = static_cast<int>(ring.labels.size() / options_.batch_size);
  slot.layout = options_.layout;
  slot.sample_bytes = stager_ ? device_sample_bytes_ : transform_->shape().sample_bytes;
  slot.device = stager_ ? stager_->buffer(seq_) : nullptr;
  slot.event = stager_ ? stager_->event(seq_) : nullptr;
  ++seq_;
  ++batch_;
  if (!ring.status.ok()) {
    absl::Status error = ring.status;
    GiveBack(&slot);
    return error;
  }
  if (!ring.corrupt.empty()) ReportCorrupt(ring);
  slot.held.store(true, std::memory_order_relaxed);
  outstanding_.fetch_add(1, std::memory_order_relaxed);
  ++delivered_;
  delivered_samples_ += ring.size;
  delivered_skipped_ += ring.skipped;
  return Batch(reader, &slot);
}

void Reader::Impl::GiveBack(Batch::Slot* slot) {
  if (stager_ != nullptr) {
    stager_->Release(slot->seq);
  } else {
    pipeline_->Release(slot->seq);
  }
}

ReaderState Reader::Impl::state() const {
  ReaderState s;
  s.seed = options_.seed;
  s.epoch = epoch_;
  s.batch = batch_;
  s.fingerprint = fingerprint_;
  s.world_size = options_.world_size;
  s.batch_size = options_.batch_size;
  s.remainder = options_.remainder;
  s.shuffle = options_.shuffle;
  s.shuffle_bytes = options_.shuffle_bytes;
  s.earlier = earlier_;
  return s;
}

internal::PlanOptions Reader::Impl::PlanOf(const ReadSegment& segment) const {
  return {segment.shuffle,    options_.seed,     0, segment.world_size,
          segment.batch_size, segment.remainder, segment.shuffle_bytes};
}

absl::StatusOr<std::vector<internal::PlanSegment>> Reader::Impl::SegmentsOf(
    const ReaderState& state) const {
  if (state.fingerprint != fingerprint_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "state of dataset fingerprint ", FormatFingerprint(state.fingerprint), ", but ",
        options_.path, " has fingerprint ", FormatFingerprint(fingerprint_),
        ": another dataset, or another copy of it"));
  }
  if (state.seed != options_.seed) {
    return absl::InvalidArgumentError(absl::StrCat("state of seed ", state.seed,
                                                   ", reader of seed ", options_.seed));
  }
  if (state.epoch > kMaxEpoch) {
    return absl::InvalidArgumentError(absl::StrCat("state.epoch ", state.epoch,
                                                   " is out of range: 0 to 2^63-1 (", kMaxEpoch,
                                                   ")"));
  }
  if (state.earlier.size() > kMaxStateSegments) {
    return absl::InvalidArgumentError(absl::StrCat("state lists ", state.earlier.size(),
                                                   " earlier segments (at most ",
                                                   kMaxStateSegments, ")"));
  }
  std::vector<ReadSegment> all = state.earlier;
  all.push_back({state.world_size, state.batch_size, state.remainder, state.shuffle,
                 state.shuffle_bytes, state.batch});
  std::vector<internal::PlanSegment> segments;
  for (size_t i = 0; i < all.size(); ++i) {
    const ReadSegment& e = all[i];
    const std::string field =
        i + 1 < all.size() ? absl::StrCat("state.earlier[", i, "].") : "state.";
    if (e.world_size < 1 || e.world_size > kMaxWorldSize) {
      return absl::InvalidArgumentError(absl::StrCat(field, "world_size ", e.world_size,
                                                     " is out of range: 1 to ", kMaxWorldSize));
    }
    if (e.batch_size < 1 || e.batch_size > kMaxBatchSize) {
      return absl::InvalidArgumentError(absl::StrCat(field, "batch_size ", e.batch_size,
                                                     " is out of range: 1 to ", kMaxBatchSize));
    }
    if (e.remainder != Remainder::kDrop && e.remainder != Remainder::kPartial &&
        e.remainder != Remainder::kPad) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, "remainder ", static_cast<int>(e.remainder), " is not drop, partial or pad"));
    }
    segments.push_back({PlanOf(e), e.batches});
  }
  return segments;
}

absl::Status Reader::Impl::Restore(const ReaderState& state) {
  if (outstanding_.load(std::memory_order_acquire) > 0) {
    return absl::FailedPreconditionError("destroy every Batch before Restore");
  }
  SP_ASSIGN_OR_RETURN(std::vector<internal::PlanSegment> segments, SegmentsOf(state));
  // The state's own segment goes on when this reader's plan options are its
  // options; otherwise it is finished (an elastic resume), or dropped when
  // it delivered nothing.
  const internal::PlanSegment& theirs = segments.back();
  const bool same = PlanOf({options_.world_size, options_.batch_size, options_.remainder,
                            options_.shuffle, options_.shuffle_bytes, 0}) == theirs.options;
  if (same || state.batch == 0) segments.pop_back();
  std::shared_ptr<const internal::EpochRest> rest;
  if (!segments.empty()) {
    SP_ASSIGN_OR_RETURN(internal::EpochRest r,
                        internal::RestOfEpoch(dataset_.source->units(), segments, state.epoch));
    rest = std::make_shared<const internal::EpochRest>(std::move(r));
  }
  const uint64_t batch = same ? state.batch : 0;
  const uint64_t batches = rest != nullptr ? internal::BatchesPerEpoch(rest->count, plan_)
                                           : pipeline_->batches_per_epoch();
  if (batch > batches) {
    return absl::InvalidArgumentError(absl::StrCat("state.batch ", batch,
                                                   " is out of range: 0 to ", batches,
                                                   " (the batches of its epoch)"));
  }
  Stop();
  epoch_ = state.epoch;
  batch_ = batch;
  last_epoch_ended_ = false;
  epoch_batches_ = batches;
  earlier_.clear();
  for (const internal::PlanSegment& p : segments) {
    earlier_.push_back({p.options.world_size, p.options.batch_size, p.options.remainder,
                        p.options.shuffle, p.options.budget_bytes, p.batches});
  }
  rest_ = std::move(rest);
  seq_ = 0;
  return absl::OkStatus();
}

void Reader::Impl::ReportCorrupt(const RingSlot& ring) const {
  if (!options_.corrupt_reporter) return;
  for (const internal::CorruptInBatch& c : ring.corrupt) {
    options_.corrupt_reporter(
        {ring.epoch, ring.batch, c.position,
         Damage{dataset_.ShardPathOf(c.record), internal::ErrorOffset(c.error).value_or(0),
                c.record, c.error}});
  }
}

std::array<int64_t, 4> Reader::Impl::output_shape() const {
  const internal::OutputShape& s = transform_->shape();
  const int64_t n = options_.batch_size;
  if (options_.layout == OutputLayout::kNCHW) return {n, s.channels, s.height, s.width};
  return {n, s.height, s.width, s.channels};
}

ReaderStats Reader::Impl::stats() const {
  ReaderStats s;
  pipeline_->AddStats(&s);
  s.batches = delivered_;
  s.samples = delivered_samples_;
  s.skipped = delivered_skipped_;
  if (stager_ != nullptr) s.consumer_wait_s = stager_->consumer_wait_s();
  return s;
}

// ---- Reader ---------------------------------------------------------------

Reader::Reader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Reader::~Reader() = default;

absl::StatusOr<std::unique_ptr<Reader>> Reader::Open(const ReaderOptions& options) {
  return internal::OpenReaderWithEngine(options, nullptr);
}

absl::StatusOr<std::unique_ptr<Reader>> internal::OpenReaderWithEngine(
    const ReaderOptions& options, std::unique_ptr<CopyEngine> engine) {
  auto impl = std::make_unique<Reader::Impl>();
  SP_RETURN_IF_ERROR(impl->Init(options, std::move(engine)));
  return Reader::Impl::Wrap(std::move(impl));
}

absl::StatusOr<Batch> Reader::Next() { return impl_->Next(this, internal::kNoTimeout); }
absl::StatusOr<Batch> Reader::Next(std::chrono::nanoseconds timeout) {
  return impl_->Next(this, timeout);
}
uint64_t Reader::batches_per_epoch() const { return impl_->batches_per_epoch(); }
uint64_t Reader::batches_in_epoch() const { return impl_->batches_in_epoch(); }
uint64_t Reader::records() const { return impl_->records(); }
int Reader::ring_slots() const { return impl_->ring_slots(); }
uint64_t Reader::fingerprint() const { return impl_->fingerprint(); }
const Schema& Reader::schema() const { return impl_->schema(); }
std::array<int64_t, 4> Reader::output_shape() const { return impl_->output_shape(); }
IoEngine Reader::io_engine() const { return impl_->io_engine(); }
const std::string& Reader::device_fallback() const { return impl_->device_fallback(); }
ReaderState Reader::state() const { return impl_->state(); }
absl::Status Reader::Restore(const ReaderState& state) { return impl_->Restore(state); }
ReaderStats Reader::stats() const { return impl_->stats(); }

// ---- Batch ----------------------------------------------------------------

Batch::Batch(Batch&& other) noexcept : reader_(other.reader_), slot_(other.slot_) {
  other.reader_ = nullptr;
  other.slot_ = nullptr;
}

Batch& Batch::operator=(Batch&& other) noexcept {
  if (this != &other) {
    if (reader_ != nullptr) reader_->impl_->Release(slot_);
    reader_ = other.reader_;
    slot_ = other.slot_;
    other.reader_ = nullptr;
    other.slot_ = nullptr;
  }
  return *this;
}

Batch::~Batch() {
  if (reader_ != nullptr) reader_->impl_->Release(slot_);
}

int Batch::size() const { return slot_->ring->size; }
const void* Batch::images() const { return slot_->ring->images.get(); }
bool Batch::on_device() const { return slot_->device != nullptr; }
const void* Batch::device_images() const {
  return slot_->device != nullptr ? slot_->device : images();
}
void* Batch::device_event() const { return slot_->event; }
std::array<int64_t, 4> Batch::shape() const {
  const internal::OutputShape& s = *slot_->shape;
  if (slot_->layout == OutputLayout::kNCHW) return {size(), s.channels, s.height, s.width};
  return {size(), s.height, s.width, s.channels};
}
uint64_t Batch::image_bytes() const { return uint64_t(size()) * slot_->sample_bytes; }
const int64_t* Batch::labels() const { return slot_->ring->labels.data(); }
int Batch::num_labels() const { return slot_->num_labels; }
uint64_t Batch::record_index(int i) const { return slot_->ring->records[i]; }
std::string_view Batch::key(int i) const {
  return slot_->ring->keys.empty() ? std::string_view() : std::string_view(slot_->ring->keys[i]);
}
uint64_t Batch::epoch() const { return slot_->ring->epoch; }
uint64_t Batch::index() const { return slot_->ring->batch; }
int Batch::skipped() const { return slot_->ring->skipped; }

// ---- Option names -----------------------------------------------------------

// Option values, given by people, parse in any case (format/enum_names.h).
namespace {

using internal::Case;
using internal::NameIn;
template <typename E>
using Name = internal::EnumName<E>;

template <typename E, size_t N>
absl::StatusOr<E> ParseOption(const Name<E> (&names)[N], std::string_view what,
                              std::string_view name) {
  return internal::ParseIn(names, what, name, Case::kAny);
}

constexpr Name<IoEngine> kIoEngines[] = {{IoEngine::kAuto, "auto"},
                                        {IoEngine::kPread, "pread"},
                                        {IoEngine::kDirect, "direct"},
                                        {IoEngine::kMmap, "mmap"},
                                        {IoEngine::kUring, "uring"}};
constexpr Name<OutputLayout> kLayouts[] = {{OutputLayout::kNHWC, "nhwc"},
                                          {OutputLayout::kNCHW, "nchw"}};
constexpr Name<DType> kDTypes[] = {{DType::kUint8, "uint8"}, {DType::kFloat32, "float32"}};
constexpr Name<DeviceDType> kDeviceDTypes[] = {{DeviceDType::kAsHost, "as-host"},
                                              {DeviceDType::kFloat32, "float32"},
                                              {DeviceDType::kFloat16, "float16"}};
constexpr Name<Remainder> kRemainders[] = {
    {Remainder::kDrop, "drop"}, {Remainder::kPartial, "partial"}, {Remainder::kPad, "pad"}};
constexpr Name<OnCorrupt> kOnCorrupt[] = {{OnCorrupt::kError, "error"},
                                         {OnCorrupt::kSkip, "skip"}};

}  // namespace

std::string_view IoEngineName(IoEngine e) { return NameIn(kIoEngines, e); }
absl::StatusOr<IoEngine> ParseIoEngine(std::string_view name) {
  return ParseOption(kIoEngines, "I/O engine", name);
}
std::string_view OutputLayoutName(OutputLayout l) { return NameIn(kLayouts, l); }
absl::StatusOr<OutputLayout> ParseOutputLayout(std::string_view name) {
  return ParseOption(kLayouts, "layout", name);
}
std::string_view DTypeName(DType d) { return NameIn(kDTypes, d); }
absl::StatusOr<DType> ParseDType(std::string_view name) { return ParseOption(kDTypes, "dtype", name); }
std::string_view DeviceDTypeName(DeviceDType d) { return NameIn(kDeviceDTypes, d); }
absl::StatusOr<DeviceDType> ParseDeviceDType(std::string_view name) {
  return ParseOption(kDeviceDTypes, "device dtype", name);
}
std::string_view RemainderName(Remainder r) { return NameIn(kRemainders, r); }
absl::StatusOr<Remainder> ParseRemainder(std::string_view name) {
  return ParseOption(kRemainders, "remainder", name);
}
std::string_view OnCorruptName(OnCorrupt c) { return NameIn(kOnCorrupt, c); }
absl::StatusOr<OnCorrupt> ParseOnCorrupt(std::string_view name) {
  return ParseOption(kOnCorrupt, "on_corrupt", name);
}

absl::StatusOr<Transform> ParseTransform(std::string_view text) {
  std::string_view kind = text.substr(0, text.find(':'));
  Transform t;
  if (kind == "none") {
    t = Transform::None();
  } else if (kind == "cifar-train") {
    t = Transform::CifarTrain();
  } else if (kind == "cifar-eval") {
    t = Transform::CifarEval();
  } else if (kind == "rrc" || kind == "random-resized-crop") {
    t = Transform::RandomResizedCrop();
  } else if (kind == "center" || kind == "center-crop") {
    t = Transform::CenterCrop();
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown transform '", internal::Excerpt(text),
        "' (none, cifar-train[:SIZE], cifar-eval[:SIZE], rrc[:SIZE], center[:SIZE])"));
  }
  if (size_t colon = text.find(':'); colon != std::string_view::npos) {
    const std::string_view size = text.substr(colon + 1);
    if (!absl::SimpleAtoi(AsAbsl(size), &t.size) || t.size < 1 || t.size > kMaxTransformSize) {
      return absl::InvalidArgumentError(absl::StrCat("transform '", internal::Excerpt(text),
                                                     "': SIZE is an integer from 1 to ",
                                                     kMaxTransformSize));
    }
  }
  return t;
}

}  // namespace shardpack
