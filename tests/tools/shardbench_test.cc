// shardbench end to end: JSON fields, --order-out, errors.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "shardpack/dataset.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

using ::testing::HasSubstr;

// 300 raw 8x8x3 records, label i % 10.
std::string MakeDataset(const testing::TempDir& dir) {
  std::string path = dir.Join("ds");
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

TEST(ShardbenchTest, NotADatasetIsOneLineAndExitOne) {
  testing::RunResult r = testing::Run({SHARDBENCH_PATH, "/nonexistent/ds"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("shardbench: "));
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/ds"));
  EXPECT_EQ(testing::Run({SHARDBENCH_PATH}).exit_code, 2);
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

}  // namespace
}  // namespace shardpack
