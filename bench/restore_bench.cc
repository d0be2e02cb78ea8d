// Elastic resume: what a Restore costs on a large dataset.
//
//   restore_bench DIR [--records 8000000] [--batch-size 256] [--from 4] [--to 3]
//                     [--batches 1000]
//
// Writes DIR (once; reused when its manifest is there) as `records` tiny raw
// records (2x2x3 pixels, so 8,000,000 fit in ~0.5 GB), reads `batches`
// batches on rank 0 of `from` ranks, then times, each on a fresh reader:
// Restore of that state on `from` ranks (the same plan) and on `to` ranks
// (elastic: plans what the `from` ranks delivered), each with its first
// batch, against reading `batches` batches from the start (a replay).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "shardpack/dataset.h"
#include "shardpack/reader.h"

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

absl::Status Write(const std::string& dir, uint64_t records) {
  std::filesystem::create_directories(dir);
  shardpack::DatasetWriterOptions o;
  o.directory = dir;
  o.schema.image = {shardpack::Encoding::kRaw, shardpack::Layout::kHWC, 2, 2, 3};
  o.schema.labels = {{"label", {}}};
  auto writer = shardpack::DatasetWriter::Create(o);
  if (!writer.ok()) return writer.status();
  uint8_t pixels[12];
  for (uint64_t i = 0; i < records; ++i) {
    for (int k = 0; k < 12; ++k) pixels[k] = static_cast<uint8_t>(i * 7 + k);
    std::string key = absl::StrCat(i);
    shardpack::Record r{key, {int64_t(i % 10)}, o.schema.image, pixels, {}};
    if (absl::Status s = (*writer)->Add(r); !s.ok()) return s;
  }
  return (*writer)->Finish().status();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Elastic resume: Restore time against a replay");
  std::string dir;
  uint64_t records = 8'000'000, batches = 1000;
  int batch_size = 256, from = 4, to = 3;
  app.add_option("dir", dir)->required();
  app.add_option("--records", records);
  app.add_option("--batch-size", batch_size);
  app.add_option("--from", from);
  app.add_option("--to", to);
  app.add_option("--batches", batches);
  CLI11_PARSE(app, argc, argv);
  if (!std::filesystem::exists(dir + "/manifest.json")) {
    auto t = Clock::now();
    if (absl::Status s = Write(dir, records); !s.ok()) {
      std::fprintf(stderr, "restore_bench: %s\n", std::string(s.message()).c_str());
      return 1;
    }
    std::printf("wrote %llu records in %.1f s\n", (unsigned long long)records, Since(t));
  }
  shardpack::ReaderOptions o;
  o.path = dir;
  o.batch_size = batch_size;
  o.rank = 0;
  o.world_size = from;
  o.threads = 2;
  auto open = [&](int world) {
    shardpack::ReaderOptions w = o;
    w.world_size = world;
    auto r = shardpack::Reader::Open(w);
    if (!r.ok()) {
      std::fprintf(stderr, "restore_bench: %s\n", std::string(r.status().message()).c_str());
      std::exit(1);
    }
    return *std::move(r);
  };
  auto next = [](shardpack::Reader& r) {
    absl::StatusOr<shardpack::Batch> b = r.Next();
    if (!b.ok()) {
      std::fprintf(stderr, "restore_bench: %s\n", std::string(b.status().message()).c_str());
      std::exit(1);
    }
  };
  auto first = open(from);
  std::printf("%llu records, %d ranks: %llu batches of %d a rank\n",
              (unsigned long long)first->records(), from,
              (unsigned long long)first->batches_per_epoch(), batch_size);
  auto t = Clock::now();
  for (uint64_t i = 0; i < batches; ++i) next(*first);
  const double replay = Since(t);
  const shardpack::ReaderState state = first->state();
  std::printf("replay: %llu batches read from the start in %.3f s\n", (unsigned long long)batches,
              replay);
  for (int world : {from, to}) {
    auto r = open(world);
    t = Clock::now();
    if (absl::Status s = r->Restore(state); !s.ok()) {
      std::fprintf(stderr, "restore_bench: %s\n", std::string(s.message()).c_str());
      return 1;
    }
    const double restore = Since(t);
    next(*r);
    std::printf("restore on %d ranks%s: Restore %.3f s, + first batch %.3f s; %llu batches left\n",
                world, world == from ? " (same plan)" : " (elastic)", restore, Since(t),
                (unsigned long long)(r->batches_in_epoch() - r->state().segment.batches + 1));
  }
  return 0;
}
