#include "tools/bench/memcpy_ref.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/os.h"
#include "common/status_macros.h"
#include "common/threads.h"
#include "reader/dataset_units.h"
#include "reader/epoch_plan.h"
#include "reader/pipeline.h"
#include "tools/bench/reader_run.h"

namespace shardpack::shardbench {
namespace {

using Clock = std::chrono::steady_clock;

// The unit sources' buffers are aligned as the reader's are (O_DIRECT).
constexpr size_t kAlignment = 4096;

size_t AlignUp(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<uint8_t, FreeDeleter>;

// Zero-filled, so that its pages are faulted in before any timing.
Buffer AlignedBuffer(size_t bytes) {
  bytes = AlignUp(std::max<size_t>(bytes, 1));
  Buffer b(static_cast<uint8_t*>(std::aligned_alloc(kAlignment, bytes)));
  if (b != nullptr) std::memset(b.get(), 0, bytes);
  return b;
}

// Batch-sized output slots used in turn, as the reader's ring is.
class Ring {
 public:
  Ring(int slots, size_t slot_bytes)
      : memory_(AlignedBuffer(static_cast<size_t>(slots) * slot_bytes)),
        slot_bytes_(slot_bytes),
        slots_(slots) {}
  bool ok() const { return memory_ != nullptr; }
  uint8_t* Next() { return memory_.get() + (next_++ % slots_) * slot_bytes_; }

 private:
  Buffer memory_;
  size_t slot_bytes_;
  uint64_t slots_;
  uint64_t next_ = 0;
};

// Copies batches first, first + step, ... of `src` (one source address per
// position) into `ring`, folding each batch as shardbench's consumer does.
uint64_t CopyBatches(std::span<const uint8_t* const> src, size_t image_bytes, size_t batch_size,
                     size_t first, size_t step, Ring* ring) {
  uint64_t fold = 0;
  const size_t batches = (src.size() + batch_size - 1) / batch_size;
  for (size_t b = first; b < batches; b += step) {
    uint8_t* out = ring->Next();
    const size_t begin = b * batch_size, end = std::min(src.size(), begin + batch_size);
    for (size_t p = begin; p < end; ++p) {
      std::memcpy(out + (p - begin) * image_bytes, src[p], image_bytes);
    }
    fold ^= FoldBytes(out, (end - begin) * image_bytes);
  }
  return fold;
}

}  // namespace

double MemcpyRun::ns_per_image() const {
  return images > 0 ? seconds / static_cast<double>(images) * 1e9 : 0;
}

double MemcpyRun::threads_ns_per_image() const {
  return images > 0 ? threads_seconds / static_cast<double>(images) * 1e9 : 0;
}

double MemcpyRun::gb_per_s() const {
  return seconds > 0 ? static_cast<double>(images * image_bytes) / seconds / 1e9 : 0;
}

struct MemcpyReference::Impl {
  ReaderOptions options;
  reader::StreamDataset dataset;
  reader::PlanOptions plan;
  size_t image_bytes = 0;
  Buffer arena;                       // every unit's load buffer
  std::vector<const uint8_t*> pixels; // record -> its stored pixels

  absl::Status Load();
  // Source addresses of the first `limit` positions of `epoch`'s plan.
  void Gather(uint64_t epoch, uint64_t limit, std::vector<const uint8_t*>* src) const;
  // One variant: `images` copied over `threads` threads; wall seconds.
  absl::StatusOr<double> Time(uint64_t images, int threads, uint64_t* fold) const;
};

absl::Status MemcpyReference::Impl::Load() {
  const std::vector<reader::ReadUnit>& units = dataset.units();
  reader::UnitSource& source = *dataset.source;
  std::vector<size_t> offsets(units.size());
  size_t total = 0;
  for (uint32_t u = 0; u < units.size(); ++u) {
    offsets[u] = total;
    total += AlignUp(source.BufferBytes(u));
  }
  const auto memory = static_cast<double>(common::PhysicalMemoryBytes());
  if (static_cast<double>(total) > memory / 2) {
    return absl::ResourceExhaustedError(absl::StrCat(
        options.path, ": --compare-memcpy loads the whole dataset, ", total,
        " bytes, more than half of this machine's memory (", memory, " bytes)"));
  }
  arena = AlignedBuffer(total);
  if (arena == nullptr) return absl::ResourceExhaustedError("no memory for --compare-memcpy");
  pixels.assign(dataset.records, nullptr);
  for (uint32_t u = 0; u < units.size(); ++u) {
    SP_RETURN_IF_ERROR(source.Submit(u, arena.get() + offsets[u]));
    reader::UnitLoad load = source.Wait();
    if (!load.view.ok()) return load.view.status();
    for (size_t i = 0; i < load.view->size(); ++i) {
      SP_ASSIGN_OR_RETURN(Record record, load.view->record(i));
      const uint64_t index = units[u].first_record + i;
      if (record.image.encoding != Encoding::kRaw || record.payload.size() != image_bytes) {
        return absl::InvalidArgumentError(absl::StrCat(
            options.path, ": record ", index, " holds ", record.payload.size(), " ",
            std::string(EncodingName(record.image.encoding)), " bytes, not the ", image_bytes,
            " raw bytes of the first record; --compare-memcpy needs raw images of one shape"));
      }
      pixels[index] = record.payload.data();
    }
  }
  return absl::OkStatus();
}

void MemcpyReference::Impl::Gather(uint64_t epoch, uint64_t limit,
                                   std::vector<const uint8_t*>* src) const {
  const reader::EpochPlan p = reader::MakeEpochPlan(dataset.units(), plan, epoch);
  const size_t n = static_cast<size_t>(std::min<uint64_t>(limit, p.order.size()));
  src->resize(n);
  for (size_t i = 0; i < n; ++i) (*src)[i] = pixels[reader::RecordAt(p, dataset.units(), i)];
}

absl::StatusOr<double> MemcpyReference::Impl::Time(uint64_t images, int threads,
                                                   uint64_t* fold) const {
  const size_t batch = static_cast<size_t>(options.batch_size);
  std::vector<Ring> rings;
  rings.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    // One copying thread a ring: the ring of a reader with one worker.
    rings.emplace_back(reader::RingSlotsFor(options.ring_slots, batch * image_bytes, 1),
                       batch * image_bytes);
    if (!rings.back().ok()) return absl::ResourceExhaustedError("no memory for the memcpy ring");
  }
  std::vector<const uint8_t*> src;
  std::vector<uint64_t> folds(static_cast<size_t>(threads));
  common::ThreadGroup workers;
  double seconds = 0;
  for (uint64_t epoch = 0, left = images; left > 0; ++epoch) {
    Gather(epoch, left, &src);  // outside the timing: the reader plans ahead too
    if (src.empty()) break;     // a plan of no positions (the reader refuses those)
    const Clock::time_point start = Clock::now();
    if (threads == 1) {
      folds[0] ^= CopyBatches(src, image_bytes, batch, 0, 1, &rings[0]);
    } else {
      SP_RETURN_IF_ERROR(workers.Start(threads, "the memcpy reference's threads", [&](int t) {
        const auto k = static_cast<size_t>(t);
        folds[k] ^= CopyBatches(src, image_bytes, batch, k, folds.size(), &rings[k]);
      }));
      SP_RETURN_IF_ERROR(workers.JoinAll());
    }
    seconds += std::chrono::duration<double>(Clock::now() - start).count();
    left -= src.size();
  }
  for (uint64_t f : folds) *fold ^= f;
  return seconds;
}

MemcpyReference::MemcpyReference(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MemcpyReference::~MemcpyReference() = default;

absl::StatusOr<std::unique_ptr<MemcpyReference>> MemcpyReference::Open(
    const ReaderOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  SP_ASSIGN_OR_RETURN(std::shared_ptr<remote::Storage> storage,
                      remote::Storage::Make(options.cache_dir, options.cache_bytes));
  SP_ASSIGN_OR_RETURN(impl->dataset,
                      reader::OpenStreamDataset(options.path, options.io, std::move(storage)));
  const ImageInfo image = impl->dataset.source->image();
  const uint64_t bytes = image.RawBytes();
  if (image.encoding != Encoding::kRaw || bytes == 0 || bytes == UINT64_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(
        options.path, ": --compare-memcpy copies raw pixels of one shape; this dataset holds ",
        std::string(EncodingName(image.encoding)), " images"));
  }
  impl->image_bytes = static_cast<size_t>(bytes);
  SP_ASSIGN_OR_RETURN(impl->plan, reader::ReaderPlanOptions(options, impl->dataset.units()));
  return std::unique_ptr<MemcpyReference>(new MemcpyReference(std::move(impl)));
}

absl::StatusOr<MemcpyRun> MemcpyReference::Run(uint64_t images, int threads) {
  SP_RETURN_IF_ERROR(impl_->Load());
  MemcpyRun run;
  run.images = images;
  run.image_bytes = impl_->image_bytes;
  run.threads = std::max(threads, 1);
  SP_ASSIGN_OR_RETURN(run.seconds, impl_->Time(images, 1, &run.fold));
  if (run.threads == 1) {
    run.threads_seconds = run.seconds;
  } else {
    uint64_t fold = 0;
    SP_ASSIGN_OR_RETURN(run.threads_seconds, impl_->Time(images, run.threads, &fold));
    // The same bytes in other slots: the folds agree, or the split lost a batch.
    if (fold != run.fold) {
      return absl::InternalError(absl::StrCat("--compare-memcpy: ", run.threads,
                                              " threads folded other bytes than one"));
    }
  }
  return run;
}

}  // namespace shardpack::shardbench
