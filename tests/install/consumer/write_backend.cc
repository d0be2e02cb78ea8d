// Against the installed package only: writes a small LMDB dataset through the
// public API (shardpack/backends.h) and reads it back with the Reader.
//
//   write_backend DIR     exits 0 when 100 records come back as written
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "shardpack/backends.h"
#include "shardpack/dataset.h"
#include "shardpack/reader.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string dir = argv[1];
  std::filesystem::create_directories(dir);
  shardpack::DatasetWriterOptions o;
  o.directory = dir;
  o.schema.image = {shardpack::Encoding::kRaw, shardpack::Layout::kHWC, 2, 2, 3};
  o.schema.labels = {{"label", {"even", "odd"}}};
  shardpack::UseBackend(&o, shardpack::Backend::kLmdb);
  auto writer = shardpack::DatasetWriter::Create(o);
  if (!writer.ok()) return std::fprintf(stderr, "%s\n", writer.status().ToString().c_str()), 1;
  std::vector<uint8_t> pixels(12);
  for (int i = 0; i < 100; ++i) {
    for (size_t k = 0; k < pixels.size(); ++k) pixels[k] = static_cast<uint8_t>(i + k);
    const std::string key = "r" + std::to_string(i);
    shardpack::Record r{key, {i % 2}, o.schema.image, pixels, {}};
    if (absl::Status s = (*writer)->Add(r); !s.ok()) return 1;
  }
  if (!(*writer)->Finish().ok()) return 1;

  shardpack::ReaderOptions ro;
  ro.path = dir;
  ro.batch_size = 10;
  ro.shuffle = false;
  ro.rank = 0;
  ro.world_size = 1;
  auto reader = shardpack::Reader::Open(ro);
  if (!reader.ok()) return std::fprintf(stderr, "%s\n", reader.status().ToString().c_str()), 1;
  if ((*reader)->schema().labels[0].classes.size() != 2) return 1;
  int seen = 0;
  for (absl::StatusOr<shardpack::Batch> b = (*reader)->Next(); b.ok(); b = (*reader)->Next()) {
    for (int i = 0; i < b->size(); ++i, ++seen) {
      const uint8_t* px = static_cast<const uint8_t*>(b->images()) + i * 12;
      if (b->labels()[i] != seen % 2 || px[5] != static_cast<uint8_t>(seen + 5)) return 1;
    }
  }
  std::printf("write_backend: %d LMDB records written and read back\n", seen);
  return seen == 100 ? 0 : 1;
}
