// Demo data made on the spot: a small CIFAR-10-format file and a small
// ImageFolder of natural-looking JPEGs (smooth gradients, shapes, texture,
// not noise), for scripts/demo, the tests and the benchmarks.
#ifndef SHARDPACK_DATASETS_DEMO_H_
#define SHARDPACK_DATASETS_DEMO_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shardpack::datasets {

// Writes `records` CIFAR-10 records (label = i % 10, pixels drawn from the
// seed: a 32x32 RenderDemoScene of class `label`) to `path`, and
// batches.meta.txt with the ten CIFAR-10 class names beside it, one per line.
// Creates the parent folder; both files are written atomically.
absl::Status WriteDemoCifar10(const std::string& path, int records, uint64_t seed);

struct DemoImagesOptions {
  int classes = 4;
  int images_per_class = 25;
  int width = 500;   // ImageNet-like default size
  int height = 375;
  int quality = 90;
  uint64_t seed = 1;
};

// Writes root/class_XX/img_YYYY.JPEG files (more digits where more classes
// or images need them, so names sort in index order): deterministic for a
// seed, baseline 4:2:0 at `quality`, at the defaults about 108 KB each
// (80-140 KB), like ImageNet's photos. Uses up to 8 threads
// (hardware_concurrency); the bytes do not depend on the thread count.
// Creates root and the class folders.
absl::Status WriteDemoImageFolder(const std::string& root, const DemoImagesOptions& options);

// Renders the scene WriteDemoImageFolder encodes: a sky/ground gradient with
// a wavy horizon, soft-edged shaded ellipses and rectangles in the class's
// hue family, low-frequency lighting and 1/f-like value-noise texture.
// Writes width * height * 3 bytes of RGB HWC pixels to `rgb`. Deterministic
// for (width, height, class_index, seed); thread-safe.
void RenderDemoScene(int width, int height, int class_index, uint64_t seed, uint8_t* rgb);

// Fixtures for the CMYK cases (ImageNet holds ~22 CMYK JPEGs).
enum class CmykJpegKind {
  kAdobeCmyk,  // 4 components, Adobe APP14 marker with transform 0 (Photoshop's kind)
  kAdobeYcck,  // 4 components, Adobe APP14 marker with transform 2
  kPlainCmyk,  // 4 components, no Adobe marker
};

// Encodes width x height CMYK pixels (4 bytes each, in TurboJPEG's TJPF_CMYK
// order and convention: see transcode.h) as a 4-component JPEG of the given
// kind with libjpeg (libjpeg's default sampling: CMYK 4:4:4, YCCK with Y and
// K at full and Cb, Cr at half resolution). Decoding with TJPF_CMYK gives the
// samples back, up to JPEG's loss.
absl::StatusOr<std::vector<uint8_t>> EncodeCmykJpeg(const uint8_t* cmyk, int width, int height,
                                                    int quality, CmykJpegKind kind);

}  // namespace shardpack::datasets

#endif  // SHARDPACK_DATASETS_DEMO_H_
