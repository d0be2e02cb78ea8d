// GPU staging benchmark, two figures, each against a reference
// measured side by side in the same run:
//
//   copy:      batches copied through the CUDA copy engine (pinned ring slot
//              -> device buffer: cudaMemcpyAsync on the reader's stream and
//              an event per batch, the engine's completion thread reporting
//              each, up to --buffers in flight) against cudaMemcpy of the
//              same bytes from pinned memory. Aim: >= 0.8. Then the same
//              with the finish kernel making float32 and float16 NCHW on
//              the device (what it adds to the stream), same reference.
//   consumer:  the Reader on a raw dataset with device staging, and a
//              consumer that runs one kernel of --kernel-us per batch on its
//              own stream (waiting on the batch's event), against the same
//              kernels back to back with no reader. 1 - ratio is the fraction
//              of time the GPU waited for data. Aim: < 0.02 when the reader
//              is faster than the consumer.
//
//   staging_bench --dir DIR [--batch 128] [--side 224] [--records 1024]
//                 [--kernel-us 5000] [--epochs 10] [--repeats 5] [--json]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "bench/bench_common.h"
#include "bench/staging_spin.h"
#include "reader/staging.h"
#include "shardpack/dataset.h"
#include "shardpack/reader.h"

namespace shardpack::bench {
namespace {

struct Options {
  std::string dir;
  int batch = 128;
  int side = 224;
  int records = 1024;
  int kernel_us = 5000;
  int epochs = 10;
  int repeats = 5;
  int buffers = 3;
  int copies = 50;
  bool json = false;
};

void Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "staging_bench: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

void Check(const absl::Status& s) {
  if (s.ok()) return;
  std::fprintf(stderr, "staging_bench: %s\n", s.ToString().c_str());
  std::exit(1);
}

void NoOp(void*) {}

// The finish of `dtype` ("float32", "float16"; "" for none) into NCHW, with
// ImageNet's mean and std.
reader::FinishParams Finish(const Options& o, const std::string& dtype) {
  reader::FinishParams p;
  if (dtype.empty()) return p;
  p = {true, dtype == "float16", true, o.side, o.side, 3};
  p.Normalize({0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f});
  return p;
}

// The copy engine's path (with the finish kernel of `dtype`, if any) against
// cudaMemcpy of the same host bytes, `copies` batches per run.
Row CopyRow(const Options& o, const std::string& dtype) {
  const size_t bytes = size_t(o.batch) * o.side * o.side * 3;
  const reader::FinishParams finish = Finish(o, dtype);
  const size_t out_bytes = finish.enabled ? bytes * finish.out_element_bytes() : bytes;
  auto engine = reader::MakeCudaCopyEngine(0, nullptr);
  Check(engine.status());
  reader::CopyEngine& e = **engine;
  Check(e.Init(o.buffers, bytes, out_bytes, finish));
  std::vector<uint8_t*> slots;
  for (int k = 0; k < 4; ++k) {
    slots.push_back(e.HostAlloc(bytes));
    std::memset(slots.back(), k, bytes);
  }
  Row row{"batch " + std::to_string(bytes >> 20) + " MiB",
          dtype.empty() ? "staging copies" : "copies + " + dtype + " NCHW", "cudaMemcpy, pinned",
          "GB/s", 1e9, uint64_t(bytes) * o.copies, uint64_t(bytes) * o.copies, {}, {}};
  auto staged = [&] {
    double start = NowSeconds();
    for (int k = 0; k < o.copies; ++k) {
      const int b = k % o.buffers;
      if (k >= o.buffers) Check(e.Wait(b));
      Check(e.Issue(b, slots[k % slots.size()], bytes, o.batch, &NoOp, nullptr));
    }
    for (int b = 0; b < o.buffers; ++b) Check(e.Wait(b));
    return NowSeconds() - start;
  };
  auto plain = [&] {
    double start = NowSeconds();
    for (int k = 0; k < o.copies; ++k) {
      Check(cudaMemcpy(e.buffer(k % o.buffers), slots[k % slots.size()], bytes,
                       cudaMemcpyHostToDevice),
            "cudaMemcpy");
    }
    return NowSeconds() - start;
  };
  staged();  // warm-up: first-touch of the buffers
  plain();
  SideBySide(o.repeats, staged, plain, &row.measured, &row.reference_runs);
  for (uint8_t* p : slots) e.HostFree(p);
  return row;
}

std::string MakeDataset(const Options& o) {
  std::string path = o.dir + "/staging-bench-ds";
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  DatasetWriterOptions w;
  w.directory = path;
  w.schema.image = {Encoding::kRaw, Layout::kHWC, uint32_t(o.side), uint32_t(o.side), 3};
  w.schema.labels = {{"label", {}}};
  auto writer = DatasetWriter::Create(w);
  Check(writer.status());
  std::vector<uint8_t> pixels(size_t(o.side) * o.side * 3);
  std::mt19937 rng(1);
  for (int i = 0; i < o.records; ++i) {
    for (uint8_t& p : pixels) p = static_cast<uint8_t>(rng());
    std::string key = absl::StrCat("r", i);
    Check((*writer)->Add(Record{key, {int64_t(i % 10)}, w.schema.image, pixels, {}}));
  }
  Check((*writer)->Finish().status());
  return path;
}

// Batches per second of the consumer loop with the reader against the same
// kernels without it.
Row ConsumerRow(const Options& o, const std::string& path) {
  cudaStream_t stream;
  Check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  ReaderOptions r;
  r.path = path;
  r.batch_size = o.batch;
  r.transform = Transform::None();
  r.device = 0;
  r.device_buffers = o.buffers;
  r.consumer_stream = stream;
  auto reader = Reader::Open(r);
  Check(reader.status());
  const uint64_t per_epoch = (*reader)->batches_per_epoch();
  const unsigned long long ns = uint64_t(o.kernel_us) * 1000;
  void* scratch = nullptr;
  Check(cudaMalloc(&scratch, 1), "cudaMalloc");
  Row row{absl::StrCat("kernel ", o.kernel_us, " us/batch"), "reader + kernels",
          "kernels alone", "batches/s", 1, per_epoch * o.epochs, per_epoch * o.epochs, {}, {}};
  auto with_reader = [&] {
    double start = NowSeconds();
    for (int epoch = 0; epoch < o.epochs; ++epoch) {
      for (;;) {
        absl::StatusOr<Batch> b = (*reader)->Next();
        if (absl::IsOutOfRange(b.status())) break;
        Check(b.status());
        if (!b->on_device()) Check(absl::FailedPreconditionError("the batch is not on the device"));
        Check(cudaStreamWaitEvent(stream, static_cast<cudaEvent_t>(b->device_event()), 0),
              "cudaStreamWaitEvent");
        Check(LaunchSpin(b->device_images(), ns, stream), "spin");
      }  // ~Batch records the release on `stream`
    }
    Check(cudaStreamSynchronize(stream), "sync");
    return NowSeconds() - start;
  };
  auto alone = [&] {
    double start = NowSeconds();
    for (uint64_t k = 0; k < per_epoch * o.epochs; ++k) Check(LaunchSpin(scratch, ns, stream), "spin");
    Check(cudaStreamSynchronize(stream), "sync");
    return NowSeconds() - start;
  };
  with_reader();  // warm-up: the first epoch loads the dataset
  SideBySide(o.repeats, with_reader, alone, &row.measured, &row.reference_runs);
  reader->reset();
  cudaFree(scratch);
  cudaStreamDestroy(stream);
  return row;
}

int Main(int argc, char** argv) {
  Options o;
  CLI::App app{"GPU staging: copy bandwidth vs cudaMemcpy; GPU wait with a fixed-time consumer."};
  app.add_option("--dir", o.dir, "Where the dataset is written (tmpfs is best)")->required();
  app.add_option("--batch", o.batch, "Samples per batch (default 128)");
  app.add_option("--side", o.side, "Image side, 3 channels uint8 (default 224)");
  app.add_option("--records", o.records, "Records in the dataset (default 1024)");
  app.add_option("--kernel-us", o.kernel_us, "Consumer kernel time per batch (default 5000)");
  app.add_option("--epochs", o.epochs, "Epochs per consumer run (default 10)");
  app.add_option("--repeats", o.repeats, "Runs per figure (default 5)");
  app.add_option("--buffers", o.buffers, "Device buffers (default 3)");
  app.add_option("--copies", o.copies, "Batches per copy run (default 50)");
  app.add_flag("--json", o.json, "Print JSON instead of the table");
  CLI11_PARSE(app, argc, argv);
  cudaDeviceProp prop;
  Check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::vector<Row> rows = {CopyRow(o, ""), CopyRow(o, "float32"), CopyRow(o, "float16")};
  rows.push_back(ConsumerRow(o, MakeDataset(o)));
  const double wait = 1 - rows.back().Ratio();
  std::vector<Fact> facts = {{"gpu", "GPU", prop.name, false},
                             {"cpu", "CPU", CpuModel(), false},
                             {"cpus", "usable CPUs", std::to_string(UsableCpus()), true},
                             {"gpu_wait_fraction", "GPU wait fraction (1 - consumer ratio)",
                              std::to_string(wait), true}};
  if (o.json) {
    PrintJson(stdout, facts, rows);
  } else {
    PrintTable(stdout, facts, rows);
  }
  std::filesystem::remove_all(o.dir + "/staging-bench-ds");
  return 0;
}

}  // namespace
}  // namespace shardpack::bench

int main(int argc, char** argv) { return shardpack::bench::Main(argc, argv); }
