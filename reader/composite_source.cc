#include "reader/composite_source.h"

#include <algorithm>
#include <utility>

#include "common/check.h"

namespace shardpack::reader {

CompositeSource::CompositeSource(std::vector<std::unique_ptr<UnitSource>> parts,
                                 const std::vector<uint32_t>& files)
    : parts_(std::move(parts)) {
  SP_DCHECK(!parts_.empty() && files.size() == parts_.size());
  uint32_t file = 0;
  uint64_t record = 0;
  max_in_flight_ = parts_[0]->max_in_flight();
  for (uint32_t p = 0; p < parts_.size(); ++p) {
    first_unit_.push_back(static_cast<uint32_t>(units_.size()));
    first_record_.push_back(record);
    uint64_t records = 0;
    for (ReadUnit u : parts_[p]->units()) {
      records = std::max(records, u.first_record + u.records);
      u.file += file;
      u.first_record += record;
      units_.push_back(u);
      part_of_.push_back(p);
    }
    file += files[p];
    record += records;
    max_in_flight_ = std::min(max_in_flight_, parts_[p]->max_in_flight());
  }
}

size_t CompositeSource::BufferBytes(uint32_t u) const {
  const uint32_t p = part_of_[u];
  return parts_[p]->BufferBytes(u - first_unit_[p]);
}

absl::Status CompositeSource::Submit(uint32_t u, uint8_t* buffer) {
  const uint32_t p = part_of_[u];
  absl::Status s = parts_[p]->Submit(u - first_unit_[p], buffer);
  if (s.ok()) pending_.push_back(p);
  return s;
}

// Each part hands its loads back oldest first, and the loader waits for
// the oldest of all: the part of the oldest submission has it.
UnitLoad CompositeSource::Wait() {
  SP_CHECK(!pending_.empty());
  const uint32_t p = pending_.front();
  pending_.pop_front();
  UnitLoad load = parts_[p]->Wait();
  load.unit += first_unit_[p];
  return load;
}

void CompositeSource::Release(uint32_t u) {
  const uint32_t p = part_of_[u];
  parts_[p]->Release(u - first_unit_[p]);
}

uint64_t CompositeSource::bytes_read() const {
  uint64_t n = 0;
  for (const auto& p : parts_) n += p->bytes_read();
  return n;
}

uint64_t CompositeSource::IndexBytes() const {
  uint64_t n = units_.capacity() * sizeof(ReadUnit) + part_of_.capacity() * sizeof(uint32_t);
  for (const auto& p : parts_) n += p->IndexBytes();
  return n;
}

absl::Status CompositeSource::CheckIntact() const {
  for (const auto& p : parts_) {
    if (absl::Status s = p->CheckIntact(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace shardpack::reader
