// Datasets of any backend written by tests, and read back record by record.
#ifndef SHARDPACK_TESTS_BACKENDS_BACKEND_FIXTURES_H_
#define SHARDPACK_TESTS_BACKENDS_BACKEND_FIXTURES_H_

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/store.h"
#include "common/status_macros.h"
#include "shardpack/dataset.h"
#include "tests/testing/shard_fixtures.h"

namespace shardpack::testing {

inline Schema RawSchema(uint32_t h, uint32_t w, uint8_t c, Layout layout, int label_fields) {
  Schema s;
  s.image = {Encoding::kRaw, layout, h, w, c};
  // Fine labels are 0..9 (testing::RawRecord); coarse ones are any number
  // the test picks, so that field names no classes.
  s.labels.push_back({"fine", {"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"}});
  if (label_fields > 1) s.labels.push_back({"coarse", {}});
  return s;
}

inline Schema JpegSchema() {
  Schema s;
  s.image.encoding = Encoding::kJpeg;
  s.labels = {{"label", {"x", "y", "z"}}, {"coarse", {}}};
  return s;
}

// Writes `records` as a dataset of `backend` into `dir` (existing, empty).
inline absl::StatusOr<Manifest> WriteDataset(const std::string& dir, Backend backend,
                                             const std::vector<OwnedRecord>& records,
                                             const Schema& schema, uint64_t shard_records = 0,
                                             const backends::BackendOptions& bo = {}) {
  DatasetWriterOptions o;
  o.directory = dir;
  o.schema = schema;
  o.shard_max_records = shard_records;
  o.pack_json = R"({"test":true})";
  backends::UseBackend(&o, backend, bo);
  SP_ASSIGN_OR_RETURN(auto writer, DatasetWriter::Create(o));
  for (const OwnedRecord& r : records) SP_RETURN_IF_ERROR(writer->Add(r.record()));
  return writer->Finish();
}

// Every record of the dataset in `dir`, copied.
inline absl::StatusOr<std::vector<OwnedRecord>> ReadDataset(const std::string& dir) {
  SP_ASSIGN_OR_RETURN(Manifest m, ReadManifest(dir));
  std::vector<OwnedRecord> out;
  for (const ShardEntry& s : m.shards) {
    SP_ASSIGN_OR_RETURN(auto scanner, backends::ShardScanner::Open(
                                          (std::filesystem::path(dir) / s.path).string(),
                                          m.backend));
    SP_RETURN_IF_ERROR(scanner->Scan(0, scanner->size(), [&](uint64_t, const Record& r) {
      OwnedRecord o;
      o.key = std::string(r.key);
      o.labels = r.labels;
      o.image = r.image;
      o.payload.assign(r.payload.begin(), r.payload.end());
      o.extra.assign(r.extra.begin(), r.extra.end());
      out.push_back(std::move(o));
      return absl::OkStatus();
    }));
  }
  return out;
}

}  // namespace shardpack::testing

#endif  // SHARDPACK_TESTS_BACKENDS_BACKEND_FIXTURES_H_
