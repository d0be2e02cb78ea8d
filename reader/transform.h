// Sample transforms, writing each sample straight into its row of a batch
// slot: crops and flips of raw-pixel records, and for JPEG records a
// DCT-scaled, region-only decode (codec/jpeg_decoder.h) and an antialiased
// resize (RandomResizedCrop, CenterCrop).
//
// Augmentation parameters come from the counter-based generator keyed by
// (seed, epoch, record index), so a sample's output never depends on which
// thread made it or when.
#ifndef SHARDPACK_READER_TRANSFORM_H_
#define SHARDPACK_READER_TRANSFORM_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "codec/jpeg_decoder.h"
#include "codec/resize.h"
#include "shardpack/reader.h"
#include "shardpack/record.h"

namespace shardpack::reader {

// A crop of a JPEG image in full-size pixel coordinates.
struct JpegCrop {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool flip = false;
  bool fallback = false;  // RandomResizedCrop: no attempt fitted
};

// torchvision's RandomResizedCrop.get_params on a width x height image with
// the draws of (seed, kStreamAugment, epoch, record_index): attempt k (0..9)
// takes its area fraction ~ U(scale) and log aspect ratio ~ U(log ratio)
// from Draw(base, k, 0), and its position from Draw(base, k, 1) and
// Draw(base, k, 2); the flip is the top bit of `base`. Integer box.
JpegCrop SampleRandomResizedCrop(uint32_t width, uint32_t height, const Transform& t,
                                 uint64_t seed, uint64_t epoch, uint64_t record_index);

// The box of Resize(floor(size * 256 / 224)) + CenterCrop(size) in the
// image's coordinates (fractional): torchvision's sizes and offsets.
JpegCrop CenterCropBox(uint32_t width, uint32_t height, int size);

// Where a sample's transformed image came from (Batch::crops): the crop
// window in the source image's pixels (y, x, h, w; fractional for center
// crops, reaching past the edges for CIFAR's padding), the source's size and
// whether the output was mirrored after the crop and resize.
struct CropWindow {
  float y = 0, x = 0, h = 0, w = 0;
  int32_t height = 0, width = 0;
  bool flip = false;
};

// An image to transform: a record's payload or an image field's value
// (views, valid for the call).
struct SourceImage {
  ImageInfo image;
  ByteSpan bytes;
  std::string_view key;       // for messages
  uint64_t record_index = 0;  // for messages and the augmentation's draws
};

// How a raw image is resized by RandomResizedCrop and CenterCrop.
enum class Interpolation {
  kLinear,   // antialiased bilinear (codec/resize.h), as JPEGs are
  kNearest,  // each output pixel a source pixel: label maps keep their values
};

// The window of crop box `c` of a width x height image.
CropWindow WindowOf(const JpegCrop& c, uint32_t width, uint32_t height);

struct OutputShape {
  int height = 0;
  int width = 0;
  int channels = 0;
  size_t sample_bytes = 0;  // bytes of one sample in the slot
};

// A worker's own work memory for SampleTransform::Apply: the JPEG decoder
// (made on the worker's first JPEG, then kept: its Huffman lookups serve the
// next images), the resize's scratch and one sample's staging for outputs
// not written in place. It grows to the largest sample; after that nothing
// of ours is allocated per image. Not thread-safe: one per worker, owned by
// it (reader/batch_builder.h).
struct TransformScratch {
  std::unique_ptr<codec::JpegDecoder> decoder;  // null until the first JPEG
  codec::ResizeScratch resize;
  std::vector<uint8_t> staging;
  std::vector<uint32_t> columns;  // kNearest: each output column's source byte offset
};

class SampleTransform {
 public:
  // `stored` is the schema's image (raw of a fixed shape, or JPEG; raw HWC
  // of any shape for RandomResizedCrop and CenterCrop, resized with
  // `interpolation`). InvalidArgumentError when the transform cannot apply
  // (a crop larger than the padded image, raw images of varying shapes for
  // a raw-pixel transform, a JPEG dataset with a raw-pixel transform).
  static absl::StatusOr<SampleTransform> Make(const ReaderOptions& options,
                                              const ImageInfo& stored,
                                              Interpolation interpolation = Interpolation::kLinear);

  const OutputShape& shape() const { return shape_; }

  // Writes the transformed image into `dst` (shape().sample_bytes) and,
  // unless `window` is null, where it came from. A raw image must have the
  // stored shape (RandomResizedCrop and CenterCrop: the stored channels), a
  // JPEG must decode; DataLossError naming the record otherwise.
  // Thread-safe for calls with different `scratch`es: the calling worker's
  // own work memory. `ahead`, which may be empty: a later sample's bytes to
  // bring into the cache meanwhile. The raw crops spread those prefetches
  // over their rows (reader/prefetch.h); the other paths issue them first.
  // With `follow`, the crop and flip are not drawn: they are `follow`'s,
  // a window of another image of the sample, scaled to this image's size
  // (an image field that follows the first: docs/reader.md, "Fields in
  // batches").
  absl::Status Apply(const SourceImage& src, uint64_t epoch, uint8_t* dst,
                     TransformScratch& scratch, ByteSpan ahead = {},
                     const CropWindow* follow = nullptr, CropWindow* window = nullptr) const;

 private:
  // Crop window top-left in padded coordinates, and the flip.
  struct Crop {
    int y = 0, x = 0;
    bool flip = false;
  };
  Crop Choose(uint64_t epoch, uint64_t record_index) const;
  // The crop box of a RandomResizedCrop or CenterCrop of a width x height
  // image: drawn, or `follow`'s scaled.
  JpegCrop BoxFor(uint32_t width, uint32_t height, uint64_t epoch, uint64_t record_index,
                  const CropWindow* follow) const;
  // HWC uint8 crop of the stored image (with the on-the-fly zero padding)
  // into `dst`, prefetching `ahead` a share a row.
  void CropHwc(const uint8_t* src, Crop crop, uint8_t* dst, ByteSpan ahead) const;
  void CropChw(const uint8_t* src, Crop crop, uint8_t* dst, ByteSpan ahead) const;
  void Finish(const uint8_t* hwc, uint8_t* dst) const;
  absl::Status ApplyJpeg(const SourceImage& src, uint64_t epoch, uint8_t* dst,
                         TransformScratch& scratch, const CropWindow* follow,
                         CropWindow* window) const;
  // RandomResizedCrop and CenterCrop of a raw HWC image of any size
  // (reader/transform_raw.cc).
  absl::Status ApplyRawResize(const SourceImage& src, uint64_t epoch, uint8_t* dst,
                              TransformScratch& scratch, const CropWindow* follow,
                              CropWindow* window) const;
  // DataLossError "record N ('KEY')" followed by `what` (": ...", " is ...").
  static absl::Status Damaged(const SourceImage& src, absl::string_view what);

  Transform transform_;
  ImageInfo stored_;
  OutputLayout layout_ = OutputLayout::kNHWC;
  DType dtype_ = DType::kUint8;
  std::array<float, 3> scale_{}, bias_{};  // float = pixel * scale + bias
  uint64_t seed_ = 0;
  int pad_ = 0;       // zero padding added on the fly on each side
  int range_ = 0;     // crop offsets are drawn from [0, range_]
  int center_ = 0;    // crop offset used without augmentation
  Interpolation interpolation_ = Interpolation::kLinear;
  OutputShape shape_;
};

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_TRANSFORM_H_
