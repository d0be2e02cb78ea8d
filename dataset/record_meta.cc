#include "dataset/record_meta.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "backends/record_scan.h"
#include "backends/shard_gate.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "format/record_table.h"

namespace shardpack::dataset {

namespace {

// From the dataset's record table: no record read. Loading it checks its
// size, CRC-32C and counts against the manifest.
absl::Status FromTable(const NamedPath& dataset, bool need_keys, RecordMetaVisitor visit) {
  SP_ASSIGN_OR_RETURN(format::RecordTable table, LoadRecordTable(dataset));
  const int fields = table.label_fields();
  for (uint64_t r = 0; r < table.records(); ++r) {
    Labels labels;
    for (int f = 0; f < fields && f < kMaxLabels; ++f) labels.push_back(table.label(r, f));
    SP_RETURN_IF_ERROR(visit(r, labels, need_keys ? table.key(r) : std::string_view()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<format::RecordTable> LoadRecordTable(const NamedPath& dataset) {
  if (dataset.storage == nullptr || !remote::IsUrl(dataset.directory)) {
    return format::RecordTable::Load(dataset.directory, dataset.manifest);
  }
  if (!dataset.manifest.record_table.has_value()) {
    return absl::NotFoundError(
        absl::StrCat(dataset.directory, ": the manifest lists no record table"));
  }
  const std::string path = dataset.directory + "/" + dataset.manifest.record_table->path;
  SP_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, dataset.storage->OpenFile(path));
  return format::RecordTable::Parse(*file, *dataset.manifest.record_table, dataset.manifest);
}

absl::Status ForEachRecord(const NamedPath& dataset, RecordVisitor visit) {
  const size_t fields = dataset.manifest.schema.labels.size();
  const bool check_fields = dataset.schema_known();
  uint64_t first = 0;
  for (size_t k = 0; k < dataset.shard_paths.size(); ++k) {
    const std::string& path = dataset.shard_paths[k];
    SP_ASSIGN_OR_RETURN(std::unique_ptr<backends::ShardScanner> scanner,
                        backends::OpenShardScanner(path, dataset.backend(),
                                                   dataset.ExpectedEntry(k), {},
                                                   dataset.storage.get()));
    if (k < dataset.manifest.shards.size()) {
      SP_RETURN_IF_ERROR(
          common::CheckManifestRecords(path, scanner->size(), dataset.manifest.shards[k].records));
    }
    SP_RETURN_IF_ERROR(scanner->Scan(0, scanner->size(), [&](uint64_t i, const Record& r) {
      if (check_fields && static_cast<size_t>(r.labels.size()) != fields) {
        return absl::DataLossError(absl::StrCat(path, ": record ", i, " has ", r.labels.size(),
                                                " labels, the schema ", fields, " label fields"));
      }
      return visit(first + i, r);
    }));
    first += scanner->size();
  }
  return absl::OkStatus();
}

absl::Status ForEachRecordMeta(const NamedPath& dataset, bool need_keys,
                               RecordMetaVisitor visit) {
  if (dataset.has_manifest() && dataset.manifest.record_table.has_value()) {
    return FromTable(dataset, need_keys, visit);
  }
  return ForEachRecord(dataset, [&](uint64_t i, const Record& r) {
    return visit(i, r.labels, need_keys ? r.key : std::string_view());
  });
}

}  // namespace shardpack::dataset
