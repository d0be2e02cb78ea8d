// shardpack merge: parts packed on many machines become one dataset. Every
// part is checked first (part_check.h); then shard files are hard-linked
// (copied only across file systems), never rewritten: O(parts + shards).
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/posix_io.h"
#include "common/status_macros.h"
#include "format/record_table.h"
#include "shardpack/dataset.h"
#include "shardpack/file.h"
#include "tools/pack/pack.h"
#include "tools/pack/part_check.h"
#include "tools/pack/path_overlap.h"
#include "writer/output_dir.h"
#include "writer/pack_identity.h"

namespace shardpack::pack {
namespace {

namespace fs = std::filesystem;

absl::Status LinkOrCopy(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_hard_link(from, to, ec);
  if (!ec) return absl::OkStatus();
  return common::CopyFile(from.string(), to.string());
}

// The skipped.tsv lines of a part, without its header line.
std::string SkippedLines(const std::string& part) {
  auto text = ReadSmallFile((fs::path(part) / "skipped.tsv").string());
  if (!text.ok()) return "";
  size_t newline = text->find('\n');
  return newline == std::string::npos ? "" : text->substr(newline + 1);
}

// The merged dataset's identity: that of the parts (they are equal but for
// "part") without "part", and "merged": by which tool, from which parts.
writer::PackIdentity MergedIdentity(const std::vector<const PartDataset*>& sorted) {
  writer::PackIdentity pack = sorted.front()->pack.WithoutPart();
  writer::MergeRecord merged{"shardpack " SHARDPACK_VERSION, sorted.front()->count, {}};
  for (const PartDataset* p : sorted) {
    merged.parts.push_back({p->index, p->path, p->manifest.records(), p->manifest.shards.size()});
  }
  pack.merged = std::move(merged);
  return pack;
}

// The merged dataset's record table: the parts' tables, concatenated in
// part order (no shard is read). None when a part has none (`shardpack
// index` then builds it by a scan).
absl::StatusOr<std::optional<RecordTableEntry>> MergeRecordTables(
    const std::vector<const PartDataset*>& sorted, const std::string& staging) {
  const int fields = static_cast<int>(sorted.front()->manifest.schema.labels.size());
  format::RecordTableBuilder merged(fields, staging);
  std::vector<int64_t> labels(fields);
  for (const PartDataset* p : sorted) {
    if (!p->manifest.record_table.has_value()) return std::nullopt;
    SP_ASSIGN_OR_RETURN(format::RecordTable table,
                        format::RecordTable::Load(p->path, p->manifest));
    for (uint64_t r = 0; r < table.records(); ++r) {
      for (int f = 0; f < fields; ++f) labels[f] = table.label(r, f);
      SP_RETURN_IF_ERROR(merged.Add(labels, table.key(r)));
    }
  }
  return format::WriteRecordTable(merged, staging);
}

absl::StatusOr<Manifest> LinkParts(const std::vector<const PartDataset*>& sorted,
                                   const MergeOptions& o) {
  SP_ASSIGN_OR_RETURN(auto out, writer::OutputDir::Create(o.output, o.overwrite));
  Manifest merged = sorted.front()->manifest;
  merged.version_minor = kManifestMinorVersion;
  merged.shards.clear();
  merged.pack_json = MergedIdentity(sorted).ToJson();
  std::string skipped = "path\treason\n";
  for (const PartDataset* p : sorted) {
    for (const ShardEntry& shard : p->manifest.shards) {
      std::string name = ShardFileName(kDefaultShardPrefix, merged.shards.size(), merged.backend);
      SP_RETURN_IF_ERROR(
          LinkOrCopy(fs::path(p->path) / shard.path, fs::path(out->staging()) / name));
      ShardEntry entry = shard;
      entry.path = name;
      merged.shards.push_back(std::move(entry));
    }
    skipped += SkippedLines(p->path);
  }
  SP_ASSIGN_OR_RETURN(merged.record_table, MergeRecordTables(sorted, out->staging()));
  SP_RETURN_IF_ERROR(
      WriteFileAtomically((fs::path(out->staging()) / "skipped.tsv").string(), skipped));
  SP_RETURN_IF_ERROR(out->Publish(merged));
  return merged;
}

}  // namespace

absl::StatusOr<MergeResult> Merge(const std::vector<std::string>& paths, const MergeOptions& o) {
  if (paths.empty()) return absl::InvalidArgumentError("merge needs at least one part");
  if (!o.check_only || !o.output.empty()) {
    std::vector<InputPath> apart;
    for (const std::string& path : paths) apart.push_back({path});
    SP_RETURN_IF_ERROR(CheckOutputApartFromInputs(o.output, apart));
  }
  std::vector<PartDataset> parts;
  parts.reserve(paths.size());
  for (const std::string& path : paths) {
    SP_ASSIGN_OR_RETURN(PartDataset p, ReadPart(path, o.count));
    parts.push_back(std::move(p));
  }
  SP_ASSIGN_OR_RETURN(std::vector<const PartDataset*> sorted, CheckParts(parts));
  MergeResult result;
  result.parts = sorted.size();
  // ReadPart checked that one of them is there.
  const writer::PackIdentity& pack = sorted.front()->pack;
  if (pack.input) result.fingerprint = pack.input->fingerprint;
  if (pack.job) result.job = *pack.job;
  for (const PartDataset* p : sorted) {
    result.records += p->manifest.records();
    result.shards += p->manifest.shards.size();
  }
  if (o.check_only) return result;

  const Backend backend = o.backend.value_or(sorted.front()->manifest.backend);
  bool same_backend = true;
  for (const PartDataset* p : sorted) same_backend = same_backend && p->manifest.backend == backend;
  if (same_backend) {
    SP_ASSIGN_OR_RETURN(result.manifest, LinkParts(sorted, o));
    return result;
  }
  ConvertOptions c;
  c.output = o.output;
  c.backend = backend;
  c.overwrite = o.overwrite;
  c.quiet = true;
  c.pack = MergedIdentity(sorted);
  std::vector<std::string> in_order;
  for (const PartDataset* p : sorted) in_order.push_back(p->path);
  SP_ASSIGN_OR_RETURN(result.manifest, Convert(in_order, c));
  return result;
}

}  // namespace shardpack::pack
