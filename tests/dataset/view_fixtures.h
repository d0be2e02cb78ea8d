// Datasets for the view tests: tiny raw images, one label field whose
// classes are named like ImageNet's WordNet ids, keys "<class>/<index>.png".
#ifndef SHARDPACK_TESTS_DATASET_VIEW_FIXTURES_H_
#define SHARDPACK_TESTS_DATASET_VIEW_FIXTURES_H_

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "tests/backends/backend_fixtures.h"

namespace shardpack::testing {

// "n00000007": class 7's name.
inline std::string WnidName(int64_t c) {
  char name[16];
  std::snprintf(name, sizeof name, "n%08lld", static_cast<long long>(c));
  return name;
}

inline Schema WnidSchema(int classes) {
  Schema s;
  s.image = {Encoding::kRaw, Layout::kHWC, 2, 2, 1};
  LabelField f{"label", {}};
  for (int c = 0; c < classes; ++c) f.classes.push_back(WnidName(c));
  s.labels.push_back(std::move(f));
  return s;
}

// Record i of a dataset of `classes` classes: label (i * 7 + salt) %
// classes, key "<class name>/<salt>-<i>.png", 4 pixel bytes from i.
inline OwnedRecord WnidRecord(uint64_t i, int classes, uint64_t salt = 0) {
  OwnedRecord r;
  const int64_t label = static_cast<int64_t>((i * 7 + salt) % classes);
  r.key = absl::StrCat(WnidName(label), "/", salt, "-", i, ".png");
  r.labels.push_back(label);
  r.image = {Encoding::kRaw, Layout::kHWC, 2, 2, 1};
  r.payload = {static_cast<uint8_t>(i), static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(salt),
               7};
  return r;
}

// A dataset of `n` WnidRecords in `dir` (created), `shard_records` a shard.
inline absl::StatusOr<Manifest> WriteWnidDataset(const std::string& dir, uint64_t n, int classes,
                                                 uint64_t salt = 0, uint64_t shard_records = 0,
                                                 Backend backend = Backend::kShard) {
  std::filesystem::create_directories(dir);
  std::vector<OwnedRecord> records;
  for (uint64_t i = 0; i < n; ++i) records.push_back(WnidRecord(i, classes, salt));
  return WriteDataset(dir, backend, records, WnidSchema(classes), shard_records);
}

inline void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

}  // namespace shardpack::testing

#endif  // SHARDPACK_TESTS_DATASET_VIEW_FIXTURES_H_
