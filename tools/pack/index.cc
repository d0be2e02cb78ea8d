// shardpack index: the record table of a dataset packed without one (before
// manifest 1.1), built by one scan of its records, then the manifest
// rewritten (atomically) to list it.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "backends/shard_gate.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "dataset/open_path.h"
#include "format/record_table.h"
#include "shardpack/dataset.h"
#include "tools/pack/pack.h"

namespace shardpack::pack {
namespace {

// Adds shard k's records to `table`, checking each carries one label per
// field and the shard holds what its entry says.
absl::Status ScanShard(const dataset::NamedPath& named, size_t k,
                       format::RecordTableBuilder* table) {
  const std::string& path = named.shard_paths[k];
  SP_ASSIGN_OR_RETURN(auto scanner, backends::OpenShardScanner(path, named.backend(),
                                                               named.ExpectedEntry(k), {},
                                                               named.storage.get()));
  SP_RETURN_IF_ERROR(
      common::CheckManifestRecords(path, scanner->size(), named.manifest.shards[k].records));
  const size_t fields = named.manifest.schema.labels.size();
  return scanner->Scan(0, scanner->size(), [&](uint64_t i, const Record& r) {
    if (static_cast<size_t>(r.labels.size()) != fields) {
      return absl::DataLossError(absl::StrCat(path, " record ", i, ": ", r.labels.size(),
                                              " labels, the schema has ", fields, " fields"));
    }
    return table->Add({r.labels.begin(), r.labels.end()}, r.key);
  });
}

}  // namespace

absl::StatusOr<IndexResult> Index(const std::string& path) {
  SP_ASSIGN_OR_RETURN(dataset::NamedPath named, dataset::OpenNamedPath(path));
  if (!named.has_manifest()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": a lone shard has no manifest to list a record table in (name its dataset)"));
  }
  Manifest manifest = named.manifest;
  const bool taken = std::any_of(manifest.shards.begin(), manifest.shards.end(),
                                 [](const ShardEntry& e) { return e.path == kRecordTableFileName; });
  if (taken) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": a shard is named ", kRecordTableFileName));
  }
  format::RecordTableBuilder table(static_cast<int>(manifest.schema.labels.size()),
                                  named.directory);
  for (size_t k = 0; k < manifest.shards.size(); ++k) {
    SP_RETURN_IF_ERROR(ScanShard(named, k, &table));
  }
  IndexResult result;
  result.had_table = manifest.record_table.has_value();
  SP_ASSIGN_OR_RETURN(manifest.record_table, format::WriteRecordTable(table, named.directory));
  manifest.version_minor = std::max(manifest.version_minor, kManifestMinorVersion);
  SP_RETURN_IF_ERROR(WriteManifest(named.directory, manifest));
  result.records = table.records();
  result.entry = *manifest.record_table;
  return result;
}

}  // namespace shardpack::pack
