#include "shardpack/manifest.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/enum_names.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "common/utf8.h"
#include "format/json_text.h"
#include "nlohmann/json.hpp"

namespace shardpack {
namespace {

using common::AsAbsl;
using common::Excerpt;
using Json = nlohmann::ordered_json;

std::string TypeName(Json::value_t type) {
  return type == Json::value_t::number_unsigned ? "a non-negative integer"
                                                : Json(type).type_name();
}

// "<digits>.<digits>", nothing else (SimpleAtoi alone takes signs and spaces).
bool ParseVersion(std::string_view text, int* major, int* minor) {
  size_t dot = text.find('.');
  auto digits = [](std::string_view s) {
    return !s.empty() && s.size() <= 6 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (dot == std::string_view::npos || !digits(text.substr(0, dot)) ||
      !digits(text.substr(dot + 1))) {
    return false;
  }
  *major = std::stoi(std::string(text.substr(0, dot)));
  *minor = std::stoi(std::string(text.substr(dot + 1)));
  return true;
}

// Exactly 8 hex digits.
bool ParseCrc(std::string_view text, uint32_t* crc) {
  if (text.size() != 8 || !std::all_of(text.begin(), text.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
      })) {
    return false;
  }
  *crc = static_cast<uint32_t>(std::stoul(std::string(text), nullptr, 16));
  return true;
}

// Typed access to a JSON object that reports the path of what is wrong.
class Members {
 public:
  Members(const Json& object, std::string where) : object_(object), where_(std::move(where)) {}

  absl::Status Error(std::string_view field, std::string_view what) const {
    return absl::DataLossError(absl::StrCat(where_, ".", AsAbsl(field), ": ", AsAbsl(what)));
  }
  absl::StatusOr<const Json*> Get(std::string_view key, Json::value_t type) const {
    auto it = object_.find(key);
    if (it == object_.end()) return Error(key, "missing");
    bool ok = it->type() == type ||
              (type == Json::value_t::number_unsigned && it->is_number_unsigned());
    if (!ok) return Error(key, absl::StrCat("expected ", TypeName(type), ", found ",
                                            it->is_number() ? "a number of another kind"
                                                            : it->type_name()));
    return &*it;
  }
  absl::StatusOr<std::string> String(std::string_view key) const {
    SP_ASSIGN_OR_RETURN(const Json* v, Get(key, Json::value_t::string));
    return v->get<std::string>();
  }
  absl::StatusOr<uint64_t> Unsigned(std::string_view key, uint64_t max = UINT64_MAX) const {
    SP_ASSIGN_OR_RETURN(const Json* v, Get(key, Json::value_t::number_unsigned));
    uint64_t n = v->get<uint64_t>();
    if (n > max) return Error(key, absl::StrCat(n, " is out of range (at most ", max, ")"));
    return n;
  }

 private:
  const Json& object_;
  std::string where_;
};

// encoding, layout, height, width, channels: the top-level schema's and an
// image field's.
absl::StatusOr<ImageInfo> ParseImageInfo(const Members& f) {
  ImageInfo image;
  SP_ASSIGN_OR_RETURN(std::string encoding, f.String("encoding"));
  SP_ASSIGN_OR_RETURN(std::string layout, f.String("layout"));
  absl::StatusOr<Encoding> e = ParseEncoding(encoding);
  if (!e.ok()) return f.Error("encoding", std::string(e.status().message()));
  absl::StatusOr<Layout> l = ParseLayout(layout);
  if (!l.ok()) return f.Error("layout", std::string(l.status().message()));
  image.encoding = *e;
  image.layout = *l;
  SP_ASSIGN_OR_RETURN(uint64_t height, f.Unsigned("height", UINT32_MAX));
  SP_ASSIGN_OR_RETURN(uint64_t width, f.Unsigned("width", UINT32_MAX));
  SP_ASSIGN_OR_RETURN(uint64_t channels, f.Unsigned("channels", 255));
  image.height = static_cast<uint32_t>(height);
  image.width = static_cast<uint32_t>(width);
  image.channels = static_cast<uint8_t>(channels);
  return image;
}

absl::StatusOr<std::vector<std::string>> ParseClasses(const Members& f) {
  SP_ASSIGN_OR_RETURN(const Json* classes, f.Get("classes", Json::value_t::array));
  std::vector<std::string> names;
  for (const Json& c : *classes) {
    if (!c.is_string()) return f.Error("classes", "expected strings");
    names.push_back(c.get<std::string>());
  }
  return names;
}

// schema.fields[i] (manifest 1.2).
absl::StatusOr<Field> ParseField(const Json& j, const std::string& at) {
  if (!j.is_object()) return absl::DataLossError(at + ": expected object");
  Members f(j, at);
  Field field;
  SP_ASSIGN_OR_RETURN(field.name, f.String("name"));
  SP_ASSIGN_OR_RETURN(std::string type, f.String("type"));
  absl::StatusOr<FieldType> t = ParseFieldType(type);
  if (!t.ok()) return f.Error("type", std::string(t.status().message()));
  field.type = *t;
  SP_ASSIGN_OR_RETURN(const Json* optional, f.Get("optional", Json::value_t::boolean));
  field.optional = optional->get<bool>();
  if (field.type == FieldType::kImage) {
    SP_ASSIGN_OR_RETURN(field.image, ParseImageInfo(f));
  }
  if (field.type == FieldType::kLabel) {
    SP_ASSIGN_OR_RETURN(field.classes, ParseClasses(f));
  }
  if (field.type == FieldType::kArray) {
    SP_ASSIGN_OR_RETURN(std::string dtype, f.String("dtype"));
    absl::StatusOr<ArrayDType> d = ParseArrayDType(dtype);
    if (!d.ok()) return f.Error("dtype", std::string(d.status().message()));
    field.dtype = *d;
    SP_ASSIGN_OR_RETURN(const Json* shape, f.Get("shape", Json::value_t::array));
    if (shape->size() > kMaxArrayDims) return f.Error("shape", "too many dimensions");
    for (const Json& dim : *shape) {
      if (!dim.is_number_unsigned()) return f.Error("shape", "expected non-negative integers");
      field.shape.push_back(dim.get<uint64_t>());
    }
    if (j.contains("classes")) {
      SP_ASSIGN_OR_RETURN(field.classes, ParseClasses(f));
    }
  }
  return field;
}

// schema.fields: the declared fields, which must make the schema's
// top-level image and labels (written for readers of manifest 1.1).
absl::Status ParseDeclaredFields(const Json& j, const std::string& where, Schema* schema) {
  auto it = j.find("fields");
  if (it == j.end()) return absl::OkStatus();
  const std::string at = where + ".fields";
  if (!it->is_array()) return absl::DataLossError(at + ": expected array");
  if (it->size() > kMaxFields) {
    return absl::DataLossError(absl::StrCat(at, ": more than ", kMaxFields, " fields"));
  }
  std::vector<Field> fields;
  for (size_t i = 0; i < it->size(); ++i) {
    SP_ASSIGN_OR_RETURN(Field field, ParseField((*it)[i], absl::StrCat(at, "[", i, "]")));
    fields.push_back(std::move(field));
  }
  absl::StatusOr<Schema> made = MakeSchema(std::move(fields));
  if (!made.ok()) return absl::DataLossError(absl::StrCat(at, ": ", made.status().message()));
  if (made->fields.empty()) {
    return absl::DataLossError(at + ": a classic schema (an image named 'image', then labels), "
                               "which is written without fields");
  }
  if (made->image != schema->image || made->labels != schema->labels) {
    return absl::DataLossError(at + ": disagree with the schema's image or labels");
  }
  *schema = *std::move(made);
  return absl::OkStatus();
}

absl::StatusOr<Schema> ParseSchema(const Json& j, const std::string& where) {
  Members f(j, where);
  Schema schema;
  SP_ASSIGN_OR_RETURN(schema.image, ParseImageInfo(f));
  SP_ASSIGN_OR_RETURN(const Json* labels, f.Get("labels", Json::value_t::array));
  if (labels->size() > kMaxLabels) return f.Error("labels", "too many label fields");
  for (size_t i = 0; i < labels->size(); ++i) {
    std::string at = absl::StrCat(where, ".labels[", i, "]");
    if (!(*labels)[i].is_object()) return absl::DataLossError(at + ": expected object");
    Members lf((*labels)[i], at);
    LabelField field;
    SP_ASSIGN_OR_RETURN(field.name, lf.String("name"));
    SP_ASSIGN_OR_RETURN(field.classes, ParseClasses(lf));
    schema.labels.push_back(std::move(field));
  }
  SP_RETURN_IF_ERROR(ParseDeclaredFields(j, where, &schema));
  return schema;
}

// Shard paths are relative and stay inside the dataset directory.
bool SafeRelativePath(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.find('\0') != std::string_view::npos) {
    return false;
  }
  for (absl::string_view part : absl::StrSplit(AsAbsl(path), '/')) {
    if (part == ".." || part == "." || part.empty()) return false;
  }
  return true;
}

// The optional "record_table" entry: path (inside the dataset, no shard's),
// bytes, crc32c.
absl::StatusOr<std::optional<RecordTableEntry>> ParseRecordTable(
    const Json& j, const std::string& name,
    const absl::flat_hash_set<std::string_view>& shard_paths) {
  auto it = j.find("record_table");
  if (it == j.end()) return std::nullopt;
  const std::string at = name + ".record_table";
  if (!it->is_object()) return absl::DataLossError(at + ": expected object");
  Members f(*it, at);
  RecordTableEntry e;
  SP_ASSIGN_OR_RETURN(e.path, f.String("path"));
  if (!SafeRelativePath(e.path)) {
    return f.Error("path",
                   absl::StrCat("'", Excerpt(e.path), "' is not a path inside the dataset"));
  }
  if (shard_paths.contains(std::string_view(e.path)) || e.path == kManifestFileName) {
    return f.Error("path", absl::StrCat("'", Excerpt(e.path), "' is a shard's or the manifest's"));
  }
  SP_ASSIGN_OR_RETURN(e.bytes, f.Unsigned("bytes"));
  SP_ASSIGN_OR_RETURN(std::string crc, f.String("crc32c"));
  if (!ParseCrc(crc, &e.crc32c)) {
    return f.Error("crc32c", absl::StrCat("'", Excerpt(crc), "' is not 8 hex digits"));
  }
  return e;
}

// Element i of "shards", appended to m->shards (streamed: ParseManifest).
absl::Status ParseShard(const Json& j, uint64_t i, const std::string& name, uint64_t* total,
                        std::vector<ShardEntry>* shards) {
  std::string at = absl::StrCat(name, ".shards[", i, "]");
  if (!j.is_object()) return absl::DataLossError(at + ": expected object");
  Members sf(j, at);
  ShardEntry e;
  SP_ASSIGN_OR_RETURN(e.path, sf.String("path"));
  if (!SafeRelativePath(e.path)) {
    return sf.Error("path",
                    absl::StrCat("'", Excerpt(e.path), "' is not a path inside the dataset"));
  }
  SP_ASSIGN_OR_RETURN(e.records, sf.Unsigned("records"));
  SP_ASSIGN_OR_RETURN(e.bytes, sf.Unsigned("bytes"));
  SP_ASSIGN_OR_RETURN(std::string crc, sf.String("crc32c"));
  if (!ParseCrc(crc, &e.crc32c)) {
    return sf.Error("crc32c", absl::StrCat("'", Excerpt(crc), "' is not 8 hex digits"));
  }
  if (e.records > UINT64_MAX - *total) return sf.Error("records", "record counts overflow");
  *total += e.records;
  shards->push_back(std::move(e));
  return absl::OkStatus();
}

// `m`'s fields other than its shards, from the top-level object `j`.
absl::StatusOr<Manifest> ParseJson(const Json& j, const std::string& name, Manifest m) {
  if (!j.is_object()) return absl::DataLossError(name + ": not a JSON object");
  Members f(j, name);
  SP_ASSIGN_OR_RETURN(std::string format, f.String("format"));
  if (format != "shardpack") {
    return f.Error("format", absl::StrCat("'", Excerpt(format), "' is not a shardpack manifest"));
  }
  SP_ASSIGN_OR_RETURN(std::string version, f.String("version"));
  if (!ParseVersion(version, &m.version_major, &m.version_minor)) {
    return f.Error("version", absl::StrCat("'", Excerpt(version), "' is not MAJOR.MINOR"));
  }
  if (m.version_major != kManifestMajorVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        name, ": dataset format version ", version, " is not supported (this build reads ",
        kManifestMajorVersion, ".x)"));
  }
  SP_ASSIGN_OR_RETURN(std::string backend, f.String("backend"));
  absl::StatusOr<Backend> parsed = ParseBackend(backend);
  if (!parsed.ok()) return f.Error("backend", std::string(parsed.status().message()));
  m.backend = *parsed;
  SP_ASSIGN_OR_RETURN(const Json* schema, f.Get("schema", Json::value_t::object));
  SP_ASSIGN_OR_RETURN(m.schema, ParseSchema(*schema, name + ".schema"));
  SP_ASSIGN_OR_RETURN(uint64_t records, f.Unsigned("records"));
  SP_RETURN_IF_ERROR(f.Get("shards", Json::value_t::array).status());
  // The entries came from ParseShard as the text was parsed; a path twice
  // is told here, once they are all in place.
  absl::flat_hash_set<std::string_view> paths;
  for (size_t i = 0; i < m.shards.size(); ++i) {
    if (!paths.insert(m.shards[i].path).second) {
      return Members(Json::object(), absl::StrCat(name, ".shards[", i, "]"))
          .Error("path", absl::StrCat("'", Excerpt(m.shards[i].path), "' listed twice"));
    }
  }
  if (m.records() != records) {
    return f.Error("records", absl::StrCat(records, " but the shards hold ", m.records()));
  }
  SP_ASSIGN_OR_RETURN(m.record_table, ParseRecordTable(j, name, paths));
  auto pack = j.find("pack");
  if (pack != j.end()) {
    if (!pack->is_object()) return f.Error("pack", "expected object");
    m.pack_json = pack->dump();
  }
  return m;
}

}  // namespace

absl::Status CheckSchemaNames(const Schema& schema) {
  // The names go in raw: the tools escape a message when they print it.
  for (const LabelField& field : schema.labels) {
    if (!common::IsValidUtf8(field.name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "label field name '", field.name,
          "' is not UTF-8: a manifest is JSON, which holds UTF-8 text only"));
    }
    for (size_t i = 0; i < field.classes.size(); ++i) {
      if (!common::IsValidUtf8(field.classes[i])) {
        return absl::InvalidArgumentError(absl::StrCat(
            "class ", i, " of label '", field.name, "' ('", field.classes[i],
            "') is not UTF-8: a manifest is JSON, which holds UTF-8 text only"));
      }
    }
  }
  return absl::OkStatus();
}

namespace {
constexpr common::EnumName<Backend> kBackendNames[] = {
    {Backend::kShard, "shard"}, {Backend::kLmdb, "lmdb"}, {Backend::kHdf5, "hdf5"}};
static_assert(std::size(kBackendNames) == std::size(kBackends));
}  // namespace

std::string_view BackendName(Backend b) { return common::NameIn(kBackendNames, b); }
absl::StatusOr<Backend> ParseBackend(std::string_view name) {
  return common::ParseIn(kBackendNames, "backend", name);
}

uint64_t Manifest::records() const {
  uint64_t n = 0;
  for (const ShardEntry& s : shards) n += s.records;
  return n;
}

absl::StatusOr<Manifest> ParseManifest(std::string_view text, std::string_view name) {
  const std::string where(name);
  static constexpr format::JsonLimits kLimits{.what = "a manifest",
                                              .max_bytes = kMaxManifestBytes,
                                              .max_values = kMaxManifestValues};
  // The shards, the one list of a manifest that grows with the dataset,
  // are parsed one by one into their entries, never held as JSON.
  Manifest m;
  uint64_t total = 0;
  auto shard = [&](uint64_t i, const Json& e) {
    return ParseShard(e, i, where, &total, &m.shards);
  };
  const format::JsonStream shards[] = {{"shards", kMaxManifestShards, shard}};
  SP_ASSIGN_OR_RETURN(const Json j, format::ParseJsonText(text, where, kLimits, shards));
  return ParseJson(j, where, std::move(m));
}

namespace {

// FNV-1a over an explicit byte layout (integers little-endian, strings
// length-prefixed), finished with splitmix64's mixer so that near inputs
// differ in every bit.
class FingerprintHash {
 public:
  void Bytes(std::string_view s) {
    U64(s.size());
    for (char c : s) Byte(static_cast<uint8_t>(c));
  }
  void U64(uint64_t v) {
    for (int i = 0; i < 8; ++i) Byte(static_cast<uint8_t>(v >> (8 * i)));
  }
  uint64_t Finish() const {
    uint64_t x = h_;
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }

 private:
  void Byte(uint8_t b) { h_ = (h_ ^ b) * 0x100000001b3ULL; }
  uint64_t h_ = 0xcbf29ce484222325ULL;  // FNV-1a 64's offset basis
};

// schema.fields as written: one object a field, its type's members only.
Json FieldsJson(const std::vector<Field>& fields) {
  Json out = Json::array();
  for (const Field& f : fields) {
    Json j = {{"name", f.name}, {"type", std::string(FieldTypeName(f.type))},
              {"optional", f.optional}};
    if (f.type == FieldType::kImage) {
      j["encoding"] = std::string(EncodingName(f.image.encoding));
      j["layout"] = std::string(LayoutName(f.image.layout));
      j["height"] = f.image.height;
      j["width"] = f.image.width;
      j["channels"] = f.image.channels;
    }
    if (f.type == FieldType::kLabel) j["classes"] = f.classes;
    if (f.type == FieldType::kArray) {
      j["dtype"] = std::string(ArrayDTypeName(f.dtype));
      j["shape"] = f.shape;
      if (!f.classes.empty()) j["classes"] = f.classes;
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

uint64_t ManifestFingerprint(const Manifest& m) {
  FingerprintHash h;
  h.Bytes("shardpack-dataset-fingerprint-1");
  h.Bytes(BackendName(m.backend));
  h.Bytes(EncodingName(m.schema.image.encoding));
  h.Bytes(LayoutName(m.schema.image.layout));
  h.U64(m.schema.image.height);
  h.U64(m.schema.image.width);
  h.U64(m.schema.image.channels);
  h.U64(m.schema.labels.size());
  for (const LabelField& field : m.schema.labels) {
    h.Bytes(field.name);
    h.U64(field.classes.size());
    for (const std::string& c : field.classes) h.Bytes(c);
  }
  // Declared fields only: a classic dataset's fingerprint is as it was.
  if (!m.schema.fields.empty()) h.Bytes(FieldsJson(m.schema.fields).dump());
  h.U64(m.shards.size());
  for (const ShardEntry& s : m.shards) {
    h.Bytes(s.path);
    h.U64(s.records);
    h.U64(s.bytes);
    h.U64(s.crc32c);
  }
  return h.Finish();
}

std::string FormatFingerprint(uint64_t fingerprint) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016" PRIx64, fingerprint);
  return text;
}

std::string SerializeManifest(const Manifest& m) {
  Json j;
  j["format"] = "shardpack";
  // Fields are manifest 1.2's: a manifest that has them says so.
  const int minor = m.schema.fields.empty()
                        ? m.version_minor
                        : std::max(m.version_minor, kManifestFieldsMinorVersion);
  j["version"] = absl::StrCat(m.version_major, ".", minor);
  j["backend"] = std::string(BackendName(m.backend));
  j["records"] = m.records();
  Json schema;
  schema["encoding"] = std::string(EncodingName(m.schema.image.encoding));
  schema["layout"] = std::string(LayoutName(m.schema.image.layout));
  schema["height"] = m.schema.image.height;
  schema["width"] = m.schema.image.width;
  schema["channels"] = m.schema.image.channels;
  schema["labels"] = Json::array();
  for (const LabelField& field : m.schema.labels) {
    schema["labels"].push_back({{"name", field.name}, {"classes", field.classes}});
  }
  if (!m.schema.fields.empty()) schema["fields"] = FieldsJson(m.schema.fields);
  j["schema"] = schema;
  j["shards"] = Json::array();
  for (const ShardEntry& s : m.shards) {
    char crc[9];
    std::snprintf(crc, sizeof(crc), "%08" PRIx32, s.crc32c);
    j["shards"].push_back(
        {{"path", s.path}, {"records", s.records}, {"bytes", s.bytes}, {"crc32c", crc}});
  }
  if (m.record_table.has_value()) {
    char crc[9];
    std::snprintf(crc, sizeof(crc), "%08" PRIx32, m.record_table->crc32c);
    j["record_table"] = {
        {"path", m.record_table->path}, {"bytes", m.record_table->bytes}, {"crc32c", crc}};
  }
  Json pack = Json::parse(m.pack_json, nullptr, false);
  j["pack"] = pack.is_object() ? pack : Json::object();
  // Names are UTF-8 (DatasetWriter checks); replacing stray bytes here keeps
  // a bad name from ever throwing across the API.
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace shardpack
