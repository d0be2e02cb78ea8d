// shard_bench: how fast the `.shard` format is written and scanned, each
// figure next to what the machine itself does with the same bytes: memcpy
// for the scans; for the write, `dd ... conv=fsync` to the same directory and
// an in-process loop of 4 MiB write() calls and fsync.
//
// Cases: CIFAR-like records (3072-byte raw 32x32x3 images) and
// ImageNet-like ones (112640-byte JPEG-sized payloads of pseudo-random
// bytes; the format never decodes them). Single-threaded on purpose: the
// aims are per core. docs/benchmarks.md holds the figures and
// bench/run_shard_bench.sh the settings used for them.
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/bench_common.h"
#include "common/posix_io.h"
#include "shardpack/crc32c.h"
#include "shardpack/file.h"
#include "shardpack/record.h"
#include "shardpack/shard.h"

namespace shardpack::bench {
namespace {

// The temporary directory this run made, removed on every way out.
std::string g_temp_dir;

void RemoveTempDir() {
  if (g_temp_dir.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(g_temp_dir, ignored);
  g_temp_dir.clear();
}

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "shard_bench: %s\n", message.c_str());
  RemoveTempDir();
  std::exit(1);
}

void Check(const absl::Status& status) {
  if (!status.ok()) Fail(std::string(status.ToString()));
}

template <typename T>
T Unwrap(absl::StatusOr<T> value) {
  Check(value.status());
  return *std::move(value);
}

struct Options {
  std::string dir;
  uint64_t size_mib = 512;
  int repeats = 5;
  uint32_t block_kib = 4096;
  std::vector<std::string> cases = {"cifar", "imagenet"};
  bool zstd = false;
  bool memory_only = false;
  bool json = false;
};

// The shape of one case's records.
struct CaseSpec {
  std::string name;
  Encoding encoding;
  uint32_t height;
  uint32_t width;
  uint8_t channels;
  size_t payload_bytes;
};

// CIFAR-10's 32x32x3 pixels, stored raw (a JPEG re-encode costs accuracy).
const CaseSpec kCifar = {"cifar 3 KB", Encoding::kRaw, 32, 32, 3, 3072};
// An ImageNet training JPEG is ~110 KB on average; its typical shape.
const CaseSpec kImageNet = {"imagenet 110 KB", Encoding::kJpeg, 375, 500, 3, 112640};

// Heap memory written once at allocation, so timed runs take no page faults.
class Buffer {
 public:
  explicit Buffer(size_t size)
      : data_(std::make_unique_for_overwrite<uint8_t[]>(size)), size_(size) {
    std::memset(data_.get(), 1, size);
  }
  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t size_;
};

// A WritableFile that fills a Buffer from the start; lets a writer run with
// no I/O at all, and leaves a complete shard in memory.
class BufferFile : public WritableFile {
 public:
  explicit BufferFile(Buffer* buffer) : buffer_(buffer) {}
  const std::string& name() const override { return name_; }
  absl::Status Append(std::span<const uint8_t> data) override {
    if (data.size() > buffer_->size() - used_) {
      return absl::ResourceExhaustedError("bench buffer too small for the shard");
    }
    std::memcpy(buffer_->data() + used_, data.data(), data.size());
    used_ += data.size();
    return absl::OkStatus();
  }
  absl::Status Sync() override { return absl::OkStatus(); }
  size_t used() const { return used_; }

 private:
  std::string name_ = "memory.shard";
  Buffer* buffer_;
  size_t used_ = 0;
};

// Records of one case and the bytes they view. Every payload is distinct.
struct Dataset {
  std::unique_ptr<Buffer> pool;
  std::vector<std::string> keys;
  std::vector<Record> records;
  uint64_t payload_bytes = 0;
};

// splitmix64 words; with `compressible` each byte keeps 4 random bits, so
// zstd has something to find (about half) and real work to do.
void FillPseudoRandom(uint8_t* p, size_t n, uint64_t seed, bool compressible) {
  uint64_t x = seed;
  const uint64_t mask = compressible ? 0x0f0f0f0f0f0f0f0fULL : ~0ULL;
  for (size_t i = 0; i < n; i += 8) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z = (z ^ (z >> 31)) & mask;
    std::memcpy(p + i, &z, std::min<size_t>(8, n - i));
  }
}

Dataset MakeDataset(const CaseSpec& spec, uint64_t target_bytes, bool compressible) {
  // Each record adds a 24-byte header, a label and a short key.
  const uint64_t count = std::max<uint64_t>(1, target_bytes / (spec.payload_bytes + 64));
  Dataset d;
  d.payload_bytes = count * spec.payload_bytes;
  d.pool = std::make_unique<Buffer>(d.payload_bytes);
  FillPseudoRandom(d.pool->data(), d.payload_bytes, 42, compressible);
  d.keys.reserve(count);
  d.records.reserve(count);
  char key[64];
  for (uint64_t i = 0; i < count; ++i) {
    const unsigned long long n = i;
    if (spec.encoding == Encoding::kRaw) {
      std::snprintf(key, sizeof(key), "train/%08llu", n);
    } else {
      std::snprintf(key, sizeof(key), "n%08llu/n%08llu_%llu.JPEG", 1440764 + n % 1000,
                    1440764 + n % 1000, n);
    }
    d.keys.emplace_back(key);
  }
  for (uint64_t i = 0; i < count; ++i) {
    Record r;
    r.key = d.keys[i];
    r.labels = {static_cast<int64_t>(i % (spec.encoding == Encoding::kRaw ? 10 : 1000))};
    r.image = {spec.encoding, Layout::kHWC, spec.height, spec.width, spec.channels};
    r.payload = {d.pool->data() + i * spec.payload_bytes, spec.payload_bytes};
    d.records.push_back(r);
  }
  return d;
}

// Room for the records, their padding, every block's alignment and the footer.
size_t ShardCapacity(const Dataset& d, uint32_t block_size) {
  const uint64_t n = d.records.size();
  const uint64_t blocks = (d.payload_bytes + n * 128) / block_size + n / 1024 + 2;
  return d.payload_bytes + n * 128 + blocks * (2 * kShardAlignment) + (1 << 20);
}

void AddRecords(WritableFile* file, const Dataset& d, const ShardWriterOptions& options) {
  auto writer = Unwrap(ShardWriter::Create(file, options));
  for (const Record& r : d.records) Check(writer->Add(r));
  Check(writer->Finish());
}

// One pass as a training reader makes it: every block read and checked
// (header CRC, then the payload's CRC-32C), every record parsed, one byte of
// each payload touched. Fails unless it saw `expected` records.
void ScanShard(const RandomAccessFile& file, uint64_t expected) {
  auto reader = Unwrap(ShardReader::Open(&file));
  uint64_t records = 0;
  uint8_t sink = 0;
  const size_t blocks = reader->index().num_blocks();
  for (size_t b = 0; b < blocks; ++b) {
    BlockView view = Unwrap(reader->ReadBlock(b));
    for (size_t i = 0; i < view.size(); ++i) {
      Record r = Unwrap(view.record(i));
      if (!r.payload.empty()) sink ^= r.payload[0];
    }
    records += view.size();
  }
  KeepAlive(&sink);
  if (records != expected) Fail("scan saw a wrong number of records");
}

double TimeMemcpy(Buffer* dst, const uint8_t* src, size_t n) {
  const double start = NowSeconds();
  std::memcpy(dst->data(), src, n);
  KeepAlive(dst->data());
  return NowSeconds() - start;
}

// Removes `path` if present and flushes the file system, so that a timed
// write starts with no one else's writeback (or its own old file's) pending.
void Quiesce(const std::string& dir, const std::string& path) {
  unlink(path.c_str());
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    syncfs(fd);
    close(fd);
  }
}

// The reference write: the real dd, same bytes rounded up to 4 MiB, same
// directory, fsync before it exits (as AtomicFile::Commit does).
double TimeDd(const std::string& path, uint64_t bytes) {
  const uint64_t count = (bytes + (4 << 20) - 1) / (4 << 20);
  const std::string command = "dd if=/dev/zero of='" + path +
                              "' bs=4M count=" + std::to_string(count) + " conv=fsync status=none";
  const double start = NowSeconds();
  const int rc = std::system(command.c_str());
  const double seconds = NowSeconds() - start;
  if (rc != 0) Fail("`" + command + "` failed");
  return seconds;
}

uint64_t DdBytes(uint64_t bytes) { return (bytes + (4 << 20) - 1) / (4 << 20) * (4 << 20); }

// What dd does, in-process and with the shard's own (non-zero) bytes: 4 MiB
// write() calls, then fsync. Tells whether dd's process start or its zeros
// tilt the comparison.
double TimeWriteLoop(const std::string& path, std::span<const uint8_t> data) {
  const double start = NowSeconds();
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Fail("cannot create " + path);
  for (size_t done = 0; done < data.size(); done += 4 << 20) {
    const auto chunk = data.subspan(done, std::min<size_t>(4 << 20, data.size() - done));
    const absl::Status written = shardpack::common::WriteFull(fd, path, chunk);
    if (!written.ok()) Fail(std::string(written.message()));
  }
  const absl::Status synced = shardpack::common::SyncFile(fd, path);
  if (!synced.ok()) Fail(std::string(synced.message()));
  if (close(fd) != 0) Fail("close of " + path + " failed");
  return NowSeconds() - start;
}

template <typename F>
double Timed(F&& f) {
  const double start = NowSeconds();
  f();
  return NowSeconds() - start;
}

// One case's records, the shard they make (built in memory once), and a
// buffer as large for memcpy and for writes with no I/O.
struct CaseData {
  CaseData(const CaseSpec& case_spec, const Options& o, Compression compression)
      : spec(case_spec),
        data(MakeDataset(case_spec, o.size_mib << 20, compression != Compression::kNone)) {
    options.block_size = o.block_kib * 1024;
    options.compression = compression;
    shard_buffer = std::make_unique<Buffer>(ShardCapacity(data, options.block_size));
    copy = std::make_unique<Buffer>(shard_buffer->size());
    BufferFile built(shard_buffer.get());
    AddRecords(&built, data, options);
    shard = {shard_buffer->data(), built.used()};
  }

  double Memcpy(const uint8_t* src, size_t n) { return TimeMemcpy(copy.get(), src, n); }
  double WriteToMemory() {
    return Timed([&] {
      BufferFile out(copy.get());
      AddRecords(&out, data, options);
    });
  }

  const CaseSpec& spec;
  Dataset data;
  ShardWriterOptions options;
  std::unique_ptr<Buffer> shard_buffer;
  std::unique_ptr<Buffer> copy;
  std::span<const uint8_t> shard;
};

// A row of `c`, filled by running `measured` and `reference` side by side.
Row Compare(const CaseData& c, const Options& o, std::string measurement, uint64_t bytes,
            std::string reference, uint64_t reference_bytes,
            const std::function<double()>& measured, const std::function<double()>& reference_run) {
  Row row;
  row.case_name = c.spec.name;
  row.measurement = std::move(measurement);
  row.reference = std::move(reference);
  const bool gigabytes = row.reference == "memcpy";
  row.unit = gigabytes ? "GB/s" : "MB/s";
  row.unit_bytes = gigabytes ? 1e9 : 1e6;
  row.bytes = bytes;
  row.reference_bytes = reference_bytes;
  SideBySide(o.repeats, measured, reference_run, &row.measured, &row.reference_runs);
  return row;
}

// Scans and writes of the uncompressed shard held in memory.
void MemoryRows(CaseData& c, const Options& o, std::vector<Row>* rows) {
  const uint64_t n = c.data.records.size();
  const size_t bytes = c.shard.size();
  auto memcpy_shard = [&] { return c.Memcpy(c.shard.data(), bytes); };
  auto file = NewMemoryFile("memory.shard", c.shard);
  rows->push_back(Compare(
      c, o, "scan, memory", bytes, "memcpy", bytes,
      [&] { return Timed([&] { ScanShard(*file, n); }); }, memcpy_shard));
  // The checksum alone: one CRC-32C over the whole shard, as a verifier
  // computes the manifest's file checksum.
  rows->push_back(Compare(
      c, o, "crc32c alone, memory", bytes, "memcpy", bytes,
      [&] {
        return Timed([&] {
          uint32_t crc = Crc32c(c.shard);
          KeepAlive(&crc);
        });
      },
      memcpy_shard));
  rows->push_back(Compare(
      c, o, "write, memory (no I/O)", bytes, "memcpy", bytes, [&] { return c.WriteToMemory(); },
      memcpy_shard));
}

// The shard written to `dir` as the packer writes it, then scanned from the
// page cache. Leaves nothing behind.
void DiskRows(CaseData& c, const Options& o, const std::string& dir, std::vector<Row>* rows) {
  const uint64_t n = c.data.records.size();
  const size_t bytes = c.shard.size();
  const std::string path = dir + "/bench.shard";
  const std::string other = dir + "/reference.bin";
  auto write_shard = [&] {
    Quiesce(dir, path);
    return Timed([&] {
      auto file = Unwrap(AtomicFile::Create(path));
      AddRecords(file.get(), c.data, c.options);
      Check(file->Commit());
    });
  };
  // Each reference run leaves its file until the next run's Quiesce, so
  // that its deletion is never timed.
  rows->push_back(
      Compare(c, o, "write, file + fsync", bytes, "dd", DdBytes(bytes), write_shard, [&] {
        Quiesce(dir, other);
        return TimeDd(other, bytes);
      }));
  rows->push_back(Compare(c, o, "write, file + fsync", bytes, "write()", bytes, write_shard, [&] {
    Quiesce(dir, other);
    return TimeWriteLoop(other, c.shard);
  }));
  unlink(other.c_str());

  // The file was just written through the page cache, so it is cached; one
  // untimed pass makes sure of it.
  ScanShard(*Unwrap(OpenPosixFile(path)), n);
  auto memcpy_shard = [&] { return c.Memcpy(c.shard.data(), bytes); };
  rows->push_back(Compare(
      c, o, "scan, pread (cached)", bytes, "memcpy", bytes,
      [&] { return Timed([&] { ScanShard(*Unwrap(OpenPosixFile(path)), n); }); }, memcpy_shard));
  // A fresh mapping each run, as a reader maps each shard each epoch: the
  // page faults and the munmap are part of the cost.
  rows->push_back(Compare(
      c, o, "scan, mmap (cached)", bytes, "memcpy", bytes,
      [&] { return Timed([&] { ScanShard(*Unwrap(OpenMappedFile(path)), n); }); }, memcpy_shard));
  unlink(path.c_str());
}

// Uncompressed shard, in memory and on disk.
void RunCase(const CaseSpec& spec, const Options& o, const std::string& dir,
             std::vector<Row>* rows) {
  CaseData c(spec, o, Compression::kNone);
  std::fprintf(stderr, "%s: %zu records, %.1f MiB shard\n", spec.name.c_str(),
               c.data.records.size(), c.shard.size() / 1048576.0);
  MemoryRows(c, o, rows);
  if (!o.memory_only) DiskRows(c, o, dir, rows);
}

// zstd-compressed blocks, in memory only (the disk adds nothing to the
// compression cost). Rates count raw (decompressed) bytes; the reference
// copies the payloads, a little fewer bytes, which rates make comparable.
void RunZstdCase(const CaseSpec& spec, const Options& o, std::vector<Row>* rows) {
  CaseData c(spec, o, Compression::kZstd);
  auto file = NewMemoryFile("memory.shard", c.shard);
  uint64_t raw = 0;
  const ShardIndex index = Unwrap(ShardIndex::Load(*file));
  for (const BlockInfo& b : index.blocks()) raw += b.raw_size;
  std::fprintf(stderr, "%s, zstd: %.1f MiB raw, %.1f MiB stored\n", spec.name.c_str(),
               raw / 1048576.0, c.shard.size() / 1048576.0);
  const uint64_t n = c.data.records.size();
  const uint64_t payload = c.data.payload_bytes;
  auto memcpy_payloads = [&] { return c.Memcpy(c.data.pool->data(), payload); };
  rows->push_back(Compare(
      c, o, "scan, memory, zstd", raw, "memcpy", payload,
      [&] { return Timed([&] { ScanShard(*file, n); }); }, memcpy_payloads));
  rows->push_back(Compare(
      c, o, "write, memory, zstd", raw, "memcpy", payload, [&] { return c.WriteToMemory(); },
      memcpy_payloads));
}

// The 1-minute load average: how busy the (shared) machine was.
std::string LoadAverage() {
  double load[1] = {-1};
  return getloadavg(load, 1) == 1 ? std::to_string(load[0]).substr(0, 4) : "-1";
}

std::vector<Fact> Facts(const Options& o, const std::string& dir, const std::string& command) {
  const MountInfo mount = MountOf(dir);
  std::vector<Fact> facts = {
      {"command", "command", command},
      {"cpu", "cpu", CpuModel()},
      {"cpus", "usable cpus (uses one)", std::to_string(UsableCpus()), true},
      {"crc32c_hardware", "crc32c hardware (SSE4.2)",
       Crc32cIsHardwareAccelerated() ? "true" : "false", true},
      {"dir", "target dir", o.memory_only ? "(memory only)" : dir},
      {"file_system", "file system",
       o.memory_only ? "-"
                     : mount.fs_type + " (" + mount.source + " on " + mount.mount_point + ")"},
      {"size_mib", "bytes per case (MiB)", std::to_string(o.size_mib), true},
      {"block_kib", "block size (KiB)", std::to_string(o.block_kib), true},
      {"repeats", "runs per figure", std::to_string(o.repeats), true},
      {"load_before", "load average before", LoadAverage(), true},
  };
#ifdef NDEBUG
  facts.push_back({"ndebug", "NDEBUG build", "true", true});
#else
  facts.push_back({"ndebug", "NDEBUG build", "false", true});
#endif
  return facts;
}

// Fills `o` from the command line. Returns -1 to go on, or the exit code:
// 0 after --help, 2 for a usage error (as the tools do).
int ParseOptions(int argc, char** argv, Options* o) {
  const char* tmp = std::getenv("TMPDIR");
  o->dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  CLI::App app{"Writes and scans .shard files, each figure next to memcpy, dd or write()."};
  app.add_option("--dir", o->dir,
                 "Directory on the disk to measure; a temporary subdirectory is made and "
                 "removed (default: $TMPDIR or /tmp)");
  app.add_option("--size-mib", o->size_mib, "Shard size per case in MiB (default 512)")
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--repeats", o->repeats, "Runs per figure; the median is reported (default 5)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--block-kib", o->block_kib, "Block size in KiB (default 4096)")
      ->check(CLI::Range(4, 1 << 20));
  app.add_option("--cases", o->cases, "Record sizes to run (default: cifar imagenet)")
      ->check(CLI::IsMember({"cifar", "imagenet"}));
  app.add_flag("--zstd", o->zstd, "Add zstd rows (memory only, compressible payloads)");
  app.add_flag("--memory-only", o->memory_only, "Skip every row that touches the disk");
  app.add_flag("--json", o->json, "Print JSON instead of the table");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return -1;
}

int Main(int argc, char** argv) {
  Options o;
  if (int code = ParseOptions(argc, argv, &o); code >= 0) return code;
  std::string command = "shard_bench";
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];

  std::string dir;
  if (!o.memory_only) {
    if (o.dir.find('\'') != std::string::npos) Fail("--dir may not contain a quote");
    std::string pattern = o.dir + "/shard_bench.XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) Fail("cannot create a directory in " + o.dir);
    dir = pattern;
    g_temp_dir = dir;
    if (MountOf(dir).fs_type == "tmpfs") {
      std::fprintf(stderr, "shard_bench: warning: %s is on tmpfs; dd and fsync measure memory\n",
                   dir.c_str());
    }
  }
  std::vector<Fact> facts = Facts(o, dir, command);
  std::vector<Row> rows;
  for (const std::string& name : o.cases) {
    const CaseSpec& spec = name == "cifar" ? kCifar : kImageNet;
    RunCase(spec, o, dir, &rows);
    if (o.zstd) RunZstdCase(spec, o, &rows);
  }
  RemoveTempDir();
  facts.push_back({"load_after", "load average after", LoadAverage(), true});
  if (o.json) {
    PrintJson(stdout, facts, rows);
  } else {
    PrintTable(stdout, facts, rows);
  }
  return 0;
}

}  // namespace
}  // namespace shardpack::bench

int main(int argc, char** argv) { return shardpack::bench::Main(argc, argv); }
