// The reader state's saved form: ToJson, and ReadState for every source.
#include "reader/reader_state.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "format/json_text.h"
#include "nlohmann/json.hpp"

namespace shardpack {
namespace {

using reader::StateDialect;
using reader::StateValue;
using Json = nlohmann::ordered_json;

// A saved state is 3 levels deep (the state, `earlier`, a segment) and a
// few KB: text nested deeper or larger is refused as it is parsed, before
// anything recurses on it or keeps it.
constexpr format::JsonLimits kStateLimits{.what = "a reader state",
                                          .max_bytes = uint64_t{16} << 20,
                                          .max_depth = 8,
                                          .max_values = uint64_t{1} << 16};

// The plan options of a segment, as the saved form names them, in the
// order ToJson writes them (MapReader::Plan reads them in that order).
void PutPlan(const ReadSegment& s, Json& j) {
  j["world_size"] = s.world_size;
  j["batch_size"] = s.batch_size;
  j["remainder"] = RemainderName(s.remainder);
  j["shuffle"] = s.shuffle;
  j["shuffle_bytes"] = s.shuffle_bytes;
}

// "<what> is <value>: it must be <must>".
absl::Status Bad(std::string_view what, const StateValue& v, std::string_view must) {
  return absl::InvalidArgumentError(absl::StrCat(common::AsAbsl(what), " is ", v.Shown(),
                                                 ": it must be ", common::AsAbsl(must)));
}

std::string Joined(const std::vector<std::string_view>& names) {
  std::string out;
  for (std::string_view name : names) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", common::AsAbsl(name));
  }
  return out;
}

// Reads the members of one map of a saved state, keeping the keys it asked
// for so that any other key is an error (NoOtherKeys).
class MapReader {
 public:
  MapReader(const StateValue& map, std::string where, const StateDialect& d)
      : map_(map), where_(std::move(where)), d_(d) {}

  absl::StatusOr<uint64_t> Uint(std::string_view key, uint64_t max = UINT64_MAX) {
    SP_ASSIGN_OR_RETURN(std::unique_ptr<StateValue> v, Item(key));
    if (std::optional<uint64_t> n = v->Uint(); n.has_value() && *n <= max) return *n;
    const std::string bound = max == UINT64_MAX  ? absl::StrCat("2", d_.power, "64-1")
                              : max == kMaxEpoch ? absl::StrCat("2", d_.power, "63-1")
                                                 : absl::StrCat(max);
    return Bad(At(key), *v, absl::StrCat(d_.an_integer, " from 0 to ", bound));
  }

  absl::StatusOr<bool> Bool(std::string_view key) {
    SP_ASSIGN_OR_RETURN(std::unique_ptr<StateValue> v, Item(key));
    if (std::optional<bool> b = v->Bool()) return *b;
    return Bad(At(key), *v, d_.a_boolean);
  }

  absl::StatusOr<uint64_t> Fingerprint() {
    SP_ASSIGN_OR_RETURN(std::unique_ptr<StateValue> v, Item("fingerprint"));
    const std::string text = v->Text().value_or("");
    if (text.size() != 16 || text.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return Bad(At("fingerprint"), *v, "16 lowercase hex digits");
    }
    return std::stoull(text, nullptr, 16);  // 16 hex digits: cannot throw
  }

  // The plan options PutPlan writes; world and batch size need only fit an
  // int (Reader::Restore checks their ranges, naming the field).
  absl::StatusOr<ReadSegment> Plan() {
    ReadSegment s;
    SP_ASSIGN_OR_RETURN(uint64_t world, Uint("world_size", INT32_MAX));
    SP_ASSIGN_OR_RETURN(uint64_t batch, Uint("batch_size", INT32_MAX));
    s.world_size = static_cast<int>(world);
    s.batch_size = static_cast<int>(batch);
    SP_ASSIGN_OR_RETURN(s.remainder, RemainderOf());
    SP_ASSIGN_OR_RETURN(s.shuffle, Bool("shuffle"));
    SP_ASSIGN_OR_RETURN(s.shuffle_bytes, Uint("shuffle_bytes"));
    return s;
  }

  // `earlier`: a list of at most kMaxStateSegments segment maps.
  absl::StatusOr<std::vector<ReadSegment>> Earlier() {
    SP_ASSIGN_OR_RETURN(std::unique_ptr<StateValue> v, Item("earlier"));
    const std::optional<size_t> n = v->Length();
    if (!n.has_value() || *n > kMaxStateSegments) {
      return Bad(At("earlier"), *v,
                 absl::StrCat(d_.a_list, " of at most ", kMaxStateSegments, " ", d_.maps));
    }
    std::vector<ReadSegment> segments;
    for (size_t i = 0; i < *n; ++i) {
      const std::string at = absl::StrCat(At("earlier"), "[", i, "]");
      const std::unique_ptr<StateValue> e = v->Element(i);
      if (!e->IsMap()) return Bad(at, *e, d_.a_map);
      MapReader m(*e, at, d_);
      SP_ASSIGN_OR_RETURN(ReadSegment s, m.Plan());
      SP_ASSIGN_OR_RETURN(s.batches, m.Uint("batches"));
      SP_RETURN_IF_ERROR(m.NoOtherKeys());
      segments.push_back(s);
    }
    return segments;
  }

  // After the last read: a key the reads did not ask for is one this
  // version does not know (a newer version's, or damage).
  absl::Status NoOtherKeys() const {
    const std::optional<std::string> other = map_.KeyNotIn(read_);
    if (!other.has_value()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        where_, " has an unknown key ", *other, " (a ", d_.producer,
        " of this version of shardpack has only ", Joined(read_), ")"));
  }

 private:
  std::string Quoted(std::string_view name) const {
    return absl::StrCat(std::string(1, d_.quote), common::AsAbsl(name), std::string(1, d_.quote));
  }
  std::string At(std::string_view key) const { return absl::StrCat(where_, "[", Quoted(key), "]"); }

  absl::StatusOr<std::unique_ptr<StateValue>> Item(std::string_view key) {
    read_.push_back(key);
    std::unique_ptr<StateValue> v = map_.Member(key);
    if (v != nullptr) return v;
    return absl::InvalidArgumentError(absl::StrCat(where_, " has no ", Quoted(key), " (a ",
                                                   d_.producer,
                                                   " of this version of shardpack has it)"));
  }

  // The name exactly: a state is data, not a user's spelling.
  absl::StatusOr<Remainder> RemainderOf() {
    SP_ASSIGN_OR_RETURN(std::unique_ptr<StateValue> v, Item("remainder"));
    if (const std::optional<std::string> name = v->Text()) {
      for (Remainder r : {Remainder::kDrop, Remainder::kPartial, Remainder::kPad}) {
        if (*name == RemainderName(r)) return r;
      }
    }
    return Bad(At("remainder"), *v,
               absl::StrCat(Quoted("drop"), ", ", Quoted("partial"), " or ", Quoted("pad")));
  }

  const StateValue& map_;
  const std::string where_;
  const StateDialect& d_;
  std::vector<std::string_view> read_;  // keys asked for, in order
};

// A value of a parsed JSON document, which outlives it.
class JsonValue final : public StateValue {
 public:
  explicit JsonValue(const Json& j) : j_(j) {}
  std::string Shown() const override {
    return common::Excerpt(j_.dump(-1, ' ', false, Json::error_handler_t::replace));
  }
  std::optional<uint64_t> Uint() const override {
    if (j_.is_number_unsigned()) return j_.get<uint64_t>();
    return std::nullopt;  // negative, a fraction, or past 2^64-1 (parsed as a double)
  }
  std::optional<bool> Bool() const override {
    if (j_.is_boolean()) return j_.get<bool>();
    return std::nullopt;
  }
  std::optional<std::string> Text() const override {
    if (j_.is_string()) return j_.get<std::string>();  // the parser checked its UTF-8
    return std::nullopt;
  }
  std::optional<size_t> Length() const override {
    if (j_.is_array()) return j_.size();
    return std::nullopt;
  }
  std::unique_ptr<StateValue> Element(size_t i) const override {
    return std::make_unique<JsonValue>(j_[i]);
  }
  bool IsMap() const override { return j_.is_object(); }
  std::unique_ptr<StateValue> Member(std::string_view key) const override {
    auto it = j_.find(std::string(key));
    return it == j_.end() ? nullptr : std::make_unique<JsonValue>(*it);
  }
  std::optional<std::string> KeyNotIn(const std::vector<std::string_view>& known) const override {
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
        return JsonValue(Json(it.key())).Shown();
      }
    }
    return std::nullopt;
  }

 private:
  const Json& j_;
};

}  // namespace

absl::StatusOr<ReaderState> reader::ReadState(const StateValue& root, const StateDialect& d) {
  if (!root.IsMap()) {
    return Bad(d.root, root, absl::StrCat(d.a_map, " from ", d.producer));
  }
  // The order of the checks is the order ToJson writes the keys in.
  MapReader m(root, std::string(d.root), d);
  ReaderState s;
  SP_ASSIGN_OR_RETURN(s.seed, m.Uint("seed"));
  SP_ASSIGN_OR_RETURN(s.epoch, m.Uint("epoch", kMaxEpoch));
  SP_ASSIGN_OR_RETURN(const uint64_t batch, m.Uint("batch"));
  SP_ASSIGN_OR_RETURN(s.fingerprint, m.Fingerprint());
  SP_ASSIGN_OR_RETURN(s.segment, m.Plan());
  s.segment.batches = batch;
  SP_ASSIGN_OR_RETURN(s.earlier, m.Earlier());
  SP_RETURN_IF_ERROR(m.NoOtherKeys());
  return s;
}

std::string ReaderState::ToJson() const {
  Json j;
  j["seed"] = seed;
  j["epoch"] = epoch;
  j["batch"] = segment.batches;
  j["fingerprint"] = FormatFingerprint(fingerprint);
  PutPlan(segment, j);
  j["earlier"] = Json::array();
  for (const ReadSegment& e : earlier) {
    Json s;
    PutPlan(e, s);
    s["batches"] = e.batches;
    j["earlier"].push_back(std::move(s));
  }
  return j.dump();
}

absl::StatusOr<ReaderState> ReaderState::FromJson(std::string_view text) {
  const char* root = reader::kJsonState.root;
  absl::StatusOr<Json> j = format::ParseJsonText(text, root, kStateLimits);
  // Text that is not a state is the caller's mistake, not damaged data.
  if (!j.ok()) return absl::InvalidArgumentError(j.status().message());
  return reader::ReadState(JsonValue(*j), reader::kJsonState);
}

}  // namespace shardpack
