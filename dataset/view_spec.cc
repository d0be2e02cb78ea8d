#include "dataset/view_spec.h"

#include <cmath>
#include <initializer_list>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "dataset/view.h"
#include "format/json_text.h"
#include "nlohmann/json.hpp"

namespace shardpack::dataset {
namespace {

using Json = nlohmann::ordered_json;
using common::Excerpt;

// What a JSON value is, in words, for "expected X, found Y".
std::string Kind(const Json& v) {
  if (v.is_number_unsigned()) return "a non-negative integer";
  if (v.is_number_integer()) return "a negative integer";
  if (v.is_number_float()) return "a fractional number";
  return std::string(v.type_name());
}

// Typed access to one JSON object of a view file, with errors naming the
// file and the field: "v.json: split.fraction: ...".
class Fields {
 public:
  Fields(const Json& object, const std::string& file, std::string where)
      : object_(object), file_(file), where_(std::move(where)) {}

  absl::Status Error(std::string_view field, std::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(file_, ": ", Path(field), ": ", common::AsAbsl(what)));
  }
  std::string Path(std::string_view field) const {
    if (field.empty()) return where_;
    return where_.empty() ? std::string(field) : absl::StrCat(where_, ".", common::AsAbsl(field));
  }
  const std::string& file() const { return file_; }

  // InvalidArgumentError naming the first key not in `known`.
  absl::Status OnlyKeys(std::initializer_list<absl::string_view> known) const {
    for (auto it = object_.begin(); it != object_.end(); ++it) {
      bool ok = false;
      for (absl::string_view k : known) ok = ok || it.key() == k;
      if (!ok) {
        return Error(Excerpt(it.key()),
                     absl::StrCat("unknown key (known: ", absl::StrJoin(known, ", "), ")"));
      }
    }
    return absl::OkStatus();
  }
  const Json* Find(std::string_view key) const {
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }
  // The value at `key`, of the type `is` accepts (`what` names it).
  absl::StatusOr<const Json*> Get(std::string_view key, bool (Json::*is)() const noexcept,
                                  std::string_view what, bool required = true) const {
    const Json* v = Find(key);
    if (v == nullptr && required) return Error(key, "missing");
    if (v == nullptr) return nullptr;
    if (!(v->*is)()) return Error(key, absl::StrCat("expected ", common::AsAbsl(what), ", found ", Kind(*v)));
    return v;
  }
  absl::StatusOr<std::optional<std::string>> OptString(std::string_view key) const {
    SP_ASSIGN_OR_RETURN(const Json* v, Get(key, &Json::is_string, "a string", false));
    if (v == nullptr) return std::nullopt;
    return v->get<std::string>();
  }
  // A non-empty array at `key` (required).
  // `streamed`: its elements were handed out as the text was parsed
  // (format::JsonStream), and that many there were.
  absl::StatusOr<const Json*> List(std::string_view key,
                                   std::optional<size_t> streamed = std::nullopt) const {
    SP_ASSIGN_OR_RETURN(const Json* v, Get(key, &Json::is_array, "an array"));
    if (streamed.value_or(v->size()) == 0) return Error(key, "empty");
    return v;
  }

 private:
  const Json& object_;
  const std::string& file_;
  std::string where_;
};

absl::StatusOr<std::vector<std::string>> Strings(const Fields& f, std::string_view key,
                                                 bool distinct) {
  SP_ASSIGN_OR_RETURN(const Json* list, f.List(key));
  std::vector<std::string> out;
  absl::flat_hash_set<std::string> seen;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string at = absl::StrCat(common::AsAbsl(key), "[", i, "]");
    if (!(*list)[i].is_string()) {
      return f.Error(at, absl::StrCat("expected a string, found ", Kind((*list)[i])));
    }
    out.push_back((*list)[i].get<std::string>());
    if (distinct && !seen.insert(out.back()).second) {
      return f.Error(at, absl::StrCat("'", Excerpt(out.back()), "' is named twice"));
    }
  }
  return out;
}

absl::StatusOr<ViewSpec::Classes> ParseClasses(const Json& j, const std::string& file) {
  Fields f(j, file, "classes");
  SP_RETURN_IF_ERROR(f.OnlyKeys({"field", "names", "relabel"}));
  ViewSpec::Classes c;
  SP_ASSIGN_OR_RETURN(c.field, f.OptString("field"));
  SP_ASSIGN_OR_RETURN(c.names, Strings(f, "names", /*distinct=*/true));
  SP_ASSIGN_OR_RETURN(const Json* relabel,
                      f.Get("relabel", &Json::is_boolean, "true or false", false));
  if (relabel != nullptr) c.relabel = relabel->get<bool>();
  return c;
}

// One entry of "indices": N, or [BEGIN, END] (END excluded).
absl::StatusOr<ViewSpec::IndexEntry> ParseIndex(const Fields& f, const Json& v, size_t i) {
  const std::string at = absl::StrCat("indices[", i, "]");
  if (v.is_number_unsigned()) {
    const uint64_t n = v.get<uint64_t>();
    return ViewSpec::IndexEntry{n, n, true};
  }
  if (!v.is_array()) {
    return f.Error(at, absl::StrCat("expected an index (a non-negative integer) or a range "
                                    "[begin, end], found ", Kind(v)));
  }
  if (v.size() != 2 || !v[0].is_number_unsigned() || !v[1].is_number_unsigned()) {
    return f.Error(at, "a range is [begin, end]: two non-negative integers");
  }
  ViewSpec::IndexEntry e{v[0].get<uint64_t>(), v[1].get<uint64_t>(), false};
  if (e.begin > e.end) {
    return f.Error(at, absl::StrCat("range [", e.begin, ", ", e.end, ") has begin > end"));
  }
  return e;
}

absl::StatusOr<std::vector<ViewSpec::LabelValue>> ParseLabelValues(const Fields& f) {
  SP_ASSIGN_OR_RETURN(const Json* list, f.List("in"));
  std::vector<ViewSpec::LabelValue> out;
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& v = (*list)[i];
    if (v.is_string()) {
      out.push_back({0, v.get<std::string>()});
    } else if (v.is_number_integer() && !v.is_number_unsigned()) {
      out.push_back({v.get<int64_t>(), std::nullopt});
    } else if (v.is_number_unsigned() && v.get<uint64_t>() <= INT64_MAX) {
      out.push_back({static_cast<int64_t>(v.get<uint64_t>()), std::nullopt});
    } else {
      return f.Error(absl::StrCat("in[", i, "]"),
                     absl::StrCat("expected a label (a 64-bit integer) or a class name, found ",
                                  Kind(v)));
    }
  }
  return out;
}

// where.strings: [{"field": NAME, "in": [...], "prefix": P, "glob": G}, ...],
// each condition with at least one of in, prefix and glob.
absl::StatusOr<std::vector<ViewSpec::StringCondition>> ParseStringConditions(
    const Fields& where, const std::string& file) {
  SP_ASSIGN_OR_RETURN(const Json* list, where.List("strings"));
  std::vector<ViewSpec::StringCondition> out;
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& v = (*list)[i];
    const std::string at = absl::StrCat("strings[", i, "]");
    if (!v.is_object()) {
      return where.Error(at, absl::StrCat("expected an object, found ", Kind(v)));
    }
    Fields c(v, file, where.Path(at));
    SP_RETURN_IF_ERROR(c.OnlyKeys({"field", "in", "prefix", "glob"}));
    ViewSpec::StringCondition cond;
    SP_ASSIGN_OR_RETURN(const Json* field, c.Get("field", &Json::is_string, "a string"));
    cond.field = field->get<std::string>();
    if (c.Find("in") != nullptr) {
      SP_ASSIGN_OR_RETURN(cond.in, Strings(c, "in", /*distinct=*/false));
    }
    SP_ASSIGN_OR_RETURN(cond.prefix, c.OptString("prefix"));
    SP_ASSIGN_OR_RETURN(cond.glob, c.OptString("glob"));
    if (!cond.in && !cond.prefix && !cond.glob) return c.Error("", "no test (in, prefix or glob)");
    out.push_back(std::move(cond));
  }
  return out;
}

absl::StatusOr<ViewSpec::Where> ParseWhere(const Json& j, const std::string& file) {
  Fields f(j, file, "where");
  SP_RETURN_IF_ERROR(f.OnlyKeys({"labels", "key_prefix", "key_glob", "strings"}));
  ViewSpec::Where w;
  SP_ASSIGN_OR_RETURN(w.key_prefix, f.OptString("key_prefix"));
  SP_ASSIGN_OR_RETURN(w.key_glob, f.OptString("key_glob"));
  SP_ASSIGN_OR_RETURN(const Json* labels, f.Get("labels", &Json::is_object, "an object", false));
  if (labels != nullptr) {
    Fields lf(*labels, file, "where.labels");
    SP_RETURN_IF_ERROR(lf.OnlyKeys({"field", "in"}));
    SP_ASSIGN_OR_RETURN(w.field, lf.OptString("field"));
    SP_ASSIGN_OR_RETURN(w.labels, ParseLabelValues(lf));
  }
  if (f.Find("strings") != nullptr) {
    SP_ASSIGN_OR_RETURN(w.strings, ParseStringConditions(f, file));
  }
  if (!w.labels && !w.key_prefix && !w.key_glob && w.strings.empty()) {
    return f.Error("", "no condition (labels, key_prefix, key_glob or strings)");
  }
  return w;
}

absl::StatusOr<ViewSpec::Split> ParseSplit(const Json& j, const std::string& file) {
  Fields f(j, file, "split");
  SP_RETURN_IF_ERROR(f.OnlyKeys({"seed", "fraction", "take"}));
  ViewSpec::Split s;
  SP_ASSIGN_OR_RETURN(const Json* seed,
                      f.Get("seed", &Json::is_number_unsigned, "an integer in [0, 2^64)"));
  s.seed = seed->get<uint64_t>();
  SP_ASSIGN_OR_RETURN(const Json* fraction, f.Get("fraction", &Json::is_number, "a number"));
  s.fraction = fraction->get<double>();
  if (!std::isfinite(s.fraction) || s.fraction < 0 || s.fraction > 1) {
    return f.Error("fraction", absl::StrCat(fraction->dump(), " is not in [0, 1]"));
  }
  SP_ASSIGN_OR_RETURN(const Json* take, f.Get("take", &Json::is_string, "a string"));
  const std::string t = take->get<std::string>();
  if (t != "held_out" && t != "rest") {
    return f.Error("take", absl::StrCat("'", Excerpt(t), "' is neither \"held_out\" nor \"rest\""));
  }
  s.held_out = t == "held_out";
  return s;
}

absl::Status CheckVersion(const Fields& f) {
  SP_ASSIGN_OR_RETURN(const Json* version,
                      f.Get("shardpack_view", &Json::is_number_unsigned, "a version number"));
  if (version->get<uint64_t>() != static_cast<uint64_t>(kViewVersion)) {
    return f.Error("shardpack_view", absl::StrCat("version ", version->dump(),
                                                  " is not supported (this build reads ",
                                                  kViewVersion, ")"));
  }
  return absl::OkStatus();
}

// `spec` holds the indices, if any, streamed from the text.
absl::StatusOr<ViewSpec> ParseObject(const Json& j, const std::string& file, ViewSpec spec) {
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": a view is a JSON object, found ", Kind(j)));
  }
  Fields f(j, file, "");
  if (f.Find("shardpack_view") == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        file, ": a JSON file but not a shardpack view (no \"shardpack_view\": ", kViewVersion,
        "), nor a dataset or shard"));
  }
  SP_RETURN_IF_ERROR(CheckVersion(f));
  SP_RETURN_IF_ERROR(
      f.OnlyKeys({"shardpack_view", "datasets", "classes", "indices", "where", "split"}));
  SP_ASSIGN_OR_RETURN(spec.datasets, Strings(f, "datasets", /*distinct=*/false));
  SP_ASSIGN_OR_RETURN(const Json* c, f.Get("classes", &Json::is_object, "an object", false));
  if (c != nullptr) {
    SP_ASSIGN_OR_RETURN(spec.classes, ParseClasses(*c, file));
  }
  // The indices came from ParseIndex as the text was parsed (ParseViewSpec).
  if (f.Find("indices") != nullptr) {
    SP_RETURN_IF_ERROR(f.List("indices", spec.indices->size()).status());
  } else {
    spec.indices.reset();
  }
  SP_ASSIGN_OR_RETURN(const Json* w, f.Get("where", &Json::is_object, "an object", false));
  if (w != nullptr) {
    SP_ASSIGN_OR_RETURN(spec.where, ParseWhere(*w, file));
  }
  SP_ASSIGN_OR_RETURN(const Json* s, f.Get("split", &Json::is_object, "an object", false));
  if (s != nullptr) {
    SP_ASSIGN_OR_RETURN(spec.split, ParseSplit(*s, file));
  }
  return spec;
}

// A parse's status as a view's: what was wrong with the text is the user's
// mistake (InvalidArgument), whatever else went wrong keeps its code.
absl::StatusCode ViewCode(const absl::Status& s) {
  return s.code() == absl::StatusCode::kDataLoss ? absl::StatusCode::kInvalidArgument : s.code();
}

}  // namespace

absl::StatusOr<ViewSpec> ParseViewSpec(std::string_view text, const std::string& name) {
  static constexpr format::JsonLimits kLimits{
      .what = "a view file", .max_bytes = kMaxViewBytes, .max_values = kMaxViewValues};
  // The indices, the list of a view that may be long, go straight into
  // their entries (24 bytes each), never held as JSON.
  ViewSpec spec;
  spec.indices.emplace();
  const Json no_object = Json::object();
  const Fields top(no_object, name, "");
  auto index = [&](uint64_t i, const Json& v) -> absl::Status {
    SP_ASSIGN_OR_RETURN(ViewSpec::IndexEntry e, ParseIndex(top, v, i));
    spec.indices->push_back(e);
    return absl::OkStatus();
  };
  const format::JsonStream indices[] = {{"indices", kMaxViewIndices, index}};
  absl::StatusOr<Json> j = format::ParseJsonText(text, name, kLimits, indices);
  // Bad JSON in a view is a user's mistake, not damaged data.
  if (!j.ok()) return absl::Status(ViewCode(j.status()), j.status().message());
  return ParseObject(*j, name, std::move(spec));
}

bool GlobMatch(std::string_view glob, std::string_view key) {
  size_t g = 0, k = 0;
  size_t star = std::string_view::npos, resume = 0;
  while (k < key.size()) {
    if (g < glob.size() && glob[g] == '*') {
      star = g++;
      resume = k;
    } else if (g < glob.size() && (glob[g] == '?' || glob[g] == key[k])) {
      ++g;
      ++k;
    } else if (star != std::string_view::npos) {
      g = star + 1;
      k = ++resume;
    } else {
      return false;
    }
  }
  while (g < glob.size() && glob[g] == '*') ++g;
  return g == glob.size();
}

}  // namespace shardpack::dataset
