#include "writer/pack_identity.h"

#include <algorithm>
#include <initializer_list>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "format/json_text.h"
#include "shardpack/manifest.h"

namespace shardpack::writer {
namespace {

using Json = PackJson;
using common::AsAbsl;

// A pack record comes from a manifest (which ParseManifest has held to its
// limits) or a part's marker: held to the manifest's limits here too.
constexpr format::JsonLimits kPackLimits{
    .what = "a pack record", .max_bytes = kMaxManifestBytes, .max_values = kMaxManifestValues};

// A value for a message: its JSON, cut short (a manifest may hold anything).
std::string Shown(const Json& v) {
  std::string text = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > 80) text = text.substr(0, 80) + "...";
  return text;
}

absl::Status Bad(std::string_view where, std::string_view field, const Json& v,
                 std::string_view why) {
  return absl::DataLossError(
      absl::StrCat(AsAbsl(where), ": pack.", AsAbsl(field), " ", Shown(v), " ", AsAbsl(why)));
}

// obj[key], or null when `obj` is not an object or lacks `key` (a const
// operator[] must not be asked for a key that is not there). The key is a
// std::string: a manifest's key may hold NUL, which a char* would cut.
const Json& Field(const Json& obj, const std::string& key) {
  static const Json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

// One of shardpack's closed objects, `field` (a dotted path below "pack"):
// each of `keys` is there and no other key is.
class Closed {
 public:
  Closed(const Json& obj, std::string_view where, std::string field)
      : obj_(obj), where_(where), field_(std::move(field)) {}

  absl::Status Check(std::initializer_list<const char*> keys) const {
    if (!obj_.is_object()) return Bad(where_, field_, obj_, "is not an object");
    for (const char* key : keys) {
      if (!obj_.contains(key)) {
        return absl::DataLossError(
            absl::StrCat(AsAbsl(where_), ": pack.", field_, " has no ", key));
      }
    }
    for (auto it = obj_.begin(); it != obj_.end(); ++it) {
      if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return it.key() == k; })) {
        return absl::DataLossError(absl::StrCat(AsAbsl(where_), ": pack.", field_, " has a key ",
                                                Shown(Json(it.key())),
                                                " that shardpack does not write"));
      }
    }
    return absl::OkStatus();
  }
  std::string Name(const char* key) const { return absl::StrCat(field_, ".", key); }
  const Json& operator[](const char* key) const { return Field(obj_, key); }
  std::string_view where() const { return where_; }

 private:
  const Json& obj_;
  std::string_view where_;
  std::string field_;
};

absl::StatusOr<uint64_t> Unsigned(const Json& v, std::string_view where, std::string_view field) {
  if (!v.is_number_unsigned()) return Bad(where, field, v, "is not an unsigned integer");
  return v.get<uint64_t>();
}

absl::StatusOr<std::string> String(const Json& v, std::string_view where,
                                   std::string_view field) {
  if (!v.is_string()) return Bad(where, field, v, "is not a string");
  return v.get<std::string>();
}

absl::StatusOr<Backend> BackendOf(const Json& v, std::string_view where, std::string_view field) {
  absl::StatusOr<Backend> backend = ParseBackend(v.is_string() ? v.get<std::string>() : "");
  if (!backend.ok()) return Bad(where, field, v, "is not \"shard\", \"lmdb\" or \"hdf5\"");
  return backend;
}

// A number in lo..hi, said as that range whatever is wrong with it.
absl::StatusOr<uint64_t> InRange(const Json& v, std::string_view where, std::string_view field,
                                 uint64_t lo, uint64_t hi) {
  if (!v.is_number_unsigned() || v.get<uint64_t>() < lo || v.get<uint64_t>() > hi) {
    return Bad(where, field, v, absl::StrCat("is not in ", lo, "..", hi));
  }
  return v.get<uint64_t>();
}

absl::Status ReadPart(const Json& v, std::string_view where, PackIdentity* p) {
  if (v.is_string()) {
    p->legacy_part = v.get<std::string>();
    return absl::OkStatus();
  }
  if (!v.is_object()) return Bad(where, "part", v, "is not an object {index, count}");
  PackPart part;
  if (v.size() == 1 && v.contains("index")) {
    // An open count: the part knew its index only (WriterPart::count).
    part.count = kOpenPartCount;
    SP_ASSIGN_OR_RETURN(part.index, InRange(v["index"], where, "part.index", 1, kMaxParts));
    p->part = part;
    return absl::OkStatus();
  }
  // Bounds first, in this order: what merge has always said of a bad part.
  SP_ASSIGN_OR_RETURN(part.count, InRange(Field(v, "count"), where, "part.count", 1, kMaxParts));
  SP_ASSIGN_OR_RETURN(part.index,
                      InRange(Field(v, "index"), where, "part.index", 1, part.count));
  SP_RETURN_IF_ERROR(Closed(v, where, "part").Check({"index", "count"}));
  p->part = part;
  return absl::OkStatus();
}

absl::Status ReadInput(const Json& v, std::string_view where, PackIdentity* p) {
  const Closed in(v, where, "input");
  SP_RETURN_IF_ERROR(in.Check({"items", "bytes", "fingerprint"}));
  PackInput input;
  SP_ASSIGN_OR_RETURN(input.items, Unsigned(in["items"], where, in.Name("items")));
  SP_ASSIGN_OR_RETURN(input.bytes, Unsigned(in["bytes"], where, in.Name("bytes")));
  SP_ASSIGN_OR_RETURN(input.fingerprint,
                      String(in["fingerprint"], where, in.Name("fingerprint")));
  p->input = std::move(input);
  return absl::OkStatus();
}

absl::Status ReadOrder(const Json& v, std::string_view where, PackIdentity* p) {
  const Closed order(v, where, "order");
  SP_RETURN_IF_ERROR(order.Check({"chunk_items", "window_chunks"}));
  PackOrder shape;
  SP_ASSIGN_OR_RETURN(shape.chunk_items,
                      Unsigned(order["chunk_items"], where, order.Name("chunk_items")));
  SP_ASSIGN_OR_RETURN(shape.window_chunks,
                      Unsigned(order["window_chunks"], where, order.Name("window_chunks")));
  p->order = shape;
  return absl::OkStatus();
}

absl::Status ReadMerged(const Json& v, std::string_view where, PackIdentity* p) {
  const Closed merged(v, where, "merged");
  SP_RETURN_IF_ERROR(merged.Check({"tool", "count", "parts"}));
  MergeRecord record;
  SP_ASSIGN_OR_RETURN(record.tool, String(merged["tool"], where, "merged.tool"));
  SP_ASSIGN_OR_RETURN(record.count, Unsigned(merged["count"], where, "merged.count"));
  const Json& parts = merged["parts"];
  if (!parts.is_array()) return Bad(where, "merged.parts", parts, "is not an array");
  for (size_t i = 0; i < parts.size(); ++i) {
    const Closed part(parts[i], where, absl::StrCat("merged.parts[", i, "]"));
    SP_RETURN_IF_ERROR(part.Check({"index", "path", "records", "shards"}));
    MergedPart m;
    SP_ASSIGN_OR_RETURN(m.index, Unsigned(part["index"], where, part.Name("index")));
    SP_ASSIGN_OR_RETURN(m.path, String(part["path"], where, part.Name("path")));
    SP_ASSIGN_OR_RETURN(m.records, Unsigned(part["records"], where, part.Name("records")));
    SP_ASSIGN_OR_RETURN(m.shards, Unsigned(part["shards"], where, part.Name("shards")));
    record.parts.push_back(std::move(m));
  }
  p->merged = std::move(record);
  return absl::OkStatus();
}

absl::Status ReadConvertedFrom(const Json& v, std::string_view where, PackIdentity* p) {
  if (!v.is_array()) return Bad(where, "converted_from", v, "is not an array");
  std::vector<ConvertedInput> from;
  for (size_t i = 0; i < v.size(); ++i) {
    const Closed entry(v[i], where, absl::StrCat("converted_from[", i, "]"));
    SP_RETURN_IF_ERROR(entry.Check({"path", "backend", "pack"}));
    ConvertedInput c;
    SP_ASSIGN_OR_RETURN(c.path, String(entry["path"], where, entry.Name("path")));
    SP_ASSIGN_OR_RETURN(c.backend, BackendOf(entry["backend"], where, entry.Name("backend")));
    if (!entry["pack"].is_object()) {
      return Bad(where, entry.Name("pack"), entry["pack"], "is not an object");
    }
    c.pack = entry["pack"];
    from.push_back(std::move(c));
  }
  p->converted_from = std::move(from);
  return absl::OkStatus();
}

// The typed scalar keys: each parsed into its member.
template <typename T, typename Parse>
absl::Status Scalar(const Json& v, std::string_view where, std::string_view key,
                    std::optional<T>* member, Parse parse) {
  SP_ASSIGN_OR_RETURN(T value, parse(v, where, key));
  *member = std::move(value);
  return absl::OkStatus();
}

absl::StatusOr<bool> Bool(const Json& v, std::string_view where, std::string_view field) {
  if (!v.is_boolean()) return Bad(where, field, v, "is not true or false");
  return v.get<bool>();
}

absl::StatusOr<OnError> OnErrorOf(const Json& v, std::string_view where, std::string_view field) {
  if (v == "skip") return OnError::kSkip;
  if (v == "fail") return OnError::kFail;
  return Bad(where, field, v, "is not \"skip\" or \"fail\"");
}

// Reads key `key` (one of shardpack's) into `p`; false when it is not one.
absl::StatusOr<bool> ReadKnown(const std::string& key, const Json& v, std::string_view where,
                               PackIdentity* p) {
  absl::Status s;
  if (key == "tool") {
    s = Scalar(v, where, key, &p->tool, String);
  } else if (key == "source") {
    p->source = v;
  } else if (key == "shuffle") {
    s = Scalar(v, where, key, &p->shuffle, Bool);
  } else if (key == "seed") {
    s = Scalar(v, where, key, &p->seed, Unsigned);
  } else if (key == "part") {
    s = ReadPart(v, where, p);
  } else if (key == "input") {
    s = ReadInput(v, where, p);
  } else if (key == "order") {
    s = ReadOrder(v, where, p);
  } else if (key == "shard_max_bytes") {
    s = Scalar(v, where, key, &p->shard_max_bytes, Unsigned);
  } else if (key == "shard_max_records") {
    s = Scalar(v, where, key, &p->shard_max_records, Unsigned);
  } else if (key == "format") {
    s = Scalar(v, where, key, &p->format, BackendOf);
  } else if (key == "block_size") {
    s = Scalar(v, where, key, &p->block_size, Unsigned);
  } else if (key == "compression") {
    s = Scalar(v, where, key, &p->compression, String);
  } else if (key == "on_error") {
    s = Scalar(v, where, key, &p->on_error, OnErrorOf);
  } else if (key == "job") {
    s = Scalar(v, where, key, &p->job, String);
  } else if (key == "metadata") {
    if (!v.is_object()) return Bad(where, key, v, "is not an object");
    p->metadata = v;
  } else if (key == "merged") {
    s = ReadMerged(v, where, p);
  } else if (key == "converted_from") {
    s = ReadConvertedFrom(v, where, p);
  } else if (key == "converted_by") {
    s = Scalar(v, where, key, &p->converted_by, String);
  } else {
    return false;
  }
  SP_RETURN_IF_ERROR(s);
  return true;
}

std::optional<PackDifference> Diff(const Json& a, const Json& b, const std::string& prefix) {
  if (!a.is_object() || !b.is_object()) {
    if (a == b) return std::nullopt;
    return PackDifference{prefix, Shown(a), Shown(b)};
  }
  for (const Json* side : {&a, &b}) {
    for (auto it = side->begin(); it != side->end(); ++it) {
      const std::string name = prefix.empty() ? it.key() : absl::StrCat(prefix, ".", it.key());
      if (auto d = Diff(Field(a, it.key()), Field(b, it.key()), name)) return d;
    }
  }
  return std::nullopt;
}

Json Comparable(const PackIdentity& p, PackComparison how) {
  if (how == PackComparison::kExact) return p.ToJsonValue();
  Json j = p.WithoutPart().ToJsonValue();
  if (j.contains("source") && j["source"].is_object()) {
    j["source"].erase("root");
    j["source"].erase("list");
  }
  return j;
}

}  // namespace

absl::StatusOr<PackIdentity> PackIdentity::FromJson(std::string_view text, std::string_view where) {
  const std::string name = absl::StrCat(AsAbsl(where), ": pack");
  SP_ASSIGN_OR_RETURN(const Json j, format::ParseJsonText(text, name, kPackLimits));
  if (!j.is_object()) {
    return absl::DataLossError(absl::StrCat(name, " is not a JSON object: ", Shown(j)));
  }
  PackIdentity p;
  for (auto it = j.begin(); it != j.end(); ++it) {
    SP_ASSIGN_OR_RETURN(bool known, ReadKnown(it.key(), it.value(), where, &p));
    if (!known) p.extra[it.key()] = it.value();
  }
  return p;
}

PackJson PackIdentity::ToJsonValue() const {
  Json j = Json::object();
  if (tool) j["tool"] = *tool;
  if (source) j["source"] = *source;
  if (shuffle) j["shuffle"] = *shuffle;
  if (seed) j["seed"] = *seed;
  if (part) {
    j["part"] = !part->has_count() ? PackJson{{"index", part->index}}
                             : PackJson{{"index", part->index}, {"count", part->count}};
  } else if (legacy_part) {
    j["part"] = *legacy_part;
  }
  if (input) {
    j["input"] = {
        {"items", input->items}, {"bytes", input->bytes}, {"fingerprint", input->fingerprint}};
  }
  if (order) {
    j["order"] = {{"chunk_items", order->chunk_items}, {"window_chunks", order->window_chunks}};
  }
  if (shard_max_bytes) j["shard_max_bytes"] = *shard_max_bytes;
  if (shard_max_records) j["shard_max_records"] = *shard_max_records;
  if (format) j["format"] = std::string(BackendName(*format));
  if (block_size) j["block_size"] = *block_size;
  if (compression) j["compression"] = *compression;
  if (on_error) j["on_error"] = *on_error == OnError::kSkip ? "skip" : "fail";
  if (job) j["job"] = *job;
  if (metadata) j["metadata"] = *metadata;
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
  if (merged) {
    Json parts = Json::array();
    for (const MergedPart& m : merged->parts) {
      parts.push_back(
          {{"index", m.index}, {"path", m.path}, {"records", m.records}, {"shards", m.shards}});
    }
    j["merged"] = {{"tool", merged->tool}, {"count", merged->count}, {"parts", std::move(parts)}};
  }
  if (converted_from) {
    Json from = Json::array();
    for (const ConvertedInput& c : *converted_from) {
      from.push_back(
          {{"path", c.path}, {"backend", std::string(BackendName(c.backend))}, {"pack", c.pack}});
    }
    j["converted_from"] = std::move(from);
  }
  if (converted_by) j["converted_by"] = *converted_by;
  return j;
}

std::string PackIdentity::ToJson() const {
  // Paths may be any bytes; JSON holds UTF-8 only (U+FFFD in their place).
  return ToJsonValue().dump(-1, ' ', false, Json::error_handler_t::replace);
}

PackIdentity PackIdentity::WithoutPart() const {
  PackIdentity p = *this;
  p.part.reset();
  p.legacy_part.reset();
  p.converted_from.reset();
  p.converted_by.reset();
  return p;
}

std::optional<PackDifference> FirstDifference(const PackIdentity& a, const PackIdentity& b,
                                              PackComparison how) {
  return Diff(Comparable(a, how), Comparable(b, how), "");
}

bool operator==(const PackIdentity& a, const PackIdentity& b) {
  return !FirstDifference(a, b).has_value();
}

}  // namespace shardpack::writer
