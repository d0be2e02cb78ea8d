#include "reader/pipeline.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "format/coding.h"
#include "format/mapping_guard.h"
#include "format/threads.h"
#include "common/rng.h"
#include "reader/prefetch.h"
#include "reader/staging.h"
#include "reader/wait.h"

namespace shardpack::internal {
namespace {

uint8_t* AlignedAlloc(size_t bytes) {
  size_t rounded = AlignUp(std::max<size_t>(bytes, 1), kIoAlignment);
  return static_cast<uint8_t*>(std::aligned_alloc(kIoAlignment, rounded));
}

// A read buffer of `capacity` bytes (a multiple of kIoAlignment). Block-sized
// buffers start on a huge-page boundary and ask for transparent huge pages:
// the first read into a fresh buffer then faults in two 2 MiB pages instead
// of a thousand 4 KiB ones, which is most of what an O_DIRECT read into a new
// buffer costs beyond the transfer. The tail past the last whole huge page
// stays in small pages, so RSS grows by what is used, as the budget counts.
uint8_t* AllocateReadBuffer(size_t capacity) {
  constexpr size_t kHugePage = size_t{2} << 20;
  if (capacity < kHugePage) return static_cast<uint8_t*>(std::aligned_alloc(kIoAlignment, capacity));
  void* buffer = nullptr;
  if (posix_memalign(&buffer, kHugePage, capacity) != 0) return nullptr;
  madvise(buffer, capacity / kHugePage * kHugePage, MADV_HUGEPAGE);  // a hint: failure is fine
  return static_cast<uint8_t*>(buffer);
}

constexpr uint32_t kPieceStopped = 2;

// a + b + ..., or UINT64_MAX when that does not fit.
template <typename... More>
uint64_t SaturatingAdd(uint64_t a, uint64_t b, More... more) {
  const uint64_t sum = a + b < a ? UINT64_MAX : a + b;
  if constexpr (sizeof...(more) == 0) {
    return sum;
  } else {
    return SaturatingAdd(sum, static_cast<uint64_t>(more)...);
  }
}

// Reads the loader keeps in flight: as many units as the read-ahead holds,
// at least 2 (one transferring while the last is parsed), at most what the
// engine takes. No more: a device shares its bandwidth among the reads it is
// given, so with 16 blocks in flight the first block of an epoch arrived
// after all 16 (0.1 s on a cold 650 MB/s disk) and the workers waited.
size_t ReadsInFlight(const ReaderOptions& options, const StreamDataset& dataset) {
  uint64_t unit_bytes = 0;
  for (const ReadUnit& u : dataset.units()) unit_bytes += u.bytes;
  if (!dataset.units().empty()) unit_bytes /= dataset.units().size();
  const uint64_t fit = options.read_ahead_bytes / std::max<uint64_t>(unit_bytes, 1);
  return std::min<size_t>(std::max<uint64_t>(fit, 2), dataset.source->max_in_flight());
}

}  // namespace

BufferPool::~BufferPool() {
  for (auto& [buffer, capacity] : free_) std::free(buffer);
}

uint8_t* BufferPool::Take(size_t bytes, size_t* capacity) {
  // Best fit among the free buffers; units of one dataset have similar sizes.
  size_t best = free_.size();
  for (size_t i = 0; i < free_.size(); ++i) {
    if (free_[i].second >= bytes && (best == free_.size() || free_[i].second < free_[best].second)) {
      best = i;
    }
  }
  if (best != free_.size()) {
    auto [buffer, cap] = free_[best];
    free_[best] = free_.back();
    free_.pop_back();
    *capacity = cap;
    return buffer;
  }
  // Nothing fits: drop the largest spare (it is too small anyway) and grow.
  if (!free_.empty()) {
    std::free(free_.back().first);
    free_.pop_back();
  }
  *capacity = AlignUp(std::max<size_t>(bytes, 1), kIoAlignment);
  return AllocateReadBuffer(*capacity);
}

void BufferPool::Give(uint8_t* buffer, size_t capacity) {
  if (buffer != nullptr) free_.emplace_back(buffer, capacity);
}

Pipeline::Pipeline(const ReaderOptions& options, StreamDataset* dataset,
                   const SampleTransform* transform, const PlanOptions& plan_options,
                   int num_labels, CopyEngine* host_memory)
    : options_(options),
      dataset_(dataset),
      transform_(transform),
      plan_options_(plan_options),
      num_labels_(num_labels),
      batches_per_epoch_(BatchesPerEpoch(dataset->records, plan_options)),
      plan_bound_bytes_(PlanMemoryBound(dataset->units(), plan_options)),
      budget_bytes_(SaturatingAdd(options.shuffle_bytes, options.read_ahead_bytes)),
      max_in_flight_(ReadsInFlight(options, *dataset)),
      units_(dataset->units().size()),
      ring_(static_cast<size_t>(options.ring_slots)),
      loading_(dataset->units().size(), 0) {
  const size_t batch = static_cast<size_t>(options.batch_size);
  for (RingSlot& slot : ring_) {
    const size_t bytes = batch * transform->shape().sample_bytes;
    slot.images = {host_memory != nullptr ? host_memory->HostAlloc(bytes) : AlignedAlloc(bytes),
                   SlotFree{host_memory}};
    slot.labels.resize(batch * num_labels);
    slot.records.resize(batch);
    if (options.keys) slot.keys.resize(batch);
  }
}

absl::Status Pipeline::CheckRing(const std::string& path) const {
  for (const RingSlot& slot : ring_) {
    if (slot.images == nullptr) {
      return absl::ResourceExhaustedError(absl::StrCat(path, ": out of memory for a batch of ",
                                                       options_.batch_size, " samples of ",
                                                       transform_->shape().sample_bytes, " bytes"));
    }
  }
  return absl::OkStatus();
}

Pipeline::~Pipeline() {
  Stop();
  for (UnitSlot& u : units_) std::free(u.buffer);
}

absl::Status Pipeline::Start(uint64_t epoch, uint64_t batch,
                             std::shared_ptr<const EpochRest> rest) {
  start_epoch_ = epoch;
  start_batch_ = batch;
  rest_ = std::move(rest);
  start_epoch_batches_ =
      rest_ != nullptr ? BatchesPerEpoch(rest_->count, plan_options_) : batches_per_epoch_;
  stop_ = false;
  next_build_ = 0;
  consumer_epoch_ = epoch;
  for (size_t k = 0; k < ring_.size(); ++k) {
    ring_[k].ready = 0;
    ring_[k].free_for = k;
  }
  absl::Status status = internal::StartThread(&loader_, "the reader's loader thread",
                                              [this] { LoaderMain(); });
  const int threads = WorkerThreads(options_.threads);
  for (int t = 0; t < threads && status.ok(); ++t) {
    std::thread worker;
    status = internal::StartThread(
        &worker, absl::StrCat("reader worker thread ", t + 1, " of ", threads),
        [this] { WorkerMain(); });
    if (status.ok()) workers_.push_back(std::move(worker));
  }
  // What started is stopped again: the reader may try later (fewer
  // threads elsewhere in the process, a raised limit).
  if (!status.ok()) Stop();
  return status;
}

void Pipeline::Stop() {
  if (!loader_.joinable()) return;
  stop_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [epoch, run] : runs_) {
      for (size_t i = 0; i < run->plan.pieces.size(); ++i) {
        run->piece_ready[i].store(kPieceStopped);
        run->piece_ready[i].notify_all();
      }
    }
  }
  cv_.notify_all();
  for (RingSlot& slot : ring_) {
    slot.free_for.store(UINT64_MAX);
    slot.free_for.notify_all();
  }
  built_.Ring();  // stop_ is set
  loader_.join();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  Drain();  // reads still in flight write into pooled buffers: finish them
  // Loaded units stay cached for a restart, unpinned and evictable.
  std::lock_guard<std::mutex> lock(mu_);
  runs_.clear();
  released_.clear();
  for (uint32_t u = 0; u < units_.size(); ++u) {
    units_[u].pins = 0;
    if (units_[u].state != UnitSlot::kAbsent) released_.push_back(u);
  }
}

// ---- Loader -------------------------------------------------------------

std::shared_ptr<EpochRun> Pipeline::PublishRun(uint64_t epoch) {
  auto run = std::make_shared<EpochRun>();
  run->epoch = epoch;
  run->plan = MakeEpochPlan(dataset_->units(), plan_options_, epoch,
                            epoch == start_epoch_ ? rest_.get() : nullptr);
  run->piece_ready = std::make_unique<std::atomic<uint32_t>[]>(run->plan.pieces.size());
  std::lock_guard<std::mutex> lock(mu_);
  DropPastRuns();
  // What the plans held at once: those published, while this one was built
  // and once it is published (the budget reports the most).
  uint64_t live = 0;
  for (const auto& [e, r] : runs_) live += PlanBytes(r->plan) + r->plan.pieces.size() * 4;
  const uint64_t mine = PlanBytes(run->plan) + run->plan.pieces.size() * 4;
  plan_peak_bytes_ = std::max({plan_peak_bytes_.load(), live + run->plan.build_bytes, live + mine});
  runs_[epoch] = run;
  cv_.notify_all();
  return run;
}

void Pipeline::LoaderMain() {
  uint64_t start_position = start_batch_ * static_cast<uint64_t>(options_.batch_size);
  for (uint64_t epoch = start_epoch_;; ++epoch, start_position = 0) {
    {
      // At most one epoch ahead of the consumer, whose epoch is never past
      // this one (it takes batches of published epochs): a difference, which
      // cannot wrap as consumer_epoch_ + 1 would.
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_.load() || epoch - consumer_epoch_.load() <= 1; });
    }
    if (stop_) return;
    std::shared_ptr<EpochRun> run = PublishRun(epoch);
    if (!LoadEpoch(*run, start_position)) return;
  }
}

bool Pipeline::LoadEpoch(EpochRun& run, uint64_t start_position) {
  const EpochPlan& plan = run.plan;
  std::vector<uint32_t> uses(plan.pieces.size());
  for (size_t i = 0; i < plan.pieces.size(); ++i) uses[i] = plan.pieces[i].uses;
  if (start_position > 0) {  // a restore: only the uses still to come count
    std::fill(uses.begin(), uses.end(), 0);
    for (uint64_t p = start_position; p < plan.order.size(); ++p) ++uses[plan.order[p].piece];
  }
  for (uint32_t i = 0; i < plan.pieces.size(); ++i) {
    if (stop_) return false;
    if (uses[i] == 0) {
      run.piece_ready[i].store(1, std::memory_order_release);
      continue;
    }
    units_[plan.pieces[i].unit].pins.fetch_add(uses[i]);
    if (!Acquire(run, i)) return false;
  }
  // The loader may now block on the consumer: finish what is in flight first.
  Drain();
  return !stop_;
}

bool Pipeline::Acquire(EpochRun& run, uint32_t piece) {
  const uint32_t unit = run.plan.pieces[piece].unit;
  if (loading_[unit]) {
    for (InFlight& f : in_flight_) {
      if (f.unit == unit) f.waiters.emplace_back(&run, piece);
    }
    return true;
  }
  if (units_[unit].state.load(std::memory_order_acquire) == UnitSlot::kAbsent) {
    if (!MakeRoom(dataset_->units()[unit].bytes)) return false;
    Submit(unit, run, piece);
    if (in_flight_.size() >= max_in_flight_) CompleteOldest();
    return true;
  }
  run.piece_ready[piece].store(1, std::memory_order_release);
  run.piece_ready[piece].notify_all();
  return true;
}

// Evicts released units until `bytes` more fit the budget. Before waiting
// for releases it completes the reads in flight (the workers may need them
// to make progress); it gives up waiting (and goes over the budget) when
// nothing is released for 100 ms, which only a budget too small for the
// batch size can cause.
bool Pipeline::MakeRoom(uint64_t bytes) {
  int idle_rounds = 0;
  while (resident_bytes_ > 0 && resident_bytes_ + bytes > budget_bytes_ && !stop_) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!released_.empty()) {
      uint32_t v = released_.front();
      released_.pop_front();
      Evict(v);
      continue;
    }
    if (!in_flight_.empty()) {
      lock.unlock();
      Drain();
      continue;
    }
    if (cv_.wait_for(lock, std::chrono::milliseconds(20)) == std::cv_status::timeout &&
        ++idle_rounds >= 5) {
      break;
    }
  }
  return !stop_;
}

void Pipeline::Submit(uint32_t unit, EpochRun& run, uint32_t piece) {
  UnitSlot& u = units_[unit];
  const size_t bytes = dataset_->source->BufferBytes(unit);
  u.buffer = pool_.Take(bytes, &u.capacity);
  resident_bytes_ += dataset_->units()[unit].bytes;
  loading_[unit] = 1;
  in_flight_.push_back({unit, {{&run, piece}}});
  // A unit's size comes from its file: a buffer that cannot be had fails
  // the unit (an error out of Next()), never a read into null.
  absl::Status s =
      u.buffer != nullptr
          ? dataset_->source->Submit(unit, u.buffer)
          : absl::ResourceExhaustedError(absl::StrCat(
                dataset_->UnitPath(unit), ": out of memory for a read of ",
                bytes, " bytes (records ", dataset_->units()[unit].first_record, "..)"));
  if (!s.ok()) {  // misuse or no memory, not data: report it through the unit all the same
    in_flight_.pop_back();
    loading_[unit] = 0;
    u.error = s;
    u.state.store(UnitSlot::kFailed, std::memory_order_release);
    run.piece_ready[piece].store(1, std::memory_order_release);
    run.piece_ready[piece].notify_all();
  }
}

void Pipeline::CompleteOldest() {
  UnitLoad done = dataset_->source->Wait();
  InFlight f = std::move(in_flight_.front());
  in_flight_.pop_front();
  UnitSlot& u = units_[f.unit];
  absl::Status s = done.view.status();
  if (s.ok()) u.view = *done.view;
  loads_.fetch_add(1, std::memory_order_relaxed);
  u.error = s;
  u.state.store(s.ok() ? UnitSlot::kReady : UnitSlot::kFailed, std::memory_order_release);
  loading_[f.unit] = 0;
  for (auto [run, piece] : f.waiters) {
    run->piece_ready[piece].store(1, std::memory_order_release);
    run->piece_ready[piece].notify_all();
  }
}

void Pipeline::Drain() {
  while (!in_flight_.empty()) CompleteOldest();
}

void Pipeline::Evict(uint32_t unit) {
  UnitSlot& u = units_[unit];
  if (u.pins.load() != 0 || u.state.load() == UnitSlot::kAbsent || loading_[unit]) return;
  u.state.store(UnitSlot::kAbsent);
  pool_.Give(u.buffer, u.capacity);
  u.buffer = nullptr;
  u.view = UnitView();
  u.error = absl::OkStatus();
  resident_bytes_ -= dataset_->units()[unit].bytes;
}

// ---- Workers ------------------------------------------------------------

void Pipeline::DropPastRuns() {
  // The consumer has had every batch of the epochs before its own, so no
  // worker uses their plans: keeping one more cost 8 bytes a record.
  while (!runs_.empty() && runs_.begin()->first < consumer_epoch_) runs_.erase(runs_.begin());
}

std::shared_ptr<EpochRun> Pipeline::WaitRun(uint64_t epoch) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return stop_.load() || runs_.count(epoch) > 0; });
  if (stop_) return nullptr;
  return runs_[epoch];
}

void Pipeline::WorkerMain() {
  for (;;) {
    uint64_t seq = next_build_.fetch_add(1);
    RingSlot& slot = ring_[seq % ring_.size()];
    if (!WaitFor(slot.free_for, seq, stop_, &transform_wait_ns_)) return;
    BuildBatch(seq, slot);
    if (stop_) return;
    slot.ready.store(seq + 1, std::memory_order_release);
    built_.Ring();
  }
}

void Pipeline::Unpin(uint32_t unit, int64_t n) {
  if (units_[unit].pins.fetch_sub(n, std::memory_order_acq_rel) == n) {
    std::lock_guard<std::mutex> lock(mu_);
    released_.push_back(unit);
    cv_.notify_all();
  }
}

// Epochs stay within kMaxEpoch + ring slots (Reader refuses to go past
// kMaxEpoch; workers run at most a ring ahead of it): no sum here wraps.
void Pipeline::Locate(uint64_t seq, uint64_t* epoch, uint64_t* batch) const {
  const uint64_t global = start_batch_ + seq;
  if (global < start_epoch_batches_) {
    *epoch = start_epoch_;
    *batch = global;
    return;
  }
  const uint64_t after = global - start_epoch_batches_;
  *epoch = start_epoch_ + 1 + after / batches_per_epoch_;
  *batch = after % batches_per_epoch_;
}

int WorkerThreads(int requested) {
  if (requested > 0) return requested;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

int RingSlotsFor(int requested, uint64_t batch_bytes, int workers) {
  if (requested != kAutoRingSlots) return requested;
  constexpr uint64_t kRingBytes = uint64_t{32} << 20;
  const uint64_t small = std::clamp<uint64_t>(kRingBytes / std::max<uint64_t>(batch_bytes, 1), 4, 16);
  return static_cast<int>(
      std::min<uint64_t>(std::max<uint64_t>(small, uint64_t(std::max(workers, 1)) + 2), kMaxRingSlots));
}

void Pipeline::BuildBatch(uint64_t seq, RingSlot& slot) {
  Locate(seq, &slot.epoch, &slot.batch);
  std::shared_ptr<EpochRun> run = WaitRun(slot.epoch);
  if (run == nullptr) return;
  const EpochPlan& plan = run->plan;
  const uint64_t batch_size = static_cast<uint64_t>(options_.batch_size);
  const uint64_t first = slot.batch * batch_size;
  slot.size = static_cast<int>(std::min<uint64_t>(batch_size, plan.order.size() - first));
  slot.skipped = 0;
  slot.status = absl::OkStatus();
  slot.corrupt.clear();
  const size_t row_bytes = transform_->shape().sample_bytes;

  // Damaged samples (with kSkip): their rows are refilled from good ones
  // afterwards. Rare, so the lists may allocate.
  std::vector<int> bad;
  // Shuffled records are scattered over the resident blocks: fetch each a
  // few samples ahead so that its cache misses overlap the work on those
  // before it. The first kAhead go in one burst; each later one is handed to
  // the transform kAhead samples before it, which spreads its fetches over
  // its own work (reader/prefetch.h).
  constexpr int kAhead = 3;
  auto record_bytes = [&](int j) -> ByteSpan {
    if (j >= slot.size) return {};
    const SampleRef r = plan.order[first + j];
    if (run->piece_ready[r.piece].load(std::memory_order_acquire) != 1) return {};
    const UnitSlot& pu = units_[plan.pieces[r.piece].unit];
    if (pu.state.load(std::memory_order_acquire) != UnitSlot::kReady) return {};
    return pu.view.record_bytes(r.index);
  };
  for (int j = 0; j < kAhead; ++j) PrefetchLines(record_bytes(j));
  // A mapped file that shrank under us reads as zeros (format/mapping_guard.h):
  // a batch built while that happened is an error, whatever on_corrupt says,
  // since which samples read zeros is not known.
  const uint64_t faults_before = ContainedMappingFaults();
  for (int i = 0; i < slot.size; ++i) {
    // A stopping reader does not wait for the rest of a long batch.
    if (stop_.load(std::memory_order_relaxed)) return;
    const ByteSpan ahead = record_bytes(i + kAhead);
    const SampleRef ref = plan.order[first + i];
    if (!WaitFor(run->piece_ready[ref.piece], 1u, stop_, &io_wait_ns_)) return;
    const uint32_t unit = plan.pieces[ref.piece].unit;
    const UnitSlot& u = units_[unit];
    const uint64_t record_index = dataset_->units()[unit].first_record + ref.index;
    slot.records[i] = record_index;
    absl::Status s = u.error;
    if (u.state.load(std::memory_order_acquire) == UnitSlot::kReady) {
      absl::StatusOr<Record> record = u.view.record(ref.index);
      s = record.status();
      // A record that disagrees with the schema is damage (on_corrupt), never
      // a sample with a missing label or a shape the transform did not plan.
      if (s.ok() && dataset_->named.schema_known()) {
        s = CheckRecordAgainstSchema(*record, dataset_->manifest().schema);
        if (!s.ok()) {
          s = absl::DataLossError(absl::StrCat(dataset_->UnitPath(unit),
                                               ": dataset record ", record_index, ": ", s.message()));
        }
      }
      if (s.ok()) {
        s = transform_->Apply(*record, slot.epoch, record_index,
                              slot.images.get() + row_bytes * i, ahead);
        for (int j = 0; j < num_labels_; ++j) {
          slot.labels[i * num_labels_ + j] = j < record->labels.size() ? record->labels[j] : -1;
        }
        if (options_.keys) slot.keys[i].assign(record->key.data(), record->key.size());
        if (!s.ok()) s = absl::DataLossError(absl::StrCat(dataset_->UnitPath(unit), ": ", s.message()));
      }
    }
    if (!s.ok()) {
      if (options_.on_corrupt == OnCorrupt::kError) {
        if (slot.status.ok()) slot.status = s;
      } else {
        bad.push_back(i);
        slot.corrupt.push_back({i, record_index, std::move(s)});
      }
    }
  }
  if (ContainedMappingFaults() != faults_before) {
    if (absl::Status intact = dataset_->source->CheckIntact(); !intact.ok()) {
      slot.status = std::move(intact);
      bad.clear();
      slot.corrupt.clear();
    }
  }
  if (!bad.empty()) {
    std::vector<int> good;
    size_t b = 0;
    for (int i = 0; i < slot.size; ++i) {
      if (b < bad.size() && bad[b] == i) {
        ++b;
      } else {
        good.push_back(i);
      }
    }
    if (good.empty()) {
      slot.status = absl::DataLossError(absl::StrCat("every sample of batch ", slot.batch,
                                                     " of epoch ", slot.epoch, " is damaged"));
    }
    for (int i : bad) {
      if (good.empty()) break;
      int j = good[Below(Draw(options_.seed, kStreamReplace, slot.epoch, first + i), good.size())];
      std::memcpy(slot.images.get() + row_bytes * i, slot.images.get() + row_bytes * j, row_bytes);
      std::memcpy(&slot.labels[i * num_labels_], &slot.labels[j * num_labels_],
                  sizeof(int64_t) * num_labels_);
      slot.records[i] = slot.records[j];
      if (options_.keys) slot.keys[i] = slot.keys[j];
    }
    slot.skipped = static_cast<int>(bad.size());
    skipped_.fetch_add(bad.size(), std::memory_order_relaxed);
  }
  // Unpin, one atomic per run of samples from the same unit.
  for (int i = 0; i < slot.size;) {
    uint32_t unit = plan.pieces[plan.order[first + i].piece].unit;
    int n = 1;
    while (i + n < slot.size && plan.pieces[plan.order[first + i + n].piece].unit == unit) ++n;
    Unpin(unit, n);
    i += n;
  }
  samples_.fetch_add(slot.size, std::memory_order_relaxed);
}

// ---- Consumer -----------------------------------------------------------

RingSlot* Pipeline::WaitBuilt(uint64_t seq, std::chrono::nanoseconds timeout) {
  RingSlot& slot = ring_[seq % ring_.size()];
  if (!built_.Wait(slot.ready, seq + 1, stop_, &consumer_wait_ns_, timeout)) {
    return stop_.load() ? &slot : nullptr;
  }
  if (slot.epoch != consumer_epoch_.load()) {
    std::lock_guard<std::mutex> lock(mu_);
    consumer_epoch_ = slot.epoch;
    DropPastRuns();
    cv_.notify_all();
  }
  return &slot;
}

void Pipeline::Release(uint64_t seq) {
  RingSlot& slot = ring_[seq % ring_.size()];
  slot.free_for.store(seq + ring_.size(), std::memory_order_release);
  slot.free_for.notify_all();
}

void Pipeline::AddStats(ReaderStats* stats) const {
  stats->samples = samples_.load();
  stats->skipped = skipped_.load();
  stats->bytes_read = dataset_->source->bytes_read();
  stats->io_wait_s = io_wait_ns_.load() * 1e-9;
  stats->transform_wait_s = transform_wait_ns_.load() * 1e-9;
  stats->consumer_wait_s = consumer_wait_ns_.load() * 1e-9;
  stats->index_bytes =
      dataset_->source->IndexBytes() + units_.size() * (sizeof(UnitSlot) + sizeof(uint8_t));
  stats->plan_peak_bytes = plan_peak_bytes_.load();
  stats->plan_bytes = std::max(stats->plan_peak_bytes, plan_bound_bytes_);
  // Saturated: shuffle_bytes and read_ahead_bytes may be as large as 2^64-1.
  stats->memory_budget_bytes = SaturatingAdd(
      budget_bytes_, ring_.size() * options_.batch_size * transform_->shape().sample_bytes,
      stats->index_bytes, stats->plan_bytes);
}

}  // namespace shardpack::internal
