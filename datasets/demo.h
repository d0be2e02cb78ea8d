// Demo data made on the spot: a small CIFAR-10-format file and a small
// ImageFolder of natural-looking JPEGs (smooth gradients, shapes, texture,
// not noise), for scripts/demo, the tests and the benchmarks.
#ifndef SHARDPACK_DATASETS_DEMO_H_
#define SHARDPACK_DATASETS_DEMO_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace shardpack::datasets {

// Writes `records` CIFAR-10 records (label = i % 10, pixels drawn from the
// seed) to `path`, and batches.meta.txt with the ten CIFAR-10 class names
// beside it.
absl::Status WriteDemoCifar10(const std::string& path, int records, uint64_t seed);

struct DemoImagesOptions {
  int classes = 4;
  int images_per_class = 25;
  int width = 500;   // ImageNet-like default size
  int height = 375;
  int quality = 90;
  uint64_t seed = 1;
};

// Writes root/class_XX/img_YYYY.JPEG files (deterministic for a seed).
absl::Status WriteDemoImageFolder(const std::string& root, const DemoImagesOptions& options);

}  // namespace shardpack::datasets

#endif  // SHARDPACK_DATASETS_DEMO_H_
