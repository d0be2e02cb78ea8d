// The reader's position: state() and Restore, an elastic resume among them.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "reader/reader_impl.h"

namespace shardpack {

ReaderState Reader::Impl::state() const {
  return {options_.seed, epoch_, fingerprint_, reader::SegmentOf(options_, batch_), earlier_};
}

absl::StatusOr<std::vector<ReadSegment>> Reader::Impl::SegmentsOf(
    const ReaderState& state) const {
  if (state.fingerprint != fingerprint_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "state of dataset fingerprint ", FormatFingerprint(state.fingerprint), ", but ",
        Describe(), " has fingerprint ", FormatFingerprint(fingerprint_),
        ": another dataset, or another copy of it",
        source_samples_.empty() ? "" : ", or a view or mixture that selects otherwise"));
  }
  if (state.seed != options_.seed) {
    return absl::InvalidArgumentError(absl::StrCat("state of seed ", state.seed,
                                                   ", reader of seed ", options_.seed));
  }
  if (state.epoch > kMaxEpoch) {
    return absl::InvalidArgumentError(absl::StrCat("state.epoch ", state.epoch,
                                                   " is out of range: 0 to 2^63-1 (", kMaxEpoch,
                                                   ")"));
  }
  if (state.earlier.size() > kMaxStateSegments) {
    return absl::InvalidArgumentError(absl::StrCat("state lists ", state.earlier.size(),
                                                   " earlier segments (at most ",
                                                   kMaxStateSegments, ")"));
  }
  std::vector<ReadSegment> all = state.earlier;
  all.push_back(state.segment);
  for (size_t i = 0; i < all.size(); ++i) {
    const ReadSegment& e = all[i];
    const std::string field =
        i + 1 < all.size() ? absl::StrCat("state.earlier[", i, "].") : "state.";
    if (e.world_size < 1 || e.world_size > kMaxWorldSize) {
      return absl::InvalidArgumentError(absl::StrCat(field, "world_size ", e.world_size,
                                                     " is out of range: 1 to ", kMaxWorldSize));
    }
    if (e.batch_size < 1 || e.batch_size > kMaxBatchSize) {
      return absl::InvalidArgumentError(absl::StrCat(field, "batch_size ", e.batch_size,
                                                     " is out of range: 1 to ", kMaxBatchSize));
    }
    if (e.remainder != Remainder::kDrop && e.remainder != Remainder::kPartial &&
        e.remainder != Remainder::kPad) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, "remainder ", static_cast<int>(e.remainder), " is not drop, partial or pad"));
    }
  }
  return all;
}

absl::Status Reader::Impl::Restore(const ReaderState& state) {
  if (outstanding_.load(std::memory_order_acquire) > 0) {
    return absl::FailedPreconditionError("destroy every Batch before Restore");
  }
  SP_ASSIGN_OR_RETURN(std::vector<ReadSegment> segments, SegmentsOf(state));
  // The state's own segment goes on when this reader's plan options are its
  // options; otherwise it is finished (an elastic resume), or dropped when
  // it delivered nothing.
  const uint64_t delivered = state.segment.batches;
  const bool same = reader::SegmentOf(options_, delivered) == state.segment;
  if (same || delivered == 0) segments.pop_back();
  std::shared_ptr<const reader::EpochRests> rest;
  if (!segments.empty()) {
    SP_ASSIGN_OR_RETURN(rest, planner_->RestOf(state.epoch, segments));
  }
  const uint64_t batch = same ? delivered : 0;
  const uint64_t batches = rest != nullptr ? rest->batches : pipeline_->batches_per_epoch();
  if (batch > batches) {
    return absl::InvalidArgumentError(absl::StrCat("state.batch ", batch,
                                                   " is out of range: 0 to ", batches,
                                                   " (the batches of its epoch)"));
  }
  Stop();
  epoch_ = state.epoch;
  batch_ = batch;
  last_epoch_ended_ = false;
  epoch_batches_ = batches;
  earlier_ = std::move(segments);
  rest_ = std::move(rest);
  seq_ = 0;
  return absl::OkStatus();
}

}  // namespace shardpack
