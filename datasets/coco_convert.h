// COCO-style detection (an instances JSON and its image folder) converted
// into a dataset of fields, written through a Writer. `shardpack coco` runs
// it. A record a COCO image, in the order of the file's "images":
//   image         "jpeg" (the file as it is; other formats converted)
//   boxes         f32[n,4]: x0, y0, x1, y1 in pixels, one row a box
//   category_ids  i32[n] with the category names as classes: indices into
//                 the categories sorted by COCO id (COCO's 1..90 become 0..79)
//   iscrowd       u8[n]
//   image_id      label: COCO's image id
// under the key file_name.
#ifndef SHARDPACK_DATASETS_COCO_CONVERT_H_
#define SHARDPACK_DATASETS_COCO_CONVERT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "datasets/coco.h"
#include "shardpack/fields.h"
#include "shardpack/writer.h"

namespace shardpack::datasets {

// The fields above, the category names from `coco`.
std::vector<Field> CocoFields(const CocoIndex& coco);

struct CocoStats {
  uint64_t images = 0;
  uint64_t bytes = 0;  // of image files read
};

// Writes every image of `coco` (files under `image_dir`) through `writer`
// (made with CocoFields). An image file that cannot be read, does not
// decode, or whose size is not the annotations' is a bad sample naming the
// file (Writer::Reject: the error, or skipped and listed with
// OnError::kSkip). `progress` (may be empty) is called after each image.
absl::Status ConvertCoco(const CocoIndex& coco, const std::string& image_dir,
                         const ImageConverterOptions& images, Writer* writer, CocoStats* stats,
                         const std::function<void(const CocoStats&)>& progress);

}  // namespace shardpack::datasets

#endif  // SHARDPACK_DATASETS_COCO_CONVERT_H_
