// sharddump info: what a dataset holds. Counts and sizes come from the
// manifest and the shard indexes; the label histogram and image statistics
// from one scan of every record, block by block.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "tools/common/cli.h"
#include "tools/common/escape.h"
#include "tools/common/progress_line.h"
#include "tools/dump/commands.h"
#include "tools/dump/opened_dataset.h"
#include "tools/dump/text.h"

namespace shardpack::dump {
namespace {

struct ShardFacts {
  std::string path;  // as the manifest lists it
  uint64_t records = 0;
  uint64_t bytes = 0;
  std::optional<uint32_t> crc32c;  // from the manifest
  backends::StorageStats storage;
  std::string layout;  // ShardScanner::LayoutText()
};

// Min, lower median and max of a sample (which it reorders).
template <typename T>
struct Spread {
  T min = 0, median = 0, max = 0;
  double mean = 0;
};
template <typename T>
Spread<T> SpreadOf(std::vector<T>* v) {
  Spread<T> s;
  if (v->empty()) return s;
  auto [lo, hi] = std::minmax_element(v->begin(), v->end());
  s.min = *lo;
  s.max = *hi;
  double sum = 0;
  for (T x : *v) sum += static_cast<double>(x);
  s.mean = sum / static_cast<double>(v->size());
  auto mid = v->begin() + (v->size() - 1) / 2;
  std::nth_element(v->begin(), mid, v->end());
  s.median = *mid;
  return s;
}

struct Facts {
  std::vector<ShardFacts> shards;
  backends::StorageStats storage;
  uint64_t bytes = 0;
  uint64_t records = 0;
  std::vector<uint32_t> widths, heights;
  std::vector<uint64_t> payload_bytes;
  std::map<std::string, uint64_t> encodings;
  std::map<int, uint64_t> channels;
  std::vector<std::map<int64_t, uint64_t>> histograms;  // per label field
};

absl::Status Gather(const OpenedDataset& ds, bool quiet, Facts* f) {
  cli::ProgressLine progress("info", 0, ds.records(), "records", !quiet);
  // The count is the manifest's claim: reserve no more than a bounded
  // start, the vectors grow past it as records are actually read.
  const size_t reserve = static_cast<size_t>(std::min<uint64_t>(ds.records(), 1 << 20));
  f->widths.reserve(reserve);
  f->heights.reserve(reserve);
  f->payload_bytes.reserve(reserve);
  f->histograms.resize(ds.manifest().schema.labels.size());
  for (size_t k = 0; k < ds.num_shards(); ++k) {
    SP_ASSIGN_OR_RETURN(std::unique_ptr<backends::ShardScanner> shard, ds.OpenShard(k));
    const ShardEntry& entry = ds.manifest().shards[k];
    ShardFacts s{entry.path,      shard->size(),    shard->file_bytes(),
                 std::nullopt,    shard->storage(), shard->LayoutText()};
    if (ds.has_manifest()) s.crc32c = entry.crc32c;
    f->storage.blocks += s.storage.blocks;
    f->storage.compressed_blocks += s.storage.compressed_blocks;
    f->storage.raw_bytes += s.storage.raw_bytes;
    f->storage.stored_bytes += s.storage.stored_bytes;
    f->bytes += s.bytes;
    f->records += s.records;
    f->shards.push_back(std::move(s));
    SP_RETURN_IF_ERROR(
        shard->Scan(0, shard->size(), [&](uint64_t, const Record& r) {
          f->widths.push_back(r.image.width);
          f->heights.push_back(r.image.height);
          f->payload_bytes.push_back(r.payload.size());
          ++f->encodings[EncodingText(r.image)];
          ++f->channels[r.image.channels];
          if (static_cast<size_t>(r.labels.size()) > f->histograms.size()) {
            f->histograms.resize(r.labels.size());
          }
          for (int i = 0; i < r.labels.size(); ++i) ++f->histograms[i][r.labels[i]];
          progress.Add(r.payload.size(), 1);
          return absl::OkStatus();
        }));
  }
  return absl::OkStatus();
}

const LabelField* FieldOf(const OpenedDataset& ds, size_t i) {
  const auto& labels = ds.manifest().schema.labels;
  return i < labels.size() ? &labels[i] : nullptr;
}
std::string FieldName(const OpenedDataset& ds, size_t i) {
  const LabelField* field = FieldOf(ds, i);
  return field != nullptr ? field->name : absl::StrCat("label", i);
}
// The class name of `label` in field i, or null when it has none.
const std::string* ClassName(const OpenedDataset& ds, size_t i, int64_t label) {
  const LabelField* field = FieldOf(ds, i);
  if (field == nullptr || label < 0 || static_cast<uint64_t>(label) >= field->classes.size()) {
    return nullptr;
  }
  return &field->classes[static_cast<size_t>(label)];
}

double Ratio(const backends::StorageStats& s) {
  return s.stored_bytes == 0 ? 1.0 : static_cast<double>(s.raw_bytes) / s.stored_bytes;
}

std::string CrcText(uint32_t crc) { return absl::StrFormat("%08x", crc); }

// A field's type text (shardpack/fields.h) without the "?" of optional
// fields, which info shows in a column of its own.
std::string TypeText(Field f) {
  f.optional = false;
  return FieldTypeText(f);
}

// The declared fields, or a classic schema's implicit ones; null without a
// schema.
Json DeclaredFieldsJson(const OpenedDataset& ds) {
  if (!ds.has_schema()) return nullptr;
  Json fields = Json::array();
  for (const Field& f : FieldsOf(ds.manifest().schema)) {
    Json j = {{"name", f.name}, {"type", TypeText(f)}, {"optional", f.optional}};
    if (f.type == FieldType::kLabel) j["classes"] = f.classes.size();
    fields.push_back(std::move(j));
  }
  return fields;
}

Json PackJson(const OpenedDataset& ds) {
  if (!ds.has_schema()) return nullptr;
  Json pack = Json::parse(ds.manifest().pack_json, nullptr, /*allow_exceptions=*/false);
  return pack.is_discarded() ? Json(ds.manifest().pack_json) : pack;
}

template <typename T>
Json SpreadJson(std::vector<T>* v, bool with_mean) {
  if (v->empty()) return nullptr;
  Spread<T> s = SpreadOf(v);
  Json j = {{"min", s.min}, {"median", s.median}, {"max", s.max}};
  if (with_mean) j["mean"] = s.mean;
  return j;
}

Json InfoJson(const OpenedDataset& ds, Facts* f) {
  Json j;
  j["path"] = ds.path();
  j["backend"] = std::string(BackendName(ds.manifest().backend));
  j["version"] = ds.version();
  j["records"] = f->records;
  j["bytes"] = f->bytes;
  j["raw_bytes"] = f->storage.raw_bytes;
  j["stored_bytes"] = f->storage.stored_bytes;
  j["compression_ratio"] = Ratio(f->storage);
  j["schema"] = ds.has_schema() ? SchemaJson(ds.manifest().schema) : Json(nullptr);
  j["fields"] = DeclaredFieldsJson(ds);
  const LabelField* first = FieldOf(ds, 0);
  j["classes"] = first != nullptr ? Json(first->classes) : Json::array();
  j["labels"] = Json::array();
  for (size_t i = 0; i < f->histograms.size(); ++i) {
    Json field = {{"name", FieldName(ds, i)}};
    field["classes"] = FieldOf(ds, i) != nullptr ? Json(FieldOf(ds, i)->classes) : Json::array();
    field["histogram"] = Json::array();
    for (const auto& [label, count] : f->histograms[i]) {
      const std::string* name = ClassName(ds, i, label);
      field["histogram"].push_back(
          {{"label", label}, {"name", name ? Json(*name) : Json(nullptr)}, {"count", count}});
    }
    j["labels"].push_back(std::move(field));
  }
  Json image;
  image["encodings"] = Json::object();
  for (const auto& [name, count] : f->encodings) image["encodings"][name] = count;
  image["channels"] = Json::object();
  for (const auto& [c, count] : f->channels) image["channels"][absl::StrCat(c)] = count;
  image["width"] = SpreadJson(&f->widths, false);
  image["height"] = SpreadJson(&f->heights, false);
  image["bytes"] = SpreadJson(&f->payload_bytes, true);
  j["image"] = std::move(image);
  j["shards"] = Json::array();
  for (size_t k = 0; k < f->shards.size(); ++k) {
    const ShardFacts& s = f->shards[k];
    j["shards"].push_back({{"index", k},
                           {"path", s.path},
                           {"records", s.records},
                           {"bytes", s.bytes},
                           {"crc32c", s.crc32c ? Json(CrcText(*s.crc32c)) : Json(nullptr)},
                           {"blocks", s.storage.blocks},
                           {"raw_bytes", s.storage.raw_bytes},
                           {"stored_bytes", s.storage.stored_bytes},
                           {"layout", s.layout.empty() ? Json(nullptr) : Json(s.layout)}});
  }
  const std::optional<RecordTableEntry>& table = ds.manifest().record_table;
  j["record_table"] = ds.has_manifest() && table.has_value()
                          ? Json({{"path", table->path}, {"bytes", table->bytes}})
                          : Json(nullptr);
  j["pack"] = PackJson(ds);
  return j;
}

// "name  text": `text` as it is, for text already one printable line.
void RawLine(std::string* out, std::string_view name, std::string_view text) {
  absl::StrAppend(out, absl::StrFormat("%-14s %s\n", absl::string_view(name.data(), name.size()),
                                       absl::string_view(text.data(), text.size())));
}

// "name  value", the value escaped whole: it may hold paths and names from
// the manifest.
void Line(std::string* out, std::string_view name, std::string_view value) {
  RawLine(out, name, cli::EscapeText(value));
}

// A field of a free-form object as text: a string as it is, anything else
// (a hostile manifest may put anything there) as JSON, "?" when absent.
std::string FieldText(const Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return "?";
  const Json& v = j[key];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// "from 3 parts (by shardpack 0.1.0): 1 p/1 (100 records), 2 p/2 (...)".
std::string MergedText(const Json& merged) {
  constexpr size_t kShown = 8;
  if (!merged.is_object() || !merged.contains("parts") || !merged["parts"].is_array()) {
    return DumpJson(merged, false);
  }
  const Json& parts = merged["parts"];
  std::vector<std::string> listed;
  for (size_t i = 0; i < parts.size() && i < kShown; ++i) {
    listed.push_back(absl::StrCat(FieldText(parts[i], "index"), " ",
                                  FieldText(parts[i], "path"), " (",
                                  FieldText(parts[i], "records"), " records)"));
  }
  std::string text = absl::StrCat("from ", parts.size(), " parts (by ", FieldText(merged, "tool"),
                                  "): ", absl::StrJoin(listed, ", "));
  if (parts.size() > kShown) {
    absl::StrAppend(&text, ", ... ", parts.size() - kShown, " more (--json lists all)");
  }
  return text;
}

template <typename T>
std::string SpreadText(std::vector<T>* v, bool with_mean) {
  if (v->empty()) return "-";
  Spread<T> s = SpreadOf(v);
  std::string text = absl::StrCat("min ", s.min, "  median ", s.median, "  max ", s.max);
  if (with_mean) absl::StrAppend(&text, absl::StrFormat("  mean %.1f", s.mean));
  return text;
}

std::string ShardTableText(const Facts& f);
std::string FieldTableText(const Schema& schema);
std::string HistogramsText(const OpenedDataset& ds, const Facts& f);

// The shards' layouts: the one they share, else each with its count.
std::string LayoutsText(const Facts& f) {
  std::map<std::string, uint64_t> counts;
  for (const ShardFacts& s : f.shards) {
    if (!s.layout.empty()) ++counts[s.layout];
  }
  if (counts.size() == 1) return counts.begin()->first;
  std::vector<std::string> parts;
  for (const auto& [layout, count] : counts) {
    parts.push_back(absl::StrCat(layout, " (", count, count == 1 ? " shard)" : " shards)"));
  }
  return absl::StrJoin(parts, " | ");
}

std::string InfoText(const OpenedDataset& ds, Facts* f) {
  std::string out;
  const Manifest& m = ds.manifest();
  Line(&out, "path", ds.path());
  std::string backend(BackendName(m.backend));
  Line(&out, "backend", ds.has_manifest() ? backend : backend + " (lone shard)");
  if (std::string layouts = LayoutsText(*f); !layouts.empty()) Line(&out, "layout", layouts);
  Line(&out, "version", ds.version());
  if (ds.has_manifest()) Line(&out, "fingerprint", FormatFingerprint(ManifestFingerprint(m)));
  if (ds.has_manifest()) {
    Line(&out, "record table",
         m.record_table.has_value()
             ? absl::StrCat(m.record_table->path, " (", cli::FormatBytes(m.record_table->bytes), ")")
             : std::string("none (`shardpack index` writes one)"));
  }
  Line(&out, "records", absl::StrCat(f->records));
  Line(&out, "shards", absl::StrCat(f->shards.size()));
  Line(&out, "bytes", absl::StrCat(cli::FormatBytes(f->bytes), " (", f->bytes, ")"));
  Line(&out, "compression",
       absl::StrFormat("ratio %.2f (raw %s, stored %s; %d of %d blocks compressed)",
                       Ratio(f->storage), cli::FormatBytes(f->storage.raw_bytes),
                       cli::FormatBytes(f->storage.stored_bytes), f->storage.compressed_blocks,
                       f->storage.blocks));
  if (ds.has_schema()) {
    const ImageInfo& im = m.schema.image;
    std::string schema = EncodingText(im);
    if (im.width != 0 || im.height != 0) absl::StrAppend(&schema, " ", ShapeText(im));
    std::vector<std::string> fields;
    for (const LabelField& field : m.schema.labels) {
      fields.push_back(absl::StrCat(field.name, " (", field.classes.size(), " classes)"));
    }
    absl::StrAppend(&schema, "; labels: ", fields.empty() ? "none" : absl::StrJoin(fields, ", "));
    Line(&out, "schema", schema);
    Json pack = PackJson(ds);
    // A merged dataset's parts get a line of their own, kept short: the
    // pack line stays readable for 1,000 parts; --json lists them all.
    if (pack.is_object() && pack.contains("merged")) {
      Line(&out, "merged", MergedText(pack["merged"]));
      pack.erase("merged");
    }
    RawLine(&out, "pack", AsciiJson(pack));
  } else {
    Line(&out, "schema", "- (a lone shard has no manifest)");
  }
  std::vector<std::string> encodings, channels;
  for (const auto& [name, count] : f->encodings)
    encodings.push_back(absl::StrCat(name, " ", count));
  for (const auto& [c, count] : f->channels) channels.push_back(absl::StrCat(c, ": ", count));
  Line(&out, "encodings", encodings.empty() ? "-" : absl::StrJoin(encodings, ", "));
  Line(&out, "channels", channels.empty() ? "-" : absl::StrJoin(channels, ", "));
  Line(&out, "width", SpreadText(&f->widths, false));
  Line(&out, "height", SpreadText(&f->heights, false));
  Line(&out, "bytes/record", SpreadText(&f->payload_bytes, true));
  return out + FieldTableText(m.schema) + ShardTableText(*f) + HistogramsText(ds, *f);
}

// A dataset with fields: one line each (name, type, optional, classes of a
// label field). Nothing for a classic dataset, whose schema line says all.
std::string FieldTableText(const Schema& schema) {
  if (schema.fields.empty()) return "";
  std::string out = absl::StrCat("\nfields\n", absl::StrFormat("  %-20s %-20s %-8s  %s\n", "name",
                                                               "type", "optional", "classes"));
  for (const Field& f : schema.fields) {
    const std::string classes =
        f.type == FieldType::kLabel ? absl::StrCat(f.classes.size()) : std::string("-");
    absl::StrAppend(&out, absl::StrFormat("  %-20s %-20s %-8s  %s\n", f.name, TypeText(f),
                                          f.optional ? "yes" : "no", classes));
  }
  return out;
}

std::string ShardTableText(const Facts& f) {
  std::string out;
  absl::StrAppend(&out, "\nshards\n",
                  absl::StrFormat("  %-6s %10s %14s %-8s  %s\n", "index", "records", "bytes",
                                  "crc32c", "path"));
  for (size_t k = 0; k < f.shards.size(); ++k) {
    const ShardFacts& s = f.shards[k];
    absl::StrAppend(&out, absl::StrFormat("  %-6d %10d %14d %-8s  %s\n", k, s.records, s.bytes,
                                          s.crc32c ? CrcText(*s.crc32c) : "-",
                                          cli::EscapeText(s.path)));
  }
  return out;
}

std::string HistogramsText(const OpenedDataset& ds, const Facts& f) {
  std::string out;
  for (size_t i = 0; i < f.histograms.size(); ++i) {
    const LabelField* field = FieldOf(ds, i);
    absl::StrAppend(&out, "\nlabel field ", i, ": ", cli::EscapeText(FieldName(ds, i)), " (",
                    field ? field->classes.size() : 0, " classes, ", f.histograms[i].size(),
                    " values seen)\n",
                    absl::StrFormat("  %10s %10s  %s\n", "label", "count", "class"));
    for (const auto& [label, count] : f.histograms[i]) {
      const std::string* name = ClassName(ds, i, label);
      absl::StrAppend(
          &out,
          absl::StrFormat("  %10d %10d  %s\n", label, count, name ? cli::EscapeText(*name) : "-"));
    }
  }
  return out;
}

}  // namespace

absl::Status RunInfo(const InfoOptions& options) {
  SP_ASSIGN_OR_RETURN(OpenedDataset ds,
                      OpenedDataset::Open(options.path, OpenedDataset::ShardPolicy::kRequireAll));
  Facts facts;
  SP_RETURN_IF_ERROR(Gather(ds, options.common.quiet, &facts));
  if (options.common.json) {
    SP_RETURN_IF_ERROR(cli::WriteStdout(DumpJson(InfoJson(ds, &facts), true) + "\n"));
  } else {
    SP_RETURN_IF_ERROR(cli::WriteStdout(InfoText(ds, &facts)));
  }
  return cli::FlushStdout();
}

}  // namespace shardpack::dump
