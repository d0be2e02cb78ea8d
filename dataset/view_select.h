// The steps of a view's selection (dataset/view.h), resolved against the
// datasets' schema and applied to a bitmap of the concatenation's records.
#ifndef SHARDPACK_DATASET_VIEW_SELECT_H_
#define SHARDPACK_DATASET_VIEW_SELECT_H_

#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dataset/view.h"
#include "dataset/view_spec.h"
#include "shardpack/manifest.h"

namespace shardpack::dataset {

// Calls fn(r) for each set bit r of `bits`, in order. fn may clear bits
// (each word is read before its bits are visited).
template <typename Fn>
void ForEachSetBit(const std::vector<uint64_t>& bits, Fn&& fn) {
  for (size_t w = 0; w < bits.size(); ++w) {
    for (uint64_t word = bits[w]; word != 0; word &= word - 1) {
      fn(uint64_t{w} * 64 + static_cast<uint64_t>(std::countr_zero(word)));
    }
  }
}

struct ResolvedSelection {
  int class_field = -1;                  // -1: no class step
  std::vector<int64_t> class_labels;     // the named classes' labels, in the order named
  bool relabel = true;
  // Sorted, merged, non-empty [begin, end) ranges; nullopt: no index step.
  std::optional<std::vector<std::pair<uint64_t, uint64_t>>> ranges;
  int where_field = -1;                  // -1: no label condition
  std::vector<int64_t> where_labels;     // sorted, distinct
  std::optional<std::string> key_prefix;
  std::optional<std::string> key_glob;
  // where.strings, resolved: the field's index in FieldsOf(schema), the
  // values of `in` sorted and distinct.
  struct StringTest {
    int field = -1;
    std::optional<std::vector<std::string>> in;
    std::optional<std::string> prefix;
    std::optional<std::string> glob;
  };
  std::vector<StringTest> strings;
  std::optional<ViewSpec::Split> split;

  bool needs_meta() const {
    return class_field >= 0 || where_field >= 0 || needs_keys() || needs_records();
  }
  // Field values are in no record table: each record is read whole.
  bool needs_records() const { return !strings.empty(); }
  bool needs_keys() const { return key_prefix.has_value() || key_glob.has_value(); }
};

// Resolves class names, label values and indices against `schema` and
// `base_records`. InvalidArgumentError "<file>: <field>: ..." naming a
// label field or class that does not exist, a label outside a field's
// classes, an index or range past the end, a string condition on a field
// that does not exist or is not a string.
absl::StatusOr<ResolvedSelection> ResolveSelection(const ViewSpec& spec, const Schema& schema,
                                                   uint64_t base_records, const std::string& file);

// Sets view->selected (empty when every record is kept), view->records,
// view->label_map and view->schema's relabelled field. Reads each record's
// labels (and keys) once when the selection needs them. Precondition:
// view->datasets, first_record, base_records and schema (the datasets') are
// set. A record whose fields disagree with the schema (when string
// conditions read them) is a DataLossError naming the dataset and record.
absl::Status ApplySelection(const ResolvedSelection& sel, DatasetView* view);

}  // namespace shardpack::dataset

#endif  // SHARDPACK_DATASET_VIEW_SELECT_H_
