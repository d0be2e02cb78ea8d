// JPEG decode benchmark of docs/benchmarks.md ("JPEG decode (issue 6)"):
// images/s of the reader's RandomResizedCrop (or CenterCrop) on a packed
// dataset of JPEGs, and, for reference, libjpeg-turbo's full-size decode
// rate (a loop of tjDecompress2 to RGB) on the same files held in memory,
// with the same number of threads. Prints one JSON object.
//
//   jpeg_bench reader DATASET [--threads N] [--epochs E] [--transform rrc:224]
//   jpeg_bench tj IMAGE_ROOT [--threads N] [--epochs E]
//
// The reader's first epoch (the dataset read from storage) is a warm-up and
// not timed; so is the tj mode's file loading.
#include <turbojpeg.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "shardpack/reader.h"

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int RunReader(const std::string& path, int threads, int epochs, const std::string& transform) {
  shardpack::ReaderOptions o;
  o.path = path;
  o.batch_size = 256;
  o.threads = threads;
  o.rank = 0;
  o.world_size = 1;
  o.remainder = shardpack::Remainder::kPartial;
  absl::StatusOr<shardpack::Transform> t = shardpack::ParseTransform(transform);
  if (!t.ok()) {
    std::fprintf(stderr, "jpeg_bench: %s\n", std::string(t.status().message()).c_str());
    return 1;
  }
  o.transform = *t;
  auto reader = shardpack::Reader::Open(o);
  if (!reader.ok()) {
    std::fprintf(stderr, "jpeg_bench: %s\n", std::string(reader.status().message()).c_str());
    return 1;
  }
  uint64_t samples = 0;
  double start = 0;
  for (int e = 0; e <= epochs; ++e) {
    if (e == 1) start = Now();  // epoch 0 is the warm-up
    for (;;) {
      absl::StatusOr<shardpack::Batch> b = (*reader)->Next();
      if (absl::IsOutOfRange(b.status())) break;
      if (!b.ok()) {
        std::fprintf(stderr, "jpeg_bench: %s\n", std::string(b.status().message()).c_str());
        return 1;
      }
      if (e > 0) samples += static_cast<uint64_t>(b->size());
    }
  }
  const double seconds = Now() - start;
  std::printf("{\"mode\": \"reader\", \"transform\": \"%s\", \"threads\": %d, \"images\": %llu, "
              "\"seconds\": %.3f, \"images_per_s\": %.1f}\n",
              transform.c_str(), threads, static_cast<unsigned long long>(samples), seconds,
              samples / seconds);
  return 0;
}

std::vector<std::string> LoadJpegs(const std::string& root) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    files.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return files;
}

int RunTj(const std::string& root, int threads, int epochs) {
  const std::vector<std::string> files = LoadJpegs(root);
  std::atomic<uint64_t> decoded{0}, failed{0};
  const double start = Now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      tjhandle tj = tjInitDecompress();
      std::vector<unsigned char> rgb;
      for (int e = 0; e < epochs; ++e) {
        for (size_t i = static_cast<size_t>(t); i < files.size(); i += static_cast<size_t>(threads)) {
          const auto* data = reinterpret_cast<const unsigned char*>(files[i].data());
          int w = 0, h = 0, sub = 0, cs = 0;
          if (tjDecompressHeader3(tj, data, files[i].size(), &w, &h, &sub, &cs) != 0) {
            failed.fetch_add(1);
            continue;
          }
          rgb.resize(static_cast<size_t>(w) * h * 3);
          if (tjDecompress2(tj, data, files[i].size(), rgb.data(), w, 0, h, TJPF_RGB, 0) != 0) {
            failed.fetch_add(1);
          }
          decoded.fetch_add(1, std::memory_order_relaxed);
        }
      }
      tjDestroy(tj);
    });
  }
  for (std::thread& th : pool) th.join();
  const double seconds = Now() - start;
  std::printf("{\"mode\": \"tj\", \"threads\": %d, \"images\": %llu, \"failed\": %llu, "
              "\"seconds\": %.3f, \"images_per_s\": %.1f}\n",
              threads, static_cast<unsigned long long>(decoded.load()),
              static_cast<unsigned long long>(failed.load()), seconds, decoded.load() / seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: jpeg_bench reader|tj PATH [--threads N] [--epochs E] "
                         "[--transform T]\n");
    return 2;
  }
  const std::string mode = argv[1], path = argv[2];
  int threads = 1, epochs = 3;
  std::string transform = "rrc:224";
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--threads") {
      threads = std::atoi(argv[i + 1]);
    } else if (flag == "--epochs") {
      epochs = std::atoi(argv[i + 1]);
    } else if (flag == "--transform") {
      transform = argv[i + 1];
    } else {
      std::fprintf(stderr, "jpeg_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (threads < 1 || epochs < 1) return 2;
  return mode == "reader" ? RunReader(path, threads, epochs, transform) : RunTj(path, threads, epochs);
}
