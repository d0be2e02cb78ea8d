// sharddump ls: one line (or JSON object) per record, in dataset order; for
// a dataset with fields, each record checked (format/record_check.h) and its
// fields shown after the classic columns.
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "format/record_check.h"
#include "tools/common/cli.h"
#include "tools/common/escape.h"
#include "tools/dump/commands.h"
#include "tools/dump/field_render.h"
#include "tools/dump/opened_dataset.h"
#include "tools/dump/opened_view.h"
#include "tools/dump/selection.h"
#include "tools/dump/text.h"

namespace shardpack::dump {
namespace {

// Lines are gathered and written in chunks of about this size.
constexpr size_t kFlushBytes = 1 << 20;

// A record's fields, checked, as ls shows them: its values (labels as the
// view gives them) under `fields` (the view's declarations).
class FieldLister {
 public:
  // `stored`: the schema the records were written with; `shown`: the one to
  // show them by (a view's, relabelled). Both must outlive this object.
  FieldLister(const Schema& stored, const Schema& shown) : check_(stored), shown_(shown) {}
  bool active() const { return check_.has_fields(); }

  // Checks the stored record (`where` prefixes a damage message) and keeps
  // its values, label fields mapped by `map`.
  template <typename Map>
  absl::Status Check(const Record& stored, std::string_view where, Map map) {
    if (absl::Status s = check_.Check(stored); !s.ok()) {
      return absl::DataLossError(absl::StrCat(common::AsAbsl(where), ": ", s.message()));
    }
    values_.assign(check_.values().begin(), check_.values().end());
    int label = 0;
    for (size_t i = 0; i < values_.size(); ++i) {
      if (shown_.fields[i].type == FieldType::kLabel && values_[i].present) {
        values_[i].label = map(label, values_[i].label);
      }
      label += shown_.fields[i].type == FieldType::kLabel;
    }
    return absl::OkStatus();
  }
  std::string Columns() const { return "\t" + FieldColumns(shown_.fields, values_); }
  Json ToJson() const { return FieldsJson(shown_.fields, values_); }

 private:
  format::RecordCheck check_;
  const Schema& shown_;
  std::vector<FieldValue> values_;
};

std::string TextLine(uint64_t index, const Record& r, size_t shard,
                     const backends::RecordLocation& loc, const FieldLister& fields) {
  return absl::StrCat(index, "\t", cli::EscapeText(r.key), "\t", LabelsText(r.labels), "\t",
                      EncodingText(r.image), "\t", ShapeText(r.image), "\t", r.payload.size(), "\t",
                      shard, "\t", loc.Text(), fields.active() ? fields.Columns() : "", "\n");
}

std::string JsonLine(uint64_t index, const Record& r, size_t shard,
                     const backends::RecordLocation& loc, const FieldLister& fields) {
  Json j = RecordJson(index, r);
  j["shard"] = shard;
  j["offset"] = loc.file_offset();
  j["block_offset"] = loc.block_offset;
  j["in_block"] = loc.in_block;
  j["compressed"] = loc.compressed;
  if (fields.active()) j["fields"] = fields.ToJson();
  return DumpJson(j, false) + "\n";
}

int64_t Unmapped(int, int64_t label) { return label; }

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
std::string ViewLine(const ViewRecordPlace& p, const Record& r, bool json,
                     const FieldLister& fields) {
  if (json) {
    Json j = RecordJson(p.index, r);
    j["dataset"] = p.dataset;
    j["record"] = p.record;
    j["shard"] = p.shard;
    j["offset"] = p.location.file_offset();
    if (fields.active()) j["fields"] = fields.ToJson();
    return DumpJson(j, false) + "\n";
  }
  return absl::StrCat(p.index, "\t", cli::EscapeText(r.key), "\t", LabelsText(r.labels), "\t",
                      EncodingText(r.image), "\t", ShapeText(r.image), "\t", r.payload.size(),
                      "\t", p.dataset, "\t", p.record, fields.active() ? fields.Columns() : "",
                      "\n");
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
  const dataset::DatasetView& v = opened.view();
  FieldLister fields(opened.dataset(0).manifest().schema, v.schema);
  const absl::Status scanned = opened.Scan(
      range.begin, range.end, [&](const ViewRecordPlace& p, const Record& r) {
        if (fields.active()) {
          Record stored = r;
          stored.labels = p.stored_labels;
          const OpenedDataset& ds = opened.dataset(p.dataset);
          const std::string where = RecordWhere(ds.ShardPath(p.shard), p.location,
                                                p.record - ds.first_record(p.shard));
          SP_RETURN_IF_ERROR(fields.Check(
              stored, where, [&](int f, int64_t label) { return v.MapLabel(f, label); }));
        }
        return AddLine(out, ViewLine(p, r, options.common.json, fields));
      });
  SP_RETURN_IF_ERROR(scanned);
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
  const Schema& schema = ds.manifest().schema;  // a lone .shard file's: classic
  FieldLister fields(schema, schema);
  for (size_t k = 0; k < ds.num_shards() && range.size() > 0; ++k) {
    IndexRange part = Intersect(range, ds.first_record(k), ds.first_record(k + 1));
    if (part.size() == 0) continue;
    SP_ASSIGN_OR_RETURN(std::unique_ptr<backends::ShardScanner> shard, ds.OpenShard(k));
    const uint64_t first = ds.first_record(k);
    auto line = [&](uint64_t i, const Record& r, const backends::RecordLocation& loc) {
      if (fields.active()) {
        SP_RETURN_IF_ERROR(fields.Check(
            r, RecordWhere(shard->path(), loc, i), Unmapped));
      }
      return AddLine(out, options.common.json ? JsonLine(first + i, r, k, loc, fields)
                                              : TextLine(first + i, r, k, loc, fields));
    };
    absl::Status s = shard->Scan(part.begin - first, part.end - first, line);
    if (!s.ok()) return s;
  }
  SP_RETURN_IF_ERROR(cli::WriteStdout(out));
  return cli::FlushStdout();
}

}  // namespace shardpack::dump
