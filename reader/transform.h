// Sample transforms for raw-pixel records, writing each sample straight into
// its row of a batch slot.
//
// Augmentation parameters come from the counter-based generator keyed by
// (seed, epoch, record index), so a sample's output never depends on which
// thread made it or when.
#ifndef SHARDPACK_READER_TRANSFORM_H_
#define SHARDPACK_READER_TRANSFORM_H_

#include <array>
#include <cstdint>

#include "absl/status/statusor.h"
#include "shardpack/reader.h"
#include "shardpack/record.h"

namespace shardpack::internal {

struct OutputShape {
  int height = 0;
  int width = 0;
  int channels = 0;
  size_t sample_bytes = 0;  // bytes of one sample in the slot
};

class SampleTransform {
 public:
  // `stored` is the schema's image (raw, fixed shape). InvalidArgumentError
  // when the transform cannot apply (a crop larger than the padded image, a
  // dataset of varying shapes, JPEG payloads before decode support).
  static absl::StatusOr<SampleTransform> Make(const ReaderOptions& options,
                                              const ImageInfo& stored);

  const OutputShape& shape() const { return shape_; }

  // Writes the transformed sample into `dst` (shape().sample_bytes). The
  // record must have the stored shape; DataLossError otherwise. Thread-safe.
  absl::Status Apply(const Record& record, uint64_t epoch, uint64_t record_index,
                     uint8_t* dst) const;

 private:
  // Crop window top-left in padded coordinates, and the flip.
  struct Crop {
    int y = 0, x = 0;
    bool flip = false;
  };
  Crop Choose(uint64_t epoch, uint64_t record_index) const;
  // HWC uint8 crop of the stored image (with the on-the-fly zero padding)
  // into `dst`.
  void CropHwc(const uint8_t* src, Crop crop, uint8_t* dst) const;
  void CropChw(const uint8_t* src, Crop crop, uint8_t* dst) const;
  void Finish(const uint8_t* hwc, uint8_t* dst) const;

  Transform transform_;
  ImageInfo stored_;
  OutputLayout layout_ = OutputLayout::kNHWC;
  DType dtype_ = DType::kUint8;
  std::array<float, 3> scale_{}, bias_{};  // float = pixel * scale + bias
  uint64_t seed_ = 0;
  int pad_ = 0;       // zero padding added on the fly on each side
  int range_ = 0;     // crop offsets are drawn from [0, range_]
  int center_ = 0;    // crop offset used without augmentation
  OutputShape shape_;
};

}  // namespace shardpack::internal

#endif  // SHARDPACK_READER_TRANSFORM_H_
