// The reader's LMDB backend: units are runs of keys, loaded by one cursor
// walk that records a view of each value; nothing is copied.

#include <atomic>
#include <memory>
#include <new>
#include <optional>

#include "absl/strings/str_cat.h"
#include "backends/lmdb_store.h"
#include "backends/shard_gate.h"
#include "common/errors.h"
#include "common/os.h"
#include "common/status_macros.h"
#include "reader/backend_sources.h"

namespace shardpack::reader {
namespace {

// Brings the pages of a unit's values into memory on the loader thread, as a
// block read would, so that workers do not stall on page faults: one
// madvise(WILLNEED) over the span the values cover (MDB_APPEND lays a run of
// keys out in order), then a read of each page.
void FaultIn(std::span<const ByteSpan> values) {
  const uint8_t* lo = nullptr;
  const uint8_t* hi = nullptr;
  for (ByteSpan v : values) {
    if (v.empty()) continue;
    if (lo == nullptr || v.data() < lo) lo = v.data();
    if (hi == nullptr || v.data() + v.size() > hi) hi = v.data() + v.size();
  }
  if (lo == nullptr) return;
  const uintptr_t page = common::PageSize();
  auto start = reinterpret_cast<uintptr_t>(lo) & ~(page - 1);
  common::AdviseMemory(lo, static_cast<size_t>(hi - lo), common::MemoryAdvice::kWillNeed);
  uint8_t sink = 0;
  for (uintptr_t p = start; p < reinterpret_cast<uintptr_t>(hi); p += page) {
    sink ^= *reinterpret_cast<const volatile uint8_t*>(p);
  }
  asm volatile("" : : "r"(sink));
}

class LmdbSource final : public SyncUnitSource {
 public:
  LmdbSource(std::vector<std::string> paths, bool checksummed,
             std::shared_ptr<remote::Storage> storage)
      : paths_(std::move(paths)), checksummed_(checksummed), storage_(std::move(storage)) {}

  // Units are cut from the manifest's counts and sizes alone: a shard is
  // opened (and its CRC-32C checked, see backends/shard_gate.h) when the
  // loader first needs it, so that the first batch does not wait for a pass
  // over the whole dataset.
  absl::Status Init(const Manifest& manifest) {
    manifest_ = manifest;
    uint64_t first = 0;
    for (size_t f = 0; f < paths_.size(); ++f) {
      const ShardEntry& entry = manifest.shards[f];
      // Value bytes per record: what a unit holds in memory (its mapped
      // pages) for the budget, and how many keys make one.
      const uint64_t per_record = std::max<uint64_t>(1, entry.bytes / std::max<uint64_t>(entry.records, 1));
      rows_per_unit_.push_back(std::max<uint64_t>(1, kTargetUnitBytes / per_record));
      CutUnits(static_cast<uint32_t>(f), entry.records, rows_per_unit_.back(), &first,
               [&](uint64_t b, uint64_t e) { return (e - b) * (per_record + sizeof(ByteSpan)); },
               &units_);
    }
    shards_.resize(paths_.size());
    opened_ = std::make_unique<std::atomic<const backends::LmdbShardReader*>[]>(paths_.size());
    open_errors_.resize(paths_.size());
    image_ = manifest.schema.image;
    return absl::OkStatus();
  }

  const std::vector<ReadUnit>& units() const override { return units_; }
  ImageInfo image() const override { return image_; }
  IoEngine engine() const override { return IoEngine::kMmap; }
  uint64_t bytes_read() const override { return bytes_read_; }
  size_t BufferBytes(uint32_t u) const override { return units_[u].records * sizeof(ByteSpan); }

 protected:
  absl::StatusOr<UnitView> Load(uint32_t u, uint8_t* buffer) override {
    const ReadUnit& unit = units_[u];
    const uint64_t begin = unit.block * rows_per_unit_[unit.file];
    SP_RETURN_IF_ERROR(EnsureOpen(unit.file));
    auto* table = reinterpret_cast<ByteSpan*>(buffer);
    // A map that lost pages (the file shrank) reads zeros: say that, rather
    // than what liblmdb makes of them.
    absl::Status scanned = shards_[unit.file]->Scan(
        begin, begin + unit.records, [&](uint64_t index, ByteSpan value) {
          new (table + (index - begin)) ByteSpan(value);
          bytes_read_ += value.size();
          return absl::OkStatus();
        });
    SP_RETURN_IF_ERROR(shards_[unit.file]->CheckIntact());
    SP_RETURN_IF_ERROR(scanned);
    std::span<const ByteSpan> values(table, unit.records);
    FaultIn(values);
    SP_RETURN_IF_ERROR(shards_[unit.file]->CheckIntact());
    return UnitView::Encoded(values, &paths_[unit.file], begin);
  }

  // Any thread: reads the shards the loader published, not shards_.
  absl::Status CheckIntact() const override {
    for (size_t f = 0; f < paths_.size(); ++f) {
      const backends::LmdbShardReader* shard = opened_[f].load(std::memory_order_acquire);
      if (shard != nullptr) SP_RETURN_IF_ERROR(shard->CheckIntact());
    }
    return absl::OkStatus();
  }

 private:
  // Opens shard f through the gate, once: a failure is kept and returned
  // for every later unit of the shard.
  absl::Status EnsureOpen(uint32_t f) {
    if (shards_[f] != nullptr || !open_errors_[f].ok()) return open_errors_[f];
    std::optional<ShardEntry> expected;
    if (checksummed_) expected = manifest_.shards[f];
    auto shard = backends::OpenLmdbShard(paths_[f], expected, storage_.get());
    if (shard.ok()) {
      absl::Status count =
          common::CheckManifestRecords(paths_[f], (*shard)->size(), manifest_.shards[f].records);
      if (!count.ok()) shard = count;
    }
    if (!shard.ok()) {
      open_errors_[f] = shard.status();
      return open_errors_[f];
    }
    shards_[f] = *std::move(shard);
    opened_[f].store(shards_[f].get(), std::memory_order_release);
    return absl::OkStatus();
  }

  std::vector<std::string> paths_;
  bool checksummed_;
  std::shared_ptr<remote::Storage> storage_;  // what a URL path is read through
  Manifest manifest_;
  std::vector<std::unique_ptr<backends::LmdbShardReader>> shards_;  // null until opened
  std::unique_ptr<std::atomic<const backends::LmdbShardReader*>[]> opened_;  // shards_, published
  std::vector<absl::Status> open_errors_;
  std::vector<uint64_t> rows_per_unit_;  // per shard
  std::vector<ReadUnit> units_;
  ImageInfo image_;
  uint64_t bytes_read_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<UnitSource>> OpenLmdbSource(
    const std::vector<std::string>& paths, const Manifest& manifest,
    bool checksummed, std::shared_ptr<remote::Storage> storage) {
  auto source = std::make_unique<LmdbSource>(paths, checksummed, std::move(storage));
  SP_RETURN_IF_ERROR(source->Init(manifest));
  return source;
}

}  // namespace shardpack::reader
