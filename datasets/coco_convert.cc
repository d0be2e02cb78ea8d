#include "datasets/coco_convert.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/posix_open.h"
#include "common/status_macros.h"

namespace shardpack::datasets {
namespace {

Field Array(std::string name, ArrayDType dtype, std::vector<uint64_t> shape) {
  Field f;
  f.name = std::move(name);
  f.type = FieldType::kArray;
  f.dtype = dtype;
  f.shape = std::move(shape);
  return f;
}

template <typename T>
ByteSpan BytesOf(const std::vector<T>& v, uint64_t first, uint64_t n, size_t per) {
  return ByteSpan(reinterpret_cast<const uint8_t*>(v.data() + first * per), n * per * sizeof(T));
}

}  // namespace

std::vector<Field> CocoFields(const CocoIndex& coco) {
  std::vector<Field> fields;
  Field image;
  image.name = "image";
  image.type = FieldType::kImage;
  image.image.encoding = Encoding::kJpeg;
  fields.push_back(std::move(image));
  fields.push_back(Array("boxes", ArrayDType::kF32, {0, 4}));
  fields.push_back(Array("category_ids", ArrayDType::kI32, {0}));
  fields.back().classes = coco.categories;
  fields.push_back(Array("iscrowd", ArrayDType::kU8, {0}));
  Field id;
  id.name = "image_id";
  id.type = FieldType::kLabel;
  fields.push_back(std::move(id));
  return fields;
}

absl::Status ConvertCoco(const CocoIndex& coco, const std::string& image_dir,
                         const ImageConverterOptions& images, Writer* writer, CocoStats* stats,
                         const std::function<void(const CocoStats&)>& progress) {
  SP_ASSIGN_OR_RETURN(std::unique_ptr<ImageConverter> converter, ImageConverter::Create(images));
  const std::vector<Field>& fields = writer->fields();
  std::vector<FieldValue> values(fields.size());
  std::vector<uint8_t> file, storage;
  std::string path;
  for (const CocoImage& im : coco.images) {
    path.assign(image_dir).append("/").append(im.file_name);
    absl::Status read = common::ReadInputFile(path, &file);
    absl::StatusOr<FieldValue> image =
        read.ok() ? converter->FromFile(fields[0], file, &storage) : absl::StatusOr<FieldValue>(read);
    if (image.ok() && (image->image.width != im.width || image->image.height != im.height)) {
      image = absl::InvalidArgumentError(absl::StrCat(
          path, ": a ", image->image.width, "x", image->image.height, " image, the annotations say ",
          im.width, "x", im.height));
    }
    if (!image.ok()) {
      SP_RETURN_IF_ERROR(writer->Reject(im.file_name, image.status()));
      continue;
    }
    values[0] = *image;
    for (size_t f = 1; f < values.size(); ++f) {
      values[f] = FieldValue{};
      values[f].present = true;
    }
    values[1].bytes = BytesOf(coco.boxes, im.first_box, im.num_boxes, 4);
    values[2].bytes = BytesOf(coco.box_category, im.first_box, im.num_boxes, 1);
    values[3].bytes = BytesOf(coco.box_crowd, im.first_box, im.num_boxes, 1);
    values[4].label = im.id;
    SP_RETURN_IF_ERROR(writer->Write(im.file_name, values));
    ++stats->images;
    stats->bytes += file.size();
    if (progress) progress(*stats);
  }
  return absl::OkStatus();
}

}  // namespace shardpack::datasets
