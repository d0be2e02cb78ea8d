// What ls, show and verify work on when PATH names a view file
// (dataset/view.h): the view, resolved, and each of its datasets opened as
// an OpenedDataset, with the view's records read in view order.
#ifndef SHARDPACK_TOOLS_DUMP_OPENED_VIEW_H_
#define SHARDPACK_TOOLS_DUMP_OPENED_VIEW_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/record_scan.h"
#include "dataset/view.h"
#include "tools/dump/opened_dataset.h"

namespace shardpack::dump {

// Where a view record comes from.
struct ViewRecordPlace {
  uint64_t index = 0;    // in the view
  size_t dataset = 0;    // the dataset's number in the view
  uint64_t record = 0;   // the record's index in that dataset
  size_t shard = 0;      // the shard of that dataset holding it
  backends::RecordLocation location;
  Labels stored_labels;  // the record's labels as stored (the view may map them)
};

// Told each view record with its labels as the view gives them (label_map
// applied). The record's views are valid for the call only.
using ViewRecordVisitor = absl::FunctionRef<absl::Status(const ViewRecordPlace&, const Record&)>;

class OpenedView {
 public:
  // The view at `path`, which OpenView resolved (is_view), its datasets
  // opened with every shard required. An error naming a dataset whose
  // record count changed since the view resolved.
  static absl::StatusOr<OpenedView> Open(dataset::DatasetView view);

  const dataset::DatasetView& view() const { return view_; }
  const std::string& path() const { return view_.path; }
  uint64_t records() const { return view_.records; }
  const OpenedDataset& dataset(size_t d) const { return datasets_[d]; }

  // Visits view records [begin, end) in order, reading only the shards
  // that hold them. Precondition: begin <= end <= records().
  absl::Status Scan(uint64_t begin, uint64_t end, ViewRecordVisitor visit) const;

 private:
  explicit OpenedView(dataset::DatasetView view) : view_(std::move(view)) {}
  absl::Status ScanDataset(size_t d, uint64_t begin, uint64_t end, uint64_t* index,
                           ViewRecordVisitor visit) const;

  dataset::DatasetView view_;
  std::vector<OpenedDataset> datasets_;
};

// OpenView's result when PATH is a view file; nullopt for anything else
// (a dataset or shard, or a path that does not open: the commands' own
// opener then says what is wrong).
absl::StatusOr<std::optional<dataset::DatasetView>> OpenIfView(const std::string& path);

}  // namespace shardpack::dump

#endif  // SHARDPACK_TOOLS_DUMP_OPENED_VIEW_H_
