// shardpack's own LMDB and HDF5 readers over a dataset: the measurement that
// bench/peers/backend_read.py (python's lmdb and h5py on the same files) is
// compared with. bench/run_backend_bench.sh runs both side by side.
//
//   backend_bench DATASET [--repeats 5]
//
// Reads every shard in order and touches every byte of every record (an XOR
// over 8-byte words, as the peer does): LMDB by one cursor walk per shard
// (LmdbShardReader::Scan, values viewed in the map, no copy), HDF5 a chunk
// of rows per call (Hdf5ShardReader::ReadRows, or ReadOffsets + ReadData for
// the flat layout) into one reused buffer. One untimed pass warms the page
// cache. Prints one JSON object: the median over the passes.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "backends/store.h"
#include "bench/bench_common.h"
#include "common/status_macros.h"
#include "shardpack/dataset.h"

namespace shardpack::bench {
namespace {

struct Pass {
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t xor_words = 0;
};

uint64_t XorWords(const uint8_t* p, size_t n) {
  uint64_t acc = 0;
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    acc ^= w;
  }
  return acc;
}

absl::Status ReadLmdb(const std::string& path, Pass* pass) {
  SP_ASSIGN_OR_RETURN(auto reader, backends::LmdbShardReader::Open(path));
  return reader->Scan(0, reader->size(), [&](uint64_t, ByteSpan value) {
    pass->xor_words ^= XorWords(value.data(), value.size());
    pass->bytes += value.size();
    ++pass->records;
    return absl::OkStatus();
  });
}

absl::Status ReadHdf5(const std::string& path, Pass* pass, std::vector<uint8_t>* buffer) {
  SP_ASSIGN_OR_RETURN(auto reader, backends::Hdf5ShardReader::Open(path));
  const uint64_t n = reader->size(), rows = reader->chunk_rows();
  std::vector<int64_t> labels(rows);
  int64_t* label_ptrs[kMaxLabels] = {labels.data()};
  std::vector<int64_t> offsets(rows + 1);
  for (uint64_t a = 0; a < n; a += rows) {
    uint64_t b = std::min(n, a + rows);
    size_t bytes;
    if (reader->fixed_shape()) {
      bytes = (b - a) * reader->image_info().RawBytes();
      buffer->resize(std::max(buffer->size(), bytes));
      SP_RETURN_IF_ERROR(reader->ReadRows(a, b, buffer->data(), label_ptrs));
    } else {
      SP_RETURN_IF_ERROR(reader->ReadOffsets(a, b, offsets.data()));
      bytes = static_cast<size_t>(offsets[b - a] - offsets[0]);
      buffer->resize(std::max(buffer->size(), bytes));
      SP_RETURN_IF_ERROR(reader->ReadData(offsets[0], offsets[b - a], buffer->data()));
    }
    pass->xor_words ^= XorWords(buffer->data(), bytes) ^ XorWords(
        reinterpret_cast<const uint8_t*>(labels.data()), 8 * (b - a));
    pass->bytes += bytes;
    pass->records += b - a;
  }
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: backend_bench DATASET [--repeats N]\n");
    return 2;
  }
  std::string dataset = argv[1];
  int repeats = 5;
  if (argc == 4 && std::string(argv[2]) == "--repeats") repeats = std::max(1, std::atoi(argv[3]));
  auto manifest = ReadManifest(dataset);
  if (!manifest.ok()) {
    std::fprintf(stderr, "backend_bench: %s\n", std::string(manifest.status().message()).c_str());
    return 1;
  }
  std::vector<uint8_t> buffer;
  auto one_pass = [&](Pass* pass) -> absl::Status {
    for (const ShardEntry& s : manifest->shards) {
      std::string path = (std::filesystem::path(dataset) / s.path).string();
      if (manifest->backend == Backend::kLmdb) {
        SP_RETURN_IF_ERROR(ReadLmdb(path, pass));
      } else if (manifest->backend == Backend::kHdf5) {
        SP_RETURN_IF_ERROR(ReadHdf5(path, pass, &buffer));
      } else {
        return absl::InvalidArgumentError("backend_bench reads lmdb and hdf5 datasets");
      }
    }
    return absl::OkStatus();
  };
  Series series;
  Pass pass;
  for (int i = 0; i <= repeats; ++i) {
    pass = Pass{};
    double start = NowSeconds();
    absl::Status s = one_pass(&pass);
    double seconds = NowSeconds() - start;
    if (!s.ok()) {
      std::fprintf(stderr, "backend_bench: %s\n", std::string(s.message()).c_str());
      return 1;
    }
    if (i > 0) series.seconds.push_back(seconds);  // pass 0 warms the page cache
    KeepAlive(&pass.xor_words);
  }
  double median = series.MedianSeconds();
  std::string backend(BackendName(manifest->backend));
  std::printf("{\"reader\": \"shardpack %s\", \"backend\": \"%s\", \"records\": %llu, "
              "\"bytes\": %llu, \"seconds\": %.6f, \"records_per_s\": %.1f, \"mb_per_s\": %.1f}\n",
              backend.c_str(), backend.c_str(), static_cast<unsigned long long>(pass.records),
              static_cast<unsigned long long>(pass.bytes), median, pass.records / median,
              pass.bytes / median / 1e6);
  return 0;
}

}  // namespace
}  // namespace shardpack::bench

int main(int argc, char** argv) { return shardpack::bench::Main(argc, argv); }
