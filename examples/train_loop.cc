// A C++ training loop fed by the reader: the shape of a real one, with the
// model replaced by a sleep of --compute-ms per step (the time a GPU step
// would take while the CPU waits). It prints, per epoch, the data wait per
// step: the time Next() blocked, which a fast enough pipeline keeps near 0.
//
//   train_loop DATASET [--epochs N] [--batch-size B] [--compute-ms MS]
//              [--threads T] [--transform cifar-train] [--seed S]
//
// It uses only the installed API (shardpack/reader.h, shardpack::shardpack):
// tests/install/ builds this file against an installed package.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shardpack/reader.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  shardpack::ReaderOptions reader;
  int epochs = 2;
  double compute_ms = 2.0;
};

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

bool ParseArgs(int argc, char** argv, Args* a) {
  a->reader.batch_size = 256;
  a->reader.transform = shardpack::Transform::CifarTrain();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) {
      a->reader.path = arg;
      continue;
    }
    if (i + 1 >= argc) return false;
    const char* v = argv[++i];
    if (arg == "--epochs") a->epochs = std::atoi(v);
    else if (arg == "--batch-size") a->reader.batch_size = std::atoi(v);
    else if (arg == "--compute-ms") a->compute_ms = std::atof(v);
    else if (arg == "--threads") a->reader.threads = std::atoi(v);
    else if (arg == "--seed") a->reader.seed = std::strtoull(v, nullptr, 10);
    else if (arg == "--transform") {
      absl::StatusOr<shardpack::Transform> t = shardpack::ParseTransform(v);
      if (!t.ok()) return false;
      a->reader.transform = *t;
    } else {
      return false;
    }
  }
  return !a->reader.path.empty() && a->epochs > 0;
}

// The model: reads the batch (as a forward pass would), then waits.
int64_t Step(const shardpack::Batch& batch, double compute_ms) {
  const auto* px = static_cast<const uint8_t*>(batch.images());
  int64_t sum = 0;
  for (uint64_t i = 0; i < batch.image_bytes(); i += 64) sum += px[i];
  for (int i = 0; i < batch.size(); ++i) sum += batch.labels()[i * batch.num_labels()];
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(compute_ms));
  return sum;
}

absl::Status Train(const Args& a) {
  absl::StatusOr<std::unique_ptr<shardpack::Reader>> opened = shardpack::Reader::Open(a.reader);
  if (!opened.ok()) return opened.status();
  shardpack::Reader& reader = **opened;
  if (!reader.device_fallback().empty()) {
    std::fprintf(stderr, "train_loop: %s\n", reader.device_fallback().c_str());
  }
  int64_t checksum = 0;
  for (int epoch = 0; epoch < a.epochs; ++epoch) {
    double wait_s = 0, total_s = 0;
    uint64_t steps = 0, images = 0;
    const Clock::time_point epoch_start = Clock::now();
    for (;;) {
      const Clock::time_point t0 = Clock::now();
      absl::StatusOr<shardpack::Batch> batch = reader.Next();
      wait_s += Seconds(Clock::now() - t0);
      if (absl::IsOutOfRange(batch.status())) break;  // end of the epoch
      if (!batch.ok()) return batch.status();         // damage: shard and offset
      checksum += Step(*batch, a.compute_ms);
      ++steps;
      images += static_cast<uint64_t>(batch->size());
    }  // the Batch goes back to the ring here
    total_s = Seconds(Clock::now() - epoch_start);
    std::printf("epoch %d: %llu steps, %.0f images/s, data wait %.3f ms/step (%.1f%% of the "
                "step)\n",
                epoch, static_cast<unsigned long long>(steps), images / total_s,
                steps ? 1e3 * wait_s / steps : 0.0, total_s > 0 ? 100 * wait_s / total_s : 0.0);
    // Checkpoint this with the model; ReaderState::FromJson reads it back.
    std::printf("  checkpoint: %s\n", reader.state().ToJson().c_str());
  }
  const shardpack::ReaderStats s = reader.stats();
  std::printf("samples %llu, checksum %lld, waits: io %.3f s, transform %.3f s, consumer %.3f s\n",
              static_cast<unsigned long long>(s.samples), static_cast<long long>(checksum),
              s.io_wait_s, s.transform_wait_s, s.consumer_wait_s);
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) {
    std::fprintf(stderr,
                 "usage: train_loop DATASET [--epochs N] [--batch-size B] [--compute-ms MS]\n"
                 "                  [--threads T] [--transform T] [--seed S]\n");
    return 2;
  }
  absl::Status s = Train(args);
  if (!s.ok()) {
    std::fprintf(stderr, "train_loop: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}
