// The record table's writer (record_table.h, RecordTableBuilder), in
// memory bounded at any record count.
//
// Add appends to four sections in record order: labels (8 bytes a field),
// key offsets (8), keys and key hashes (8). Past the memory bound they move
// to scratch files and go on through 256 KiB buffers. Write streams the first
// three into the table as they are, then places the hash slots:
//
//   sort the records by (home slot, index)   in memory while N x 16 bytes
//                                            fit, else sorted runs of that
//                                            size in a scratch file, merged
//   sweep 1: pos = max(home, pos + 1)        in that order; what passes the
//                                            last slot wraps: o records
//   sweep 2: the same from pos = o           the last o records of the order
//                                            fill slots 0 .. o-1, the rest
//                                            their swept positions
//
// This is the table linear probing makes when records are inserted in that
// order, with one difference it cannot see: the o records that wrap are
// placed before the records whose home is among the first slots (docs/
// format.md 16, "How the writer places records", shows that sweep 1's o is
// sweep 2's). Every record is reachable from its home through filled slots,
// and records of one key share a home and keep index order, so the lowest
// index is found first.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/coding.h"
#include "common/posix_io.h"
#include "common/status_macros.h"
#include "format/record_table.h"
#include "shardpack/crc32c.h"

namespace shardpack::format {

using common::StoreLE;

// Appends to the table's file through a buffer, keeping the CRC.
class TableOut {
 public:
  explicit TableOut(WritableFile* file) : file_(file) { buffer_.reserve(kBuffer); }
  absl::Status Bytes(const uint8_t* p, size_t n) {
    crc_ = Crc32cExtend(crc_, p, n);
    bytes_ += n;
    if (buffer_.size() + n > kBuffer) SP_RETURN_IF_ERROR(Flush());
    if (n >= kBuffer) return file_->Append({p, n});
    buffer_.insert(buffer_.end(), p, p + n);
    return absl::OkStatus();
  }
  absl::Status Flush() {
    SP_RETURN_IF_ERROR(file_->Append(buffer_));
    buffer_.clear();
    return absl::OkStatus();
  }
  uint64_t bytes() const { return bytes_; }
  uint32_t crc() const { return crc_; }

 private:
  static constexpr size_t kBuffer = size_t{1} << 20;
  WritableFile* file_;
  std::vector<uint8_t> buffer_;
  uint64_t bytes_ = 0;
  uint32_t crc_ = 0;
};

namespace {

constexpr size_t kChunk = size_t{256} << 10;  // a spilled section's write buffer, a copy's read

// A hash slot's record while the slots are placed.
struct SlotEntry {
  uint64_t hash;
  uint64_t record;
};

// Home slot, then index: the order records are placed in.
struct HomeOrder {
  uint64_t mask;
  bool operator()(const SlotEntry& a, const SlotEntry& b) const {
    const uint64_t ha = a.hash & mask, hb = b.hash & mask;
    return ha != hb ? ha < hb : a.record < b.record;
  }
};

}  // namespace

// Bytes in record order: a vector until the builder spills, then a scratch
// file and a write buffer of kChunk.
class RecordTableBuilder::Section {
 public:
  explicit Section(std::string name) : name_(std::move(name)) {}

  absl::Status Append(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    memory_.insert(memory_.end(), b, b + n);
    if (fd_.get() >= 0 && memory_.size() >= kChunk) return Flush();
    return absl::OkStatus();
  }
  // From now on in a scratch file in `dir`; the memory is given back.
  absl::Status Spill(const std::string& dir) {
    SP_ASSIGN_OR_RETURN(fd_, common::CreateScratchFile(dir));
    SP_RETURN_IF_ERROR(Flush());
    std::vector<uint8_t>().swap(memory_);
    memory_.reserve(kChunk);
    return absl::OkStatus();
  }
  absl::Status Flush() {
    if (fd_.get() < 0 || memory_.empty()) return absl::OkStatus();
    SP_RETURN_IF_ERROR(common::WriteFull(fd_.get(), name_, memory_));
    on_disk_ += memory_.size();
    memory_.clear();
    return absl::OkStatus();
  }
  uint64_t size() const { return on_disk_ + memory_.size(); }
  uint64_t memory() const { return memory_.capacity(); }
  // [at, at + dst.size()), after Flush.
  absl::Status Read(uint64_t at, std::span<uint8_t> dst) const {
    if (fd_.get() < 0) {
      std::memcpy(dst.data(), memory_.data() + at, dst.size());
      return absl::OkStatus();
    }
    return common::PreadFull(fd_.get(), name_, at, dst);
  }
  absl::Status CopyTo(TableOut& out) const {
    if (fd_.get() < 0) return out.Bytes(memory_.data(), memory_.size());
    std::vector<uint8_t> chunk(kChunk);
    for (uint64_t at = 0; at < on_disk_; at += kChunk) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, on_disk_ - at));
      SP_RETURN_IF_ERROR(Read(at, {chunk.data(), n}));
      SP_RETURN_IF_ERROR(out.Bytes(chunk.data(), n));
    }
    return absl::OkStatus();
  }

 private:
  std::string name_;
  std::vector<uint8_t> memory_;
  common::UniqueFd fd_;
  uint64_t on_disk_ = 0;
};

// Every record as a SlotEntry in HomeOrder, as often as asked (Rewind):
// from one sorted vector when N entries fit in the memory bound, else from
// sorted runs of that size in a scratch file, merged through a buffer per run.
class RecordTableBuilder::SortedSlots {
 public:
  SortedSlots(uint64_t mask, uint64_t memory_bytes, std::string name)
      : order_{mask}, run_entries_(std::max<uint64_t>(memory_bytes / sizeof(SlotEntry), 4096)),
        name_(std::move(name)) {}

  // Reads the hashes of `records` records from `hashes` and sorts them.
  absl::Status Build(const Section& hashes, uint64_t records, const std::string& dir) {
    records_ = records;
    for (uint64_t begin = 0; begin < records; begin += run_entries_) {
      const uint64_t n = std::min(run_entries_, records - begin);
      std::vector<uint8_t> raw(n * 8);
      SP_RETURN_IF_ERROR(hashes.Read(begin * 8, raw));
      std::vector<SlotEntry> run(n);
      for (uint64_t i = 0; i < n; ++i) run[i] = {common::LoadLE<uint64_t>(&raw[8 * i]), begin + i};
      std::sort(run.begin(), run.end(), order_);
      if (begin == 0 && n == records) {
        memory_ = std::move(run);
        return absl::OkStatus();
      }
      if (fd_.get() < 0) {
        SP_ASSIGN_OR_RETURN(fd_, common::CreateScratchFile(dir));
      }
      SP_RETURN_IF_ERROR(common::WriteFull(
          fd_.get(), name_, {reinterpret_cast<const uint8_t*>(run.data()), n * sizeof(SlotEntry)}));
      runs_.push_back({begin, begin + n});
    }
    return absl::OkStatus();
  }

  // Back to the first entry: each run's buffer refilled, the heap rebuilt.
  absl::Status Rewind() {
    next_ = 0;
    if (runs_.empty()) return absl::OkStatus();
    const uint64_t buffer = std::max<uint64_t>(run_entries_ / (2 * runs_.size()), 1024);
    cursors_.assign(runs_.size(), {});
    heap_.clear();
    for (size_t i = 0; i < runs_.size(); ++i) {
      cursors_[i].at = runs_[i].first;
      cursors_[i].buffer.resize(buffer);
      SP_RETURN_IF_ERROR(Refill(i));
      heap_.push_back(i);
    }
    std::make_heap(heap_.begin(), heap_.end(), Later());
    return absl::OkStatus();
  }

  // The next entry in order. Precondition: fewer than `records` taken since Rewind.
  absl::StatusOr<SlotEntry> Next() {
    SP_DCHECK(next_ < records_);
    ++next_;
    if (runs_.empty()) return memory_[next_ - 1];
    std::pop_heap(heap_.begin(), heap_.end(), Later());
    const size_t i = heap_.back();
    Cursor& c = cursors_[i];
    const SlotEntry e = c.buffer[c.pos++];
    if (c.pos == c.filled) SP_RETURN_IF_ERROR(Refill(i));
    if (c.filled == 0) {
      heap_.pop_back();
    } else {
      std::push_heap(heap_.begin(), heap_.end(), Later());
    }
    return e;
  }

 private:
  struct Cursor {
    uint64_t at = 0;  // the run's next entry not yet buffered
    std::vector<SlotEntry> buffer;
    size_t pos = 0, filled = 0;
  };
  // Heap order: the run whose current entry comes last is "less".
  struct LaterRun {
    const SortedSlots* s;
    bool operator()(size_t a, size_t b) const {
      const Cursor &x = s->cursors_[a], &y = s->cursors_[b];
      return s->order_(y.buffer[y.pos], x.buffer[x.pos]);
    }
  };
  LaterRun Later() const { return {this}; }

  absl::Status Refill(size_t i) {
    Cursor& c = cursors_[i];
    const uint64_t n = std::min<uint64_t>(c.buffer.size(), runs_[i].second - c.at);
    c.pos = 0;
    c.filled = static_cast<size_t>(n);
    if (n == 0) return absl::OkStatus();
    SP_RETURN_IF_ERROR(common::PreadFull(
        fd_.get(), name_, c.at * sizeof(SlotEntry),
        {reinterpret_cast<uint8_t*>(c.buffer.data()), static_cast<size_t>(n) * sizeof(SlotEntry)}));
    c.at += n;
    return absl::OkStatus();
  }

  HomeOrder order_;
  uint64_t run_entries_;
  std::string name_;
  uint64_t records_ = 0, next_ = 0;
  std::vector<SlotEntry> memory_;                   // the one run, when it fits
  common::UniqueFd fd_;                             // else the runs, back to back
  std::vector<std::pair<uint64_t, uint64_t>> runs_;  // entries [first, second)
  std::vector<Cursor> cursors_;
  std::vector<size_t> heap_;
};

RecordTableBuilder::RecordTableBuilder(int label_fields, std::string spill_directory,
                                       uint64_t memory_bytes)
    : fields_(label_fields),
      spill_directory_(std::move(spill_directory)),
      scratch_name_(absl::StrCat(spill_directory_, "/(scratch of ", kRecordTableFileName, ")")),
      memory_bytes_(memory_bytes),
      labels_(std::make_unique<Section>(scratch_name_)),
      offsets_(std::make_unique<Section>(scratch_name_)),
      keys_(std::make_unique<Section>(scratch_name_)),
      hashes_(std::make_unique<Section>(scratch_name_)) {
  SP_DCHECK(label_fields >= 0 && label_fields <= kMaxLabels);
}

RecordTableBuilder::~RecordTableBuilder() = default;

absl::Status RecordTableBuilder::Add(std::span<const int64_t> labels, std::string_view key) {
  SP_DCHECK(labels.size() == static_cast<size_t>(fields_));
  uint8_t word[8];
  for (int64_t v : labels) {
    StoreLE(word, static_cast<uint64_t>(v));
    SP_RETURN_IF_ERROR(labels_->Append(word, 8));
  }
  SP_RETURN_IF_ERROR(keys_->Append(key.data(), key.size()));
  key_bytes_ += key.size();
  StoreLE(word, key_bytes_);
  SP_RETURN_IF_ERROR(offsets_->Append(word, 8));
  StoreLE(word, KeyHash(key));
  SP_RETURN_IF_ERROR(hashes_->Append(word, 8));
  ++records_;
  if (!spilled_ && labels_->memory() + offsets_->memory() + keys_->memory() + hashes_->memory() >
                       memory_bytes_) {
    return Spill();
  }
  return absl::OkStatus();
}

absl::Status RecordTableBuilder::Spill() {
  spilled_ = true;
  for (Section* s : {labels_.get(), offsets_.get(), keys_.get(), hashes_.get()}) {
    SP_RETURN_IF_ERROR(s->Spill(spill_directory_));
  }
  return absl::OkStatus();
}

absl::StatusOr<RecordTableEntry> RecordTableBuilder::Write(WritableFile* file) {
  for (Section* s : {labels_.get(), offsets_.get(), keys_.get(), hashes_.get()}) {
    SP_RETURN_IF_ERROR(s->Flush());
  }
  uint8_t header[kRecordTableHeaderSize] = {};
  std::memcpy(header, kRecordTableMagic.data(), kRecordTableMagic.size());
  StoreLE<uint16_t>(header + 8, kRecordTableMajorVersion);
  StoreLE<uint16_t>(header + 10, kRecordTableMinorVersion);
  StoreLE<uint32_t>(header + 12, static_cast<uint32_t>(fields_));
  StoreLE<uint64_t>(header + 16, records_);
  StoreLE<uint64_t>(header + 24, key_bytes_);
  StoreLE<uint64_t>(header + 32, RecordTableSlots(records_));
  StoreLE<uint32_t>(header + kRecordTableHeaderCrcOffset,
                    Crc32c({header, kRecordTableHeaderCrcOffset}));
  TableOut out(file);
  SP_RETURN_IF_ERROR(out.Bytes(header, sizeof(header)));
  SP_RETURN_IF_ERROR(labels_->CopyTo(out));
  const uint8_t zeros[8] = {};
  SP_RETURN_IF_ERROR(out.Bytes(zeros, 8));  // key offset 0
  SP_RETURN_IF_ERROR(offsets_->CopyTo(out));
  SP_RETURN_IF_ERROR(keys_->CopyTo(out));
  SP_RETURN_IF_ERROR(out.Bytes(zeros, common::AlignUp(key_bytes_, 8) - key_bytes_));
  SP_RETURN_IF_ERROR(WriteSlots(out));
  SP_RETURN_IF_ERROR(out.Flush());
  RecordTableEntry entry;
  entry.bytes = out.bytes();
  entry.crc32c = out.crc();
  return entry;
}

namespace {

// The slots section, slot by slot, through a buffer.
class SlotOut {
 public:
  explicit SlotOut(TableOut& out) : out_(out) {}
  absl::Status Record(const SlotEntry& e) { return Put(e.hash, e.record); }
  absl::Status Empty(uint64_t n) {
    for (; n > 0; --n) SP_RETURN_IF_ERROR(Put(0, kEmptySlot));
    return absl::OkStatus();
  }
  absl::Status Flush() {
    SP_RETURN_IF_ERROR(out_.Bytes(buffer_, used_));
    used_ = 0;
    return absl::OkStatus();
  }

 private:
  absl::Status Put(uint64_t hash, uint64_t record) {
    StoreLE(buffer_ + used_, hash);
    StoreLE(buffer_ + used_ + 8, record);
    used_ += kRecordTableSlotSize;
    return used_ == sizeof(buffer_) ? Flush() : absl::OkStatus();
  }
  TableOut& out_;
  uint8_t buffer_[size_t{64} << 10];
  size_t used_ = 0;
};

}  // namespace

absl::Status RecordTableBuilder::WriteSlots(TableOut& out) {
  const uint64_t n = records_, slots = RecordTableSlots(n), mask = slots - 1;
  SortedSlots sorted(mask, memory_bytes_, scratch_name_);
  SP_RETURN_IF_ERROR(sorted.Build(*hashes_, n, spill_directory_));
  hashes_.reset();
  // Sweep 1: how many records wrap past the last slot; the last of them kept.
  const uint64_t keep = std::min<uint64_t>(n, 65536);
  std::vector<SlotEntry> tail(keep);
  uint64_t next = 0;
  SP_RETURN_IF_ERROR(sorted.Rewind());
  for (uint64_t i = 0; i < n; ++i) {
    SP_ASSIGN_OR_RETURN(const SlotEntry e, sorted.Next());
    next = std::max(e.hash & mask, next) + 1;
    tail[i % keep] = e;  // keep >= 1: n > 0 here
  }
  const uint64_t wrapped = next > slots ? next - slots : 0;
  SlotOut put(out);
  // Slots 0 .. wrapped-1: the last `wrapped` records of the order.
  if (wrapped <= keep) {
    for (uint64_t i = n - wrapped; i < n; ++i) SP_RETURN_IF_ERROR(put.Record(tail[i % keep]));
  } else {
    SP_RETURN_IF_ERROR(sorted.Rewind());
    for (uint64_t i = 0; i < n; ++i) {
      SP_ASSIGN_OR_RETURN(const SlotEntry e, sorted.Next());
      if (i >= n - wrapped) SP_RETURN_IF_ERROR(put.Record(e));
    }
  }
  // Sweep 2: the others from slot `wrapped` on, empty slots between.
  SP_RETURN_IF_ERROR(sorted.Rewind());
  uint64_t at = wrapped;
  for (uint64_t i = 0; i < n - wrapped; ++i) {
    SP_ASSIGN_OR_RETURN(const SlotEntry e, sorted.Next());
    const uint64_t pos = std::max(e.hash & mask, at);
    SP_CHECK(pos < slots);  // sweep 1's count holds (record_table_builder.cc)
    SP_RETURN_IF_ERROR(put.Empty(pos - at));
    SP_RETURN_IF_ERROR(put.Record(e));
    at = pos + 1;
  }
  SP_RETURN_IF_ERROR(put.Empty(slots - at));
  return put.Flush();
}

absl::StatusOr<RecordTableEntry> WriteRecordTable(RecordTableBuilder& builder,
                                                  const std::string& directory) {
  SP_ASSIGN_OR_RETURN(auto file, AtomicFile::Create(
                                     (std::filesystem::path(directory) / kRecordTableFileName)));
  SP_ASSIGN_OR_RETURN(RecordTableEntry entry, builder.Write(file.get()));
  SP_RETURN_IF_ERROR(file->Commit());
  entry.path = kRecordTableFileName;
  return entry;
}

}  // namespace shardpack::format
