#include "tools/dump/opened_view.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "tools/dump/selection.h"

namespace shardpack::dump {

absl::StatusOr<std::optional<dataset::DatasetView>> OpenIfView(const std::string& path) {
  absl::StatusOr<bool> is_view = dataset::IsViewFile(path);
  if (!is_view.ok() || !*is_view) return std::nullopt;
  SP_ASSIGN_OR_RETURN(dataset::DatasetView view, dataset::OpenView(path));
  return view;
}

absl::StatusOr<OpenedView> OpenedView::Open(dataset::DatasetView view) {
  OpenedView opened(std::move(view));
  const dataset::DatasetView& v = opened.view_;
  for (size_t d = 0; d < v.datasets.size(); ++d) {
    SP_ASSIGN_OR_RETURN(OpenedDataset ds, OpenedDataset::Open(v.datasets[d]->path,
                                                              OpenedDataset::ShardPolicy::kRequireAll));
    const uint64_t expected =
        (d + 1 < v.first_record.size() ? v.first_record[d + 1] : v.base_records) - v.first_record[d];
    if (ds.records() != expected) {
      return absl::FailedPreconditionError(absl::StrCat(
          v.path, ": ", ds.path(), " holds ", ds.records(), " records, ", expected,
          " when the view was resolved (did it change?)"));
    }
    opened.datasets_.push_back(std::move(ds));
  }
  return opened;
}

absl::Status OpenedView::Scan(uint64_t begin, uint64_t end, ViewRecordVisitor visit) const {
  if (begin >= end) return absl::OkStatus();
  const uint64_t base_begin = dataset::ViewRecordBase(view_, begin);
  const uint64_t base_end = dataset::ViewRecordBase(view_, end - 1) + 1;
  uint64_t index = begin;
  for (size_t d = 0; d < datasets_.size(); ++d) {
    const uint64_t first = view_.first_record[d];
    const IndexRange part = Intersect({base_begin, base_end}, first, first + datasets_[d].records());
    if (part.size() == 0) continue;
    SP_RETURN_IF_ERROR(ScanDataset(d, part.begin - first, part.end - first, &index, visit));
  }
  return absl::OkStatus();
}

// Records [begin, end) of dataset d, those the view selects told to `visit`
// numbered from *index on.
absl::Status OpenedView::ScanDataset(size_t d, uint64_t begin, uint64_t end, uint64_t* index,
                                     ViewRecordVisitor visit) const {
  const OpenedDataset& ds = datasets_[d];
  const uint64_t first = view_.first_record[d];
  for (size_t k = 0; k < ds.num_shards(); ++k) {
    const IndexRange part = Intersect({begin, end}, ds.first_record(k), ds.first_record(k + 1));
    if (part.size() == 0) continue;
    SP_ASSIGN_OR_RETURN(std::unique_ptr<backends::ShardScanner> shard, ds.OpenShard(k));
    const uint64_t shard_first = ds.first_record(k);
    SP_RETURN_IF_ERROR(shard->Scan(
        part.begin - shard_first, part.end - shard_first,
        [&](uint64_t i, const Record& r, const backends::RecordLocation& at) {
          const uint64_t record = shard_first + i;
          if (!view_.Selected(first + record)) return absl::OkStatus();
          Record mapped = r;
          mapped.labels = view_.MapLabels(r.labels);
          return visit(ViewRecordPlace{(*index)++, d, record, k, at, r.labels}, mapped);
        }));
  }
  return absl::OkStatus();
}

}  // namespace shardpack::dump
