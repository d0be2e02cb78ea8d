// shardpack merge: parts packed on many machines become one dataset. Shard
// files are hard-linked (copied only across file systems), never rewritten.
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "shardpack/dataset.h"
#include "shardpack/file.h"
#include "shardpack/status.h"
#include "tools/pack/output_dir.h"
#include "tools/pack/pack.h"
#include "tools/pack/path_overlap.h"

namespace shardpack::pack {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

absl::Status LinkOrCopy(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_hard_link(from, to, ec);
  if (!ec) return absl::OkStatus();
  fs::copy_file(from, to, ec);
  if (ec) return ErrnoError("copy", from.string(), ec.value());
  return absl::OkStatus();
}

// The skipped.tsv lines of a part, without its header line.
std::string SkippedLines(const std::string& part) {
  auto text = ReadSmallFile((fs::path(part) / "skipped.tsv").string());
  if (!text.ok()) return "";
  size_t newline = text->find('\n');
  return newline == std::string::npos ? "" : text->substr(newline + 1);
}

}  // namespace

absl::StatusOr<Manifest> Merge(const std::vector<std::string>& parts, const std::string& output,
                               bool overwrite, std::optional<Backend> backend) {
  if (parts.empty()) return absl::InvalidArgumentError("merge needs at least one part");
  std::vector<InputPath> apart;
  for (const std::string& path : parts) apart.push_back({path});
  SP_RETURN_IF_ERROR(CheckOutputApartFromInputs(output, apart));
  std::vector<Manifest> manifests;
  bool same_backend = true;
  for (const std::string& part : parts) {
    SP_ASSIGN_OR_RETURN(Manifest m, ReadManifest(part));
    if (!backend) backend = m.backend;
    same_backend = same_backend && m.backend == *backend;
    if (!manifests.empty() && !(m.schema == manifests[0].schema)) {
      return absl::InvalidArgumentError(
          absl::StrCat(part, ": schema differs from that of ", parts[0]));
    }
    manifests.push_back(std::move(m));
  }

  if (!same_backend) {
    ConvertOptions o;
    o.output = output;
    o.backend = *backend;
    o.overwrite = overwrite;
    o.quiet = true;
    return Convert(parts, o);
  }
  SP_ASSIGN_OR_RETURN(auto out, OutputDir::Create(output, overwrite));
  Manifest merged = manifests[0];
  merged.shards.clear();
  std::string skipped = "path\treason\n";
  Json from = Json::array();
  for (size_t p = 0; p < parts.size(); ++p) {
    for (const ShardEntry& shard : manifests[p].shards) {
      std::string name = ShardFileName(kDefaultShardPrefix, merged.shards.size(), merged.backend);
      SP_RETURN_IF_ERROR(LinkOrCopy(fs::path(parts[p]) / shard.path, fs::path(out->staging()) / name));
      ShardEntry entry = shard;
      entry.path = name;
      merged.shards.push_back(std::move(entry));
    }
    skipped += SkippedLines(parts[p]);
    from.push_back({{"path", parts[p]}, {"pack", Json::parse(manifests[p].pack_json, nullptr, false)}});
  }
  merged.pack_json = Json{{"tool", "shardpack " SHARDPACK_VERSION}, {"merged_from", from}}.dump();
  SP_RETURN_IF_ERROR(WriteFileAtomically((fs::path(out->staging()) / "skipped.tsv").string(), skipped));
  SP_RETURN_IF_ERROR(out->Publish(merged));
  return merged;
}

}  // namespace shardpack::pack
