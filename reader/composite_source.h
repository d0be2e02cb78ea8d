// Several datasets read as one: a mixture's sources, a view's datasets. Each
// keeps its own unit source (its backend, its engine); their units follow
// one another, shard files and records numbered on.
#ifndef SHARDPACK_READER_COMPOSITE_SOURCE_H_
#define SHARDPACK_READER_COMPOSITE_SOURCE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "reader/unit_source.h"

namespace shardpack::reader {

class CompositeSource final : public UnitSource {
 public:
  // `parts` in order; `files[i]`: shard files of part i (how far its
  // ReadUnit::file numbers are moved on). Precondition: at least one part.
  CompositeSource(std::vector<std::unique_ptr<UnitSource>> parts,
                  const std::vector<uint32_t>& files);

  const std::vector<ReadUnit>& units() const override { return units_; }
  ImageInfo image() const override { return parts_[0]->image(); }
  IoEngine engine() const override { return parts_[0]->engine(); }
  // The fewest any part takes: the loader's loads may all go to one part.
  size_t max_in_flight() const override { return max_in_flight_; }
  size_t BufferBytes(uint32_t u) const override;
  absl::Status Submit(uint32_t u, uint8_t* buffer) override;
  UnitLoad Wait() override;
  void Release(uint32_t u) override;
  uint64_t bytes_read() const override;
  uint64_t IndexBytes() const override;
  absl::Status CheckIntact() const override;

  // The part unit `u` belongs to.
  uint32_t PartOf(uint32_t u) const { return part_of_[u]; }
  // The first unit of part `p`.
  uint32_t FirstUnit(uint32_t p) const { return first_unit_[p]; }
  // The first record of part `p`.
  uint64_t FirstRecord(uint32_t p) const { return first_record_[p]; }

 private:
  std::vector<std::unique_ptr<UnitSource>> parts_;
  std::vector<ReadUnit> units_;
  std::vector<uint32_t> part_of_;     // per unit
  std::vector<uint32_t> first_unit_;  // per part
  std::vector<uint64_t> first_record_;  // per part
  size_t max_in_flight_ = 1;
  std::deque<uint32_t> pending_;      // the part of each load submitted, oldest first
};

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_COMPOSITE_SOURCE_H_
