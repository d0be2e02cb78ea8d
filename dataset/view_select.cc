#include "dataset/view_select.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <span>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "dataset/record_meta.h"
#include "shardpack/fields.h"

namespace shardpack::dataset {
namespace {

using common::Excerpt;

absl::Status FieldError(const std::string& file, const std::string& field,
                        const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(file, ": ", field, ": ", what));
}

// The label field named `name` (default: the first one).
absl::StatusOr<int> FindLabelField(const Schema& schema, const std::optional<std::string>& name,
                               const std::string& file, const std::string& at) {
  if (!name) {
    if (schema.labels.empty()) return FieldError(file, at, "the datasets have no label field");
    return 0;
  }
  for (size_t i = 0; i < schema.labels.size(); ++i) {
    if (schema.labels[i].name == *name) return static_cast<int>(i);
  }
  std::string known;
  for (const LabelField& f : schema.labels) absl::StrAppend(&known, known.empty() ? "" : ", ", f.name);
  return FieldError(file, absl::StrCat(at, ".field"),
                    absl::StrCat("no label field '", Excerpt(*name), "' (the datasets have: ",
                                 known.empty() ? "none" : known, ")"));
}

absl::flat_hash_map<std::string_view, int64_t> ClassIndex(const LabelField& field) {
  absl::flat_hash_map<std::string_view, int64_t> index;
  for (size_t i = 0; i < field.classes.size(); ++i) index.emplace(field.classes[i], i);
  return index;
}

absl::Status ResolveClasses(const ViewSpec::Classes& c, const Schema& schema,
                            const std::string& file, ResolvedSelection* sel) {
  SP_ASSIGN_OR_RETURN(sel->class_field, FindLabelField(schema, c.field, file, "classes"));
  const LabelField& field = schema.labels[sel->class_field];
  if (field.classes.empty()) {
    return FieldError(file, "classes", absl::StrCat("label field '", field.name,
                                                    "' names no classes (select its labels "
                                                    "with where.labels)"));
  }
  const auto index = ClassIndex(field);
  for (size_t i = 0; i < c.names.size(); ++i) {
    auto it = index.find(c.names[i]);
    if (it == index.end()) {
      return FieldError(file, absl::StrCat("classes.names[", i, "]"),
                        absl::StrCat("no class '", Excerpt(c.names[i]), "' in label field '",
                                     field.name, "' (", field.classes.size(), " classes)"));
    }
    sel->class_labels.push_back(it->second);
  }
  sel->relabel = c.relabel;
  return absl::OkStatus();
}

absl::Status ResolveIndices(const std::vector<ViewSpec::IndexEntry>& entries, uint64_t records,
                            const std::string& file, ResolvedSelection* sel) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (size_t i = 0; i < entries.size(); ++i) {
    const ViewSpec::IndexEntry& e = entries[i];
    const std::string at = absl::StrCat("indices[", i, "]");
    if (e.single && e.begin >= records) {
      return FieldError(file, at, absl::StrCat("index ", e.begin, " is past the end (the datasets "
                                               "hold ", records, " records)"));
    }
    if (!e.single && e.end > records) {
      return FieldError(file, at, absl::StrCat("range [", e.begin, ", ", e.end, ") runs past the "
                                               "end (the datasets hold ", records, " records)"));
    }
    if (e.single) ranges.emplace_back(e.begin, e.begin + 1);
    if (!e.single && e.begin < e.end) ranges.emplace_back(e.begin, e.end);
  }
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  sel->ranges = std::move(merged);
  return absl::OkStatus();
}

absl::Status ResolveWhereLabels(const ViewSpec::Where& w, const Schema& schema,
                                const std::string& file, ResolvedSelection* sel) {
  SP_ASSIGN_OR_RETURN(sel->where_field, FindLabelField(schema, w.field, file, "where.labels"));
  const LabelField& field = schema.labels[sel->where_field];
  const auto index = ClassIndex(field);
  const int64_t classes = static_cast<int64_t>(field.classes.size());
  for (size_t i = 0; i < w.labels->size(); ++i) {
    const ViewSpec::LabelValue& v = (*w.labels)[i];
    const std::string at = absl::StrCat("where.labels.in[", i, "]");
    int64_t label = v.label;
    if (v.name) {
      auto it = index.find(*v.name);
      if (it == index.end()) {
        return FieldError(file, at, absl::StrCat("no class '", Excerpt(*v.name), "' in label field '",
                                                 field.name, "' (", classes, " classes)"));
      }
      label = it->second;
    } else if (classes > 0 && (label < 0 || label >= classes)) {
      return FieldError(file, at, absl::StrCat("label ", label, " is not a class of field '",
                                               field.name, "' (0..", classes - 1, ")"));
    }
    sel->where_labels.push_back(label);
  }
  std::sort(sel->where_labels.begin(), sel->where_labels.end());
  sel->where_labels.erase(std::unique(sel->where_labels.begin(), sel->where_labels.end()),
                          sel->where_labels.end());
  return absl::OkStatus();
}

absl::Status ResolveStrings(const std::vector<ViewSpec::StringCondition>& conditions,
                            const Schema& schema, const std::string& file,
                            ResolvedSelection* sel) {
  const std::vector<Field> fields = FieldsOf(schema);
  std::string strings;
  for (const Field& f : fields) {
    if (f.type == FieldType::kString) absl::StrAppend(&strings, strings.empty() ? "" : ", ", f.name);
  }
  const std::string known =
      absl::StrCat(" (the datasets' string fields: ", strings.empty() ? "none" : strings, ")");
  for (size_t i = 0; i < conditions.size(); ++i) {
    const ViewSpec::StringCondition& c = conditions[i];
    const std::string at = absl::StrCat("where.strings[", i, "].field");
    auto it = std::find_if(fields.begin(), fields.end(),
                           [&](const Field& f) { return f.name == c.field; });
    if (it == fields.end()) {
      return FieldError(file, at, absl::StrCat("no field '", Excerpt(c.field), "'", known));
    }
    if (it->type != FieldType::kString) {
      return FieldError(file, at, absl::StrCat("field '", it->name, "' is ", FieldTypeText(*it),
                                               ", not a string", known));
    }
    ResolvedSelection::StringTest t{static_cast<int>(it - fields.begin()), c.in, c.prefix, c.glob};
    if (t.in) {
      std::sort(t.in->begin(), t.in->end());
      t.in->erase(std::unique(t.in->begin(), t.in->end()), t.in->end());
    }
    sel->strings.push_back(std::move(t));
  }
  return absl::OkStatus();
}

void ClearRange(std::vector<uint64_t>& bits, uint64_t begin, uint64_t end) {
  for (uint64_t r = begin; r < end && r % 64 != 0; ++r) bits[r / 64] &= ~(uint64_t{1} << (r % 64));
  uint64_t r = (begin + 63) / 64 * 64;
  for (; r + 64 <= end; r += 64) bits[r / 64] = 0;
  for (; r < end; ++r) bits[r / 64] &= ~(uint64_t{1} << (r % 64));
}

void Clear(std::vector<uint64_t>& bits, uint64_t r) { bits[r / 64] &= ~(uint64_t{1} << (r % 64)); }

uint64_t Count(const std::vector<uint64_t>& bits) {
  uint64_t n = 0;
  for (uint64_t w : bits) n += std::popcount(w);
  return n;
}

uint64_t SplitHash(const ViewSpec::Split& s, uint64_t r) {
  return common::Draw(s.seed, common::kStreamViewSplit, r);
}

// The k-th smallest split hash (k >= 1) of the records in `bits`, and how
// many records with exactly that hash the k smallest take (ties go to the
// lower index). A radix select on 16 bits at a time: four passes over the
// bitmap and 64 Ki counters, never a list of the records.
std::pair<uint64_t, uint64_t> SplitThreshold(const ViewSpec::Split& s,
                                             const std::vector<uint64_t>& bits, uint64_t k) {
  std::vector<uint64_t> histogram(uint64_t{1} << 16);
  uint64_t prefix = 0, need = k;
  for (int level = 0; level < 4; ++level) {
    const int shift = 48 - 16 * level;
    std::fill(histogram.begin(), histogram.end(), 0);
    ForEachSetBit(bits, [&](uint64_t r) {
      const uint64_t h = SplitHash(s, r);
      if (level == 0 || (h >> (shift + 16)) == prefix) ++histogram[(h >> shift) & 0xffff];
    });
    uint64_t b = 0;
    while (histogram[b] < need) need -= histogram[b++];
    prefix = (prefix << 16) | b;
  }
  return {prefix, need};
}

void ApplySplit(const ViewSpec::Split& s, std::vector<uint64_t>& bits) {
  const uint64_t n = Count(bits);
  const uint64_t k =
      std::min<uint64_t>(n, static_cast<uint64_t>(std::llround(s.fraction * static_cast<double>(n))));
  // Plain variables, not a structured binding: lambdas capture them (C++20
  // allows capturing bindings, clang before 16 does not).
  const std::pair<uint64_t, uint64_t> cut =
      k == 0 ? std::pair<uint64_t, uint64_t>{0, 0} : SplitThreshold(s, bits, k);
  const uint64_t threshold = cut.first;
  uint64_t ties_left = cut.second;
  ForEachSetBit(bits, [&](uint64_t r) {
    const uint64_t h = SplitHash(s, r);
    bool held = k > 0 && (h < threshold || (h == threshold && ties_left > 0));
    if (held && h == threshold) --ties_left;
    if (held != s.held_out) Clear(bits, r);
  });
}

bool KeepRecord(const ResolvedSelection& s, const std::vector<int64_t>& class_map,
                const Labels& labels, std::string_view key) {
  if (s.class_field >= 0) {
    const int64_t l = labels[s.class_field];
    if (l < 0 || l >= static_cast<int64_t>(class_map.size()) || class_map[l] < 0) return false;
  }
  if (s.where_field >= 0 &&
      !std::binary_search(s.where_labels.begin(), s.where_labels.end(), labels[s.where_field])) {
    return false;
  }
  if (s.key_prefix && !key.starts_with(*s.key_prefix)) return false;
  return !s.key_glob || GlobMatch(*s.key_glob, key);
}

// Whether the field values of a record pass every string test (an absent
// value passes none).
bool KeepValues(const ResolvedSelection& s, std::span<const FieldValue> values) {
  for (const ResolvedSelection::StringTest& t : s.strings) {
    const FieldValue& v = values[static_cast<size_t>(t.field)];
    if (!v.present) return false;
    const std::string_view text(reinterpret_cast<const char*>(v.bytes.data()), v.bytes.size());
    if (t.in && !std::binary_search(t.in->begin(), t.in->end(), text)) return false;
    if (t.prefix && !text.starts_with(*t.prefix)) return false;
    if (t.glob && !GlobMatch(*t.glob, text)) return false;
  }
  return true;
}

// Told, for record i of the dataset being walked, whether the selection
// keeps it; clears its bit when not. The one place a walk's index meets
// the bitmap: an index past the dataset's share of it is an error.
using KeepFn = absl::FunctionRef<absl::Status(uint64_t i, bool keep)>;

// The string tests' pass: every record read whole, its field section
// decoded (and its CRC checked) against the schema.
absl::Status SelectByValues(const ResolvedSelection& s, const std::vector<int64_t>& class_map,
                            const NamedPath& dataset, const Schema& schema, KeepFn keep) {
  const RecordFields fields(schema);
  std::vector<FieldValue> values(fields.fields().size());
  return ForEachRecord(dataset, [&](uint64_t i, const Record& r) {
    if (absl::Status st = fields.Decode(r, values, /*check_crc=*/true); !st.ok()) {
      return absl::DataLossError(absl::StrCat(dataset.path, ": record ", i, " (key '",
                                              Excerpt(r.key), "'): ", st.message()));
    }
    return keep(i, KeepRecord(s, class_map, r.labels, r.key) && KeepValues(s, values));
  });
}

absl::Status SelectByMeta(const ResolvedSelection& s, const std::vector<int64_t>& class_map,
                          DatasetView* view, std::vector<uint64_t>& bits) {
  for (size_t d = 0; d < view->datasets.size(); ++d) {
    const NamedPath& dataset = *view->datasets[d];
    const uint64_t first = view->first_record[d];
    const uint64_t end = d + 1 < view->first_record.size() ? view->first_record[d + 1]
                                                           : view->base_records;
    auto keep = [&](uint64_t i, bool kept) -> absl::Status {
      if (first + i >= end) {
        return absl::DataLossError(absl::StrCat(dataset.path, ": holds more than the ",
                                                end - first, " records its manifest lists"));
      }
      if (!kept) Clear(bits, first + i);
      return absl::OkStatus();
    };
    if (s.needs_records()) {
      SP_RETURN_IF_ERROR(SelectByValues(s, class_map, dataset, view->schema, keep));
      continue;
    }
    SP_RETURN_IF_ERROR(ForEachRecordMeta(
        dataset, s.needs_keys(), [&](uint64_t i, const Labels& labels, std::string_view key) {
          return keep(i, KeepRecord(s, class_map, labels, key));
        }));
  }
  return absl::OkStatus();
}

// A schema with fields declares its label fields twice (shardpack/fields.h):
// the relabelled one keeps the view's classes in `fields` too.
void RelabelDeclaredField(int label_field, Schema* schema) {
  int k = 0;
  for (Field& f : schema->fields) {
    if (f.type == FieldType::kLabel && k++ == label_field) {
      f.classes = schema->labels[static_cast<size_t>(label_field)].classes;
    }
  }
}

}  // namespace

absl::StatusOr<ResolvedSelection> ResolveSelection(const ViewSpec& spec, const Schema& schema,
                                                   uint64_t base_records,
                                                   const std::string& file) {
  ResolvedSelection sel;
  if (spec.classes) SP_RETURN_IF_ERROR(ResolveClasses(*spec.classes, schema, file, &sel));
  if (spec.indices) SP_RETURN_IF_ERROR(ResolveIndices(*spec.indices, base_records, file, &sel));
  if (spec.where) {
    sel.key_prefix = spec.where->key_prefix;
    sel.key_glob = spec.where->key_glob;
    if (spec.where->labels) SP_RETURN_IF_ERROR(ResolveWhereLabels(*spec.where, schema, file, &sel));
    SP_RETURN_IF_ERROR(ResolveStrings(spec.where->strings, schema, file, &sel));
  }
  sel.split = spec.split;
  return sel;
}

absl::Status ApplySelection(const ResolvedSelection& s, DatasetView* view) {
  std::vector<uint64_t> bits((view->base_records + 63) / 64, ~uint64_t{0});
  if (view->base_records % 64 != 0) bits.back() = (uint64_t{1} << (view->base_records % 64)) - 1;
  std::vector<int64_t> class_map;
  if (s.class_field >= 0) {
    class_map.assign(view->schema.labels[s.class_field].classes.size(), -1);
    for (size_t j = 0; j < s.class_labels.size(); ++j) class_map[s.class_labels[j]] = j;
  }
  if (s.ranges) {
    uint64_t at = 0;
    for (const auto& [begin, end] : *s.ranges) {
      ClearRange(bits, at, begin);
      at = end;
    }
    ClearRange(bits, at, view->base_records);
  }
  if (s.needs_meta()) SP_RETURN_IF_ERROR(SelectByMeta(s, class_map, view, bits));
  if (s.split) ApplySplit(*s.split, bits);
  view->records = Count(bits);
  if (view->records == 0) {
    return absl::InvalidArgumentError(absl::StrCat(view->path, ": the view selects no record"));
  }
  if (view->records < view->base_records) view->selected = std::move(bits);
  view->label_map.assign(view->schema.labels.size(), {});
  if (s.class_field >= 0 && s.relabel) {
    std::vector<std::string> names;
    for (int64_t old : s.class_labels) names.push_back(view->schema.labels[s.class_field].classes[old]);
    view->schema.labels[s.class_field].classes = std::move(names);
    view->label_map[s.class_field] = std::move(class_map);
    RelabelDeclaredField(s.class_field, &view->schema);
  }
  return absl::OkStatus();
}

}  // namespace shardpack::dataset
