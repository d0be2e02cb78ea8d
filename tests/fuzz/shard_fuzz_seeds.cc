// Writes the fuzzers' seed corpora, so that no binary blob is checked in:
//
//   shard_fuzz_seeds DIR   ->  DIR/shard/*.shard  small valid shards
//                              DIR/manifest/*.json  valid manifests
//                              DIR/lmdb/*.lmdb, DIR/hdf5/*.h5  small LMDB
//                              and HDF5 shards (both layouts for HDF5)
//                              DIR/fields/*  records of every field type
//                              (fields_fuzzer's input, fields_input.h)
//
// Shards are small (one to four blocks, under 20 KiB) so the fuzzer runs
// fast, and cover what the parser must handle: no records, raw HWC and CHW,
// jpeg-like payloads with extra bytes, 0 and 8 labels, an empty key, zstd
// blocks and a stored block inside a zstd shard.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backends/store.h"
#include "format/record_table.h"
#include "shardpack/dataset.h"
#include "shardpack/file.h"
#include "shardpack/manifest.h"
#include "shardpack/record.h"
#include "shardpack/shard.h"
#include "tests/fuzz/fields_input.h"
#include "tests/testing/field_fixtures.h"
#include "tests/testing/shard_fixtures.h"

namespace shardpack {
namespace {

namespace fs = std::filesystem;

using testing::OwnedRecord;

// tests/testing's raw record; `smooth` pixels (a ramp) let zstd shrink it.
OwnedRecord Raw(uint64_t i, uint32_t h, uint32_t w, uint8_t c, Layout layout, bool smooth) {
  OwnedRecord r = testing::RawRecord(i, h, w, c, layout);
  if (smooth) {
    for (size_t j = 0; j < r.payload.size(); ++j) r.payload[j] = static_cast<uint8_t>(j / 5);
  }
  return r;
}

// tests/testing's jpeg-like record, starting as a JPEG does (FF D8).
OwnedRecord JpegLike(uint64_t i, size_t n) {
  OwnedRecord r = testing::JpegLikeRecord(i, n);
  r.payload[0] = 0xff;
  if (n > 1) r.payload[1] = 0xd8;
  return r;
}

bool WriteFile(const fs::path& path, const std::string& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

bool WriteShard(const fs::path& path, const std::vector<OwnedRecord>& records,
                Compression compression, uint32_t block_size) {
  ShardWriterOptions options;
  options.compression = compression;
  options.block_size = block_size;
  absl::StatusOr<std::string> bytes = testing::EncodeShard(records, options);
  return bytes.ok() && WriteFile(path, *bytes);
}

bool WriteShards(const fs::path& dir) {
  std::vector<OwnedRecord> mixed;
  for (uint64_t i = 0; i < 12; ++i) {
    if (i % 3 == 0) mixed.push_back(Raw(i, 6, 6, 3, Layout::kHWC, false));
    if (i % 3 == 1) mixed.push_back(Raw(i, 5, 7, 1, Layout::kCHW, false));
    if (i % 3 == 2) mixed.push_back(JpegLike(i, 100 + 50 * i));
  }
  OwnedRecord labels = Raw(12, 2, 2, 4, Layout::kHWC, false);
  labels.labels = {1, -2, 3, -4, 5, -6, 7, -8};
  mixed.push_back(labels);
  OwnedRecord bare = JpegLike(13, 20);
  bare.key.clear();
  bare.labels = {};
  mixed.push_back(bare);
  mixed.push_back(Raw(14, 0, 0, 0, Layout::kHWC, false));

  std::vector<OwnedRecord> smooth;
  for (uint64_t i = 0; i < 12; ++i) smooth.push_back(Raw(i, 10, 10, 3, Layout::kHWC, true));
  smooth.push_back(JpegLike(12, 3000));  // a block zstd cannot shrink

  return WriteShard(dir / "empty.shard", {}, Compression::kNone, 4096) &&
         WriteShard(dir / "one.shard", {Raw(0, 4, 4, 3, Layout::kHWC, false)}, Compression::kNone,
                    4096) &&
         WriteShard(dir / "mixed_none.shard", mixed, Compression::kNone, 1500) &&
         WriteShard(dir / "one_block_zstd.shard", smooth, Compression::kZstd, 1 << 20) &&
         WriteShard(dir / "mixed_zstd.shard", smooth, Compression::kZstd, 1600);
}

// A dataset of `backend` written into `tmp`, its one shard moved to `to`.
bool WriteBackendShard(Backend backend, const fs::path& tmp, const fs::path& to,
                       const std::vector<OwnedRecord>& records, const Schema& schema) {
  std::error_code error;
  fs::remove_all(tmp, error);
  fs::create_directories(tmp, error);
  DatasetWriterOptions o;
  o.directory = tmp.string();
  o.schema = schema;
  backends::BackendOptions bo;
  bo.hdf5.chunk_bytes = 256;  // small files: the fuzzer mutates every byte
  bo.hdf5.row_chunk = 8;
  backends::UseBackend(&o, backend, bo);
  auto writer = DatasetWriter::Create(o);
  if (!writer.ok()) return false;
  for (const OwnedRecord& r : records) {
    if (!(*writer)->Add(r.record()).ok()) return false;
  }
  auto manifest = (*writer)->Finish();
  if (!manifest.ok() || manifest->shards.size() != 1) return false;
  fs::rename(tmp / manifest->shards[0].path, to, error);
  fs::remove_all(tmp, error);
  return !error;
}

bool WriteBackendShards(const fs::path& dir) {
  std::vector<OwnedRecord> raw, jpeg;
  for (uint64_t i = 0; i < 5; ++i) raw.push_back(Raw(i, 4, 4, 3, Layout::kHWC, false));
  for (uint64_t i = 0; i < 4; ++i) jpeg.push_back(JpegLike(i, 40 + 10 * i));
  Schema raw_schema;
  raw_schema.image = {Encoding::kRaw, Layout::kHWC, 4, 4, 3};
  raw_schema.labels = {{"label", {}}};
  Schema jpeg_schema;
  jpeg_schema.image.encoding = Encoding::kJpeg;
  jpeg_schema.labels = {{"fine", {"a", "b", "c"}}, {"coarse", {}}};
  const fs::path tmp = dir / "tmp";
  return WriteBackendShard(Backend::kLmdb, tmp, dir / "lmdb" / "raw.lmdb", raw, raw_schema) &&
         WriteBackendShard(Backend::kLmdb, tmp, dir / "lmdb" / "jpeg.lmdb", jpeg, jpeg_schema) &&
         WriteBackendShard(Backend::kHdf5, tmp, dir / "hdf5" / "raw.h5", raw, raw_schema) &&
         WriteBackendShard(Backend::kHdf5, tmp, dir / "hdf5" / "jpeg.h5", jpeg, jpeg_schema);
}

bool WriteManifests(const fs::path& dir) {
  Manifest cifar;
  cifar.schema.image = {Encoding::kRaw, Layout::kCHW, 32, 32, 3};
  cifar.schema.labels = {{"fine", {"apple", "aquarium_fish"}}, {"coarse", {"fish"}}};
  cifar.shards = {{"train-00000.shard", 25000, 77635584, 0x0000abcd},
                  {"train-00001.shard", 25000, 77635584, 0xdeadbeef}};
  cifar.pack_json = R"({"source":"cifar-100-binary","block_size":4194304,"level":-1.5})";
  Manifest folder;
  folder.backend = Backend::kLmdb;
  folder.schema.image = {Encoding::kJpeg, Layout::kHWC, 0, 0, 0};
  folder.schema.labels = {{"label", {"cat", "dog", "Zürich"}}};
  folder.shards = {{"lmdb/train-00000", 3, 1 << 20, 1}};
  Manifest hdf5 = cifar;
  hdf5.backend = Backend::kHdf5;
  hdf5.version_minor = 3;
  return WriteFile(dir / "cifar.json", SerializeManifest(cifar)) &&
         WriteFile(dir / "folder.json", SerializeManifest(folder)) &&
         WriteFile(dir / "hdf5.json", SerializeManifest(hdf5)) &&
         WriteFile(dir / "empty.json", SerializeManifest(Manifest{}));
}

// Record tables of 0, 1 and 40 records (keys repeating in the last), with
// 0, 1 and 2 label fields.
bool WriteRecordTables(const std::filesystem::path& dir) {
  int n = 0;
  for (auto [records, fields] : {std::pair{0, 0}, {1, 1}, {40, 2}}) {
    format::RecordTableBuilder builder(fields, dir.string());
    for (int i = 0; i < records; ++i) {
      const int64_t labels[2] = {i % 10, -i};
      if (!builder.Add({labels, static_cast<size_t>(fields)}, absl::StrCat("key/", i % 30)).ok()) {
        return false;
      }
    }
    std::string bytes;
    auto file = NewStringWritableFile("seed", &bytes);
    if (!builder.Write(file.get()).ok()) return false;
    std::ofstream(dir / absl::StrCat("table-", n++), std::ios::binary) << bytes;
  }
  return true;
}

// Records of testing::EveryFieldType(): absent optional fields, no and
// several array rows; checked with their CRC, without it, and recomputed.
bool WriteFieldsInputs(const std::filesystem::path& dir) {
  absl::StatusOr<Schema> schema = MakeSchema(testing::EveryFieldType());
  if (!schema.ok()) return false;
  RecordFields fields(*schema);
  for (uint64_t i = 0; i < 6; ++i) {
    const testing::FieldSample s = testing::SampleOf(
        i, testing::PatternBytes(i, 20 + i), {Encoding::kJpeg, Layout::kHWC, 3, 4, 3});
    absl::StatusOr<Record> r = fields.Build(s.key, s.Values());
    if (!r.ok()) return false;
    const uint8_t flags = i % 3 == 0 ? fuzz::kCheckCrc : i % 3 == 1 ? fuzz::kRefreshCrc : 0;
    if (!WriteFile(dir / absl::StrCat("record-", i), fuzz::FieldsInputOf(*r, flags))) return false;
  }
  return true;
}

}  // namespace
}  // namespace shardpack

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc != 2) {
    std::fprintf(stderr, "usage: shard_fuzz_seeds DIR\n");
    return 2;
  }
  fs::path dir = argv[1];
  std::error_code error;
  fs::create_directories(dir / "shard", error);
  fs::create_directories(dir / "manifest", error);
  fs::create_directories(dir / "lmdb", error);
  fs::create_directories(dir / "hdf5", error);
  fs::create_directories(dir / "record_table", error);
  fs::create_directories(dir / "fields", error);
  if (error || !shardpack::WriteShards(dir / "shard") ||
      !shardpack::WriteManifests(dir / "manifest") || !shardpack::WriteBackendShards(dir) ||
      !shardpack::WriteRecordTables(dir / "record_table") ||
      !shardpack::WriteFieldsInputs(dir / "fields")) {
    std::fprintf(stderr, "shard_fuzz_seeds: cannot write seeds into %s\n", dir.c_str());
    return 1;
  }
  return 0;
}
