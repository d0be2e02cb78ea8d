// sharddump ls: one line (or JSON object) per record, in dataset order.
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "tools/common/cli.h"
#include "tools/common/escape.h"
#include "tools/dump/commands.h"
#include "tools/dump/opened_dataset.h"
#include "tools/dump/opened_view.h"
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

// Appends a line, writing the lines gathered once they reach kFlushBytes.
absl::Status AddLine(std::string& out, const std::string& line) {
  out += line;
  if (out.size() < kFlushBytes) return absl::OkStatus();
  absl::Status written = cli::WriteStdout(out);
  out.clear();
  return written;
}

// A view's record: its index in the view, then where it comes from (the
// dataset's number in the view and the record's index in that dataset).
std::string ViewLine(const ViewRecordPlace& p, const Record& r, bool json) {
  if (json) {
    Json j = RecordJson(p.index, r);
    j["dataset"] = p.dataset;
    j["record"] = p.record;
    j["shard"] = p.shard;
    j["offset"] = p.location.file_offset();
    return DumpJson(j, false) + "\n";
  }
  return absl::StrCat(p.index, "\t", cli::EscapeText(r.key), "\t", LabelsText(r.labels), "\t",
                      EncodingText(r.image), "\t", ShapeText(r.image), "\t", r.payload.size(),
                      "\t", p.dataset, "\t", p.record, "\n");
}

absl::Status LsView(const LsOptions& options, dataset::DatasetView view) {
  if (options.shard) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--shard: ", options.path, " is a view, whose records are numbered in the view "
        "(use --range)"));
  }
  SP_ASSIGN_OR_RETURN(OpenedView opened, OpenedView::Open(std::move(view)));
  IndexRange range{0, opened.records()};
  if (options.range) {
    SP_ASSIGN_OR_RETURN(range, ResolveRange(*options.range, opened.records()));
  }
  std::string out;
  SP_RETURN_IF_ERROR(opened.Scan(range.begin, range.end,
                                 [&](const ViewRecordPlace& p, const Record& r) {
                                   return AddLine(out, ViewLine(p, r, options.common.json));
                                 }));
  SP_RETURN_IF_ERROR(cli::WriteStdout(out));
  return cli::FlushStdout();
}

}  // namespace

absl::Status RunLs(const LsOptions& options) {
  SP_ASSIGN_OR_RETURN(std::optional<dataset::DatasetView> view, OpenIfView(options.path));
  if (view) return LsView(options, std::move(*view));
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
      return AddLine(out, options.common.json ? JsonLine(first + i, r, k, loc)
                                              : TextLine(first + i, r, k, loc));
    };
    absl::Status s = shard->Scan(part.begin - first, part.end - first, line);
    if (!s.ok()) return s;
  }
  SP_RETURN_IF_ERROR(cli::WriteStdout(out));
  return cli::FlushStdout();
}

}  // namespace shardpack::dump
