// make_demo_data OUT_DIR [--images-per-class N] [--classes C]
//                        [--cifar-records R] [--seed S]
//                        [--width W] [--height H] [--quality Q]
//
// Writes OUT_DIR/cifar/data_batch_1.bin (+ batches.meta.txt) and
// OUT_DIR/images/class_XX/img_YYYY.JPEG: the demo data of scripts/demo, the
// tests and the benchmarks. Defaults are small: 4 classes x 25 images,
// 1000 CIFAR records, seed 1. --cifar-records 0 or --images-per-class 0
// skips that part.
#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/strings/numbers.h"
#include "datasets/demo.h"

namespace {

constexpr char kUsage[] =
    "usage: make_demo_data OUT_DIR [--images-per-class N] [--classes C]\n"
    "                      [--cifar-records R] [--seed S] [--width W]\n"
    "                      [--height H] [--quality Q]\n";

int Usage(const std::string& message) {
  std::fprintf(stderr, "make_demo_data: %s\n%s", message.c_str(), kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using shardpack::datasets::DemoImagesOptions;
  std::string out_dir;
  DemoImagesOptions images;
  int cifar_records = 1000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg.rfind("--", 0) != 0) {
      if (!out_dir.empty()) return Usage("more than one OUT_DIR");
      out_dir = arg;
      continue;
    }
    if (i + 1 >= argc) return Usage("missing value for " + arg);
    const char* value = argv[++i];
    int n = 0;
    uint64_t seed = 0;
    const bool is_int = absl::SimpleAtoi(value, &n) && n >= 0;
    if (arg == "--seed" && absl::SimpleAtoi(value, &seed)) {
      images.seed = seed;
    } else if (arg == "--seed" || !is_int) {
      return Usage("bad value for " + arg + ": " + value);
    } else if (arg == "--images-per-class") {
      images.images_per_class = n;
    } else if (arg == "--classes") {
      images.classes = n;
    } else if (arg == "--cifar-records") {
      cifar_records = n;
    } else if (arg == "--width") {
      images.width = n;
    } else if (arg == "--height") {
      images.height = n;
    } else if (arg == "--quality") {
      images.quality = n;
    } else {
      return Usage("unknown option " + arg);
    }
  }
  if (out_dir.empty()) return Usage("OUT_DIR is required");
  if (cifar_records > 0) {
    absl::Status s = shardpack::datasets::WriteDemoCifar10(out_dir + "/cifar/data_batch_1.bin",
                                                           cifar_records, images.seed);
    if (!s.ok()) {
      std::fprintf(stderr, "make_demo_data: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  if (images.images_per_class > 0) {
    absl::Status s = shardpack::datasets::WriteDemoImageFolder(out_dir + "/images", images);
    if (!s.ok()) {
      std::fprintf(stderr, "make_demo_data: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "make_demo_data: wrote %d CIFAR records and %d images under %s\n",
               cifar_records, images.classes * images.images_per_class, out_dir.c_str());
  return 0;
}
