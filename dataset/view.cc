// OpenView: a view file's datasets opened and concatenated, its selection
// resolved against their schema into one bitmap (dataset/view_select.cc
// applies the steps), its canonical text and fingerprint.
#include "dataset/view.h"

#include <algorithm>
#include <bit>
#include <filesystem>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/errors.h"
#include "common/posix_io.h"
#include "common/redact.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "dataset/view_select.h"
#include "dataset/view_spec.h"
#include "nlohmann/json.hpp"
#include "shardpack/fields.h"
#include "shardpack/file.h"

namespace shardpack::dataset {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using common::Excerpt;

// The UTF-8 byte order mark, which some editors put first in a text file
// (JSON's RFC 8259 lets a parser ignore it; nlohmann's does).
constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";
// The head of a file read to tell a view: blanks before the '{' past it
// are not a view's.
constexpr size_t kViewHeadBytes = 4096;

// Whether `path` holds a view: a regular file, not manifest.json, with none
// of the shard magics, whose first byte that is not blank (after a UTF-8
// BOM, if any) is '{'. Only its head is read, so that a view too large is
// still told as one (and refused as one, by ReadViewText).
absl::StatusOr<bool> SniffView(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::status(path, ec))) return false;
  if (fs::path(path).filename() == kManifestFileName) return false;
  SP_ASSIGN_OR_RETURN(FileMagic magic, SniffFile(path));
  if (magic != FileMagic::kUnknown) return false;
  SP_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, OpenPosixFile(path));
  std::string head(std::min<uint64_t>(file->size(), kViewHeadBytes), '\0');
  SP_RETURN_IF_ERROR(
      file->ReadExact(0, {reinterpret_cast<uint8_t*>(head.data()), head.size()}));
  std::string_view text = head;
  if (text.starts_with(kUtf8Bom)) text.remove_prefix(kUtf8Bom.size());
  const size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '{';
}

// Whether `path` holds a view (SniffView); sets *text to the file's
// contents when it does. A view past kMaxViewBytes is refused by name
// before it is read. Anything else is left to OpenNamedPath and its errors.
absl::StatusOr<bool> ReadViewText(const std::string& path, std::string* text) {
  SP_ASSIGN_OR_RETURN(bool is_view, SniffView(path));
  if (!is_view) return false;
  SP_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, OpenPosixFile(path));
  if (file->size() > kMaxViewBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": ", file->size(), " bytes, more than the ", kMaxViewBytes,
        " a view file may have"));
  }
  text->assign(file->size(), '\0');
  SP_RETURN_IF_ERROR(
      file->ReadExact(0, {reinterpret_cast<uint8_t*>(text->data()), text->size()}));
  return true;
}

DatasetView PlainView(NamedPath named) {
  DatasetView view;
  view.path = named.path;
  view.schema = named.manifest.schema;
  view.base_records = named.manifest.records();
  view.records = view.base_records;
  view.first_record = {0};
  view.datasets.push_back(std::make_shared<const NamedPath>(std::move(named)));
  return view;
}


// How schema `b` differs from `a`: the first difference, in words.
std::string SchemaDifference(const Schema& a, const Schema& b) {
  if (!(a.image == b.image)) {
    return absl::StrCat("image ", ImageShapeText(a.image), " vs ", ImageShapeText(b.image));
  }
  if (a.labels.size() != b.labels.size()) {
    return absl::StrCat(a.labels.size(), " label fields vs ", b.labels.size());
  }
  for (size_t f = 0; f < a.labels.size(); ++f) {
    const LabelField& x = a.labels[f];
    const LabelField& y = b.labels[f];
    if (x.name != y.name) {
      return absl::StrCat("label field ", f, " is '", Excerpt(x.name), "' vs '", Excerpt(y.name), "'");
    }
    if (x.classes.size() != y.classes.size()) {
      return absl::StrCat("label field '", Excerpt(x.name), "' has ", x.classes.size(),
                          " classes vs ", y.classes.size());
    }
    for (size_t c = 0; c < x.classes.size(); ++c) {
      if (x.classes[c] != y.classes[c]) {
        return absl::StrCat("label field '", Excerpt(x.name), "' class ", c, " is '",
                            Excerpt(x.classes[c]), "' vs '", Excerpt(y.classes[c]), "'");
      }
    }
  }
  const std::vector<Field> fa = FieldsOf(a), fb = FieldsOf(b);
  for (size_t i = 0; i < std::max(fa.size(), fb.size()); ++i) {
    if (i < fa.size() && i < fb.size() && fa[i] == fb[i]) continue;
    auto say = [i](const std::vector<Field>& f) {
      return i < f.size() ? absl::StrCat("field ", i, " '", Excerpt(f[i].name), "' ",
                                         FieldTypeText(f[i]))
                          : absl::StrCat("no field ", i);
    };
    const bool classes = i < fa.size() && i < fb.size() && say(fa) == say(fb);
    return absl::StrCat(say(fa), " vs ", say(fb), classes ? " (other class names)" : "");
  }
  return "";
}

// A dataset path of a view file: relative to the file's folder, unless it
// is absolute or a URL (never joined to a folder: "sub/s3://b/d" would be a
// local path).
std::string DatasetPath(const std::string& file, const std::string& given) {
  const std::string dir = common::ParentDirectory(file);
  if (common::LooksLikeUrl(given) || fs::path(given).is_absolute() || dir == ".") return given;
  return (fs::path(dir) / given).string();
}

// Dataset i of the view file `file`: a path relative to the file's folder,
// never a view, with a schema.
absl::StatusOr<NamedPath> OpenViewDataset(const std::string& file, size_t i,
                                          const std::string& given,
                                          const std::shared_ptr<remote::Storage>& storage) {
  const std::string at = absl::StrCat(file, ": datasets[", i, "]: ");
  const std::string path = DatasetPath(file, given);
  SP_ASSIGN_OR_RETURN(bool nested, SniffView(path));
  if (nested) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, path, " is a view; a view names datasets, not views"));
  }
  absl::StatusOr<NamedPath> named = OpenNamedPath(path, storage);
  if (!named.ok()) {
    return common::WithMessage(named.status(), at + std::string(named.status().message()));
  }
  if (!named->schema_known()) {
    return absl::InvalidArgumentError(absl::StrCat(
        at, path, " is a lone .shard file, which has no schema: name its dataset directory"));
  }
  return named;
}

// Each distinct dataset is opened once, however many times the view names
// it: its namings share it.
absl::Status OpenDatasets(const ViewSpec& spec, const std::shared_ptr<remote::Storage>& storage,
                          DatasetView* view) {
  absl::flat_hash_map<std::string, std::shared_ptr<const NamedPath>> opened;
  for (size_t i = 0; i < spec.datasets.size(); ++i) {
    std::shared_ptr<const NamedPath>& named = opened[DatasetPath(view->path, spec.datasets[i])];
    if (named == nullptr) {
      SP_ASSIGN_OR_RETURN(NamedPath one, OpenViewDataset(view->path, i, spec.datasets[i], storage));
      named = std::make_shared<const NamedPath>(std::move(one));
    }
    if (i == 0) view->schema = named->manifest.schema;
    if (!(named->manifest.schema == view->schema)) {
      return absl::InvalidArgumentError(absl::StrCat(
          view->path, ": datasets[", i, "]: ", named->path, " has another schema than ",
          view->datasets[0]->path, ": ", SchemaDifference(view->schema, named->manifest.schema)));
    }
    const uint64_t n = named->manifest.records();
    if (n > kMaxViewRecords || view->base_records + n > kMaxViewRecords) {
      return absl::InvalidArgumentError(absl::StrCat(view->path, ": datasets[", i,
                                                     "]: the datasets hold more than ",
                                                     kMaxViewRecords, " records"));
    }
    view->first_record.push_back(view->base_records);
    view->base_records += n;
    view->datasets.push_back(named);
  }
  return absl::OkStatus();
}

// The selection as JSON, in canonical form (docs/reader.md, "Views").
Json SelectionJson(const ResolvedSelection& s, const ViewSpec& spec, const Schema& base) {
  Json j = Json::object();
  if (s.class_field >= 0) {
    j["classes"] = {{"field", base.labels[s.class_field].name},
                    {"names", spec.classes->names},
                    {"relabel", s.relabel}};
  }
  // A placeholder: the ranges, up to millions, are written as text by
  // SelectionText rather than held as JSON values.
  if (s.ranges) j["indices"] = Json::array();
  if (spec.where) {
    Json w = Json::object();
    if (s.where_field >= 0) {
      w["labels"] = {{"field", base.labels[s.where_field].name}, {"in", s.where_labels}};
    }
    if (s.key_prefix) w["key_prefix"] = *s.key_prefix;
    if (s.key_glob) w["key_glob"] = *s.key_glob;
    if (!s.strings.empty()) {
      const std::vector<Field> fields = FieldsOf(base);
      Json strings = Json::array();
      for (const ResolvedSelection::StringTest& t : s.strings) {
        Json c = {{"field", fields[static_cast<size_t>(t.field)].name}};
        if (t.in) c["in"] = *t.in;
        if (t.prefix) c["prefix"] = *t.prefix;
        if (t.glob) c["glob"] = *t.glob;
        strings.push_back(std::move(c));
      }
      w["strings"] = std::move(strings);
    }
    j["where"] = std::move(w);
  }
  if (s.split) {
    j["split"] = {{"seed", s.split->seed},
                  {"fraction", s.split->fraction},
                  {"take", s.split->held_out ? "held_out" : "rest"}};
  }
  return j;
}

std::string Compact(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// The selection's canonical text: SelectionJson's, its "indices" written
// out. Inside a dumped string every quote is escaped, so the first
// `"indices":[]` is the key's.
std::string SelectionText(const ResolvedSelection& s, const Json& selection) {
  std::string text = Compact(selection);
  if (!s.ranges) return text;
  constexpr std::string_view kPlaceholder = "\"indices\":[]";
  const size_t at = text.find(kPlaceholder);
  SP_DCHECK(at != std::string::npos);
  std::string ranges = "\"indices\":[";
  for (const auto& [b, e] : *s.ranges) {
    if (ranges.back() != '[') ranges += ',';
    if (e == b + 1) {
      absl::StrAppend(&ranges, b);
    } else {
      absl::StrAppend(&ranges, "[", b, ",", e, "]");
    }
  }
  ranges += ']';
  return text.replace(at, kPlaceholder.size(), ranges);
}

// The datasets' fingerprints and the selection's text, hashed in 8-byte
// little-endian words through the counter RNG's keyed mix.
uint64_t ViewFingerprint(const DatasetView& view, const std::string& selection) {
  uint64_t h = common::Draw(kViewVersion, view.datasets.size(), selection.size());
  // One fingerprint per distinct dataset, drawn for each naming.
  absl::flat_hash_map<const NamedPath*, uint64_t> fingerprints;
  for (const auto& d : view.datasets) {
    auto [it, added] = fingerprints.try_emplace(d.get(), 0);
    if (added) it->second = ManifestFingerprint(d->manifest);
    h = common::Draw(h, it->second);
  }
  for (size_t i = 0; i < selection.size(); i += 8) {
    uint64_t word = 0;
    for (size_t b = 0; b < 8 && i + b < selection.size(); ++b) {
      word |= uint64_t{static_cast<uint8_t>(selection[i + b])} << (8 * b);
    }
    h = common::Draw(h, word, i);
  }
  return h;
}

absl::StatusOr<DatasetView> ResolveView(const std::string& path, const ViewSpec& spec,
                                        const std::shared_ptr<remote::Storage>& storage) {
  DatasetView view;
  view.path = path;
  view.is_view = true;
  SP_RETURN_IF_ERROR(OpenDatasets(spec, storage, &view));
  const Schema base = view.schema;
  SP_ASSIGN_OR_RETURN(ResolvedSelection sel,
                      ResolveSelection(spec, base, view.base_records, path));
  SP_RETURN_IF_ERROR(ApplySelection(sel, &view));
  const std::string selection = SelectionText(sel, SelectionJson(sel, spec, base));
  // The head's keys, then the selection's ("{...}", or "{}" for none).
  std::string canonical =
      Compact({{"shardpack_view", kViewVersion}, {"datasets", spec.datasets}});
  canonical.pop_back();  // its '}'
  if (selection != "{}") {
    canonical += "," + selection.substr(1);
  } else {
    canonical += '}';
  }
  view.canonical = std::move(canonical);
  view.fingerprint = ViewFingerprint(view, selection);
  return view;
}

}  // namespace

std::pair<size_t, uint64_t> DatasetView::Locate(uint64_t r) const {
  SP_DCHECK(r < base_records);
  const size_t d = std::upper_bound(first_record.begin(), first_record.end(), r) -
                   first_record.begin() - 1;
  return {d, r - first_record[d]};
}

int64_t DatasetView::MapLabel(int field, int64_t label) const {
  if (field < 0 || static_cast<size_t>(field) >= label_map.size()) return label;
  const std::vector<int64_t>& map = label_map[field];
  if (label < 0 || static_cast<uint64_t>(label) >= map.size()) return label;
  return map[label];
}

Labels DatasetView::MapLabels(const Labels& labels) const {
  if (label_map.empty()) return labels;
  Labels out;
  for (int f = 0; f < labels.size(); ++f) out.push_back(MapLabel(f, labels[f]));
  return out;
}

std::string ImageShapeText(const ImageInfo& i) {
  return absl::StrCat(common::AsAbsl(EncodingName(i.encoding)), "/",
                      common::AsAbsl(LayoutName(i.layout)), " ", i.width, "x",
                      i.height, "x", static_cast<int>(i.channels));
}

absl::StatusOr<bool> IsViewFile(const std::string& path) { return SniffView(path); }

absl::StatusOr<DatasetView> OpenView(const std::string& path,
                                     std::shared_ptr<remote::Storage> storage) {
  std::string text;
  SP_ASSIGN_OR_RETURN(bool is_view, ReadViewText(path, &text));
  if (!is_view) {
    SP_ASSIGN_OR_RETURN(NamedPath named, OpenNamedPath(path, std::move(storage)));
    return PlainView(std::move(named));
  }
  SP_ASSIGN_OR_RETURN(ViewSpec spec, ParseViewSpec(text, path));
  if (storage == nullptr) {
    SP_ASSIGN_OR_RETURN(storage, remote::Storage::Make());
  }
  return ResolveView(path, spec, storage);
}

absl::StatusOr<std::vector<std::string>> ViewDatasetPaths(const std::string& path) {
  std::string text;
  SP_ASSIGN_OR_RETURN(bool is_view, ReadViewText(path, &text));
  if (!is_view) return absl::InvalidArgumentError(absl::StrCat(path, ": not a view file"));
  SP_ASSIGN_OR_RETURN(ViewSpec spec, ParseViewSpec(text, path));
  std::vector<std::string> paths;
  for (const std::string& given : spec.datasets) paths.push_back(DatasetPath(path, given));
  return paths;
}

absl::Status ForEachViewRecord(const DatasetView& view, uint64_t begin, uint64_t end,
                               absl::FunctionRef<absl::Status(uint64_t, uint64_t)> fn) {
  SP_DCHECK(begin <= end && end <= view.records);
  if (view.selected.empty()) {
    for (uint64_t i = begin; i < end; ++i) SP_RETURN_IF_ERROR(fn(i, i));
    return absl::OkStatus();
  }
  uint64_t seen = 0;
  for (size_t w = 0; w < view.selected.size() && seen < end; ++w) {
    uint64_t word = view.selected[w];
    const uint64_t count = std::popcount(word);
    if (seen + count <= begin) {  // a whole word before the range: skip it
      seen += count;
      continue;
    }
    for (; word != 0 && seen < end; word &= word - 1, ++seen) {
      if (seen >= begin) SP_RETURN_IF_ERROR(fn(seen, w * 64 + std::countr_zero(word)));
    }
  }
  return absl::OkStatus();
}

uint64_t ViewRecordBase(const DatasetView& view, uint64_t i) {
  uint64_t base = 0;
  absl::Status s = ForEachViewRecord(view, i, i + 1, [&](uint64_t, uint64_t r) {
    base = r;
    return absl::OkStatus();
  });
  SP_DCHECK(s.ok());
  (void)s;
  return base;
}

}  // namespace shardpack::dataset
