// Reader and Batch: the public face of the pipeline. Reader::Impl is in
// reader/reader_impl.h; this file has Next, the Batch handle and the
// Reader's forwarding.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "reader/reader_impl.h"

namespace shardpack {

using reader::RingSlot;

void Reader::Impl::Stop() {
  if (ring_ != nullptr) ring_->RequestStop();
  if (pipeline_ != nullptr) pipeline_->Stop();
  if (ring_ != nullptr) ring_->Join();
  started_ = false;
}

absl::Status Reader::Impl::EndEpoch() {
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

absl::Status Reader::Impl::Start() {
  absl::Status status = pipeline_->Start(epoch_, batch_, rest_);
  if (status.ok()) {
    status = ring_->Start();
    if (!status.ok()) pipeline_->Stop();
  }
  // Nothing was delivered: the next call tries again from here.
  if (status.ok()) started_ = true;
  return status;
}

absl::StatusOr<Batch> Reader::Impl::Next(Reader* reader, std::chrono::nanoseconds timeout) {
  if (batch_ == epoch_batches_) return EndEpoch();
  // The next batch goes into the slot (or device buffer) of the one
  // delivered slots_.size() calls ago: waiting while a Batch still holds it
  // would never end.
  if (const Batch::Slot& reused = slots_[seq_ % num_slots_];
      reused.held.load(std::memory_order_acquire)) {
    const char* what = ring_->slot_name();
    return absl::FailedPreconditionError(absl::StrCat(
        "the Batch of epoch ", reused.ring->epoch, " batch ", reused.ring->batch,
        " still holds the ", what, "[", reused.seq % num_slots_,
        "] the next batch needs (", num_slots_, " ", what, "): destroy it first; at most ",
        num_slots_ - 1, " Batches may be held across Next()"));
  }
  if (!started_) SP_RETURN_IF_ERROR(Start());
  RingSlot* built = ring_->Take(seq_, timeout);
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
  slot.sample_bytes = sample_bytes_;
  slot.device = ring_->device_buffer(seq_);
  slot.event = ring_->device_event(seq_);
  slot.fields = &fields_;
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
  for (size_t s = 0; s < ring.sources.size(); ++s) source_samples_[s] += ring.sources[s];
  delivered_skipped_ += ring.skipped;
  return Batch(reader, &slot);
}

void Reader::Impl::GiveBack(Batch::Slot* slot) { ring_->Release(slot->seq); }

void Reader::Impl::ReportCorrupt(const RingSlot& ring) const {
  if (!options_.corrupt_reporter) return;
  for (const reader::CorruptInBatch& c : ring.corrupt) {
    options_.corrupt_reporter(
        {ring.epoch, ring.batch, c.position,
         Damage{dataset_.ShardPathOf(c.record), common::ErrorOffset(c.error).value_or(0),
                c.record, c.error}});
  }
}

std::array<int64_t, 4> Reader::Impl::output_shape() const {
  const reader::OutputShape& s = transform_->shape();
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
  s.source_samples = source_samples_;
  s.consumer_wait_s = ring_->consumer_wait_s();
  for (const auto& d : storage_->datasets()) {
    const remote::RemoteStats r = d->stats();
    s.remote.requests += r.store.requests;
    s.remote.bytes += r.store.bytes;
    s.remote.retries += r.store.retries;
    s.remote.cache_hits += r.cache.hits;
    s.remote.cache_misses += r.cache.misses;
    s.remote.cache_kept += r.cache.kept;
    s.remote.cache_evicted += r.cache.evicted;
    s.remote.refetched += r.refetched;
    s.remote.damaged += r.damaged;
  }
  return s;
}

// ---- Reader ---------------------------------------------------------------

Reader::Reader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Reader::~Reader() = default;

absl::StatusOr<Batch> Reader::Next() { return impl_->Next(this, reader::kNoTimeout); }
absl::StatusOr<Batch> Reader::Next(std::chrono::nanoseconds timeout) {
  return impl_->Next(this, timeout);
}
uint64_t Reader::batches_per_epoch() const { return impl_->batches_per_epoch(); }
uint64_t Reader::batches_in_epoch() const { return impl_->batches_in_epoch(); }
uint64_t Reader::records() const { return impl_->records(); }
int Reader::ring_slots() const { return impl_->ring_slots(); }
uint64_t Reader::shuffle_bytes() const { return impl_->shuffle_bytes(); }
uint64_t Reader::fingerprint() const { return impl_->fingerprint(); }
const Schema& Reader::schema() const { return impl_->schema(); }
const std::vector<SourceInfo>& Reader::sources() const { return impl_->sources(); }
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
  const reader::OutputShape& s = *slot_->shape;
  if (slot_->layout == OutputLayout::kNCHW) return {size(), s.channels, s.height, s.width};
  return {size(), s.height, s.width, s.channels};
}
ElementType Batch::dtype() const { return reader_->impl_->dtype(); }
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

int Batch::num_fields() const {
  return slot_->fields->active() ? static_cast<int>(slot_->fields->columns().size()) : 0;
}

BatchField Batch::field(int k) const {
  BatchField f = reader::FieldView(*slot_->fields, slot_->ring->fields, k, size());
  if (slot_->fields->columns()[size_t(k)].kind != reader::ColumnKind::kImages) return f;
  // The transformed image of images(): that tensor.
  static constexpr ArrayDType kElement[] = {ArrayDType::kU8, ArrayDType::kF16, ArrayDType::kF32};
  f.dtype = kElement[static_cast<int>(dtype())];
  f.values = on_device() ? nullptr : images();
  f.rank = 4;
  const std::array<int64_t, 4> s = shape();
  std::copy(s.begin(), s.end(), f.shape.begin());
  return f;
}

int Batch::field_index(std::string_view name) const {
  return slot_->fields->active() ? slot_->fields->Find(name) : -1;
}

const float* Batch::crops() const { return slot_->ring->fields.crops.data(); }
const int32_t* Batch::source_sizes() const { return slot_->ring->fields.sizes.data(); }
const uint8_t* Batch::flips() const { return slot_->ring->fields.flips.data(); }

}  // namespace shardpack
