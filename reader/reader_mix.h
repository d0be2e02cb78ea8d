// The opener's mixture (docs/reader.md, "Mixtures"): the sources opened as
// members of one stream, the samples each draws an epoch, their labels in
// one space, and what plans them.
#ifndef SHARDPACK_READER_READER_MIX_H_
#define SHARDPACK_READER_READER_MIX_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "reader/dataset_units.h"
#include "reader/mix_plan.h"
#include "shardpack/reader.h"

namespace shardpack::reader {

struct OpenedMix {
  StreamDataset dataset;
  Schema schema;                     // the mixture's: its label space's fields
  std::vector<SourceInfo> sources;   // per_rank left 0: the planner's
  std::vector<MixSourcePlan> plans;  // for MixPlanner
  uint64_t fingerprint = 0;
};

// Opens `o.sources` (checked by CheckOptions) with `o.io`.
// InvalidArgumentError naming the source for counts out of range (a weight
// that gives a source no sample, a choose past kMaxMixRepeat times its
// records, epoch_samples smaller than the fixed counts), images of another
// shape or encoding, or label fields that differ where o.label_space
// needs them the same.
absl::StatusOr<OpenedMix> OpenMix(const ReaderOptions& o,
                                  const std::shared_ptr<remote::Storage>& storage);

// The samples each source draws a mixture epoch: `records` the sources'
// (selected) records. Exposed for tests.
absl::StatusOr<std::vector<uint64_t>> MixCounts(const ReaderOptions& o,
                                                const std::vector<uint64_t>& records);

// The fingerprint of one dataset of a stream: its manifest's; for a lone
// .shard file (whose manifest lists no shards) folded with its read units,
// so that two different files differ.
uint64_t MemberFingerprint(const StreamMember& m, const std::vector<ReadUnit>& units);

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_READER_MIX_H_
