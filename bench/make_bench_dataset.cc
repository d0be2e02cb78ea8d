// Writes the datasets of docs/benchmarks.md's "sharddump verify vs cat"
// (a program, not a test: it makes gigabytes), and those of its "Fields".
//
//   make_bench_dataset DIR [--mb 1536] [--kind imagenet|cifar]
//   make_bench_dataset DIR --from DATASET [--caption-bytes N] [--boxes N]
//
// imagenet: payloads of 100 to 120 KiB of pseudo-random bytes labelled as
// JPEG (verify does not decode them); cifar: 32x32x3 raw records, 10 classes.
// The records are tests/testing's fixtures (RawRecord, JpegLikeRecord), so
// the data is the same from run to run.
//
// --from: the records of a .shard dataset again, in its order, in blocks of
// the packer's default size, each with fields beside its image (then named "photo") and labels:
// a caption of N bytes of text ("caption", a string) and N boxes ("boxes",
// f32 [n, 4], n from 1 to 2N - 1 a record, N on average). With neither, a
// classic copy (image and labels, as the packer writes them): the reference
// the others are read beside.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>
#include <system_error>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "shardpack/dataset.h"
#include "shardpack/fields.h"
#include "shardpack/file.h"
#include "shardpack/shard.h"
#include "tests/testing/shard_fixtures.h"

namespace shardpack {
namespace {

Schema BenchSchema(bool cifar) {
  Schema schema;
  if (cifar) {
    schema.image = {Encoding::kRaw, Layout::kHWC, 32, 32, 3};
    LabelField field{"label", {}};
    for (int i = 0; i < 10; ++i) field.classes.push_back(absl::StrCat("c", i));
    schema.labels.push_back(field);
  } else {
    schema.image.encoding = Encoding::kJpeg;
    // JpegLikeRecord's two labels: i % 3 and -i.
    schema.labels.push_back({"label", {"a", "b", "c"}});
    schema.labels.push_back({"coarse", {}});
  }
  return schema;
}

absl::Status Write(const std::string& dir, uint64_t bytes, bool cifar) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat(dir, ": cannot create: ", ec.message()));
  DatasetWriterOptions options;
  options.directory = dir;
  options.schema = BenchSchema(cifar);
  options.pack_json = R"({"source":"make_bench_dataset"})";
  SP_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> writer, DatasetWriter::Create(options));
  for (uint64_t i = 0; writer->bytes() < bytes; ++i) {
    testing::OwnedRecord r = cifar ? testing::RawRecord(i, 32, 32, 3)
                                   : testing::JpegLikeRecord(i, 100 * 1024 + (i * 7919) % 20480);
    SP_RETURN_IF_ERROR(writer->Add(r.record()));
  }
  return writer->Finish().status();
}

// The fields of a --from copy: the source's image and labels, a caption,
// boxes.
std::vector<Field> CopyFields(const Schema& from, int caption_bytes, int boxes) {
  std::vector<Field> fields = FieldsOf(from);
  if (caption_bytes == 0 && boxes == 0) return fields;
  fields[0].name = "photo";
  Field f;
  if (caption_bytes > 0) {
    f.name = "caption";
    f.type = FieldType::kString;
    fields.push_back(f);
  }
  if (boxes > 0) {
    f.name = "boxes";
    f.type = FieldType::kArray;
    f.dtype = ArrayDType::kF32;
    f.shape = {0, 4};
    fields.push_back(f);
  }
  return fields;
}

absl::Status Copy(const std::string& dir, const std::string& from, int caption_bytes, int boxes) {
  SP_ASSIGN_OR_RETURN(const Manifest source, ReadManifest(from));
  if (source.backend != Backend::kShard || !source.schema.fields.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(from, ": not a classic .shard dataset"));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat(dir, ": cannot create: ", ec.message()));
  DatasetWriterOptions options;
  options.directory = dir;
  SP_ASSIGN_OR_RETURN(options.schema, MakeSchema(CopyFields(source.schema, caption_bytes, boxes)));
  options.pack_json = R"({"source":"make_bench_dataset --from"})";
  SP_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> writer, DatasetWriter::Create(options));
  RecordFields fields(options.schema);
  std::vector<FieldValue> values(fields.fields().size());
  std::string caption;
  std::vector<float> box_values;
  uint64_t i = 0;
  for (const ShardEntry& shard : source.shards) {
    SP_ASSIGN_OR_RETURN(auto file, OpenPosixFile((std::filesystem::path(from) / shard.path).string()));
    SP_ASSIGN_OR_RETURN(auto reader, ShardReader::Open(file.get()));
    for (uint64_t r = 0; r < shard.records; ++r, ++i) {
      SP_ASSIGN_OR_RETURN(Record record, reader->ReadRecord(r));
      size_t k = 0;
      values[k++] = {true, record.image, 0, record.payload};
      for (int l = 0; l < record.labels.size(); ++l) values[k++] = {true, {}, record.labels[l], {}};
      // Text of the length asked, different in every record.
      caption = absl::StrCat("record ", i, " ");
      caption.resize(size_t(caption_bytes), 'a' + char(i % 26));
      if (caption_bytes > 0) {
        values[k++] = {true, {}, 0, {reinterpret_cast<const uint8_t*>(caption.data()), caption.size()}};
      }
      box_values.assign(4 * (1 + (i * 7919) % uint64_t(std::max(2 * boxes - 1, 1))), float(i % 97));
      if (boxes > 0) {
        values[k++] = {true, {}, 0, {reinterpret_cast<const uint8_t*>(box_values.data()), 4 * box_values.size()}};
      }
      const std::string key(record.key);
      SP_ASSIGN_OR_RETURN(Record out, fields.Build(key, values));
      SP_RETURN_IF_ERROR(writer->Add(out));
    }
  }
  return writer->Finish().status();
}

}  // namespace
}  // namespace shardpack

int main(int argc, char** argv) {
  CLI::App app("Writes a benchmark dataset for sharddump verify vs cat");
  std::string dir, kind = "imagenet";
  uint64_t mb = 1536;
  app.add_option("dir", dir, "output folder")->required();
  app.add_option("--mb", mb, "dataset size in MiB")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30));
  app.add_option("--kind", kind, "imagenet or cifar")->check(CLI::IsMember({"imagenet", "cifar"}));
  std::string from;
  int caption_bytes = 0, boxes = 0;
  app.add_option("--from", from, "copy this .shard dataset's records, with fields");
  app.add_option("--caption-bytes", caption_bytes, "with --from: a caption of this many bytes")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--boxes", boxes, "with --from: this many boxes a record on average")
      ->check(CLI::Range(0, 1 << 16));
  CLI11_PARSE(app, argc, argv);
  absl::Status s = from.empty() ? shardpack::Write(dir, mb << 20, kind == "cifar")
                                : shardpack::Copy(dir, from, caption_bytes, boxes);
  if (!s.ok()) {
    std::fprintf(stderr, "make_bench_dataset: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
