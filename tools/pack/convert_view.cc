// shardpack convert VIEW -o OUT: a view (dataset/view.h) materialized as a
// dataset: only its records, in view order, labels relabelled, the view's
// schema; one output shard per input shard that holds any of them. The
// pack record keeps the view's canonical text and fingerprint under "view".
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "backends/shard_gate.h"
#include "backends/store.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "dataset/view.h"
#include "shardpack/dataset.h"
#include "tools/common/progress_line.h"
#include "tools/pack/pack.h"
#include "tools/pack/path_overlap.h"
#include "writer/output_dir.h"
#include "writer/pack_identity.h"

namespace shardpack::pack {
namespace {

// The most canonical text the pack record keeps as "selection": a view of
// millions of indices would give a manifest past its own limits
// (kMaxManifestValues); past this it is left out, and "fingerprint" alone
// names the selection.
constexpr size_t kMaxRecordedSelection = size_t{1} << 20;

// The output's identity: o.pack, or that of the view's one dataset, or an
// empty one for many; each distinct dataset in "converted_from" (once,
// however many times the view names it), the view in "view".
absl::StatusOr<writer::PackIdentity> ViewIdentity(const dataset::DatasetView& view,
                                                  const ConvertOptions& o) {
  std::vector<writer::ConvertedInput> from;
  std::optional<writer::PackIdentity> first;
  std::set<const dataset::NamedPath*> seen;
  for (const auto& d : view.datasets) {
    if (!seen.insert(d.get()).second) continue;
    SP_ASSIGN_OR_RETURN(writer::PackIdentity pack,
                        writer::PackIdentity::FromJson(d->manifest.pack_json, d->path));
    from.push_back({d->path, d->manifest.backend, pack.ToJsonValue()});
    if (!first) first = std::move(pack);
  }
  writer::PackIdentity pack = o.pack ? *o.pack : from.size() == 1 ? *first : writer::PackIdentity();
  pack.converted_from = std::move(from);
  pack.converted_by = "shardpack " SHARDPACK_VERSION;
  pack.extra["view"] = {{"path", view.path},
                        {"fingerprint", FormatFingerprint(view.fingerprint)}};
  if (view.canonical.size() <= kMaxRecordedSelection) {
    pack.extra["view"]["selection"] = writer::PackJson::parse(view.canonical);
  }
  return pack;
}

// Writes the selected records of dataset d, one output shard per input
// shard that holds any.
absl::Status WriteDataset(const dataset::DatasetView& view, size_t d, DatasetWriter& writer,
                          cli::ProgressLine& progress) {
  const dataset::NamedPath& named = *view.datasets[d];
  uint64_t base = view.first_record[d];
  for (size_t k = 0; k < named.shard_paths.size(); ++k) {
    const std::string& path = named.shard_paths[k];
    SP_ASSIGN_OR_RETURN(auto scanner, backends::OpenShardScanner(path, named.backend(),
                                                                 named.ExpectedEntry(k), {},
                                                                 named.storage.get()));
    SP_RETURN_IF_ERROR(
        common::CheckManifestRecords(path, scanner->size(), named.manifest.shards[k].records));
    SP_RETURN_IF_ERROR(scanner->Scan(0, scanner->size(), [&](uint64_t i, const Record& r) {
      if (!view.Selected(base + i)) return absl::OkStatus();
      Record mapped = r;
      mapped.labels = view.MapLabels(r.labels);
      progress.Add(r.payload.size(), 1);
      return writer.Add(mapped);
    }));
    SP_RETURN_IF_ERROR(writer.FinishShard());
    base += scanner->size();
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Manifest> ConvertView(const std::string& path, const ConvertOptions& o) {
  SP_ASSIGN_OR_RETURN(const dataset::DatasetView view, dataset::OpenView(path));
  std::vector<InputPath> apart = {{path}};
  for (const auto& d : view.datasets) apart.push_back({d->path});
  SP_RETURN_IF_ERROR(CheckOutputApartFromInputs(o.output, apart));
  SP_ASSIGN_OR_RETURN(const writer::PackIdentity pack, ViewIdentity(view, o));
  uint64_t largest = 0;
  for (const auto& d : view.datasets) {
    for (const ShardEntry& s : d->manifest.shards) largest = std::max(largest, s.records);
  }
  SP_ASSIGN_OR_RETURN(auto out, writer::OutputDir::Create(o.output, o.overwrite));
  SP_ASSIGN_OR_RETURN(auto writer,
                      CreateConvertWriter(o, out->staging(), view.schema, largest, pack));
  cli::ProgressLine progress("convert", 0, view.records, "records", !o.quiet,
                             /*log_when_piped=*/true);
  for (size_t d = 0; d < view.datasets.size(); ++d) {
    SP_RETURN_IF_ERROR(WriteDataset(view, d, *writer, progress));
  }
  progress.Finish();
  SP_ASSIGN_OR_RETURN(Manifest manifest, writer->Finish());
  SP_RETURN_IF_ERROR(out->Publish(manifest));
  return manifest;
}

}  // namespace shardpack::pack
