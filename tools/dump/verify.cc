// sharddump verify: every byte of every shard (VerifyShard: checksums,
// index, padding; every record against the schema, in the same pass), then
// each shard against its manifest entry (size, record
// count, whole-file CRC-32C), then files the manifest does not list; with
// --decode, every JPEG decoded in full (every JPEG image field of a record
// with fields). Shards are checked in parallel, one
// per thread; the report comes out in shard order whatever the thread count.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "common/threads.h"
#include "dataset/record_meta.h"
#include "dataset/view.h"
#include "format/record_check.h"
#include "format/record_table.h"
#include "tools/common/cli.h"
#include "tools/common/escape.h"
#include "tools/common/progress_line.h"
#include "tools/dump/commands.h"
#include "tools/dump/jpeg_check.h"
#include "tools/dump/opened_dataset.h"
#include "tools/dump/text.h"
#include "tools/dump/verify_report.h"

namespace shardpack::dump {
namespace {

struct Problem {
  std::optional<size_t> shard;     // none: about the dataset as a whole
  std::string path;                // the file concerned
  std::optional<uint64_t> record;  // index in the shard
  std::optional<uint64_t> index;   // index in the dataset
  uint64_t offset = 0;             // file offset
  std::string message;
};

struct ShardOutcome {
  std::string path;
  uint64_t records = 0;
  uint64_t bytes = 0;
  std::optional<uint32_t> crc32c;  // when every byte was read
  uint64_t decoded = 0;
  std::vector<Problem> problems;
  // The shard's records against the record table (when it passed its own
  // checks): the mismatches, or why the comparison could not run.
  std::vector<Problem> table_problems;
  absl::Status table_status;
};

// The record table a manifest lists, loaded before the shards are checked
// so that each worker compares its shard's records with it in the same
// parallel pass (as a serial pass after the shards' it made verify take
// twice as long).
struct TableCheck {
  std::string path;
  absl::StatusOr<format::RecordTable> table;
};

// Record-table mismatches reported before the rest are counted only.
constexpr int kMaxTableProblems = 10;

// Records against the table, each one's labels and key: the first
// kMaxTableProblems mismatches named in `problems`.
struct TableComparer {
  const format::RecordTable* table;
  const std::string* table_path;
  std::vector<Problem>* problems;

  void operator()(uint64_t index, const Record& r) const {
    bool same = index < table->records() && table->key(index) == r.key &&
                r.labels.size() == table->label_fields();
    for (int f = 0; same && f < r.labels.size(); ++f) same = table->label(index, f) == r.labels[f];
    if (same || problems->size() >= kMaxTableProblems) return;
    Problem p;
    p.path = *table_path;
    p.index = index;
    p.message = absl::StrCat(*table_path, ": record ", index, " ('",
                             common::AsAbsl(common::Excerpt(r.key)),
                             "') has other labels or another key in the record table "
                             "(`shardpack index` rebuilds it)");
    problems->push_back(std::move(p));
  }
};

// Shard k's records against the table, in a scan of their own: for the
// backends whose check (CheckShard) does not hand the records over.
absl::Status CompareTable(const OpenedDataset& ds, size_t k, const TableComparer& compare) {
  SP_ASSIGN_OR_RETURN(auto shard, ds.OpenShard(k));
  const uint64_t first = ds.first_record(k);
  return shard->Scan(0, shard->size(), [&](uint64_t i, const Record& r) {
    compare(first + i, r);
    return absl::OkStatus();
  });
}

class Verifier {
 public:
  Verifier(const OpenedDataset& ds, const VerifyOptions& options, const TableCheck* table)
      : ds_(ds),
        options_(options),
        table_(table),
        progress_("verify", TotalBytes(ds), ds.num_shards(), "shards", !options.common.quiet) {}

  // Checks every shard with `threads` threads; outcomes() then holds them.
  // ResourceExhaustedError when the system will not start the threads.
  absl::Status Run(int threads);
  const std::vector<ShardOutcome>& outcomes() const { return outcomes_; }
  void FinishProgress() { progress_.Finish(); }

 private:
  static uint64_t TotalBytes(const OpenedDataset& ds) {
    uint64_t n = 0;
    for (const ShardEntry& s : ds.manifest().shards) n += s.bytes;
    return n;
  }
  void CheckOne(size_t k, JpegChecker* jpeg);
  void CompareWithManifest(size_t k, const ShardCheck& check, ShardOutcome* out);
  // Returns the payload bytes it decoded (and added to the progress line).
  uint64_t Decode(size_t k, JpegChecker* jpeg, ShardOutcome* out);
  Problem At(size_t k, std::optional<uint64_t> record, uint64_t offset, std::string message) {
    Problem p;
    p.shard = k;
    p.path = ds_.ShardPath(k);
    p.record = record;
    if (record) p.index = ds_.first_record(k) + *record;
    p.offset = offset;
    p.message = std::move(message);
    return p;
  }

  const OpenedDataset& ds_;
  const VerifyOptions& options_;
  const TableCheck* table_;  // null: the manifest lists no record table
  cli::ProgressLine progress_;
  std::vector<ShardOutcome> outcomes_;
};

absl::Status Verifier::Run(int threads) {
  outcomes_.assign(ds_.num_shards(), {});
  std::atomic<size_t> next{0};
  auto work = [&] {
    std::optional<JpegChecker> jpeg;  // one TurboJPEG handle per thread
    if (options_.decode) jpeg.emplace();
    for (size_t k = next++; k < ds_.num_shards(); k = next++) {
      CheckOne(k, jpeg ? &*jpeg : nullptr);
    }
  };
  // A failure stops the others after their shard.
  const auto stop_all = [&] { next = ds_.num_shards(); };
  common::ThreadGroup pool;
  absl::Status status = pool.Start(threads - 1, "verify's threads", [&](int) { work(); }, stop_all);
  if (!status.ok()) stop_all();
  if (status.ok()) work();
  status.Update(pool.JoinAll());
  return status;
}

void Verifier::CheckOne(size_t k, JpegChecker* jpeg) {
  ShardOutcome& out = outcomes_[k];
  out.path = ds_.ShardPath(k);
  // The records are compared with the table in the check's own pass where
  // it hands them over (.shard), else in a scan after it; a damaged shard's
  // comparison is dropped (the damage is what it reports).
  std::optional<TableComparer> comparer;
  if (table_ != nullptr && table_->table.ok()) {
    comparer = TableComparer{&*table_->table, &table_->path, &out.table_problems};
  }
  const uint64_t first = ds_.first_record(k);
  const auto visit = [&](uint64_t i, const Record& r) { (*comparer)(first + i, r); };
  const RecordVisitor visitor = visit;
  ShardCheck check = ds_.CheckShard(k, comparer ? &visitor : nullptr);
  out.records = check.records;
  out.bytes = check.bytes;
  if (check.crc_valid) out.crc32c = check.file_crc32c;
  for (const Damage& d : check.problems) {
    out.problems.push_back(At(k, d.record, d.offset, d.message()));
  }
  if (ds_.has_manifest() && check.opened) CompareWithManifest(k, check, &out);
  if (!out.problems.empty() || !check.index_ok) {
    out.table_problems.clear();
  } else if (comparer && !check.visited) {
    out.table_status = CompareTable(ds_, k, *comparer);
  }
  uint64_t added = 0;
  if (jpeg != nullptr && check.index_ok) added = Decode(k, jpeg, &out);
  progress_.Add(out.bytes - std::min(out.bytes, added), 1);
}

void Verifier::CompareWithManifest(size_t k, const ShardCheck& check, ShardOutcome* out) {
  const ShardEntry& entry = ds_.manifest().shards[k];
  const std::string& path = out->path;
  // LMDB and HDF5 shards were checked against the entry before they were
  // opened (CheckBackendShardFile), and a mismatch is already a problem.
  const bool gated = ds_.manifest().backend != Backend::kShard;
  if (check.bytes != entry.bytes && !gated) {
    out->problems.push_back(
        At(k, std::nullopt, std::min(check.bytes, entry.bytes),
           absl::StrCat(path, ": ", check.bytes, " bytes, the manifest says ", entry.bytes)));
  }
  if (check.index_ok && check.records != entry.records) {
    out->problems.push_back(
        At(k, std::nullopt, check.records_offset,
           absl::StrCat(path, " @", check.records_offset, ": the index lists ", check.records,
                        " records, the manifest says ", entry.records)));
  }
  // A damaged shard cannot match its checksum; that was reported above.
  if (check.crc_valid && out->problems.empty() && check.file_crc32c != entry.crc32c) {
    out->problems.push_back(
        At(k, std::nullopt, 0,
           absl::StrFormat("%s: CRC-32C of the whole file is %08x, the manifest says %08x %s",
                           path, check.file_crc32c, entry.crc32c,
                           ds_.manifest().backend == Backend::kShard
                               ? "(the shard is intact but not the one the manifest describes)"
                               : "(the file changed since it was packed)")));
  }
}

uint64_t Verifier::Decode(size_t k, JpegChecker* jpeg, ShardOutcome* out) {
  auto shard = ds_.OpenShard(k, /*require_manifest_count=*/false);
  if (!shard.ok()) {
    out->problems.push_back(At(k, std::nullopt, 0, std::string(shard.status().message())));
    return 0;
  }
  // Damaged blocks were reported by the byte check; step over them.
  struct : backends::ScanReporter {
    void Corruption(const Damage&) override {}
  } skip;
  uint64_t payload_bytes = 0;
  // A record with fields: its JPEG image fields past the first (the payload)
  // too, once the record passed its checks (a record that fails them was
  // reported by the byte check).
  format::RecordCheck fields(ds_.manifest().schema);
  absl::Status s = (*shard)->Scan(
      0, (*shard)->size(),
      [&](uint64_t i, const Record& r, const backends::RecordLocation& loc) {
        auto check = [&](ByteSpan bytes, const ImageInfo& image, std::string_view field) {
          if (image.encoding != Encoding::kJpeg) return;
          absl::Status decoded = jpeg->Check(bytes, image);
          ++out->decoded;
          if (!decoded.ok()) {
            const std::string in_field =
                field.empty() ? "" : absl::StrCat("field '", common::AsAbsl(field), "': ");
            out->problems.push_back(At(k, i, loc.file_offset(),
                                       absl::StrCat(out->path, " @", loc.Text(), " record ", i,
                                                    " '", common::AsAbsl(r.key), "': ", in_field,
                                                    decoded.message())));
          }
          payload_bytes += bytes.size();
          progress_.Add(bytes.size());
        };
        check(r.payload, r.image, "");
        if (!fields.has_fields() || !fields.Check(r).ok()) return absl::OkStatus();
        bool first = true;
        for (size_t f = 0; f < fields.fields().size(); ++f) {
          const FieldValue& v = fields.values()[f];
          if (fields.fields()[f].type != FieldType::kImage) continue;
          if (!first && v.present) check(v.bytes, v.image, fields.fields()[f].name);
          first = false;
        }
        return absl::OkStatus();
      },
      &skip);
  if (!s.ok()) out->problems.push_back(At(k, std::nullopt, 0, std::string(s.message())));
  return payload_bytes;
}

// The record table a manifest lists; nullopt when it lists none.
std::optional<TableCheck> LoadTable(const OpenedDataset& ds) {
  const Manifest& m = ds.manifest();
  if (!ds.has_manifest() || !m.record_table.has_value()) return std::nullopt;
  return TableCheck{(std::filesystem::path(ds.directory()) / m.record_table->path).string(),
                    dataset::LoadRecordTable(ds.named())};
}

// The record table's problems: its own checks (size, CRC-32C, counts,
// offsets, slots), then the shards' records against it (each worker's, in
// shard order, at most kMaxTableProblems). Reported only when every shard
// passed: a damaged shard is reported once, as such.
void ReportRecordTable(const TableCheck& t, const std::vector<ShardOutcome>& outcomes,
                       std::vector<Problem>* problems) {
  auto fail = [&](const absl::Status& s) {
    Problem p;
    p.path = t.path;
    p.offset = common::ErrorOffset(s).value_or(0);
    p.message = std::string(s.message());
    problems->push_back(std::move(p));
  };
  if (!t.table.ok()) return fail(t.table.status());
  std::vector<Problem> found;
  for (const ShardOutcome& o : outcomes) {
    if (!o.table_status.ok()) return fail(o.table_status);
    for (const Problem& p : o.table_problems) {
      if (found.size() < kMaxTableProblems) found.push_back(p);
    }
  }
  problems->insert(problems->end(), found.begin(), found.end());
}

// One line: the message is escaped whole (it names files and keys).
std::string ProblemText(const Problem& p) {
  if (!p.shard) return cli::EscapeText(p.message) + "\n";
  std::vector<std::string> where = {absl::StrCat("shard ", *p.shard)};
  if (p.record) where.push_back(absl::StrCat("record ", *p.record, " (index ", *p.index, ")"));
  where.push_back(absl::StrCat("offset ", p.offset));
  return absl::StrCat(absl::StrJoin(where, ", "), ": ", cli::EscapeText(p.message), "\n");
}

Json ProblemJson(const Problem& p) {
  auto opt = [](const auto& v) { return v ? Json(*v) : Json(nullptr); };
  return {{"shard", opt(p.shard)}, {"path", p.path},     {"record", opt(p.record)},
          {"index", opt(p.index)}, {"offset", p.offset},
          {"message", cli::EscapeText(p.message)}};
}

// What the whole run found.
struct Report {
  std::vector<Problem> problems;
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t decoded = 0;
  size_t bad_shards = 0;
  int threads = 0;
  double seconds = 0;
};

Json ReportJson(const OpenedDataset& ds, const VerifyOptions& options, const Verifier& verifier,
                const Report& report) {
  Json j;
  j["path"] = ds.path();
  j["ok"] = report.problems.empty();
  j["records"] = report.records;
  j["bytes"] = report.bytes;
  j["decoded"] = options.decode ? Json(report.decoded) : Json(nullptr);
  j["threads"] = report.threads;
  j["seconds"] = report.seconds;
  j["shards"] = Json::array();
  for (size_t k = 0; k < verifier.outcomes().size(); ++k) {
    const ShardOutcome& o = verifier.outcomes()[k];
    j["shards"].push_back(
        {{"index", k},
         {"path", o.path},
         {"ok", o.problems.empty()},
         {"records", o.records},
         {"bytes", o.bytes},
         {"crc32c", o.crc32c ? Json(absl::StrFormat("%08x", *o.crc32c)) : Json(nullptr)}});
  }
  j["problems"] = Json::array();
  for (const Problem& p : report.problems) j["problems"].push_back(ProblemJson(p));
  return j;
}

std::string ReportText(const OpenedDataset& ds, const VerifyOptions& options,
                       const Report& report) {
  std::string out;
  for (const Problem& p : report.problems) out += ProblemText(p);
  if (options.common.quiet) return out;
  if (report.problems.empty()) {
    absl::StrAppend(
        &out, absl::StrFormat("ok: %s, %s, %s checked in %.2f s (%.1f MB/s)",
                              Plural(ds.num_shards(), "shard"), Plural(report.records, "record"),
                              cli::FormatBytes(report.bytes), report.seconds,
                              report.seconds > 0 ? report.bytes / report.seconds / 1e6 : 0.0));
    if (options.decode) absl::StrAppend(&out, ", ", report.decoded, " JPEGs decoded");
    out += "\n";
  } else {
    absl::StrAppend(&out, "FAILED: ", Plural(report.problems.size(), "problem"), " (",
                    report.bad_shards, " of ", Plural(ds.num_shards(), "shard"),
                    " damaged or missing)\n");
  }
  return out;
}

}  // namespace

std::string Plural(size_t n, std::string_view noun) {
  return absl::StrCat(n, " ", absl::string_view(noun.data(), noun.size()), n == 1 ? "" : "s");
}

absl::StatusOr<VerifyResult> VerifyDataset(const VerifyOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  SP_ASSIGN_OR_RETURN(OpenedDataset ds,
                      OpenedDataset::Open(options.path, OpenedDataset::ShardPolicy::kCheckLater));
  int threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  threads = std::clamp<int>(threads, 1, std::max<int>(1, static_cast<int>(ds.num_shards())));

  const std::optional<TableCheck> table = LoadTable(ds);
  Verifier verifier(ds, options, table ? &*table : nullptr);
  SP_RETURN_IF_ERROR(verifier.Run(threads));
  verifier.FinishProgress();

  Report report;
  report.threads = threads;
  for (const ShardOutcome& o : verifier.outcomes()) {
    report.records += o.records;
    report.bytes += o.bytes;
    report.decoded += o.decoded;
    if (!o.problems.empty()) ++report.bad_shards;
    report.problems.insert(report.problems.end(), o.problems.begin(), o.problems.end());
  }
  if (report.problems.empty() && table) ReportRecordTable(*table, verifier.outcomes(), &report.problems);
  for (const std::string& name : ds.UnlistedShardFiles()) {
    Problem p;
    p.path = (std::filesystem::path(ds.directory()) / name).string();
    p.message = absl::StrCat(p.path, ": a .shard file the manifest does not list");
    report.problems.push_back(std::move(p));
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (options.common.verbose > 0) {
    for (size_t k = 0; k < verifier.outcomes().size(); ++k) {
      const ShardOutcome& o = verifier.outcomes()[k];
      std::string status = o.problems.empty() ? "ok" : Plural(o.problems.size(), "problem");
      cli::PrintLine(stderr, absl::StrCat("shard ", k, " ", o.path, ": ", status, ", ",
                                          o.records, " records, ", o.bytes, " bytes"));
    }
  }
  VerifyResult result;
  if (options.common.json) {
    result.json = ReportJson(ds, options, verifier, report);
  } else {
    result.text = ReportText(ds, options, report);
  }
  result.problems = report.problems.size();
  return result;
}

absl::Status RunVerify(const VerifyOptions& options) {
  absl::StatusOr<bool> is_view = dataset::IsViewFile(options.path);
  if (is_view.ok() && *is_view) return VerifyView(options);
  SP_ASSIGN_OR_RETURN(VerifyResult result, VerifyDataset(options));
  SP_RETURN_IF_ERROR(
      cli::WriteStdout(options.common.json ? DumpJson(result.json, true) + "\n" : result.text));
  SP_RETURN_IF_ERROR(cli::FlushStdout());
  if (result.problems > 0) {
    return absl::DataLossError(
        absl::StrCat(options.path, ": ", Plural(result.problems, "problem"), " found"));
  }
  return absl::OkStatus();
}

}  // namespace shardpack::dump
