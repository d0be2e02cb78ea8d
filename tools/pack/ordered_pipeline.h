// Prepares a sequence of source items on several threads and hands them to
// one consumer strictly in sequence order, so the output never depends on
// the thread count or timing.
//
// Items are handed over in groups of consecutive positions (about 1 MiB of
// input, at most 64 items, from the source's average item size), in a ring
// of 2 x threads + 2 reusable group slots: a worker may prepare group g only
// once the consumer is done with group g - window, which bounds memory to
// window x group prepared records. Slots synchronize with C++20 atomic
// wait/notify (futexes) once per group, with no lock per item and no
// allocation per item once the slot buffers have grown.
#ifndef SHARDPACK_TOOLS_PACK_ORDERED_PIPELINE_H_
#define SHARDPACK_TOOLS_PACK_ORDERED_PIPELINE_H_

#include <cstdint>
#include <functional>
#include <span>

#include "absl/status/status.h"
#include "datasets/source.h"

namespace shardpack::pack {

// Called on the consumer thread for each item in order with its position in
// `order`, the source index, the result of Prepare and the prepared record
// (valid during the call). Returning an error stops the pipeline; Run
// returns that error.
using ConsumeFn = std::function<absl::Status(size_t position, size_t item,
                                             const absl::Status& prepared,
                                             const datasets::PreparedRecord& record)>;

// Prepares source items order[0], order[1], ... with `threads` workers.
absl::Status RunOrdered(const datasets::Source& source, std::span<const size_t> order,
                        int threads, const ConsumeFn& consume);

}  // namespace shardpack::pack

#endif  // SHARDPACK_TOOLS_PACK_ORDERED_PIPELINE_H_
