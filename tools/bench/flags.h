// shardbench's command line: the flags as typed, their CLI11 definitions
// (bad values are usage errors, exit 2), and their translation into
// BenchOptions.
#ifndef SHARDPACK_TOOLS_BENCH_FLAGS_H_
#define SHARDPACK_TOOLS_BENCH_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "tools/bench/shardbench.h"

namespace shardpack::shardbench {

struct Flags {
  std::string path;  // PATH, or empty with --source
  std::vector<std::string> sources;  // --source PATH[:KEY=VALUE], repeated: a mixture
  uint64_t epoch_samples = 0;         // --epoch-samples (with --source)
  std::string label_space = "shared";  // --label-space (with --source)
  int batch_size = 256;
  int threads = 0;  // 0: all cores
  std::string transform = "none";
  std::string io = "auto";
  int epochs = 0;  // 0 and no --seconds: 1 epoch
  double seconds = 0;
  int rank = -1;        // -1: RANK from the environment, else 0
  int world_size = -1;  // -1: WORLD_SIZE from the environment, else 1
  uint64_t seed = 0;
  bool shuffle = true;
  std::string shuffle_bytes = "0";  // chosen
  std::string read_ahead = "32MiB";
  std::string cache_dir;    // --cache-dir: a dataset in an object store's cache ("": default)
  std::string cache_bytes;  // --cache-bytes ("": SHARDPACK_CACHE_BYTES, else 16GiB)
  int ring_slots = 0;  // 0: the reader chooses (kAutoRingSlots)
  int warmup = 5;
  std::string layout = "nhwc";
  std::string dtype = "uint8";
  int device = -1;  // -1: batches stay on the host
  std::string device_dtype = "as-host";
  std::string fields;        // --fields A,B: the fields a batch delivers ("": all)
  std::string image_fields;  // --image-fields A,B:nearest ("": the first image field)
  int device_buffers = 0;  // 0: the reader chooses (kAutoDeviceBuffers)
  bool json = false;
  std::string order_out;
  std::string save_batch;
  bool overwrite = false;
  bool compare_raw = false;
  bool compare_memcpy = false;
  bool drop_caches = false;
  bool quiet = false;
};

// One --source: "PATH:weight=W", "PATH:repeat=R", "PATH:choose=N", or PATH
// alone (repeat=1). The text after the last ':' is a count when it holds a
// '='. InvalidArgumentError naming the source for an unknown key or a value
// out of range (a weight or repeat that is not a finite number above 0, a
// repeat past kMaxMixRepeat, a choose below 1).
absl::StatusOr<MixSource> ParseSource(const std::string& text);

// Defines every flag of `app` and points it at `flags`.
void AddFlags(CLI::App* app, Flags* flags);

// The options the flags ask for. InvalidArgumentError for a combination the
// checks cannot see alone.
absl::StatusOr<BenchOptions> ToBenchOptions(const Flags& flags);

}  // namespace shardpack::shardbench

#endif  // SHARDPACK_TOOLS_BENCH_FLAGS_H_
