#include "reader/loader.h"


#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/os.h"
#include "common/threads.h"
#include "reader/io_engine.h"

namespace shardpack::reader {
namespace {

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
  common::AdviseMemory(buffer, capacity / kHugePage * kHugePage, common::MemoryAdvice::kHugePages);
  return static_cast<uint8_t*>(buffer);
}

constexpr uint32_t kPieceStopped = 2;

// Reads the loader keeps in flight: as many units as the read-ahead holds,
// at least 2 (one transferring while the last is parsed), at most what the
// engine takes. No more: a device shares its bandwidth among the reads it is
// given, so with 16 blocks in flight the first block of an epoch arrived
// after all 16 (0.1 s on a cold 650 MB/s disk) and the workers waited.
size_t ReadsInFlight(const LoaderConfig& config, const StreamDataset& dataset) {
  uint64_t unit_bytes = 0;
  for (const ReadUnit& u : dataset.units()) unit_bytes += u.bytes;
  if (!dataset.units().empty()) unit_bytes /= dataset.units().size();
  const uint64_t fit = config.read_ahead_bytes / std::max<uint64_t>(unit_bytes, 1);
  return std::min<size_t>(std::max<uint64_t>(fit, 2), dataset.source->max_in_flight());
}

void MarkReady(std::atomic<uint32_t>& ready) {
  ready.store(1, std::memory_order_release);
  ready.notify_all();
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
  *capacity = common::AlignUp(std::max<size_t>(bytes, 1), kIoAlignment);
  return AllocateReadBuffer(*capacity);
}

void BufferPool::Give(uint8_t* buffer, size_t capacity) {
  if (buffer != nullptr) free_.emplace_back(buffer, capacity);
}

Loader::Loader(const LoaderConfig& config, StreamDataset* dataset,
               const EpochPlanner* planner, const std::atomic<bool>& stop)
    : batch_size_(config.batch_size),
      dataset_(dataset),
      planner_(planner),
      plan_bound_bytes_(planner->MemoryBound()),
      budget_bytes_(SaturatingAdd(config.shuffle_bytes, config.read_ahead_bytes)),
      max_in_flight_(ReadsInFlight(config, *dataset)),
      stop_(stop),
      units_(dataset->units().size()),
      loading_(dataset->units().size(), 0) {}

Loader::~Loader() {
  for (UnitSlot& u : units_) std::free(u.buffer);
}

absl::Status Loader::Start(const StreamStart& start) {
  start_ = start;
  consumer_epoch_ = start.epoch;
  return common::StartThread(&thread_, "the reader's loader thread", [this] { Main(); });
}

void Loader::WakeForStop() {
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
}

void Loader::JoinThread() { thread_.join(); }

void Loader::Settle() {
  Drain();  // reads still in flight write into pooled buffers: finish them
  std::lock_guard<std::mutex> lock(mu_);
  runs_.clear();
  released_.clear();
  for (uint32_t u = 0; u < units_.size(); ++u) {
    units_[u].pins = 0;
    if (units_[u].state != UnitSlot::kAbsent) released_.push_back(u);
  }
}

std::shared_ptr<EpochRun> Loader::PublishRun(uint64_t epoch) {
  auto run = std::make_shared<EpochRun>();
  run->epoch = epoch;
  run->plan = planner_->Plan(epoch, epoch == start_.epoch ? start_.rests.get() : nullptr);
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

void Loader::Main() {
  uint64_t start_position = start_.batch * static_cast<uint64_t>(batch_size_);
  for (uint64_t epoch = start_.epoch;; ++epoch, start_position = 0) {
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

bool Loader::LoadEpoch(EpochRun& run, uint64_t start_position) {
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

bool Loader::Acquire(EpochRun& run, uint32_t piece) {
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
  MarkReady(run.piece_ready[piece]);
  return true;
}

// Evicts released units until `bytes` more fit the budget. Before waiting
// for releases it completes the reads in flight (the workers may need them
// to make progress); it gives up waiting (and goes over the budget) when
// nothing is released for 100 ms, which only a budget too small for the
// batch size can cause.
bool Loader::MakeRoom(uint64_t bytes) {
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

void Loader::Submit(uint32_t unit, EpochRun& run, uint32_t piece) {
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
    MarkReady(run.piece_ready[piece]);
  }
}

void Loader::CompleteOldest() {
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
  for (auto [run, piece] : f.waiters) MarkReady(run->piece_ready[piece]);
}

void Loader::Drain() {
  while (!in_flight_.empty()) CompleteOldest();
}

void Loader::Evict(uint32_t unit) {
  UnitSlot& u = units_[unit];
  if (u.pins.load() != 0 || u.state.load() == UnitSlot::kAbsent || loading_[unit]) return;
  u.state.store(UnitSlot::kAbsent);
  dataset_->source->Release(unit);
  pool_.Give(u.buffer, u.capacity);
  u.buffer = nullptr;
  u.view = UnitView();
  u.error = absl::OkStatus();
  resident_bytes_ -= dataset_->units()[unit].bytes;
}

// ---- Workers and the consumer ------------------------------------------

void Loader::DropPastRuns() {
  // The consumer has had every batch of the epochs before its own, so no
  // worker uses their plans: keeping one more cost 8 bytes a record.
  while (!runs_.empty() && runs_.begin()->first < consumer_epoch_) runs_.erase(runs_.begin());
}

std::shared_ptr<EpochRun> Loader::WaitRun(uint64_t epoch) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return stop_.load() || runs_.count(epoch) > 0; });
  if (stop_) return nullptr;
  return runs_[epoch];
}

void Loader::Unpin(uint32_t unit, int64_t n) {
  if (units_[unit].pins.fetch_sub(n, std::memory_order_acq_rel) == n) {
    std::lock_guard<std::mutex> lock(mu_);
    released_.push_back(unit);
    cv_.notify_all();
  }
}

void Loader::NewConsumerEpoch(uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  consumer_epoch_ = epoch;
  DropPastRuns();
  cv_.notify_all();
}

void Loader::AddStats(ReaderStats* stats) const {
  stats->bytes_read = dataset_->source->bytes_read();
  stats->index_bytes =
      dataset_->source->IndexBytes() + units_.size() * (sizeof(UnitSlot) + sizeof(uint8_t));
  stats->plan_peak_bytes = plan_peak_bytes_.load();
  stats->plan_bytes = std::max(stats->plan_peak_bytes, plan_bound_bytes_);
}

}  // namespace shardpack::reader
