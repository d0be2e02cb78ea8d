// Views: a subset, a split or a concatenation of datasets, named by a small
// JSON file and costing no bytes of records on disk (docs/reader.md, "Views",
// gives the format; docs/cli.md: a view file is accepted as PATH).
//
//   {"shardpack_view": 1,
//    "datasets": ["imagenet-1k-train"],
//    "classes": {"field": "label", "names": ["n01440764", ...], "relabel": true},
//    "indices": [7, [100, 200]],
//    "where": {"labels": {"field": "label", "in": [3, "n01443537"]},
//              "key_prefix": "train/", "key_glob": "*.JPEG"},
//    "split": {"seed": 7, "fraction": 0.01, "take": "held_out"}}
//
// Datasets are concatenated in order (paths relative to the view file's
// folder) and must have one schema. The selection steps, each optional, are
// applied in this order, each keeping a subset of what the one before kept:
// classes, indices (of the concatenation), where (every condition given
// must hold), split (of the n records kept so far, the round(fraction * n)
// with the smallest common::Draw(seed, kStreamViewSplit, base index), ties
// by index, are held out; `take` keeps them or the rest). Everything
// resolves to one bitmap over the concatenation: a view costs base_records
// / 8 bytes of memory, whatever it selects.
//
// OpenView reads the view file and the datasets' manifests; classes and
// where need each record's labels (and keys for a key condition), which
// ForEachRecordMeta (dataset/record_meta.h) reads in one pass; indices and
// split read nothing. OpenView shares nothing between calls (any thread may
// call it); a DatasetView is a plain value that owns all it holds, safe to
// read from many threads at once.
#ifndef SHARDPACK_DATASET_VIEW_H_
#define SHARDPACK_DATASET_VIEW_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "dataset/open_path.h"
#include "shardpack/manifest.h"

namespace shardpack::dataset {

// The format version this build reads and writes ("shardpack_view": 1).
inline constexpr int kViewVersion = 1;
// The most records a view's datasets may hold together (its bitmap is then
// 8 GiB): more is refused, naming the count.
inline constexpr uint64_t kMaxViewRecords = uint64_t{1} << 36;

struct DatasetView {
  std::string path;                     // as given (the view file, or a plain dataset path)
  bool is_view = false;                 // false: a plain dataset path, no selection
  // Concatenated, in order; a dataset named several times is opened once
  // and shared by its namings.
  std::vector<std::shared_ptr<const NamedPath>> datasets;
  std::vector<uint64_t> first_record;   // global index of each dataset's first record
  uint64_t base_records = 0;            // records of the concatenation
  // Bit r of selected[r / 64]: base record r is in the view; empty: all.
  std::vector<uint64_t> selected;
  uint64_t records = 0;                 // records in the view
  Schema schema;                        // the view's schema (classes of a class subset, relabelled)
  // Per label field: new label of old label (-1: a class the view does not
  // keep); empty: identity. Sized like the datasets' schema's label fields
  // for a view (each entry sized to its field's classes), empty for a plain
  // path.
  std::vector<std::vector<int64_t>> label_map;
  // Views: a hash of the datasets' ManifestFingerprints and the canonical
  // selection (not of the datasets' paths: a view moved with its datasets
  // keeps it); a state taken on one view refuses another. Plain paths: 0.
  uint64_t fingerprint = 0;
  // The view as canonical JSON text (compact, keys in a fixed order, index
  // ranges sorted and merged, label values resolved to integers), for
  // messages and convert's pack record. Empty for a plain path.
  std::string canonical;

  // Whether base record r is in the view. Precondition: r < base_records.
  bool Selected(uint64_t r) const {
    return selected.empty() || ((selected[r / 64] >> (r % 64)) & 1) != 0;
  }
  // The dataset holding base record r and r's index in it. Precondition:
  // r < base_records.
  std::pair<size_t, uint64_t> Locate(uint64_t r) const;
  // A label of field `field` as the view gives it: label_map applied (a
  // label outside the map is returned unchanged).
  int64_t MapLabel(int field, int64_t label) const;
  // Every label of a record mapped as MapLabel maps it.
  Labels MapLabels(const Labels& labels) const;
};

// A view file, or any path OpenNamedPath takes (then is_view = false, one
// dataset, nothing selected out: records = base_records, which is 0 for a
// lone `.shard` file, whose count its index holds). A view file is told by
// its content: a regular file, not named manifest.json, whose first
// non-blank byte is `{`. Errors are InvalidArgumentError naming the view
// file and the field (`v.json: split.fraction: 1.5 is not in [0, 1]`),
// except a dataset's own (NotFoundError naming its path, DataLossError for
// a damaged manifest or record), and "the view selects no record" when the
// selection is empty. Every dataset is opened through `storage` (none: one
// made from the environment, shared by the view's datasets).
absl::StatusOr<DatasetView> OpenView(const std::string& path,
                                     std::shared_ptr<remote::Storage> storage = nullptr);

// An image schema as messages give it: "raw/hwc 32x32x3" (encoding/layout
// width x height x channels).
std::string ImageShapeText(const ImageInfo& i);

// Whether `path` names a view file (as OpenView tells one: a regular file,
// not manifest.json, no shard magic, its first non-blank byte `{`). Errors
// only when the file cannot be read.
absl::StatusOr<bool> IsViewFile(const std::string& path);

// The datasets a view file names, as paths (relative ones joined to the
// file's folder), from the file alone: nothing is opened. The view file's
// own errors (ParseViewSpec's) as OpenView gives them.
absl::StatusOr<std::vector<std::string>> ViewDatasetPaths(const std::string& path);

// Calls fn(view_index, base_index) for each record of the view, in order.
// A non-OK status stops the walk and is returned.
absl::Status ForEachViewRecord(const DatasetView& view, uint64_t begin, uint64_t end,
                               absl::FunctionRef<absl::Status(uint64_t, uint64_t)> fn);

// The base index of view record i (O(base_records / 64)). Precondition:
// i < view.records.
uint64_t ViewRecordBase(const DatasetView& view, uint64_t i);

}  // namespace shardpack::dataset

#endif  // SHARDPACK_DATASET_VIEW_H_
