// Writes a dataset of records with every field type (tests/testing/
// field_fixtures.h), for the Python tests, which have no writer of their own
// to make one with:
//
//   make_fields_dataset DIR [--records N] [--backend shard|lmdb|hdf5]
//                           [--shard-records K]
//
// DIR is created; the photo of every record is the same real 40x24 JPEG.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "shardpack/backends.h"
#include "shardpack/manifest.h"
#include "tests/testing/field_fixtures.h"
#include "tests/testing/jpeg_fixtures.h"
#include "turbojpeg.h"

int main(int argc, char** argv) {
  using namespace shardpack;
  if (argc < 2 || argc % 2 != 0) {
    std::fprintf(stderr, "usage: make_fields_dataset DIR [--records N] [--backend B] "
                         "[--shard-records K]\n");
    return 2;
  }
  DatasetWriterOptions o;
  o.directory = argv[1];
  uint64_t records = 20;
  Backend backend = Backend::kShard;
  for (int a = 2; a + 1 < argc; a += 2) {
    const std::string_view flag = argv[a];
    if (flag == "--records") {
      records = std::strtoull(argv[a + 1], nullptr, 10);
    } else if (flag == "--shard-records") {
      o.shard_max_records = std::strtoull(argv[a + 1], nullptr, 10);
    } else if (flag == "--backend" && ParseBackend(argv[a + 1]).ok()) {
      backend = *ParseBackend(argv[a + 1]);
    } else {
      std::fprintf(stderr, "make_fields_dataset: bad flag %s %s\n", argv[a], argv[a + 1]);
      return 2;
    }
  }
  UseBackend(&o, backend);
  std::filesystem::create_directories(o.directory);
  const std::vector<uint8_t> jpeg = testing::TjSceneJpeg(40, 24, TJSAMP_420);
  absl::StatusOr<Manifest> m =
      testing::WriteFieldsDataset(o, records, jpeg, {Encoding::kJpeg, Layout::kHWC, 24, 40, 3});
  if (!m.ok()) {
    std::fprintf(stderr, "make_fields_dataset: %s\n", std::string(m.status().message()).c_str());
    return 1;
  }
  return 0;
}
