#include "format/json_text.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace shardpack::format {
namespace {

using Json = nlohmann::ordered_json;

// Deepest nesting of arrays and objects in JSON text (strings skipped), so
// that text nested absurdly deep is refused before anything recurses on it.
int NestingDepth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}


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

}  // namespace

absl::StatusOr<Json> ParseJsonText(std::string_view text, std::string_view name) {
  const std::string where(name);
  if (NestingDepth(text) > kMaxJsonNesting) {
    return absl::DataLossError(
        absl::StrCat(where, ": JSON nested more than ", kMaxJsonNesting, " levels deep"));
  }
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    return absl::DataLossError(absl::StrCat(where, ":", JsonErrorPlace(text, e.byte),
                                            ": not valid JSON: ", JsonErrorReason(e.what())));
  } catch (const Json::exception& e) {
    // Not a syntax error but a value the parser cannot hold (a number past
    // a double's range is out_of_range 406): no place to give.
    return absl::DataLossError(
        absl::StrCat(where, ": not valid JSON: ", JsonErrorReason(e.what())));
  }
}

}  // namespace shardpack::format
