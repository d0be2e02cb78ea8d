// sharddump ls: one line (or JSON object) per record, in dataset order.
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "tools/common/escape.h"
#include "tools/dump/commands.h"
#include "tools/dump/opened_dataset.h"
#include "tools/dump/selection.h"
#include "tools/dump/text.h"

namespace shardpack::dump {
namespace {

// Lines are gathered and written in chunks of about this size.
constexpr size_t kFlushBytes = 1 << 20;

std::string TextLine(uint64_t index, const Record& r, size_t shard,
                     const backends::RecordLocation& loc) {
  return absl::StrCat(index, "\t", cli::EscapeText(r.key), "\t", LabelsText(r.labels), "\t",
                      EncodingText(r.image), "\t", ShapeText(r.image), "\t", r.payload.size(), "\t",
                      shard, "\t", loc.Text(), "\n");
}

std::string JsonLine(uint64_t index, const Record& r, size_t shard,
                     const backends::RecordLocation& loc) {
  Json j = RecordJson(index, r);
  j["shard"] = shard;
  j["offset"] = loc.file_offset();
  j["block_offset"] = loc.block_offset;
  j["in_block"] = loc.in_block;
  j["compressed"] = loc.compressed;
  return DumpJson(j, false) + "\n";
}

}  // namespace

absl::Status RunLs(const LsOptions& options) {
  SP_ASSIGN_OR_RETURN(OpenedDataset ds,
                      OpenedDataset::Open(options.path, OpenedDataset::ShardPolicy::kRequireAll));
  IndexRange range{0, ds.records()};
  if (options.range) {
    SP_ASSIGN_OR_RETURN(range, ResolveRange(*options.range, ds.records()));
  }
  if (options.shard) {
    if (*options.shard >= ds.num_shards()) {
      return absl::InvalidArgumentError(absl::StrCat("--shard ", *options.shard, ": ", ds.path(),
                                                     " has ", ds.num_shards(), " shards (0..",
                                                     ds.num_shards() - 1, ")"));
    }
    size_t k = *options.shard;
    range = Intersect(range, ds.first_record(k), ds.first_record(k + 1));
  }
  std::string out;
  for (size_t k = 0; k < ds.num_shards() && range.size() > 0; ++k) {
    IndexRange part = Intersect(range, ds.first_record(k), ds.first_record(k + 1));
    if (part.size() == 0) continue;
    SP_ASSIGN_OR_RETURN(std::unique_ptr<backends::ShardScanner> shard, ds.OpenShard(k));
    const uint64_t first = ds.first_record(k);
    auto line = [&](uint64_t i, const Record& r, const backends::RecordLocation& loc) {
      out += options.common.json ? JsonLine(first + i, r, k, loc) : TextLine(first + i, r, k, loc);
      if (out.size() < kFlushBytes) return absl::OkStatus();
      absl::Status written = WriteStdout(out);
      out.clear();
      return written;
    };
    absl::Status s = shard->Scan(part.begin - first, part.end - first, line);
    if (!s.ok()) return s;
  }
  SP_RETURN_IF_ERROR(WriteStdout(out));
  return FlushStdout();
}

}  // namespace shardpack::dump
