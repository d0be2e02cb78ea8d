// shardpack convert: a dataset of one backend into another, record by record,
// keeping its shard boundaries, schema and pack parameters. Same atomicity
// as Pack: built in "<output>.partial", renamed, manifest last.
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "backends/shard_gate.h"
#include "backends/store.h"
#include "common/status_macros.h"
#include "dataset/open_path.h"
#include "dataset/view.h"
#include "shardpack/dataset.h"
#include "shardpack/file.h"
#include "tools/common/progress_line.h"
#include "tools/pack/pack.h"
#include "tools/pack/path_overlap.h"
#include "writer/output_dir.h"
#include "writer/pack_identity.h"

namespace shardpack::pack {

absl::StatusOr<dataset::NamedPath> OpenInputDataset(const std::string& path) {
  SP_ASSIGN_OR_RETURN(dataset::NamedPath named, dataset::OpenNamedPath(path));
  if (!named.schema_known()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": a lone .shard file has no schema: convert its dataset directory"));
  }
  return named;
}

namespace {

// The output's identity: o.pack, or that of the one input, or an empty one
// for many; with each input's recorded in "converted_from". An input whose
// identity does not parse is refused (PackIdentity::FromJson's error).
absl::StatusOr<writer::PackIdentity> ConvertedIdentity(const std::vector<std::string>& inputs,
                                                       const std::vector<dataset::NamedPath>& in,
                                                       const ConvertOptions& o) {
  std::vector<writer::ConvertedInput> from;
  std::optional<writer::PackIdentity> first;
  for (size_t i = 0; i < in.size(); ++i) {
    SP_ASSIGN_OR_RETURN(writer::PackIdentity pack,
                        writer::PackIdentity::FromJson(in[i].manifest.pack_json, inputs[i]));
    from.push_back({inputs[i], in[i].manifest.backend, pack.ToJsonValue()});
    if (i == 0) first = std::move(pack);
  }
  writer::PackIdentity pack = o.pack ? *o.pack : in.size() == 1 ? *first : writer::PackIdentity();
  pack.converted_from = std::move(from);
  pack.converted_by = "shardpack " SHARDPACK_VERSION;
  return pack;
}

// A view is converted alone: its datasets are concatenated by the view.
absl::Status CheckViewAlone(const std::vector<std::string>& inputs) {
  if (inputs.size() < 2) return absl::OkStatus();
  for (const std::string& path : inputs) {
    if (dataset::IsViewFile(path).value_or(false)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": a view is converted alone (name the datasets to concatenate in the view)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<DatasetWriter>> CreateConvertWriter(
    const ConvertOptions& o, const std::string& staging, const Schema& schema, uint64_t largest,
    const writer::PackIdentity& pack) {
  DatasetWriterOptions w = o.writer;
  w.directory = staging;
  w.schema = schema;
  // One output shard per input shard: FinishShard() closes each; the limit
  // tells the HDF5 writer that no shard is larger (its chunk size).
  w.shard_max_bytes = 0;
  w.shard_max_records = largest;
  w.write_manifest = false;
  w.pack_json = pack.ToJson();
  backends::UseBackend(&w, o.backend);
  return DatasetWriter::Create(w);
}

absl::StatusOr<Manifest> Convert(const std::vector<std::string>& inputs, const ConvertOptions& o) {
  if (inputs.empty()) return absl::InvalidArgumentError("nothing to convert");
  SP_RETURN_IF_ERROR(CheckViewAlone(inputs));
  if (dataset::IsViewFile(inputs[0]).value_or(false)) return ConvertView(inputs[0], o);
  std::vector<InputPath> apart;
  for (const std::string& path : inputs) apart.push_back({path});
  SP_RETURN_IF_ERROR(CheckOutputApartFromInputs(o.output, apart));
  std::vector<dataset::NamedPath> in;
  for (const std::string& path : inputs) {
    SP_ASSIGN_OR_RETURN(dataset::NamedPath d, OpenInputDataset(path));
    if (!in.empty() && !(d.manifest.schema == in[0].manifest.schema)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": schema differs from that of ", inputs[0]));
    }
    in.push_back(std::move(d));
  }
  uint64_t total = 0, largest = 0;
  for (const dataset::NamedPath& d : in) {
    total += d.manifest.records();
    for (const ShardEntry& s : d.manifest.shards) largest = std::max(largest, s.records);
  }
  // A single input keeps its pack parameters; the conversion is recorded.
  SP_ASSIGN_OR_RETURN(const writer::PackIdentity pack, ConvertedIdentity(inputs, in, o));

  SP_ASSIGN_OR_RETURN(auto out, writer::OutputDir::Create(o.output, o.overwrite));
  SP_ASSIGN_OR_RETURN(auto writer,
                      CreateConvertWriter(o, out->staging(), in[0].manifest.schema, largest, pack));

  cli::ProgressLine progress("convert", 0, total, "records", !o.quiet, /*log_when_piped=*/true);
  for (const dataset::NamedPath& d : in) {
    for (size_t k = 0; k < d.shard_paths.size(); ++k) {
      const std::string& shard = d.shard_paths[k];
      std::optional<ShardEntry> expected;
      if (d.checksummed()) expected = d.manifest.shards[k];
      SP_ASSIGN_OR_RETURN(auto scanner,
                          backends::OpenShardScanner(shard, d.manifest.backend, expected, {},
                                                     d.storage.get()));
      SP_RETURN_IF_ERROR(scanner->Scan(0, scanner->size(), [&](uint64_t, const Record& r) {
        progress.Add(r.payload.size(), 1);
        return writer->Add(r);
      }));
      SP_RETURN_IF_ERROR(writer->FinishShard());
    }
  }
  progress.Finish();
  SP_ASSIGN_OR_RETURN(Manifest manifest, writer->Finish());
  SP_RETURN_IF_ERROR(out->Publish(manifest));
  return manifest;
}

}  // namespace shardpack::pack
