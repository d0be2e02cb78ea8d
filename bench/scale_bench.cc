// The reader at scale: datasets of many records, and what the
// record count costs the reader's index and epoch plan.
//
//   scale_bench gen DIR --records N [--height 32 --width 32 --channels 3]
//       Writes DIR as N raw records of that shape (label i % 10, key the
//       decimal index), with shardpack's DatasetWriter: the default shard and
//       block sizes. CIFAR-shaped by default; 8x8x1 gives 64-byte records.
//   scale_bench cifar FILE --records N
//       Writes a CIFAR-10 binary of N class-sorted records (label i * 10 / N,
//       the hardest order for a shuffle), pixels from the index: input for
//       `shardpack cifar`.
//   scale_bench images ROOT --files N [--classes 1000]
//       Writes an ImageFolder of N ImageNet-like JPEGs (500x375, ~108 KB):
//       256 distinct photos from the demo generator, each file one of them
//       with a comment marker naming its index, so no two files are equal.
//   scale_bench plan DIR [--world-size 1] [--batch-size 256]
//                        [--shuffle-bytes 256MiB] [--epochs 2]
//       Opens DIR as the reader does (manifest, every shard's index) and builds
//       rank 0's epoch plans: prints, as JSON, Open's time and the index's
//       bytes, and per plan its build time, bytes per record of the share at
//       rest and while built (as the reader reports them), and the peak RSS
//       the build added (measured: VmHWM after resetting it).
//   scale_bench table DIR --records N [--memory BYTES]
//       Builds the record table of N records (CIFAR-like keys,
//       "data_batch_K.bin/NNNNN...", one label) as a pack does and writes
//       DIR/records.idx: prints, as JSON, the seconds, the table's bytes,
//       whether the builder spilled and the peak RSS above the start. --memory
//       is the builder's bound (default RecordTableBuilder's). The file is
//       removed after.
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "datasets/demo.h"
#include "format/record_table.h"
#include "reader/dataset_units.h"
#include "reader/epoch_plan.h"
#include "shardpack/dataset.h"

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A field of /proc/self/status in bytes ("VmRSS:", "VmHWM:").
long long ProcStatus(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field, 0) == 0) return std::stoll(line.substr(field.size())) * 1024;
  }
  return -1;
}

// Resets VmHWM to the current RSS (proc(5), clear_refs "5").
void ResetPeakRss() { std::ofstream("/proc/self/clear_refs") << "5"; }

absl::Status Generate(const std::string& dir, uint64_t records, int h, int w, int c) {
  std::filesystem::create_directories(dir);
  shardpack::DatasetWriterOptions o;
  o.directory = dir;
  o.schema.image = {shardpack::Encoding::kRaw, shardpack::Layout::kHWC, static_cast<uint32_t>(h),
                    static_cast<uint32_t>(w), static_cast<uint8_t>(c)};
  o.schema.labels = {{"label", {}}};
  auto writer = shardpack::DatasetWriter::Create(o);
  if (!writer.ok()) return writer.status();
  std::string pixels(static_cast<size_t>(h) * w * c, '\0');
  std::string key;
  for (uint64_t i = 0; i < records; ++i) {
    // Varied bytes (not compressible to nothing), cheap to make.
    uint64_t x = i * 0x9E3779B97F4A7C15ull;
    for (size_t k = 0; k < pixels.size(); ++k) {
      pixels[k] = static_cast<char>(x >> ((k & 7) * 8));
      if ((k & 7) == 7) x = x * 6364136223846793005ull + 1442695040888963407ull;
    }
    key = absl::StrCat(i);
    shardpack::Record r{key,
                        {static_cast<int64_t>(i % 10)},
                        o.schema.image,
                        {reinterpret_cast<const uint8_t*>(pixels.data()), pixels.size()},
                        {}};
    if (absl::Status s = (*writer)->Add(r); !s.ok()) return s;
  }
  return (*writer)->Finish().status();
}

// Writes `bytes` to `path` (created or truncated), or says why not.
absl::Status WriteWhole(const std::string& path, const std::string& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return absl::InternalError(absl::StrCat(path, ": cannot create"));
  const bool wrote = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  if (std::fclose(f) != 0 || !wrote) return absl::InternalError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

absl::Status WriteCifar(const std::string& path, uint64_t records) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return absl::InternalError(absl::StrCat(path, ": cannot create"));
  constexpr size_t kRecord = 3073, kPerPiece = 2730;  // 8 MiB pieces
  std::string piece(kRecord * kPerPiece, '\0');
  bool ok = true;
  for (uint64_t first = 0; first < records && ok; first += kPerPiece) {
    const uint64_t n = std::min<uint64_t>(kPerPiece, records - first);
    for (uint64_t j = 0; j < n; ++j) {
      const uint64_t i = first + j;
      char* rec = piece.data() + j * kRecord;
      rec[0] = static_cast<char>(i * 10 / records);
      for (size_t k = 0; k < kRecord - 1; ++k) rec[1 + k] = static_cast<char>(i * 7 + k);
    }
    ok = std::fwrite(piece.data(), kRecord, n, f) == n;
  }
  if (std::fclose(f) != 0 || !ok) return absl::InternalError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

absl::Status WriteImages(const std::string& root, uint64_t files, int classes) {
  constexpr int kPool = 256;
  const std::string pool_dir = root + ".pool";
  shardpack::datasets::DemoImagesOptions o;
  o.classes = 16;
  o.images_per_class = kPool / 16;
  if (absl::Status s = shardpack::datasets::WriteDemoImageFolder(pool_dir, o); !s.ok()) return s;
  std::vector<std::string> pool;
  for (const auto& e : std::filesystem::recursive_directory_iterator(pool_dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    pool.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::filesystem::remove_all(pool_dir);
  if (pool.size() != kPool) return absl::InternalError("the demo generator made too few photos");
  classes = static_cast<int>(std::min<uint64_t>(classes, files));  // no empty class folder
  for (int c = 0; c < classes; ++c) {
    std::filesystem::create_directories(absl::StrFormat("%s/n%08d", root, c));
  }
  std::string bytes;
  for (uint64_t i = 0; i < files; ++i) {
    const std::string& photo = pool[i % kPool];
    const std::string note = absl::StrCat("scale_bench ", i);
    // SOI, then a COM segment (length counts its two bytes), then the rest.
    bytes.assign(photo, 0, 2);
    bytes += "\xFF\xFE";
    bytes += static_cast<char>((note.size() + 2) >> 8);
    bytes += static_cast<char>((note.size() + 2) & 0xFF);
    bytes += note;
    bytes.append(photo, 2);
    const std::string path =
        absl::StrFormat("%s/n%08d/img_%08d.JPEG", root, static_cast<int>(i % classes), i);
    if (absl::Status s = WriteWhole(path, bytes); !s.ok()) return s;
  }
  return absl::OkStatus();
}

int Plan(const std::string& dir, int world_size, int batch_size, uint64_t shuffle_bytes,
         int epochs) {
  namespace sr = shardpack::reader;
  const long long rss0 = ProcStatus("VmRSS:");
  auto t = Clock::now();
  auto dataset = sr::OpenStreamDataset(dir, shardpack::IoEngine::kPread);
  if (!dataset.ok()) {
    std::fprintf(stderr, "scale_bench: %s\n", std::string(dataset.status().message()).c_str());
    return 1;
  }
  const double open_s = Since(t);
  const long long rss_open = ProcStatus("VmRSS:");
  const uint64_t records = dataset->records;
  std::printf(
      "{\"records\": %llu, \"units\": %zu, \"open_s\": %.4f, \"index_bytes\": %llu,"
      " \"index_bytes_per_record\": %.3f, \"open_rss_bytes\": %lld,\n \"plans\": [",
      (unsigned long long)records, dataset->units().size(), open_s,
      (unsigned long long)dataset->source->IndexBytes(),
      double(dataset->source->IndexBytes()) / double(records), rss_open - rss0);
  sr::PlanOptions o{true, 0, 0, world_size, batch_size, shardpack::Remainder::kDrop, shuffle_bytes};
  for (int e = 0; e < epochs; ++e) {
    malloc_trim(0);
    const long long before = ProcStatus("VmRSS:");
    ResetPeakRss();
    t = Clock::now();
    sr::EpochPlan plan = sr::MakeEpochPlan(dataset->units(), o, static_cast<uint64_t>(e));
    const double build_s = Since(t);
    const long long peak = ProcStatus("VmHWM:") - before;
    const double share = double(plan.samples_per_rank);
    std::printf(
        "%s\n  {\"epoch\": %d, \"world_size\": %d, \"share\": %llu, \"build_s\": %.4f,"
        " \"bytes_per_record\": %.3f, \"build_bytes_per_record\": %.3f,"
        " \"measured_build_peak_per_record\": %.3f, \"windowed\": %s}",
        e ? "," : "", e, world_size, (unsigned long long)plan.samples_per_rank, build_s,
        double(sr::PlanBytes(plan)) / share, double(plan.build_bytes) / share, double(peak) / share,
        plan.windowed ? "true" : "false");
  }
  std::printf("]}\n");
  return 0;
}

int Table(const std::string& dir, uint64_t records, uint64_t memory) {
  std::filesystem::create_directories(dir);
  const long long rss0 = ProcStatus("VmRSS:");
  ResetPeakRss();
  auto t = Clock::now();
  shardpack::format::RecordTableBuilder builder(1, dir, memory);
  absl::Status s;
  std::string key;
  for (uint64_t i = 0; i < records && s.ok(); ++i) {
    key = absl::StrCat("data_batch_", i % 5 + 1, ".bin/", absl::Dec(i / 5, absl::kZeroPad5));
    const int64_t label = static_cast<int64_t>(i % 10);
    s = builder.Add({&label, 1}, key);
  }
  const double add_s = Since(t);
  absl::StatusOr<shardpack::RecordTableEntry> entry =
      s.ok() ? shardpack::format::WriteRecordTable(builder, dir) : s;
  if (!entry.ok()) {
    std::fprintf(stderr, "scale_bench: %s\n", std::string(entry.status().message()).c_str());
    return 1;
  }
  std::printf("{\"records\": %llu, \"memory_bound\": %llu, \"spilled\": %s, \"add_s\": %.2f,"
              " \"total_s\": %.2f, \"table_bytes\": %llu, \"peak_rss_above_start\": %lld}\n",
              (unsigned long long)records, (unsigned long long)memory,
              builder.spilled() ? "true" : "false", add_s, Since(t),
              (unsigned long long)entry->bytes, ProcStatus("VmHWM:") - rss0);
  std::filesystem::remove(std::filesystem::path(dir) / entry->path);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("The reader at scale: big datasets, index and plan costs");
  app.require_subcommand(1);
  std::string dir;
  uint64_t records = 0, shuffle_bytes = uint64_t{256} << 20;
  int height = 32, width = 32, channels = 3, world_size = 1, batch_size = 256, epochs = 2;
  CLI::App* gen = app.add_subcommand("gen", "write a dataset of raw records");
  gen->add_option("dir", dir)->required();
  gen->add_option("--records", records)->required()->check(CLI::PositiveNumber);
  gen->add_option("--height", height)->check(CLI::Range(1, 65535));
  gen->add_option("--width", width)->check(CLI::Range(1, 65535));
  gen->add_option("--channels", channels)->check(CLI::Range(1, 4));
  std::string path;
  uint64_t files = 0;
  int classes = 1000;
  CLI::App* cifar = app.add_subcommand("cifar", "write a class-sorted CIFAR-10 binary");
  cifar->add_option("file", path)->required();
  cifar->add_option("--records", records)->required()->check(CLI::PositiveNumber);
  CLI::App* images = app.add_subcommand("images", "write an ImageFolder of ImageNet-like JPEGs");
  images->add_option("root", path)->required();
  images->add_option("--files", files)->required()->check(CLI::PositiveNumber);
  images->add_option("--classes", classes)->check(CLI::Range(1, 100000));
  CLI::App* plan = app.add_subcommand("plan", "index and epoch-plan costs");
  plan->add_option("dir", dir)->required();
  plan->add_option("--world-size", world_size)->check(CLI::Range(1, 1 << 16));
  plan->add_option("--batch-size", batch_size)->check(CLI::Range(1, 1 << 20));
  plan->add_option("--shuffle-bytes", shuffle_bytes);
  plan->add_option("--epochs", epochs)->check(CLI::Range(1, 100));
  uint64_t memory = shardpack::format::RecordTableBuilder::kDefaultMemoryBytes;
  CLI::App* table = app.add_subcommand("table", "build a record table of N records");
  table->add_option("dir", dir)->required();
  table->add_option("--records", records)->required()->check(CLI::PositiveNumber);
  table->add_option("--memory", memory)->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  if (table->parsed()) return Table(dir, records, memory);
  if (gen->parsed() || cifar->parsed() || images->parsed()) {
    auto t = Clock::now();
    absl::Status s = gen->parsed()     ? Generate(dir, records, height, width, channels)
                     : cifar->parsed() ? WriteCifar(path, records)
                                       : WriteImages(path, files, classes);
    if (!s.ok()) {
      std::fprintf(stderr, "scale_bench: %s\n", std::string(s.message()).c_str());
      return 1;
    }
    std::fprintf(stderr, "scale_bench: wrote %llu %s in %.1f s\n",
                 (unsigned long long)(images->parsed() ? files : records),
                 images->parsed() ? "files" : "records", Since(t));
    return 0;
  }
  return Plan(dir, world_size, batch_size, shuffle_bytes, epochs);
}
