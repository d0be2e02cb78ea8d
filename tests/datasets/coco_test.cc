// COCO instances files made here: boxes grouped by image in annotation
// order, sparse category ids made indices, and every kind of bad entry told
// with the file and the image or annotation.
#include "datasets/coco.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace shardpack::datasets {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::StatusIs;

// Annotations before images, as a file may order its keys.
constexpr char kCoco[] = R"({
  "info": {"year": 2017},
  "annotations": [
    {"id": 10, "image_id": 2, "category_id": 18, "bbox": [1, 2, 3, 4], "iscrowd": 0,
     "segmentation": [[1, 2, 3, 4, 5, 6]]},
    {"id": 11, "image_id": 1, "category_id": 1, "bbox": [0.5, 0, 10, 20], "iscrowd": 1},
    {"id": 12, "image_id": 2, "category_id": 1, "bbox": [-0.5, 0, 640.9, 480], "iscrowd": 0}
  ],
  "images": [
    {"id": 1, "file_name": "000000000001.jpg", "width": 100, "height": 50},
    {"id": 2, "file_name": "sub/000000000002.jpg", "width": 640, "height": 480},
    {"id": 3, "file_name": "000000000003.jpg", "width": 8, "height": 8}
  ],
  "categories": [{"id": 18, "name": "dog"}, {"id": 1, "name": "person"}]
})";

TEST(CocoTest, BoxesAreGroupedByImageAndCategoriesMadeIndices) {
  std::vector<Skipped> skipped;
  SP_ASSERT_OK_AND_ASSIGN(CocoIndex coco, ParseCoco(kCoco, "instances.json", OnError::kFail, &skipped));
  EXPECT_THAT(coco.categories, ElementsAre("person", "dog"));
  EXPECT_THAT(coco.category_ids, ElementsAre(1, 18));
  ASSERT_EQ(coco.images.size(), 3u);
  EXPECT_EQ(coco.images[1].file_name, "sub/000000000002.jpg");
  EXPECT_EQ(coco.images[0].num_boxes, 1u);
  EXPECT_EQ(coco.images[1].num_boxes, 2u);
  EXPECT_EQ(coco.images[2].num_boxes, 0u);
  // Image 1's box, then image 2's two in annotation order; corners, the
  // overshooting one clamped into its 640x480 image.
  EXPECT_THAT(coco.boxes, ElementsAre(0.5f, 0.f, 10.5f, 20.f, 1.f, 2.f, 4.f, 6.f, 0.f, 0.f, 640.f, 480.f));
  EXPECT_THAT(coco.box_category, ElementsAre(0, 1, 0));
  EXPECT_THAT(coco.box_crowd, ElementsAre(1, 0, 0));
  EXPECT_TRUE(skipped.empty());
}

TEST(CocoTest, ABoxOutsideItsImageFailsOrSkipsTheImage) {
  std::string text = kCoco;
  text.replace(text.find("[1, 2, 3, 4]"), 12, "[600, 2, 300, 4]");
  std::vector<Skipped> skipped;
  EXPECT_THAT(ParseCoco(text, "instances.json", OnError::kFail, &skipped).status(),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("instances.json: annotation 10 of image 2 "
                                 "('sub/000000000002.jpg'): box [600, 2, 300, 4] leaves the "
                                 "640x480 image")));
  SP_ASSERT_OK_AND_ASSIGN(CocoIndex coco, ParseCoco(text, "instances.json", OnError::kSkip, &skipped));
  ASSERT_EQ(coco.images.size(), 2u);
  EXPECT_EQ(coco.images[1].file_name, "000000000003.jpg");
  EXPECT_THAT(coco.boxes, ElementsAre(0.5f, 0.f, 10.5f, 20.f));
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].path, "sub/000000000002.jpg");
}

TEST(CocoTest, BadEntriesAreDamageNamingWhere) {
  auto fails = [](std::string from, std::string to) {
    std::string text = kCoco;
    size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    std::vector<Skipped> skipped;
    return ParseCoco(text, "i.json", OnError::kSkip, &skipped).status();
  };
  EXPECT_THAT(fails("\"image_id\": 2, \"category_id\": 18", "\"image_id\": 7, \"category_id\": 18"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("i.json: annotation 10: image_id 7 is no image's")));
  EXPECT_THAT(fails("\"category_id\": 18", "\"category_id\": 5"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("category_id 5 is no category's")));
  EXPECT_THAT(fails("\"id\": 3,", "\"id\": 2,"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("images[2]: image id 2 given twice")));
  EXPECT_THAT(fails("000000000003.jpg", "../000000000003.jpg"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("leaves the image folder")));
  EXPECT_THAT(fails("[1, 2, 3, 4]", "[1, 2, -3, 4]"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("annotations[0]: bbox of a negative")));
  EXPECT_THAT(fails("[1, 2, 3, 4]", "[1, 2, 3]"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("bbox is missing or not 4 numbers")));
  EXPECT_THAT(fails("\"width\": 8", "\"width\": 0"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("images[2]: a 0x8 image")));
  EXPECT_THAT(fails("{\"id\": 18, \"name\": \"dog\"}", "{\"id\": 1, \"name\": \"dog\"}"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("category id 1 given twice")));
  EXPECT_THAT(fails("\"file_name\": \"000000000001.jpg\"", "\"file_name\": 1"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("images[0]: file_name is missing")));
  EXPECT_THAT(fails("\"info\"", "\"info\" [ "),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("i.json:2:")));
}

}  // namespace
}  // namespace shardpack::datasets
