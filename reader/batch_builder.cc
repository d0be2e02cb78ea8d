#include "reader/batch_builder.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/mapping_guard.h"
#include "common/status_macros.h"
#include "common/rng.h"
#include "common/threads.h"
#include "reader/prefetch.h"
#include "reader/wait.h"

namespace shardpack::reader {
namespace {

// A member's stored labels as the batch gives them (LabelMapping). The
// schema check let through only labels within their field's classes.
void MapLabels(const LabelMapping& m, int num_labels, int64_t* labels) {
  const int fields = m.source >= 0 ? num_labels - 1 : num_labels;
  for (int j = 0; j < fields; ++j) {
    int64_t& v = labels[j];
    if (v < 0) continue;
    if (static_cast<size_t>(j) < m.map.size() && !m.map[j].empty()) {
      v = static_cast<uint64_t>(v) < m.map[j].size() ? m.map[j][static_cast<size_t>(v)] : -1;
    }
    if (static_cast<size_t>(j) < m.offset.size() && v >= 0) v += m.offset[j];
  }
  if (m.source >= 0) labels[num_labels - 1] = m.source;
}

}  // namespace

BatchBuilder::BatchBuilder(const BuilderConfig& config, StreamDataset* dataset,
                           const BatchSpec& spec, Loader* loader, HostRing* ring,
                           uint64_t batches_per_epoch, const std::atomic<bool>& stop)
    : config_(config),
      dataset_(dataset),
      transform_(spec.transform),
      followers_(spec.followers),
      fields_(*spec.fields),
      loader_(loader),
      ring_(ring),
      num_labels_(spec.num_labels),
      batches_per_epoch_(batches_per_epoch),
      stop_(stop) {
  SP_DCHECK(config.threads >= 1);
  size_t most = 0;
  if (fields_.active()) {
    for (const StreamMember& m : dataset->members) {
      decoders_.emplace_back(m.named->manifest.schema);
      most = std::max(most, decoders_.back().fields().size());
    }
  }
  for (int t = 0; t < config.threads; ++t) {
    workers_.push_back(std::make_unique<Worker>());
    workers_.back()->values.resize(most);
  }
}

BatchBuilder::~BatchBuilder() { Join(); }

absl::Status BatchBuilder::Start(const StreamStart& start) {
  start_ = start;
  next_build_ = 0;
  absl::Status status;
  const size_t n = workers_.size();
  for (size_t t = 0; t < n && status.ok(); ++t) {
    std::thread thread;
    Worker* worker = workers_[t].get();
    status = common::StartThread(&thread,
                                   absl::StrCat("reader worker thread ", t + 1, " of ", n),
                                   [this, worker] { WorkerMain(*worker); });
    if (status.ok()) threads_.push_back(std::move(thread));
  }
  return status;
}

void BatchBuilder::Join() {
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void BatchBuilder::WorkerMain(Worker& worker) {
  for (;;) {
    const uint64_t seq = next_build_.fetch_add(1);
    RingSlot* slot = ring_->Claim(seq, &transform_wait_ns_);
    if (slot == nullptr) return;
    BuildBatch(worker, seq, *slot);
    if (stop_) return;
    ring_->Publish(seq, *slot);
  }
}

// Epochs stay within kMaxEpoch + ring slots (Reader refuses to go past
// kMaxEpoch; workers run at most a ring ahead of it): no sum here wraps.
void BatchBuilder::Locate(uint64_t seq, uint64_t* epoch, uint64_t* batch) const {
  const uint64_t global = start_.batch + seq;
  if (global < start_.epoch_batches) {
    *epoch = start_.epoch;
    *batch = global;
    return;
  }
  const uint64_t after = global - start_.epoch_batches;
  *epoch = start_.epoch + 1 + after / batches_per_epoch_;
  *batch = after % batches_per_epoch_;
}

void BatchBuilder::BuildBatch(Worker& worker, uint64_t seq, RingSlot& slot) {
  Locate(seq, &slot.epoch, &slot.batch);
  std::shared_ptr<EpochRun> run = loader_->WaitRun(slot.epoch);
  if (run == nullptr) return;
  const EpochPlan& plan = run->plan;
  const uint64_t batch_size = static_cast<uint64_t>(config_.batch_size);
  const uint64_t first = slot.batch * batch_size;
  slot.size = static_cast<int>(std::min<uint64_t>(batch_size, plan.order.size() - first));
  slot.skipped = 0;
  slot.status = absl::OkStatus();
  slot.corrupt.clear();
  slot.sources.assign(dataset_->sources, 0);  // no allocation after the slot's first batch
  if (fields_.active()) BeginFields(fields_, slot.fields);
  worker.bad.clear();
  if (!BuildRows(worker, *run, first, slot)) return;
  if (!worker.bad.empty()) ReplaceDamaged(worker, first, slot);
  UnpinBatch(plan, first, slot.size);
  samples_.fetch_add(slot.size, std::memory_order_relaxed);
}

const UnitView* BatchBuilder::ReadyView(const EpochRun& run, uint64_t first, int size, int j,
                                        uint32_t* index) const {
  if (j >= size) return nullptr;
  const SampleRef r = run.plan.order[first + j];
  if (run.piece_ready[r.piece].load(std::memory_order_acquire) != 1) return nullptr;
  const UnitSlot& pu = loader_->unit(run.plan.pieces[r.piece].unit);
  if (pu.state.load(std::memory_order_acquire) != UnitSlot::kReady) return nullptr;
  *index = r.index;
  return &pu.view;
}

ByteSpan BatchBuilder::RecordBytes(const EpochRun& run, uint64_t first, int size, int j) const {
  uint32_t index = 0;
  const UnitView* view = ReadyView(run, first, size, j, &index);
  return view == nullptr ? ByteSpan() : view->record_bytes(index);
}

bool BatchBuilder::BuildRows(Worker& worker, const EpochRun& run, uint64_t first,
                             RingSlot& slot) {
  // Shuffled records are scattered over the resident blocks: fetch each a
  // few samples ahead so that its cache misses overlap the work on those
  // before it. The first kAhead go in one burst; each later one is handed to
  // the transform kAhead samples before it, which spreads its fetches over
  // its own work (reader/prefetch.h). Where a record lies is itself looked
  // up in its block's offsets, which the stream of records pushes out of
  // the cache: those go kAhead samples earlier still.
  constexpr int kAhead = 3;
  for (int j = 0; j < kAhead; ++j) PrefetchLines(RecordBytes(run, first, slot.size, j));
  // A mapped file that shrank under us reads as zeros (common/mapping_guard.h):
  // a batch built while that happened is an error, whatever on_corrupt says,
  // since which samples read zeros is not known.
  const uint64_t faults_before = common::ContainedMappingFaults();
  for (int i = 0; i < slot.size; ++i) {
    // A stopping reader does not wait for the rest of a long batch.
    if (stop_.load(std::memory_order_relaxed)) return false;
    uint32_t later = 0;
    if (const UnitView* v = ReadyView(run, first, slot.size, i + 2 * kAhead, &later)) {
      v->PrefetchIndex(later);
    }
    const ByteSpan ahead = RecordBytes(run, first, slot.size, i + kAhead);
    const SampleRef ref = run.plan.order[first + i];
    if (!WaitFor(run.piece_ready[ref.piece], 1u, stop_, &io_wait_ns_)) return false;
    absl::Status s =
        BuildRow(worker, run.plan.pieces[ref.piece].unit, ref.index, i, ahead, slot);
    if (!s.ok()) Damaged(worker, i, std::move(s), slot);
  }
  if (common::ContainedMappingFaults() != faults_before) {
    if (absl::Status intact = dataset_->source->CheckIntact(); !intact.ok()) {
      slot.status = std::move(intact);
      worker.bad.clear();
      slot.corrupt.clear();
    }
  }
  return true;
}

absl::Status BatchBuilder::BuildRow(Worker& worker, uint32_t unit, uint32_t index, int i,
                                    ByteSpan ahead, RingSlot& slot) {
  const UnitSlot& u = loader_->unit(unit);
  const uint64_t record_index = dataset_->units()[unit].first_record + index;
  slot.records[i] = record_index;
  if (u.state.load(std::memory_order_acquire) != UnitSlot::kReady) return u.error;
  absl::StatusOr<Record> record = u.view.record(index);
  if (!record.ok()) return record.status();
  const StreamMember& member = dataset_->MemberOf(unit);
  int64_t* labels = &slot.labels[i * num_labels_];
  for (int j = 0; j < num_labels_; ++j) labels[j] = j < record->labels.size() ? record->labels[j] : -1;
  if (!member.labels.plain()) MapLabels(member.labels, num_labels_, labels);
  if (config_.keys) slot.keys[i].assign(record->key.data(), record->key.size());
  // The classic path inline (as its transform's raw crop); with fields,
  // the record's own function.
  if (fields_.active()) {
    SP_RETURN_IF_ERROR(BuildFields(worker, *record, member, record_index, i, ahead, slot));
  } else {
    // A record that disagrees with the schema is damage (on_corrupt), never
    // a sample with a missing label or a shape the transform did not plan.
    if (member.named->schema_known()) {
      if (absl::Status s = CheckRecordAgainstSchema(*record, member.named->manifest.schema);
          !s.ok()) {
        return absl::DataLossError(absl::StrCat(dataset_->UnitPath(unit), ": dataset record ",
                                                record_index, ": ", s.message()));
      }
    }
    // No crop window: a classic read has no field to follow it (crops() null).
    const size_t row_bytes = transform_->shape().sample_bytes;
    absl::Status s =
        transform_->Apply({record->image, record->payload, record->key, record_index},
                          slot.epoch, slot.images.get() + row_bytes * i, worker.scratch, ahead);
    if (!s.ok()) return absl::DataLossError(absl::StrCat(dataset_->UnitPath(unit), ": ", s.message()));
  }
  if (!slot.sources.empty()) ++slot.sources[member.source];  // a good sample of its source
  return absl::OkStatus();
}

absl::Status BatchBuilder::BuildFields(Worker& worker, const Record& record,
                                       const StreamMember& member, uint64_t record_index, int i,
                                       ByteSpan ahead, RingSlot& slot) {
  const RecordFields& decoder = decoders_[size_t(&member - dataset_->members.data())];
  const std::span<FieldValue> values(worker.values.data(), decoder.fields().size());
  if (absl::Status s = decoder.Decode(record, values, /*check_crc=*/false); !s.ok()) {
    return absl::DataLossError(absl::StrCat(dataset_->ShardPathOf(record_index),
                                            ": dataset record ", record_index, ": ", s.message()));
  }
  // The first transformed field present draws the crop; the others follow.
  CropWindow window;
  const CropWindow* lead = nullptr;
  const std::vector<TransformedField>& transformed = fields_.transformed();
  for (size_t k = 0; k < transformed.size(); ++k) {
    const SampleTransform& t = k == 0 ? *transform_ : (*followers_)[k - 1];
    const size_t row = t.shape().sample_bytes;
    uint8_t* dst = k == 0 ? slot.images.get()
                          : slot.fields.columns[size_t(transformed[k].column)].values.data();
    dst += row * size_t(i);
    const FieldValue& v = values[size_t(transformed[k].field)];
    if (!v.present) {
      std::memset(dst, 0, row);
      continue;
    }
    absl::Status s = t.Apply({v.image, v.bytes, record.key, record_index}, slot.epoch, dst,
                             worker.scratch, k == 0 ? ahead : ByteSpan(), lead,
                             lead == nullptr ? &window : nullptr);
    if (!s.ok()) {
      return absl::DataLossError(
          absl::StrCat(dataset_->ShardPathOf(record_index), ": field '",
                       decoder.fields()[size_t(transformed[k].field)].name, "': ", s.message()));
    }
    if (lead == nullptr) lead = &window;
  }
  SetWindow(slot.fields, i, lead);
  CollateRow(fields_, values, &slot.labels[i * num_labels_], i, slot.fields);
  return absl::OkStatus();
}

void BatchBuilder::Damaged(Worker& worker, int i, absl::Status error, RingSlot& slot) {
  // With fields, later rows follow on from this one's (empty) values.
  if (fields_.active()) ClearRow(fields_, i, slot.fields);
  if (config_.on_corrupt == OnCorrupt::kError) {
    if (slot.status.ok()) slot.status = std::move(error);
    return;
  }
  worker.bad.push_back(i);
  slot.corrupt.push_back({i, slot.records[i], std::move(error)});
}

void BatchBuilder::ReplaceDamaged(Worker& worker, uint64_t first, RingSlot& slot) {
  const std::vector<int>& bad = worker.bad;
  std::vector<int>& good = worker.good;
  good.clear();
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
  const size_t row_bytes = transform_->shape().sample_bytes;
  std::vector<int>& from = worker.from;  // with fields, their rows are copied at once
  from.resize(size_t(slot.size));
  for (int i = 0; i < slot.size; ++i) from[size_t(i)] = i;
  for (int i : bad) {
    if (good.empty()) break;
    const uint64_t draw =
        common::Draw(config_.seed, common::kStreamReplace, slot.epoch, first + i);
    int j = good[common::Below(draw, good.size())];
    std::memcpy(slot.images.get() + row_bytes * i, slot.images.get() + row_bytes * j, row_bytes);
    std::memcpy(&slot.labels[i * num_labels_], &slot.labels[j * num_labels_],
                sizeof(int64_t) * num_labels_);
    slot.records[i] = slot.records[j];
    if (config_.keys) slot.keys[i] = slot.keys[j];
    from[size_t(i)] = j;
  }
  if (fields_.active() && !good.empty()) {
    CopyRows(fields_, from, slot.size, slot.fields, worker.compact);
  }
  slot.skipped = static_cast<int>(bad.size());
  skipped_.fetch_add(bad.size(), std::memory_order_relaxed);
}

void BatchBuilder::UnpinBatch(const EpochPlan& plan, uint64_t first, int size) {
  for (int i = 0; i < size;) {
    const uint32_t unit = plan.pieces[plan.order[first + i].piece].unit;
    int n = 1;
    while (i + n < size && plan.pieces[plan.order[first + i + n].piece].unit == unit) ++n;
    loader_->Unpin(unit, n);
    i += n;
  }
}

void BatchBuilder::AddStats(ReaderStats* stats) const {
  stats->samples = samples_.load();
  stats->skipped = skipped_.load();
  stats->io_wait_s = io_wait_ns_.load() * 1e-9;
  stats->transform_wait_s = transform_wait_ns_.load() * 1e-9;
}

}  // namespace shardpack::reader
