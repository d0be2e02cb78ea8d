// Each record's labels and key, without its image: what a view's class and
// where conditions select on (dataset/view.h); and, for conditions on field
// values, each record whole.
//
// From the dataset's record table (records.idx, docs/format.md section 16)
// when its manifest lists one: no record is read. Otherwise one scan
// through the record scan (backends/record_scan.h), a shard at a time
// (datasets packed before manifest 1.1; `shardpack index` adds the table).
#ifndef SHARDPACK_DATASET_RECORD_META_H_
#define SHARDPACK_DATASET_RECORD_META_H_

#include <cstdint>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "dataset/open_path.h"
#include "format/record_table.h"
#include "shardpack/record.h"

namespace shardpack::dataset {

// Told each record's index in its dataset, its labels and its key (empty
// unless keys were asked for). The views are valid for the call only. A
// non-OK status stops the walk and is returned.
using RecordMetaVisitor =
    absl::FunctionRef<absl::Status(uint64_t, const Labels&, std::string_view)>;

// Visits every record of `dataset` in index order. `need_keys`: the visitor
// reads keys (a source that stores labels apart from keys may then skip
// them). Errors name the shard: a missing or damaged shard, a shard holding
// another number of records than the manifest says (indices would be
// wrong), a record whose label count differs from the schema's label
// fields (DataLossError).
absl::Status ForEachRecordMeta(const NamedPath& dataset, bool need_keys, RecordMetaVisitor visit);

// Visits every record of `dataset` in index order, read whole through the
// record scan (backends/record_scan.h), a shard at a time: what a view's
// conditions on field values read (no record table holds them). The record
// is valid for the call only. Errors as ForEachRecordMeta's.
using RecordVisitor = absl::FunctionRef<absl::Status(uint64_t, const Record&)>;
absl::Status ForEachRecord(const NamedPath& dataset, RecordVisitor visit);

// The record table `dataset`'s manifest lists, read through its storage (a
// remote dataset's is fetched whole and checked), as RecordTable::Load says.
absl::StatusOr<format::RecordTable> LoadRecordTable(const NamedPath& dataset);

}  // namespace shardpack::dataset

#endif  // SHARDPACK_DATASET_RECORD_META_H_
