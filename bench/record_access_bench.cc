// Records by index (shardpack/records.h) against raw pread()s of exactly the
// same bytes (each record's own span in its `.shard` file, from the footer
// index) in the same random order, side by side in one run.
//
//   record_access_bench make DIR --records N --record-bytes B [--no-record-table]
//                            [--fields | --fields-as-extra] [--caption-bytes C]
//   record_access_bench run DIR [--reads N] [--runs 5] [--cold] [--mmap] [--threads T]
//
// --fields writes records with fields (an image, a caption of C bytes, a
// label), which every read checks (record CRC-32C, field section, UTF-8);
// --fields-as-extra writes the same bytes as a classic dataset whose extra
// bytes are that field section, which a read hands out unchecked: the two
// side by side measure the cost of the check (docs/benchmarks.md).
//
// --cold drops the shard files from the page cache (posix_fadvise
// POSIX_FADV_DONTNEED) before every timed run of either side. Prints each
// side's median records/s over the runs and their ratio.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "bench/bench_common.h"
#include "common/posix_open.h"
#include "common/status_macros.h"
#include "format/shard_layout.h"
#include "shardpack/dataset.h"
#include "shardpack/fields.h"
#include "shardpack/records.h"
#include "shardpack/shard.h"

namespace shardpack::bench {
namespace {

enum class Kind { kClassic, kFields, kFieldsAsExtra };

struct MakeFlags {
  std::string dir;
  uint64_t records = 0;
  uint32_t bytes = 110000;
  uint32_t caption_bytes = 80;
  bool table = true;
  Kind kind = Kind::kClassic;
};

// The schema of --fields: the image, a caption, a label.
absl::StatusOr<Schema> FieldsSchema(const ImageInfo& image) {
  std::vector<Field> fields(3);
  fields[0].name = "image";
  fields[0].type = FieldType::kImage;
  fields[0].image = image;
  fields[1].name = "caption";
  fields[1].type = FieldType::kString;
  fields[2].name = "label";
  fields[2].type = FieldType::kLabel;
  return MakeSchema(std::move(fields));
}

// Raw records of `bytes` bytes (1 x bytes/3 x 3 pixels, or 32 x 32 x 3),
// pattern pixels, keys "r/<i>", labels i % 1000; with fields, a caption of
// ASCII letters.
absl::Status Make(const MakeFlags& f) {
  std::filesystem::create_directories(f.dir);
  DatasetWriterOptions o;
  o.directory = f.dir;
  const ImageInfo image = {Encoding::kRaw, Layout::kHWC, f.bytes == 3072 ? 32u : 1u,
                           f.bytes == 3072 ? 32u : f.bytes / 3, 3};
  o.schema.image = image;
  o.schema.labels = {{"label", {}}};
  o.record_table = f.table;
  SP_ASSIGN_OR_RETURN(const Schema fields_schema, FieldsSchema(image));
  if (f.kind == Kind::kFields) o.schema = fields_schema;
  RecordFields fields(fields_schema);
  SP_ASSIGN_OR_RETURN(auto writer, DatasetWriter::Create(o));
  std::vector<uint8_t> pixels(image.RawBytes());
  std::string caption(f.caption_bytes, 'a');
  uint64_t x = 88172645463325252ULL;
  for (uint64_t i = 0; i < f.records; ++i) {
    for (size_t j = 0; j + 8 <= pixels.size(); j += 8) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      std::memcpy(&pixels[j], &x, 8);
    }
    for (size_t j = 0; j < caption.size(); ++j) caption[j] = static_cast<char>('a' + (x >> j) % 26);
    const std::string key = absl::StrCat("r/", i);
    Record r{key, {static_cast<int64_t>(i % 1000)}, image, pixels, {}};
    if (f.kind != Kind::kClassic) {
      FieldValue values[3];
      for (FieldValue& v : values) v.present = true;
      values[0].image = image;
      values[0].bytes = pixels;
      values[1].bytes = {reinterpret_cast<const uint8_t*>(caption.data()), caption.size()};
      values[2].label = static_cast<int64_t>(i % 1000);
      SP_ASSIGN_OR_RETURN(r, fields.Build(key, values));
    }
    SP_RETURN_IF_ERROR(writer->Add(r));
  }
  return writer->Finish().status();
}

struct Span {
  int fd;
  uint64_t offset;
  uint32_t bytes;
};

struct RawFiles {
  std::vector<int> fds;
  std::vector<Span> spans;  // per dataset record
  uint32_t largest = 0;
  ~RawFiles() {
    for (int fd : fds) close(fd);
  }
};

// Every record's file span, from each shard's footer index (uncompressed
// shards only: a compressed record has no span of its own).
absl::Status LoadSpans(const std::string& dir, RawFiles* raw) {
  SP_ASSIGN_OR_RETURN(Manifest m, ReadManifest(dir));
  for (const ShardEntry& e : m.shards) {
    const std::string path = (std::filesystem::path(dir) / e.path).string();
    uint64_t size;
    SP_ASSIGN_OR_RETURN(int fd, common::OpenRegularFile(path, 0, &size));
    raw->fds.push_back(fd);
    SP_ASSIGN_OR_RETURN(auto file, OpenPosixFile(path));
    SP_ASSIGN_OR_RETURN(ShardIndex index, ShardIndex::Load(*file));
    for (size_t b = 0; b < index.num_blocks(); ++b) {
      const BlockInfo& block = index.block(b);
      if (block.compressed()) return absl::InvalidArgumentError("compressed shard: no spans");
      auto offsets = index.record_offsets(b);
      for (size_t k = 0; k < offsets.size(); ++k) {
        const uint32_t end = k + 1 < offsets.size() ? offsets[k + 1] : block.raw_size;
        raw->spans.push_back(
            {fd, block.offset + format::kBlockHeaderSize + offsets[k], end - offsets[k]});
        raw->largest = std::max(raw->largest, end - offsets[k]);
      }
    }
  }
  return absl::OkStatus();
}

void DropCache(const RawFiles& raw) {
  for (int fd : raw.fds) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

// Runs `body(thread, begin, end)` over `n` reads split among `threads`;
// returns the seconds taken.
template <typename Body>
double Timed(size_t n, int threads, Body body) {
  const double start = NowSeconds();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] { body(n * t / threads, n * (t + 1) / threads); });
  }
  for (std::thread& th : pool) th.join();
  return NowSeconds() - start;
}

double RawRun(const RawFiles& raw, const std::vector<uint64_t>& order, int threads) {
  return Timed(order.size(), threads, [&](size_t begin, size_t end) {
    std::vector<uint8_t> buffer(raw.largest);
    for (size_t i = begin; i < end; ++i) {
      const Span& s = raw.spans[order[i]];
      if (pread(s.fd, buffer.data(), s.bytes, static_cast<off_t>(s.offset)) != s.bytes) {
        std::fprintf(stderr, "pread failed\n");
        std::exit(1);
      }
      KeepAlive(buffer.data());
    }
  });
}

double ApiRun(const RecordReader& reader, const std::vector<uint64_t>& order, int threads) {
  return Timed(order.size(), threads, [&](size_t begin, size_t end) {
    RecordBuffer buffer;
    for (size_t i = begin; i < end; ++i) {
      if (absl::Status s = reader.Read(order[i], &buffer); !s.ok()) {
        std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
        std::exit(1);
      }
      KeepAlive(buffer.record().payload.data());
    }
  });
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct RunFlags {
  std::string dir;
  uint64_t reads = 100000;
  int runs = 5, threads = 1;
  bool cold = false, mmap = false;
};

absl::Status Run(const RunFlags& f) {
  RawFiles raw;
  SP_RETURN_IF_ERROR(LoadSpans(f.dir, &raw));
  RecordReaderOptions options;
  options.mmap = f.mmap;
  SP_ASSIGN_OR_RETURN(auto reader, RecordReader::Open(f.dir, options));
  std::vector<double> raw_rates, api_rates;
  for (int run = 0; run < f.runs; ++run) {
    std::mt19937_64 rng(run);
    std::vector<uint64_t> order(std::min<uint64_t>(f.reads, f.cold ? raw.spans.size() : f.reads));
    for (uint64_t& i : order) i = rng() % raw.spans.size();
    if (f.cold) DropCache(raw);
    raw_rates.push_back(order.size() / RawRun(raw, order, f.threads));
    if (f.cold) DropCache(raw);
    api_rates.push_back(order.size() / ApiRun(*reader, order, f.threads));
    std::fprintf(stderr, "run %d: raw pread %.0f records/s, RecordReader %.0f records/s\n", run,
                 raw_rates.back(), api_rates.back());
  }
  const double r = Median(raw_rates), a = Median(api_rates);
  std::printf("%s: %zu records, %u B each (largest), %s, %s, %d thread(s), %s\n", f.dir.c_str(),
              raw.spans.size(), raw.largest,
              reader->fields().empty() ? "no fields" : "fields (each read checked)",
              f.cold ? "cold cache" : "page cache", f.threads, f.mmap ? "mmap" : "pread");
  std::printf("median of %d runs: raw pread %.0f records/s, RecordReader %.0f records/s, "
              "ratio %.2f\n", f.runs, r, a, a / r);
  return absl::OkStatus();
}

}  // namespace
}  // namespace shardpack::bench

int main(int argc, char** argv) {
  using namespace shardpack::bench;
  CLI::App app{"Records by index against raw pread of the same records"};
  app.require_subcommand(1);
  MakeFlags m;
  CLI::App* make = app.add_subcommand("make", "Write a dataset of raw records");
  make->add_option("dir", m.dir)->required();
  make->add_option("--records", m.records)->required();
  make->add_option("--record-bytes", m.bytes, "3072 for CIFAR's 32x32x3");
  make->add_option("--caption-bytes", m.caption_bytes, "With --fields: the caption's bytes");
  bool no_table = false, with_fields = false, as_extra = false;
  make->add_flag("--no-record-table", no_table, "Write no records.idx (to measure its cost)");
  CLI::Option* fields_flag =
      make->add_flag("--fields", with_fields, "Records with fields (image, caption, label)");
  make->add_flag("--fields-as-extra", as_extra,
                 "The same bytes as a classic dataset (the field section as extra bytes)")
      ->excludes(fields_flag);
  RunFlags f;
  CLI::App* run = app.add_subcommand("run", "Time both sides");
  run->add_option("dir", f.dir)->required();
  run->add_option("--reads", f.reads, "Reads per run (cold: at most the records)");
  run->add_option("--runs", f.runs);
  run->add_option("--threads", f.threads);
  run->add_flag("--cold", f.cold, "Drop the files from the page cache before each run");
  run->add_flag("--mmap", f.mmap, "RecordReaderOptions::mmap");
  CLI11_PARSE(app, argc, argv);
  m.table = !no_table;
  m.kind = with_fields ? Kind::kFields : as_extra ? Kind::kFieldsAsExtra : Kind::kClassic;
  absl::Status s = make->parsed() ? Make(m) : Run(f);
  if (!s.ok()) {
    std::fprintf(stderr, "record_access_bench: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}
