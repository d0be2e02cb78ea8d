#include "tools/dump/text.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/errors.h"
#include "common/utf8.h"

namespace shardpack::dump {

std::string RecordWhere(std::string_view path, const backends::RecordLocation& loc,
                        uint64_t record) {
  if (!loc.has_offset) return absl::StrCat(common::AsAbsl(path), ": record ", record);
  return absl::StrCat(common::AsAbsl(path), " @", loc.Text(), ": record ", record);
}

std::string LabelsText(const Labels& labels) {
  if (labels.empty()) return "-";
  return absl::StrJoin(labels.begin(), labels.end(), ",");
}

std::string ShapeText(const ImageInfo& image) {
  return absl::StrCat(image.width, "x", image.height, "x", int{image.channels});
}

std::string EncodingText(const ImageInfo& image) {
  if (image.encoding == Encoding::kJpeg) return "jpeg";
  return absl::StrCat("raw/", std::string(LayoutName(image.layout)));
}

void AddKey(std::string_view key, Json* object) {
  (*object)["key"] = std::string(key);
  if (!common::IsValidUtf8(key)) {
    (*object)["key_hex"] = absl::BytesToHexString(common::AsAbsl(key));
  }
}

Json RecordJson(uint64_t index, const Record& record) {
  Json j;
  j["index"] = index;
  AddKey(record.key, &j);
  j["labels"] = Json::array();
  for (int64_t label : record.labels) j["labels"].push_back(label);
  j["encoding"] = std::string(EncodingName(record.image.encoding));
  j["layout"] = std::string(LayoutName(record.image.layout));
  j["width"] = record.image.width;
  j["height"] = record.image.height;
  j["channels"] = record.image.channels;
  j["bytes"] = record.payload.size();
  j["extra_bytes"] = record.extra.size();
  return j;
}

Json SchemaJson(const Schema& schema) {
  Json j;
  j["encoding"] = std::string(EncodingName(schema.image.encoding));
  j["layout"] = std::string(LayoutName(schema.image.layout));
  j["height"] = schema.image.height;
  j["width"] = schema.image.width;
  j["channels"] = schema.image.channels;
  j["labels"] = Json::array();
  for (const LabelField& field : schema.labels) {
    j["labels"].push_back({{"name", field.name}, {"classes", field.classes}});
  }
  return j;
}

std::string DumpJson(const Json& j, bool pretty) {
  return j.dump(pretty ? 2 : -1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

std::string AsciiJson(const Json& j) {
  return j.dump(-1, ' ', /*ensure_ascii=*/true, Json::error_handler_t::replace);
}

}  // namespace shardpack::dump
