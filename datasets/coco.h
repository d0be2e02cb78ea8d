// COCO-style detection annotations (an instances JSON, as COCO 2017's
// instances_train2017.json): per image its file, size, boxes and their
// categories, checked, ready to become records of fields.
#ifndef SHARDPACK_DATASETS_COCO_H_
#define SHARDPACK_DATASETS_COCO_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/source.h"

namespace shardpack::datasets {

struct CocoImage {
  std::string file_name;  // relative to the image folder
  int64_t id = 0;
  uint32_t width = 0;
  uint32_t height = 0;
  // Its boxes are boxes[first_box, first_box + num_boxes) of CocoIndex.
  uint64_t first_box = 0;
  uint64_t num_boxes = 0;
};

struct CocoIndex {
  // Category names, in ascending order of their COCO id; a box's category
  // is an index into them (COCO's ids are sparse: 1..90 for 80 classes).
  std::vector<std::string> categories;
  std::vector<int64_t> category_ids;  // the COCO id of each
  // Images in the order of the file's "images" list.
  std::vector<CocoImage> images;
  // Per box, grouped by image in the order of "annotations": x0, y0, x1,
  // y1 in pixels (COCO's [x, y, width, height] made corners).
  std::vector<float> boxes;
  std::vector<int32_t> box_category;  // index into categories
  std::vector<uint8_t> box_crowd;     // iscrowd
};

// The annotations of `text`, read from `name`. The text is parsed with the
// bounds every JSON of ours gets (format/json_text.h), its "images" and
// "annotations" lists streamed, so that a file of 860,000 annotations costs
// what is kept of them (~40 bytes a box), not a DOM.
//
// Checked, DataLossError naming the file and the image or annotation:
// "images" entries have a string file_name (relative, no ".." part), an
// integer id (unique), a positive width and height; "categories" entries an
// integer id (unique) and a string name; "annotations" entries an image_id
// and a category_id that exist and a bbox of 4 finite numbers, width and
// height not negative. A box that leaves its image by more than one pixel
// is bad input: with OnError::kFail the error, with kSkip the image is left
// out and listed in `skipped`. A box that overshoots by at most a pixel
// (COCO's own annotations do, by rounding) is clamped into the image.
absl::StatusOr<CocoIndex> ParseCoco(std::string_view text, std::string_view name,
                                    OnError on_error, std::vector<Skipped>* skipped);

}  // namespace shardpack::datasets

#endif  // SHARDPACK_DATASETS_COCO_H_
