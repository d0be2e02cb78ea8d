// shardbench end to end: JSON fields, --order-out, errors.
#include <sys/stat.h>
#include <turbojpeg.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "shardpack/dataset.h"
#include "tests/testing/jpeg_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Pixel k of record i in MakeDataset(dir, /*varied=*/true).
uint8_t VariedPixel(int i, size_t k) { return static_cast<uint8_t>(i * 7 + k * 13); }

// 300 raw 8x8x3 records, label i % 10; every pixel 7, or VariedPixel.
std::string MakeDataset(const testing::TempDir& dir, bool varied = false,
                        const std::string& name = "ds") {
  std::string path = dir.Join(name);
  std::filesystem::create_directories(path);
  DatasetWriterOptions o;
  o.directory = path;
  o.shard.block_size = 16 << 10;
  o.schema.image = {Encoding::kRaw, Layout::kHWC, 8, 8, 3};
  o.schema.labels = {{"label", {}}};
  auto writer = DatasetWriter::Create(o);
  EXPECT_TRUE(writer.ok());
  std::vector<uint8_t> pixels(8 * 8 * 3, 7);
  for (int i = 0; i < 300; ++i) {
    for (size_t k = 0; varied && k < pixels.size(); ++k) pixels[k] = VariedPixel(i, k);
    std::string key = absl::StrCat(i);
    EXPECT_TRUE((*writer)->Add({key, {i % 10}, o.schema.image, pixels, {}}).ok());
  }
  EXPECT_TRUE((*writer)->Finish().ok());
  return path;
}

TEST(ShardbenchTest, JsonHasTheDocumentedFieldsAndOrderOutCoversEachRecordOnce) {
  testing::TempDir dir;
  std::string ds = MakeDataset(dir), order = dir.Join("order.txt");
  testing::RunResult r = testing::Run({SHARDBENCH_PATH, ds, "--epochs", "2", "--batch-size", "30",
                                       "--transform", "cifar-train:8", "--json", "-q",
                                       "--compare-raw", "--order-out", order});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* field : {"images_per_s", "mb_per_s", "batches", "epochs", "peak_rss_mb",
                            "raw_mb_per_s", "raw_ratio"}) {
    EXPECT_TRUE(j.contains(field)) << field;
  }
  for (const char* stage : {"io", "transform", "consumer"}) EXPECT_TRUE(j["wait_s"].contains(stage));
  EXPECT_EQ(j["batches"], 20);
  std::ifstream in(order);
  std::set<std::pair<int, int>> seen;  // (epoch, record)
  int lines = 0, epoch, batch, slot, record, label;
  while (in >> epoch >> batch >> slot >> record >> label) {
    ++lines;
    EXPECT_EQ(label, record % 10);
    EXPECT_TRUE(seen.insert({epoch, record}).second) << "record " << record << " twice";
  }
  EXPECT_EQ(lines, 600);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The old --order-out opened FILE with fopen("w") and --save-batch wrote
// FILE.partial with O_TRUNC: both followed a planted link and truncated what
// it named.
TEST(ShardbenchTest, SaveBatchAndOrderOutNeverWriteThroughAPlantedLink) {
  testing::TempDir dir;
  const std::string ds = MakeDataset(dir), outside = dir.Join("outside.txt");
  const std::string order = dir.Join("order.txt"), sheet = dir.Join("batch.png");
  std::ofstream(outside) << "keep";
  fs::create_symlink(outside, sheet + ".partial");
  fs::create_symlink(outside, order + ".partial");
  const std::vector<std::string> run = {SHARDBENCH_PATH, ds,           "--batch-size", "30",
                                        "-q",            "--order-out", order,          "--save-batch",
                                        sheet};
  testing::RunResult r = testing::Run(run);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFile(outside), "keep");
  EXPECT_THAT(ReadFile(sheet), ::testing::StartsWith("\x89PNG"));
  EXPECT_FALSE(ReadFile(order).empty());
  // Names in use (links to the user's file here) are kept without --overwrite.
  for (const std::string& path : {order, sheet}) {
    fs::remove(path);
    fs::create_symlink(outside, path);
  }
  r = testing::Run(run);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("already exists; use --overwrite to replace it"));
  EXPECT_TRUE(fs::is_symlink(order) && fs::is_symlink(sheet));
  std::vector<std::string> overwrite = run;
  overwrite.push_back("--overwrite");
  r = testing::Run(overwrite);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::is_symlink(order) || fs::is_symlink(sheet));
  EXPECT_EQ(ReadFile(outside), "keep");
}

// The steady figures start after --warmup batches; the ring is the reader's
// choice unless given.
TEST(ShardbenchTest, SteadyFiguresLeaveTheWarmupBatchesOut) {
  testing::TempDir dir;
  std::string ds = MakeDataset(dir);
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {SHARDBENCH_PATH, ds,      "--epochs", "2", "--batch-size",
                                     "30",            "--json", "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    testing::RunResult r = testing::Run(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  nlohmann::json j = run({"--warmup", "5", "--threads", "2"});
  EXPECT_EQ(j["warmup_batches"], 5);
  EXPECT_EQ(j["steady_samples"], 600 - 5 * 30);
  EXPECT_GT(j["steady_images_per_s"].get<double>(), 0);
  EXPECT_GT(j["steady_cpu_us_per_image"].get<double>(), 0);
  EXPECT_EQ(j["ring_slots"], 6);  // 30 8x8x3 images a batch, 2 workers: a slot each and 4 more
  j = run({"--threads", "20"});
  EXPECT_EQ(j["ring_slots"], 24);  // a slot a worker, and four more
  j = run({"--warmup", "20", "--ring-slots", "3"});
  EXPECT_EQ(j["steady_samples"], 0);
  EXPECT_EQ(j["steady_images_per_s"], 0);
  EXPECT_EQ(j["ring_slots"], 3);
  // For people, a steady part of a few ms gets no figures: its CPU time is
  // not measurable (more cores busy than the machine has, once).
  testing::RunResult r = testing::Run({SHARDBENCH_PATH, ds, "--epochs", "2", "--batch-size",
                                       "30", "--warmup", "18"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("steady         60 samples in "));
  EXPECT_THAT(r.out, HasSubstr(" s after the first 18 batches: too short to measure"));
  EXPECT_THAT(r.err, HasSubstr("too short for a stable figure"));
}

TEST(ShardbenchTest, NotADatasetIsOneLineAndExitOne) {
  testing::RunResult r = testing::Run({SHARDBENCH_PATH, "/nonexistent/ds"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("shardbench: "));
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/ds"));
  EXPECT_EQ(testing::Run({SHARDBENCH_PATH}).exit_code, 2);
}

// --cache-bytes and --cache-dir: a bad value names the flag (it was "'x'
// is not a size"), and an empty one is refused (it was taken as the
// default, silently).
TEST(ShardbenchTest, CacheFlagsNameThemselvesAndRefuseEmptyValues) {
  const std::string hint = "\nRun with --help for more information.\n";
  struct Case {
    std::vector<std::string> flags;
    std::string err;
  };
  for (const Case& c : std::vector<Case>{
           {{"--cache-bytes", "x"},
            "shardbench: --cache-bytes: 'x' is not a size in 0 B or more (bytes, or a number "
            "with KiB, MiB, GiB, K, M, G, kB, MB or GB)"},
           {{"--cache-bytes", ""},
            "shardbench: --cache-bytes: '' is not a size in 0 B or more (bytes, or a number "
            "with KiB, MiB, GiB, K, M, G, kB, MB or GB)"},
           {{"--cache-bytes", "-1"}, "shardbench: --cache-bytes: '-1' is not a size"},
           {{"--cache-dir", ""},
            "shardbench: --cache-dir: '' is not a folder (leave the flag out for the default)"},
       }) {
    std::vector<std::string> argv = {SHARDBENCH_PATH, "/nonexistent/ds"};
    argv.insert(argv.end(), c.flags.begin(), c.flags.end());
    testing::RunResult r = testing::Run(argv);
    EXPECT_EQ(r.exit_code, 2) << c.flags[0];
    EXPECT_THAT(r.err, ::testing::StartsWith(c.err));
    EXPECT_THAT(r.err, ::testing::EndsWith(hint));
  }
  testing::TempDir dir;
  testing::RunResult ok = testing::Run({SHARDBENCH_PATH, MakeDataset(dir), "--cache-bytes", "0",
                                        "--cache-dir", dir.Join("cache"), "-q"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// `shardbench ... --json | head -c 1`: the report's reader has gone; the
// run ends quietly with 0.
TEST(ShardbenchTest, AClosedStdoutEndsQuietlyWithZero) {
  testing::TempDir dir;
  const std::string ds = MakeDataset(dir);
  for (const bool ignored : {false, true}) {
    for (const bool json : {false, true}) {
      std::vector<std::string> argv = {SHARDBENCH_PATH, ds, "-q"};
      if (json) argv.push_back("--json");
      testing::RunResult r = testing::Run(argv,
                                          [ignored] { testing::StdoutToClosedPipe(ignored); });
      EXPECT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(r.err, "");
    }
  }
}

// A dataset path with ESC[31m, a newline and a byte that is not UTF-8: the
// text report printed it raw, and --json ended in std::terminate (SIGABRT)
// when nlohmann's dump() met the byte. The text is escaped; JSON holds
// U+FFFD in the byte's place.
TEST(ShardbenchTest, OddPathIsEscapedInTextAndReplacedInJson) {
  testing::TempDir dir;
  const std::string odd = dir.Join("d\x1b[31m\n\xff");
  std::filesystem::rename(MakeDataset(dir), odd);
  testing::RunResult text = testing::Run({SHARDBENCH_PATH, odd, "--batch-size", "100", "-q"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, ::testing::StartsWith("dataset        " +
                                              dir.Join("d\\x1b[31m\\n\\xff") + "  (1 shards, "));
  testing::RunResult json =
      testing::Run({SHARDBENCH_PATH, odd, "--batch-size", "100", "--json", "-q"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["path"], dir.Join("d\x1b[31m\n\xef\xbf\xbd"));
}

// --compare-memcpy copies the delivered samples' stored pixels in the
// reader's order: its fields are there and positive, and the bytes it folded
// are every record's pixels three times (3 epochs of all 300 records, in
// whatever order): the XOR of each record's words once.
TEST(ShardbenchTest, CompareMemcpyReportsItsFieldsBesideTheReader) {
  testing::TempDir dir;
  std::string ds = MakeDataset(dir, /*varied=*/true);
  testing::RunResult r =
      testing::Run({SHARDBENCH_PATH, ds, "--epochs", "3", "--batch-size", "30", "--threads", "2",
                    "--transform", "cifar-train:8", "--json", "-q", "--compare-memcpy"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* field : {"memcpy_seconds", "memcpy_ns_per_image", "memcpy_gb_per_s",
                            "memcpy_threads_seconds", "memcpy_threads_ns_per_image",
                            "memcpy_cpu_ratio"}) {
    ASSERT_TRUE(j.contains(field)) << field;
    EXPECT_GT(j[field].get<double>(), 0) << field;
  }
  EXPECT_EQ(j["memcpy_images"], j["samples"]);
  EXPECT_EQ(j["memcpy_images"], 900);
  EXPECT_EQ(j["memcpy_image_bytes"], 8 * 8 * 3);
  EXPECT_EQ(j["memcpy_threads"], 2);
  EXPECT_EQ(j["memcpy_order"], "reader epoch plan");
  uint64_t fold = 0;
  for (int i = 0; i < 300; ++i) {
    for (size_t w = 0; w < 8 * 8 * 3 / 8; ++w) {
      uint64_t word = 0;
      for (size_t b = 0; b < 8; ++b) word |= uint64_t{VariedPixel(i, w * 8 + b)} << (8 * b);
      fold ^= word;
    }
  }
  EXPECT_EQ(j["memcpy_xor_fold"], absl::StrFormat("%016x", fold));
  EXPECT_FALSE(j.contains("raw_ratio"));

  testing::RunResult text = testing::Run(
      {SHARDBENCH_PATH, ds, "--epochs", "1", "--batch-size", "32", "-q", "--compare-memcpy"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("ns per image on 1 thread"));
  EXPECT_THAT(text.out, HasSubstr("reader/memcpy"));
}

// A JPEG dataset has no fixed pixel bytes to copy: refused before the run,
// naming the dataset.
TEST(ShardbenchTest, CompareMemcpyOfJpegRecordsIsRefused) {
  testing::TempDir dir;
  std::string path = dir.Join("jpeg");
  std::filesystem::create_directories(path);
  DatasetWriterOptions o;
  o.directory = path;
  o.schema.image.encoding = Encoding::kJpeg;
  o.schema.labels = {{"label", {}}};
  auto writer = DatasetWriter::Create(o);
  ASSERT_TRUE(writer.ok()) << writer.status();
  std::vector<uint8_t> jpeg = testing::TjSceneJpeg(16, 16, TJSAMP_420);
  for (int i = 0; i < 8; ++i) {
    ImageInfo image = {Encoding::kJpeg, Layout::kHWC, 16, 16, 3};
    ASSERT_TRUE((*writer)->Add({absl::StrCat(i), {i % 2}, image, jpeg, {}}).ok());
  }
  ASSERT_TRUE((*writer)->Finish().ok());
  testing::RunResult r = testing::Run({SHARDBENCH_PATH, path, "--batch-size", "4",
                                       "--transform", "center:8", "-q", "--compare-memcpy"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(path));
  EXPECT_THAT(r.err, HasSubstr("--compare-memcpy copies raw pixels"));
  EXPECT_EQ(r.out, "");  // nothing was measured
  // Without the flag the same dataset runs.
  EXPECT_EQ(testing::Run({SHARDBENCH_PATH, path, "--batch-size", "4", "--transform", "center:8",
                          "-q"}).exit_code, 0);
}

// --layout and --dtype are parsed by the library's ParseOutputLayout and
// ParseDType (any case): an unknown name is a usage error listing the names.
TEST(ShardbenchTest, UnknownLayoutOrDtypeIsAUsageErrorListingTheNames) {
  testing::RunResult r = testing::Run({SHARDBENCH_PATH, "/nonexistent/ds", "--layout", "nwhc"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("shardbench: unknown layout 'nwhc' (nhwc, nchw)"));
  r = testing::Run({SHARDBENCH_PATH, "/nonexistent/ds", "--dtype", "float16"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("shardbench: unknown dtype 'float16' (uint8, float32)"));
  // A known name in another case is that name: the run gets as far as the path.
  r = testing::Run({SHARDBENCH_PATH, "/nonexistent/ds", "--layout", "NCHW"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/ds"));
}

// --device stages every batch to the GPU as a training loop would; without
// one (CI) the batches stay on the host, the same ones, and stderr says why.
TEST(ShardbenchTest, DeviceStagesTheBatchesOrSaysWhyItCannot) {
  testing::TempDir dir;
  const std::string ds = MakeDataset(dir, /*varied=*/true);
  const std::vector<std::string> run = {SHARDBENCH_PATH, ds,    "--epochs", "2", "--batch-size",
                                        "30",           "--json", "-q"};
  testing::RunResult host = testing::Run(run);
  ASSERT_EQ(host.exit_code, 0) << host.err;
  std::vector<std::string> args = run;
  args.insert(args.end(), {"--device", "0"});
  testing::RunResult device = testing::Run(args);
  ASSERT_EQ(device.exit_code, 0) << device.err;
  nlohmann::json h = nlohmann::json::parse(host.out), d = nlohmann::json::parse(device.out);
  EXPECT_EQ(h["device"], "host");
  EXPECT_EQ(d["samples"], 600);
  if (d["device"] == "host") {
    EXPECT_THAT(device.err, HasSubstr("no CUDA device 0"));
    EXPECT_THAT(device.err, HasSubstr("batches stay in host memory"));
    EXPECT_EQ(d["xor_fold"], h["xor_fold"]) << "the same batches, on the host";
  } else {
    EXPECT_EQ(d["device"], "cuda:0");
    EXPECT_EQ(device.err, "");
    EXPECT_EQ(d["output_bytes"], h["output_bytes"]);
    // float16 made on the device: 2 bytes a value.
    args.insert(args.end(), {"--device-dtype", "float16"});
    testing::RunResult half = testing::Run(args);
    ASSERT_EQ(half.exit_code, 0) << half.err;
    EXPECT_EQ(nlohmann::json::parse(half.out)["output_bytes"], 2 * h["output_bytes"].get<uint64_t>());
  }
}

TEST(ShardbenchTest, DeviceOptionsThatCannotWorkAreUsageErrors) {
  testing::RunResult r = testing::Run({SHARDBENCH_PATH, "/nonexistent/ds", "--device-dtype", "float32"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--device-dtype needs --device"));
  r = testing::Run({SHARDBENCH_PATH, "/nonexistent/ds", "--device", "0", "--device-dtype", "bf16"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("bf16"));
  r = testing::Run({SHARDBENCH_PATH, "/nonexistent/ds", "--device", "0", "--save-batch", "b.png"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--save-batch draws the first batch from host memory"));
  r = testing::Run({SHARDBENCH_PATH, "/nonexistent/ds", "--device", "-1"});
  EXPECT_EQ(r.exit_code, 2);
}

// A FIFO in place of a shard or the manifest: an error naming it, at once.
TEST(ShardbenchTest, FifoInPlaceOfAShardOrManifestIsAnErrorNotAHang) {
  for (const char* name : {"shard-00000.shard", "manifest.json"}) {
    SCOPED_TRACE(name);
    testing::TempDir dir;
    const std::string ds = MakeDataset(dir);
    const std::string file = (std::filesystem::path(ds) / name).string();
    ASSERT_TRUE(std::filesystem::remove(file));
    ASSERT_EQ(mkfifo(file.c_str(), 0600), 0);
    for (bool raw : {false, true}) {
      std::vector<std::string> args = {SHARDBENCH_PATH, ds, "--epochs", "1", "-q"};
      if (raw) args.push_back("--compare-raw");
      testing::RunResult r = testing::Run(args);
      EXPECT_EQ(r.exit_code, 1) << r.err;
      EXPECT_THAT(r.err, HasSubstr("a FIFO"));
    }
  }
}

// A mixture: --source a (repeat 1) and --source b:repeat=2 draw 300 and 600
// samples an epoch, 10 and 20 of every batch of 30; the report sets what
// each source delivered beside the counts the reader resolved.
TEST(ShardbenchTest, MixtureReportsEachSourcesCountsBesideWhatItDelivered) {
  testing::TempDir dir;
  const std::string a = MakeDataset(dir, false, "a"), b = MakeDataset(dir, false, "b");
  const std::string order = dir.Join("order.txt");
  testing::RunResult r =
      testing::Run({SHARDBENCH_PATH, "--source", a, "--source", b + ":repeat=2", "--epochs", "2",
                    "--batch-size", "30", "--threads", "2", "--json", "-q", "--compare-raw",
                    "--order-out", order});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["path"].is_null());
  EXPECT_EQ(j["records"], 600);
  EXPECT_EQ(j["batches"], 60);
  EXPECT_EQ(j["label_space"], "shared");
  EXPECT_EQ(j["epoch_samples"], 0);
  ASSERT_EQ(j["sources"].size(), 2u);
  EXPECT_EQ(j["sources"][0]["path"], a);
  EXPECT_EQ(j["sources"][0]["records"], 300);
  EXPECT_EQ(j["sources"][0]["per_epoch"], 300);
  EXPECT_EQ(j["sources"][0]["per_rank"], 300);
  EXPECT_EQ(j["sources"][0]["samples"], 600);
  EXPECT_EQ(j["sources"][1]["per_epoch"], 600);
  EXPECT_EQ(j["sources"][1]["samples"], 1200);
  std::ifstream in(order);
  std::map<std::pair<int, int>, std::pair<int, int>> per_batch;  // (epoch, batch) -> (a, b)
  int epoch, batch, slot, record, label;
  while (in >> epoch >> batch >> slot >> record >> label) {
    auto& counts = per_batch[{epoch, batch}];
    (record < 300 ? counts.first : counts.second) += 1;
  }
  ASSERT_EQ(per_batch.size(), 60u);
  for (const auto& [at, counts] : per_batch) EXPECT_EQ(counts, std::make_pair(10, 20));

  r = testing::Run({SHARDBENCH_PATH, "--source", a + ":weight=3", "--source", b + ":weight=1",
                    "--epoch-samples", "400", "--label-space", "source", "--batch-size", "40",
                    "--threads", "1", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("a mixture of 2 sources"));
  EXPECT_THAT(r.out, HasSubstr("label space source"));
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("source 0       ", a,
                                            ": 300 records, 300 an epoch (300 a rank), 300 "
                                            "delivered")));
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("source 1       ", b,
                                            ": 300 records, 100 an epoch (100 a rank), 100 "
                                            "delivered")));
}

TEST(ShardbenchTest, BadSourceFlagsAreUsageErrorsNamingTheValue) {
  testing::TempDir dir;
  const std::string a = MakeDataset(dir);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--source", a + ":weight=0"}, "weight '0' is not a finite number above 0"},
      {{"--source", a + ":weight=nan"}, "weight 'nan' is not a finite number above 0"},
      {{"--source", a + ":weight=-1"}, "weight '-1' is not a finite number above 0"},
      {{"--source", a + ":weight=inf"}, "weight 'inf' is not a finite number above 0"},
      {{"--source", a + ":weight="}, "weight '' is not a finite number above 0"},
      {{"--source", a + ":repeat=0"}, "repeat '0' is not a number above 0 and at most 1024"},
      {{"--source", a + ":repeat=1025"}, "repeat '1025' is not a number above 0 and at most"},
      {{"--source", a + ":choose=0"}, "choose '0' is not a whole number in 1..2^64-1"},
      {{"--source", a + ":choose=-5"}, "choose '-5' is not a whole number in 1..2^64-1"},
      {{"--source", a + ":wieght=2"}, "unknown key 'wieght' (PATH:weight=W, PATH:repeat=R"},
      {{"--source", ":weight=1"}, "':weight=1': no PATH"},
      {{a, "--source", a}, "PATH or --source: a run reads one dataset or a mixture, not both"},
      {{}, "name a dataset: PATH, or --source"},
      {{a, "--epoch-samples", "5"}, "--epoch-samples and --label-space need --source"},
      {{a, "--label-space", "offset"}, "--epoch-samples and --label-space need --source"},
      {{"--source", a, "--label-space", "x"}, "unknown label_space 'x' (shared, offset, source)"},
      {{"--source", a, "--epoch-samples", "-1"}, "--epoch-samples: '-1' is not a whole number"},
      {{"--source", a, "--compare-memcpy"}, "--compare-memcpy copies one dataset"},
  };
  for (const auto& [args, needle] : cases) {
    std::vector<std::string> argv = {SHARDBENCH_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    testing::RunResult r = testing::Run(argv);
    EXPECT_EQ(r.exit_code, 2) << needle << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(needle));
  }
  // Counts that only the sources' records refute are the reader's: exit 1.
  testing::RunResult r = testing::Run({SHARDBENCH_PATH, "--source", a + ":choose=400000"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("choose 400000 is more than"));
}

}  // namespace
}  // namespace shardpack
