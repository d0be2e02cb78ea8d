// JPEG decode benchmark of docs/benchmarks.md ("JPEG decode"):
// images/s of the reader's RandomResizedCrop (or CenterCrop) on a packed
// dataset of JPEGs, and, for reference, libjpeg-turbo's full-size decode
// rate (a loop of tjDecompress2 to RGB) on the same files held in memory,
// with the same number of threads. Prints one JSON object.
//
//   jpeg_bench reader DATASET [--threads N] [--epochs E] [--transform rrc:224]
//   jpeg_bench tj IMAGE_ROOT [--threads N] [--epochs E]
//   jpeg_bench split IMAGE_ROOT [--epochs E] [--transform rrc:224] [--restart-markers]
//                    [--libjpeg-entropy] [--rgb-region]
//
// `split` is the CPU-time profile of one thread: the reader's JPEG path (header,
// crop draw, region decode, resize) called directly on the files in memory,
// each phase timed, and beside it the entropy-decoding floor: every file
// decoded whole at 1/8 scale by tjDecompress2 (Huffman decoding of every
// block, DC-only IDCT), which no region decode of a baseline file can go
// under when its region reaches the image's last rows, and the same for the
// rows down to each crop's last (what a region decode cannot skip).
// YCbCr files are decoded to planes and resized before the color conversion,
// as the reader does; --rgb-region decodes RGB regions and resizes those
// (the reader's path before the planes).
//
// The reader's first epoch (the dataset read from storage) is a warm-up and
// not timed; so is the tj mode's file loading.
#include <turbojpeg.h>

#include <time.h>

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

#include "codec/jpeg_decoder.h"
#include "codec/jpeg_restart.h"
#include "codec/resize.h"
#include "reader/transform.h"
#include "shardpack/reader.h"

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// CPU seconds of the calling thread: the split profile is in CPU time, so
// that other jobs on a shared machine change it less than wall time.
double ThreadCpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
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
    const std::string ext = entry.path().extension().string();
    if (ext != ".JPEG" && ext != ".jpeg" && ext != ".jpg" && ext != ".JPG") continue;
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

// Seconds spent in each phase of the reader's JPEG path, one thread.
// With `restart_markers`, the reader's path runs on the files re-coded as
// `shardpack images --restart-markers` stores them, and tjDecompress2 runs on
// both the originals (the reference) and the re-coded files.
int RunSplit(const std::string& root, int epochs, const std::string& transform,
             bool restart_markers, bool libjpeg_entropy, bool rgb_region) {
  namespace sc = shardpack::codec;
  namespace sr = shardpack::reader;
  const std::vector<std::string> originals = LoadJpegs(root);
  std::vector<std::string> files = originals;
  if (restart_markers) {
    sc::JpegRestartRecoder recoder;
    std::vector<uint8_t> out;
    for (std::string& f : files) {
      absl::StatusOr<bool> done =
          recoder.Recode({reinterpret_cast<const uint8_t*>(f.data()), f.size()}, &out);
      if (!done.ok()) {
        std::fprintf(stderr, "jpeg_bench: %s\n", std::string(done.status().message()).c_str());
        return 1;
      }
      if (*done) f.assign(out.begin(), out.end());
    }
  }
  absl::StatusOr<shardpack::Transform> t = shardpack::ParseTransform(transform);
  if (!t.ok() || t->kind != shardpack::Transform::Kind::kRandomResizedCrop) {
    std::fprintf(stderr, "jpeg_bench: split needs an rrc transform\n");
    return 2;
  }
  const auto out = static_cast<uint32_t>(t->size);
  sc::JpegDecoderOptions options;
  options.libjpeg_entropy = libjpeg_entropy;
  sc::JpegDecoder decoder(options);
  sc::ResizeScratch scratch;
  std::vector<uint8_t> dst(size_t{out} * out * 3);
  double header_s = 0, decode_s = 0, resize_s = 0, region_floor_s = 0;
  uint64_t images = 0, decoded_pixels = 0;
  for (int e = 0; e < epochs; ++e) {
    for (size_t i = 0; i < files.size(); ++i) {
      const auto* data = reinterpret_cast<const uint8_t*>(files[i].data());
      const double t0 = ThreadCpu();
      absl::StatusOr<sc::JpegHeader> h = decoder.Start({data, files[i].size()});
      if (!h.ok()) return 1;
      const sr::JpegCrop c = sr::SampleRandomResizedCrop(h->width, h->height, *t, 1,
                                                         static_cast<uint64_t>(e), i);
      const sc::JpegRect rect{uint32_t(c.x0), uint32_t(c.y0), uint32_t(c.x1 - c.x0),
                              uint32_t(c.y1 - c.y0)};
      const double t1 = ThreadCpu();
      absl::StatusOr<sc::DecodedRegion> r = decoder.DecodeRegion(
          rect, out, out, 0,
          rgb_region ? sc::RegionPixels::kRgb : sc::RegionPixels::kYccPlanesWhenPossible);
      if (!r.ok()) return 1;
      const double t2 = ThreadCpu();
      sc::ResizeRegion(*r, r->box, out, out, sc::ResizeOptions{true, c.flip}, dst.data(),
                       &scratch);
      const double t3 = ThreadCpu();
      // The same crop's entropy floor: every block row down to the crop's
      // last, at 1/8 scale.
      if (!decoder.Start({data, files[i].size()}).ok()) return 1;
      if (!decoder.DecodeRegion({0, 0, h->width, rect.y + rect.height}, 1, 1).ok()) return 1;
      region_floor_s += ThreadCpu() - t3;
      header_s += t1 - t0;
      decode_s += t2 - t1;
      resize_s += t3 - t2;
      decoded_pixels += uint64_t{r->pixels.width} * r->pixels.height;
      ++images;
    }
  }
  // The reference (whole files at full size) and the floor (at 1/8 scale).
  tjhandle tj = tjInitDecompress();
  std::vector<unsigned char> rgb;
  auto tj_seconds = [&](const std::vector<std::string>& set, int eighths) {
    const double f0 = ThreadCpu();
    for (int e = 0; e < epochs; ++e) {
      for (const std::string& f : set) {
        const auto* data = reinterpret_cast<const unsigned char*>(f.data());
        int w = 0, h = 0, sub = 0, cs = 0;
        if (tjDecompressHeader3(tj, data, f.size(), &w, &h, &sub, &cs) != 0) return -1.0;
        const int sw = (w * eighths + 7) / 8, sh = (h * eighths + 7) / 8;
        rgb.resize(size_t(sw) * sh * 3);
        if (tjDecompress2(tj, data, f.size(), rgb.data(), sw, 0, sh, TJPF_RGB, 0) != 0) return -1.0;
      }
    }
    return ThreadCpu() - f0;
  };
  const double full_s = tj_seconds(originals, 8);
  const double full_recoded_s = restart_markers ? tj_seconds(files, 8) : full_s;
  const double floor_s = tj_seconds(originals, 1);
  tjDestroy(tj);
  if (full_s < 0 || full_recoded_s < 0 || floor_s < 0) return 1;
  const double n = static_cast<double>(images);
  std::printf("{\"mode\": \"split\", \"restart_markers\": %s, \"images\": %llu, "
              "\"us_per_image\": {\"tj_full_decode\": %.1f, \"tj_full_decode_stored\": %.1f, "
              "\"header\": %.1f, \"region_decode\": %.1f, \"resize\": %.1f, "
              "\"entropy_floor_1_8\": %.1f, \"entropy_floor_rows_to_crop_1_8\": %.1f}, "
              "\"decoded_pixels_per_image\": %.0f}\n",
              restart_markers ? "true" : "false", static_cast<unsigned long long>(images),
              full_s / n * 1e6, full_recoded_s / n * 1e6, header_s / n * 1e6, decode_s / n * 1e6,
              resize_s / n * 1e6, floor_s / n * 1e6, region_floor_s / n * 1e6,
              decoded_pixels / n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: jpeg_bench reader|tj|split PATH [--threads N] [--epochs E] "
                         "[--transform T] [--restart-markers] [--libjpeg-entropy] "
                         "[--rgb-region]\n");
    return 2;
  }
  const std::string mode = argv[1], path = argv[2];
  int threads = 1, epochs = 3;
  std::string transform = "rrc:224";
  bool restart_markers = false, libjpeg_entropy = false, rgb_region = false;
  for (int i = 3; i < argc; i += 2) {
    const std::string flag = argv[i];
    bool* on = flag == "--restart-markers"   ? &restart_markers
               : flag == "--libjpeg-entropy" ? &libjpeg_entropy
               : flag == "--rgb-region"      ? &rgb_region
                                             : nullptr;
    if (on != nullptr) {
      *on = true;
      --i;  // no value
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "jpeg_bench: %s needs a value\n", flag.c_str());
      return 2;
    }
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
  if (mode == "reader") return RunReader(path, threads, epochs, transform);
  if (mode == "split") return RunSplit(path, epochs, transform, restart_markers, libjpeg_entropy,
                                         rgb_region);
  return RunTj(path, threads, epochs);
}
