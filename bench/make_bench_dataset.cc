// Writes the datasets of docs/benchmarks.md's "sharddump verify vs cat"
// (a program, not a test: it makes gigabytes).
//
//   make_bench_dataset DIR [--mb 1536] [--kind imagenet|cifar]
//
// imagenet: payloads of 100 to 120 KiB of pseudo-random bytes labelled as
// JPEG (verify does not decode them); cifar: 32x32x3 raw records, 10 classes.
// The records are tests/testing's fixtures (RawRecord, JpegLikeRecord), so
// the data is the same from run to run.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "shardpack/dataset.h"
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
  CLI11_PARSE(app, argc, argv);
  absl::Status s = shardpack::Write(dir, mb << 20, kind == "cifar");
  if (!s.ok()) {
    std::fprintf(stderr, "make_bench_dataset: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
