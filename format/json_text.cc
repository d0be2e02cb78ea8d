#include "format/json_text.h"

#include <algorithm>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/errors.h"

namespace shardpack::format {
namespace {

using Json = nlohmann::ordered_json;

// "LINE:COLUMN" (1-based) of the byte nlohmann's parser stopped at: `byte`
// counts from 1, the way its parse_error does.
std::string JsonErrorPlace(std::string_view text, size_t byte) {
  const size_t at = std::min(byte > 0 ? byte - 1 : 0, text.size());
  size_t line = 1, column = 1;
  for (size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return absl::StrCat(line, ":", column);
}

// The parser's reason without its "[json.exception...] " tag and "parse
// error at line L, column C: " prefix (the place is given once, in our
// words).
std::string JsonErrorReason(std::string_view what) {
  if (what.starts_with("[json.exception.") && what.find("] ") != std::string_view::npos) {
    what.remove_prefix(what.find("] ") + 2);
  }
  if (what.starts_with("parse error") && what.find(": ") != std::string_view::npos) {
    what.remove_prefix(what.find(": ") + 2);
  }
  std::string reason(what);
  for (char& c : reason) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';  // one line, whatever the input held
  }
  return reason;
}

// nlohmann's SAX events built into a DOM (as its json_sax_dom_parser
// does), with the limits checked at each event, before what is past them is
// kept, and streamed lists handed to their consumers element by element.
class LimitedDom {
 public:
  LimitedDom(std::string_view text, std::string_view name, const JsonLimits& limits,
             std::span<const JsonStream> streams)
      : text_(text), name_(name), limits_(limits), streams_(streams) {}

  bool null() { return Leaf(Json(nullptr)); }
  bool boolean(bool v) { return Leaf(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return Leaf(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return Leaf(Json(v)); }
  bool number_float(Json::number_float_t v, const std::string&) { return Leaf(Json(v)); }
  bool string(std::string& v) { return CheckString(v) && Leaf(Json(std::move(v))); }
  bool binary(Json::binary_t&) { return Fail("binary value in JSON text"); }  // never from text
  bool start_object(std::size_t) { return Open(Json::object()); }
  bool start_array(std::size_t) { return Open(Json::array()); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool key(std::string& k) { return CheckString(k) && Key(std::move(k)); }
  bool parse_error(std::size_t byte, const std::string&, const nlohmann::detail::exception& e) {
    // Ids 1xx are syntax errors, with a place; a number past a double's
    // range (out_of_range 406) has none worth giving.
    const std::string place =
        e.id >= 100 && e.id < 200 ? absl::StrCat(":", JsonErrorPlace(text_, byte)) : "";
    error_ = absl::DataLossError(absl::StrCat(common::AsAbsl(name_), place, ": not valid JSON: ",
                                              JsonErrorReason(e.what())));
    return false;
  }

  absl::Status error() const { return error_; }
  Json& root() { return root_; }

 private:
  struct Frame {
    Json value;  // the object or array being built
    std::string key;  // an object's key awaiting its value
    absl::flat_hash_set<std::string> keys;  // an object's keys, once it has many
    const JsonStream* stream = nullptr;  // a streamed list
    uint64_t elements = 0;  // of a streamed list, so far
    uint64_t held_before = 0;  // values held before this element of a streamed list
  };
  // An object's keys are looked up by a scan up to this many, then hashed.
  static constexpr size_t kScannedKeys = 16;

  bool Fail(std::string_view what) {
    error_ = absl::DataLossError(absl::StrCat(common::AsAbsl(name_), ": ", common::AsAbsl(what)));
    return false;
  }
  bool CheckString(const std::string& s) {
    if (s.size() <= limits_.max_string_bytes) return true;
    return Fail(absl::StrCat("a string of more than ", limits_.max_string_bytes, " bytes ('",
                             common::Excerpt(s, 32), "'), the longest ",
                             common::AsAbsl(limits_.what), " may hold"));
  }
  bool Count() {
    if (++held_ <= limits_.max_values) return true;
    return Fail(absl::StrCat("more than ", limits_.max_values, " JSON values, the most ",
                             common::AsAbsl(limits_.what), " may hold"));
  }
  bool InStream() const { return !frames_.empty() && frames_.back().stream != nullptr; }

  bool Consume(Frame& list, const Json& element) {
    if (list.elements == list.stream->max_elements) {
      return Fail(absl::StrCat("more than ", list.stream->max_elements, " elements in \"",
                               common::AsAbsl(list.stream->key), "\", the most ",
                               common::AsAbsl(limits_.what), " may hold"));
    }
    absl::Status s = list.stream->consume(list.elements++, element);
    if (!s.ok()) error_ = std::move(s);
    return error_.ok();
  }
  // Places a finished value in the container on top (or makes it the root).
  bool Place(Json&& v) {
    if (frames_.empty()) {
      root_ = std::move(v);
      return true;
    }
    Frame& top = frames_.back();
    if (top.stream != nullptr) return Consume(top, v);
    if (top.value.is_object()) {
      // Straight onto ordered_json's vector: its operator[] scans every key.
      top.value.get_ref<Json::object_t&>().emplace_back(std::move(top.key), std::move(v));
    } else {
      top.value.get_ref<Json::array_t&>().push_back(std::move(v));
    }
    return true;
  }
  bool Leaf(Json&& v) {
    if (InStream()) return Place(std::move(v));  // consumed, never held
    return Count() && Place(std::move(v));
  }
  bool Key(std::string&& k) {
    Frame& top = frames_.back();
    Json::object_t& members = top.value.get_ref<Json::object_t&>();
    bool repeated = false;
    if (members.size() < kScannedKeys) {
      for (const auto& m : members) repeated = repeated || m.first == k;
    } else {
      if (top.keys.empty()) {
        for (const auto& m : members) top.keys.insert(m.first);
      }
      repeated = !top.keys.insert(k).second;
    }
    if (repeated) {
      return Fail(absl::StrCat("key '", common::Excerpt(k), "' appears twice in one object"));
    }
    top.key = std::move(k);
    return true;
  }
  bool Open(Json&& container) {
    if (frames_.size() >= static_cast<size_t>(limits_.max_depth)) {
      return Fail(absl::StrCat("JSON nested more than ", limits_.max_depth, " levels deep"));
    }
    Frame f;
    f.held_before = held_;
    if (!Count()) return false;
    f.stream = StreamOf(container);
    f.value = std::move(container);
    frames_.push_back(std::move(f));
    return true;
  }
  bool Close() {
    Frame f = std::move(frames_.back());
    frames_.pop_back();
    if (InStream()) held_ = f.held_before;  // an element, dropped once consumed
    return Place(std::move(f.value));
  }
  // The stream an array opened now is, if any: the value of a streamed key
  // of the top-level object.
  const JsonStream* StreamOf(const Json& container) const {
    if (frames_.size() != 1 || !container.is_array() || !frames_[0].value.is_object()) {
      return nullptr;
    }
    for (const JsonStream& s : streams_) {
      if (s.key == frames_[0].key) return &s;
    }
    return nullptr;
  }

  std::string_view text_;
  std::string_view name_;
  const JsonLimits& limits_;
  std::span<const JsonStream> streams_;
  std::vector<Frame> frames_;
  uint64_t held_ = 0;
  Json root_;
  absl::Status error_;
};

}  // namespace

absl::StatusOr<Json> ParseJsonText(std::string_view text, std::string_view name,
                                   const JsonLimits& limits, std::span<const JsonStream> streams) {
  if (text.size() > limits.max_bytes) {
    return absl::DataLossError(absl::StrCat(common::AsAbsl(name), ": ", text.size(),
                                            " bytes, more than the ", limits.max_bytes, " ",
                                            common::AsAbsl(limits.what), " may have"));
  }
  LimitedDom dom(text, name, limits, streams);
  try {
    if (!Json::sax_parse(text.begin(), text.end(), &dom)) return dom.error();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat(common::AsAbsl(name), ": out of memory parsing ", text.size(),
                     " bytes of JSON"));
  }
  return std::move(dom.root());
}

}  // namespace shardpack::format
