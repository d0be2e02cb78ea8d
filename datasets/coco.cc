#include "datasets/coco.h"

#include <cmath>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "format/json_text.h"

namespace shardpack::datasets {
namespace {

using common::AsAbsl;
using common::Excerpt;
using Json = nlohmann::ordered_json;

// COCO 2017's train annotations are 448 MB of text; an annotation's
// segmentation (a polygon, or a crowd's run lengths) may hold ~10^5
// numbers, and a compressed RLE string is long.
constexpr format::JsonLimits kCocoLimits = {.what = "a COCO annotation file",
                                            .max_bytes = uint64_t{4} << 30,
                                            .max_depth = format::kMaxJsonNesting,
                                            .max_string_bytes = uint64_t{16} << 20,
                                            .max_values = uint64_t{1} << 22};
// How far a box may overshoot its image and be clamped back (rounding).
constexpr double kOvershoot = 1.0;

struct RawBox {
  int64_t image_id = 0;
  int64_t category_id = 0;
  int64_t id = 0;  // the annotation's, for messages
  double x = 0, y = 0, w = 0, h = 0;
  uint8_t crowd = 0;
};

class Parser {
 public:
  explicit Parser(std::string_view name) : name_(name) {}

  absl::Status Bad(std::string_view where, std::string_view what) const {
    return absl::DataLossError(absl::StrCat(AsAbsl(name_), ": ", AsAbsl(where), ": ", AsAbsl(what)));
  }

  absl::StatusOr<int64_t> Integer(const Json& j, std::string_view key, std::string_view where) const {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) {
      return Bad(where, absl::StrCat(AsAbsl(key), " is missing or not an integer"));
    }
    return it->get<int64_t>();
  }

  absl::Status Image(uint64_t i, const Json& j) {
    const std::string where = absl::StrCat("images[", i, "]");
    if (!j.is_object()) return Bad(where, "not an object");
    CocoImage image;
    auto file = j.find("file_name");
    if (file == j.end() || !file->is_string()) return Bad(where, "file_name is missing or not a string");
    image.file_name = file->get<std::string>();
    if (!InsideFolder(image.file_name)) {
      return Bad(where, absl::StrCat("file_name '", Excerpt(image.file_name),
                                     "' leaves the image folder"));
    }
    SP_ASSIGN_OR_RETURN(image.id, Integer(j, "id", where));
    SP_ASSIGN_OR_RETURN(int64_t width, Integer(j, "width", where));
    SP_ASSIGN_OR_RETURN(int64_t height, Integer(j, "height", where));
    if (width <= 0 || height <= 0 || width > 65500 || height > 65500) {
      return Bad(where, absl::StrCat("a ", width, "x", height, " image"));
    }
    image.width = static_cast<uint32_t>(width);
    image.height = static_cast<uint32_t>(height);
    if (!image_of_.emplace(image.id, images_.size()).second) {
      return Bad(where, absl::StrCat("image id ", image.id, " given twice"));
    }
    images_.push_back(std::move(image));
    return absl::OkStatus();
  }

  absl::Status Annotation(uint64_t i, const Json& j) {
    const std::string where = absl::StrCat("annotations[", i, "]");
    if (!j.is_object()) return Bad(where, "not an object");
    RawBox b;
    SP_ASSIGN_OR_RETURN(b.image_id, Integer(j, "image_id", where));
    SP_ASSIGN_OR_RETURN(b.category_id, Integer(j, "category_id", where));
    auto id = j.find("id");
    b.id = id != j.end() && id->is_number_integer() ? id->get<int64_t>() : static_cast<int64_t>(i);
    auto bbox = j.find("bbox");
    if (bbox == j.end() || !bbox->is_array() || bbox->size() != 4) {
      return Bad(where, "bbox is missing or not 4 numbers");
    }
    double v[4];
    for (int k = 0; k < 4; ++k) {
      const Json& n = (*bbox)[static_cast<size_t>(k)];
      if (!n.is_number() || !std::isfinite(n.get<double>())) {
        return Bad(where, "bbox is not 4 finite numbers");
      }
      v[k] = n.get<double>();
    }
    if (v[2] < 0 || v[3] < 0) return Bad(where, "bbox of a negative width or height");
    b.x = v[0], b.y = v[1], b.w = v[2], b.h = v[3];
    auto crowd = j.find("iscrowd");
    b.crowd = crowd != j.end() && crowd->is_number_integer() && crowd->get<int64_t>() != 0;
    boxes_.push_back(b);
    return absl::OkStatus();
  }

  absl::Status Categories(const Json& root, CocoIndex* out) const {
    auto it = root.find("categories");
    if (it == root.end() || !it->is_array()) return Bad("categories", "missing or not a list");
    std::vector<std::pair<int64_t, std::string>> sorted;
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& c = (*it)[i];
      const std::string where = absl::StrCat("categories[", i, "]");
      if (!c.is_object()) return Bad(where, "not an object");
      SP_ASSIGN_OR_RETURN(int64_t id, Integer(c, "id", where));
      auto name = c.find("name");
      if (name == c.end() || !name->is_string()) return Bad(where, "name is missing or not a string");
      sorted.emplace_back(id, name->get<std::string>());
    }
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) {
      if (i > 0 && sorted[i].first == sorted[i - 1].first) {
        return Bad("categories", absl::StrCat("category id ", sorted[i].first, " given twice"));
      }
      out->category_ids.push_back(sorted[i].first);
      out->categories.push_back(std::move(sorted[i].second));
    }
    return absl::OkStatus();
  }

  // Boxes checked and grouped by image; images whose boxes leave them
  // dropped (skip) or the error (fail).
  absl::Status Finish(OnError on_error, std::vector<Skipped>* skipped, CocoIndex* out) {
    absl::flat_hash_map<int64_t, int32_t> category_of;
    for (size_t c = 0; c < out->category_ids.size(); ++c) {
      category_of[out->category_ids[c]] = static_cast<int32_t>(c);
    }
    std::vector<uint64_t> image(boxes_.size());
    std::vector<uint8_t> bad(images_.size(), 0);
    std::vector<uint64_t> count(images_.size() + 1, 0);
    for (size_t i = 0; i < boxes_.size(); ++i) {
      RawBox& b = boxes_[i];
      const std::string where = absl::StrCat("annotation ", b.id);
      auto img = image_of_.find(b.image_id);
      if (img == image_of_.end()) return Bad(where, absl::StrCat("image_id ", b.image_id, " is no image's"));
      if (!category_of.contains(b.category_id)) {
        return Bad(where, absl::StrCat("category_id ", b.category_id, " is no category's"));
      }
      image[i] = img->second;
      const CocoImage& im = images_[img->second];
      if (b.x < -kOvershoot || b.y < -kOvershoot || b.x + b.w > im.width + kOvershoot ||
          b.y + b.h > im.height + kOvershoot) {
        std::string what = absl::StrCat(AsAbsl(name_), ": ", where, " of image ", im.id, " ('",
                                        Excerpt(im.file_name), "'): box [", b.x, ", ", b.y, ", ",
                                        b.w, ", ", b.h, "] leaves the ", im.width, "x", im.height,
                                        " image");
        if (on_error == OnError::kFail) return absl::DataLossError(what);
        if (!bad[img->second]) skipped->push_back({im.file_name, what});
        bad[img->second] = 1;
      }
      ++count[img->second + 1];
    }
    std::vector<uint64_t> at(images_.size() + 1, 0);  // first box of each image, kept ones only
    for (size_t k = 0; k < images_.size(); ++k) at[k + 1] = at[k] + (bad[k] ? 0 : count[k + 1]);
    out->boxes.resize(4 * at.back());
    out->box_category.resize(at.back());
    out->box_crowd.resize(at.back());
    std::vector<uint64_t> next(at.begin(), at.end() - 1);
    for (size_t i = 0; i < boxes_.size(); ++i) {
      const uint64_t k = image[i];
      if (bad[k]) continue;
      const RawBox& b = boxes_[i];
      const CocoImage& im = images_[k];
      const uint64_t j = next[k]++;
      auto clamp = [](double v, uint32_t hi) {
        return static_cast<float>(std::min<double>(std::max(v, 0.0), hi));
      };
      out->boxes[4 * j + 0] = clamp(b.x, im.width);
      out->boxes[4 * j + 1] = clamp(b.y, im.height);
      out->boxes[4 * j + 2] = clamp(b.x + b.w, im.width);
      out->boxes[4 * j + 3] = clamp(b.y + b.h, im.height);
      out->box_category[j] = category_of[b.category_id];
      out->box_crowd[j] = b.crowd;
    }
    for (size_t k = 0; k < images_.size(); ++k) {
      if (bad[k]) continue;
      images_[k].first_box = at[k];
      images_[k].num_boxes = at[k + 1] - at[k];
      out->images.push_back(std::move(images_[k]));
    }
    return absl::OkStatus();
  }

 private:
  static bool InsideFolder(std::string_view path) {
    if (path.empty() || path.front() == '/' || path.find('\0') != std::string_view::npos) return false;
    for (absl::string_view part : absl::StrSplit(AsAbsl(path), '/')) {
      if (part == "..") return false;
    }
    return true;
  }

  std::string_view name_;
  std::vector<CocoImage> images_;
  absl::flat_hash_map<int64_t, uint64_t> image_of_;
  std::vector<RawBox> boxes_;
};

}  // namespace

absl::StatusOr<CocoIndex> ParseCoco(std::string_view text, std::string_view name,
                                    OnError on_error, std::vector<Skipped>* skipped) {
  Parser parser(name);
  auto image = [&parser](uint64_t i, const Json& j) { return parser.Image(i, j); };
  auto annotation = [&parser](uint64_t i, const Json& j) { return parser.Annotation(i, j); };
  const format::JsonStream streams[] = {{"images", uint64_t{1} << 26, image},
                                        {"annotations", uint64_t{1} << 30, annotation}};
  SP_ASSIGN_OR_RETURN(const Json root, format::ParseJsonText(text, name, kCocoLimits, streams));
  if (!root.is_object()) return parser.Bad("top level", "not a JSON object");
  if (!root.contains("images")) return parser.Bad("images", "missing");
  CocoIndex out;
  SP_RETURN_IF_ERROR(parser.Categories(root, &out));
  SP_RETURN_IF_ERROR(parser.Finish(on_error, skipped, &out));
  return out;
}

}  // namespace shardpack::datasets
