// The memory-bandwidth reference shardbench compares the reader with
// (--compare-memcpy): the same stored pixel bytes the reader moved, copied
// with memcpy in the reader's own epoch order into batch-sized slots of a
// ring and XOR-folded per batch as shardbench's consumer folds the reader's
// batches. No decode, no crop, no flip, no queue: what moving the bytes costs
// on this machine, beside what the reader's run cost per image.
//
// The records' order is the reader's (reader/epoch_plan.h's MakeEpochPlan
// with the reader's plan options, epoch by epoch); building each epoch's plan
// and turning it into source addresses is done between the timed parts. The
// whole dataset is loaded (or mapped) first, outside the timing, so the
// reference measures memory, not storage.
#ifndef SHARDPACK_TOOLS_BENCH_MEMCPY_REF_H_
#define SHARDPACK_TOOLS_BENCH_MEMCPY_REF_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "shardpack/reader.h"

namespace shardpack::shardbench {

struct MemcpyRun {
  uint64_t images = 0;        // copied per variant (the reader's delivered samples)
  uint64_t image_bytes = 0;   // stored pixel bytes of one record
  double seconds = 0;         // one thread: wall time of the copies and folds
  int threads = 1;            // the threaded variant's thread count
  double threads_seconds = 0; // the threaded variant: wall time, epochs summed
  uint64_t fold = 0;          // XOR of every 8-byte word of every batch (one thread)

  double ns_per_image() const;          // one thread (wall = CPU: nothing waits)
  double threads_ns_per_image() const;  // wall time per image with `threads` threads
  double gb_per_s() const;              // one thread, bytes copied per second (10^9)
};

class MemcpyReference {
 public:
  // Opens the dataset the reader reads (options.path, options.io) and checks
  // that its records are raw images of one shape: InvalidArgumentError
  // naming the path otherwise (JPEG records have no fixed bytes to copy).
  // Cheap (indexes only): call it before the reader's run so that a bad
  // combination is refused before anything is measured.
  static absl::StatusOr<std::unique_ptr<MemcpyReference>> Open(const ReaderOptions& options);
  ~MemcpyReference();

  // Loads every record, then copies `images` records (epochs 0, 1, ... of
  // the reader's order) once on one thread and once split over `threads`
  // threads (batches dealt round-robin, each thread its own ring).
  // ResourceExhaustedError when the dataset does not fit in half the
  // machine's memory.
  absl::StatusOr<MemcpyRun> Run(uint64_t images, int threads);

 private:
  struct Impl;
  explicit MemcpyReference(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardpack::shardbench

#endif  // SHARDPACK_TOOLS_BENCH_MEMCPY_REF_H_
