// Where the loader gets read units from: one implementation per backend.
//
// A dataset's records are cut into read units (a `.shard` block, a run of
// LMDB keys, a run of HDF5 chunk rows), each loaded with one request (or one
// cursor walk) and never a record at a time. The loader submits loads in its
// plan's order and takes them back oldest first; a load fills a buffer the
// loader owns (BufferBytes() of it) and yields a UnitView into that buffer,
// or into memory the source keeps mapped for its whole life.
#ifndef SHARDPACK_READER_UNIT_SOURCE_H_
#define SHARDPACK_READER_UNIT_SOURCE_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/check.h"
#include "reader/epoch_plan.h"
#include "reader/unit_view.h"
#include "shardpack/reader.h"
#include "shardpack/record.h"

namespace shardpack::reader {

struct UnitLoad {
  uint32_t unit = 0;
  absl::StatusOr<UnitView> view;  // an error names the shard and offset or record
};

// Not thread-safe: the loader thread alone submits and waits.
class UnitSource {
 public:
  virtual ~UnitSource() = default;

  // The read units, in dataset order (ReadUnit::bytes: memory a loaded unit
  // holds, which the loader budgets with).
  virtual const std::vector<ReadUnit>& units() const = 0;
  // The image shape of the dataset's records (for a lone `.shard` file, its
  // first record's).
  virtual ImageInfo image() const = 0;
  // The engine in use (sources that do not read through a BlockIo report the
  // engine they emulate, e.g. kMmap for LMDB).
  virtual IoEngine engine() const = 0;

  // Loads that may be outstanding at once.
  virtual size_t max_in_flight() const = 0;
  // Bytes of buffer unit `u` needs (kIoAlignment-aligned buffers).
  virtual size_t BufferBytes(uint32_t u) const = 0;
  // Starts loading unit `u` into `buffer`. An error here is misuse (the
  // loader reports it through the unit all the same).
  virtual absl::Status Submit(uint32_t u, uint8_t* buffer) = 0;
  // The oldest outstanding load, once complete. Precondition: one is
  // outstanding.
  virtual UnitLoad Wait() = 0;

  // Bytes read from storage so far.
  virtual uint64_t bytes_read() const = 0;
  // The loader has let unit `u` go (its view is not used again): a source
  // that maps its files lets the unit's pages go from the process.
  virtual void Release(uint32_t /*u*/) {}

  // Bytes the source holds to find units and records (indexes, unit
  // tables), for the reader's memory report.
  virtual uint64_t IndexBytes() const { return units().capacity() * sizeof(ReadUnit); }

  // OK while no file the source maps has shrunk under its mapping (see
  // RandomAccessFile::CheckIntact); else the DataLossError naming it. Any
  // thread; cheap.
  virtual absl::Status CheckIntact() const { return absl::OkStatus(); }
};

// A source whose loads finish inside Submit (LMDB's cursor walk over the
// map, HDF5's H5Dread): one load outstanding, handed back by Wait().
class SyncUnitSource : public UnitSource {
 public:
  size_t max_in_flight() const override { return 1; }
  absl::Status Submit(uint32_t u, uint8_t* buffer) final {
    SP_DCHECK(!pending_);
    done_ = {u, Load(u, buffer)};
    pending_ = true;
    return absl::OkStatus();
  }
  UnitLoad Wait() final {
    SP_DCHECK(pending_);
    pending_ = false;
    return std::move(done_);
  }

 protected:
  virtual absl::StatusOr<UnitView> Load(uint32_t u, uint8_t* buffer) = 0;

 private:
  UnitLoad done_;
  bool pending_ = false;  // done_ is a load not yet handed back
};

// Cuts rows [0, rows) of shard `file` into units of `rows_per_unit` rows
// (the last may be shorter), numbering records from `*first_record`, which
// it advances; `unit_bytes(begin, end)` gives a unit's ReadUnit::bytes.
template <typename BytesFn>
void CutUnits(uint32_t file, uint64_t rows, uint64_t rows_per_unit, uint64_t* first_record,
              BytesFn unit_bytes, std::vector<ReadUnit>* units) {
  rows_per_unit = std::max<uint64_t>(rows_per_unit, 1);
  for (uint64_t begin = 0; begin < rows; begin += rows_per_unit) {
    const uint64_t end = std::min(rows, begin + rows_per_unit);
    units->push_back({file, static_cast<uint32_t>(begin / rows_per_unit), *first_record + begin,
                      static_cast<uint32_t>(end - begin), unit_bytes(begin, end)});
  }
  *first_record += rows;
}

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_UNIT_SOURCE_H_
