// Tests of the CIFAR-10/100 source on records built byte by byte, and on the
// real CIFAR-10 fragment in ../shared when it is there.
#include "datasets/cifar.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/errors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack::datasets {
namespace {

namespace fs = std::filesystem;
using ::shardpack::testing::IsOk;
using ::shardpack::testing::StatusIs;
using ::shardpack::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// Pixel (c, y, x) of test record `seed`: distinct per channel, row, column
// and record, so any mix-up of planes or coordinates shows.
uint8_t PatternPixel(int seed, int c, int y, int x) {
  return static_cast<uint8_t>(c * 101 + y * 7 + x * 3 + seed * 13 + 1);
}

std::vector<uint8_t> Pixels(int seed) {
  std::vector<uint8_t> px;
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 32; ++y) {
      for (int x = 0; x < 32; ++x) px.push_back(PatternPixel(seed, c, y, x));
    }
  }
  return px;
}

// A CIFAR-10 record: label byte, then the CHW pixels.
std::vector<uint8_t> Cifar10Record(uint8_t label, int seed) {
  std::vector<uint8_t> r{label};
  std::vector<uint8_t> px = Pixels(seed);
  r.insert(r.end(), px.begin(), px.end());
  return r;
}

// A CIFAR-100 record: coarse byte, fine byte, then the CHW pixels.
std::vector<uint8_t> Cifar100Record(uint8_t coarse, uint8_t fine, int seed) {
  std::vector<uint8_t> r{coarse, fine};
  std::vector<uint8_t> px = Pixels(seed);
  r.insert(r.end(), px.begin(), px.end());
  return r;
}

void WriteBytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

void WriteText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

// Writes `n` CIFAR-10 records with labels (first_label + i) % 10 and seeds
// first_seed + i.
void WriteCifar10(const fs::path& path, int n, int first_label = 0, int first_seed = 0) {
  std::vector<uint8_t> bytes;
  for (int i = 0; i < n; ++i) {
    std::vector<uint8_t> r =
        Cifar10Record(static_cast<uint8_t>((first_label + i) % 10), first_seed + i);
    bytes.insert(bytes.end(), r.begin(), r.end());
  }
  WriteBytes(path, bytes);
}

std::string Lines(const std::string& prefix, int n) {
  std::string text;
  for (int i = 0; i < n; ++i) text += prefix + std::to_string(i) + "\n";
  return text;
}

CifarOptions Options(std::vector<std::string> inputs) {
  CifarOptions o;
  o.inputs = std::move(inputs);
  return o;
}

absl::StatusOr<PreparedRecord> PrepareOne(const Source& source, size_t i) {
  PreparedRecord r;
  std::unique_ptr<SourceWorker> worker = source.NewWorker();
  SP_RETURN_IF_ERROR(worker->Prepare(i, &r));
  return r;
}

TEST(CifarTest, Cifar10ConvertsChwToHwc) {
  TempDir dir;
  WriteCifar10(dir.path() / "data_batch_1.bin", 3, /*first_label=*/7, /*first_seed=*/5);
  SP_ASSERT_OK_AND_ASSIGN(auto source, OpenCifar(Options({dir.Join("data_batch_1.bin")})));
  ASSERT_EQ(source->size(), 3u);
  EXPECT_EQ(source->input_bytes(), 3u * 3073);
  EXPECT_THAT(source->open_problems(), IsEmpty());
  const Schema& schema = source->schema();
  EXPECT_EQ(schema.image, (ImageInfo{Encoding::kRaw, Layout::kHWC, 32, 32, 3}));
  ASSERT_THAT(schema.labels, SizeIs(1));
  EXPECT_EQ(schema.labels[0].name, "label");
  // No batches.meta.txt: CIFAR-10's own names.
  EXPECT_THAT(schema.labels[0].classes,
              ElementsAre("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse",
                          "ship", "truck"));

  std::unique_ptr<SourceWorker> worker = source->NewWorker();
  PreparedRecord r;
  const std::array<int, 3> labels = {7, 8, 9};
  for (int i = 0; i < 3; ++i) {
    SP_ASSERT_OK(worker->Prepare(i, &r));
    EXPECT_EQ(r.key, "data_batch_1.bin/0000" + std::to_string(i));
    EXPECT_EQ(r.labels, (Labels{labels[i]}));
    EXPECT_EQ(r.image, schema.image);
    ASSERT_EQ(r.payload.size(), 3072u);
    for (int y = 0; y < 32; ++y) {
      for (int x = 0; x < 32; ++x) {
        for (int c = 0; c < 3; ++c) {
          ASSERT_EQ(r.payload[(y * 32 + x) * 3 + c], PatternPixel(5 + i, c, y, x))
              << "record " << i << " y " << y << " x " << x << " c " << c;
        }
      }
    }
    EXPECT_EQ(source->ItemPath(i), dir.Join("data_batch_1.bin"));
  }
}

TEST(CifarTest, ChwLayoutKeepsThePlanes) {
  TempDir dir;
  WriteCifar10(dir.path() / "test_batch.bin", 2);
  CifarOptions o = Options({dir.Join("test_batch.bin")});
  o.layout = Layout::kCHW;
  SP_ASSERT_OK_AND_ASSIGN(auto source, OpenCifar(o));
  EXPECT_EQ(source->schema().image, (ImageInfo{Encoding::kRaw, Layout::kCHW, 32, 32, 3}));
  SP_ASSERT_OK_AND_ASSIGN(PreparedRecord r, PrepareOne(*source, 1));
  EXPECT_EQ(r.payload, Pixels(1));
  EXPECT_EQ(r.view().image.layout, Layout::kCHW);
}

// Pixel (c, y, x) of a padded image of side `side` in `layout`.
uint8_t At(const PreparedRecord& r, Layout layout, int side, int c, int y, int x) {
  size_t i = layout == Layout::kHWC ? (static_cast<size_t>(y) * side + x) * 3 + c
                                    : (static_cast<size_t>(c) * side + y) * side + x;
  return r.payload[i];
}

class CifarPadTest : public ::testing::TestWithParam<Layout> {};

TEST_P(CifarPadTest, BorderIsZeroAndInteriorIsTheImage) {
  const Layout layout = GetParam();
  constexpr int kPad = 4, kSide = 40;
  TempDir dir;
  WriteCifar10(dir.path() / "data_batch_2.bin", 2, 0, /*first_seed=*/9);
  CifarOptions o = Options({dir.Join("data_batch_2.bin")});
  o.layout = layout;
  o.pad = kPad;
  SP_ASSERT_OK_AND_ASSIGN(auto source, OpenCifar(o));
  EXPECT_EQ(source->schema().image, (ImageInfo{Encoding::kRaw, layout, kSide, kSide, 3}));

  std::unique_ptr<SourceWorker> worker = source->NewWorker();
  PreparedRecord r;
  for (int i = 0; i < 2; ++i) {
    SP_ASSERT_OK(worker->Prepare(i, &r));
    ASSERT_EQ(r.payload.size(), size_t{kSide} * kSide * 3);
    EXPECT_EQ(r.image.height, 40u);
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < kSide; ++y) {
        for (int x = 0; x < kSide; ++x) {
          bool inside = y >= kPad && y < kPad + 32 && x >= kPad && x < kPad + 32;
          uint8_t want = inside ? PatternPixel(9 + i, c, y - kPad, x - kPad) : 0;
          ASSERT_EQ(At(r, layout, kSide, c, y, x), want)
              << "record " << i << " c " << c << " y " << y << " x " << x;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, CifarPadTest, ::testing::Values(Layout::kHWC, Layout::kCHW),
                         [](const auto& p) { return std::string(LayoutName(p.param)); });

TEST(CifarTest, PrepareReusesThePayloadBuffer) {
  TempDir dir;
  WriteCifar10(dir.path() / "data_batch_1.bin", 3);
  CifarOptions o = Options({dir.Join("data_batch_1.bin")});
  o.pad = 2;
  SP_ASSERT_OK_AND_ASSIGN(auto source, OpenCifar(o));
  std::unique_ptr<SourceWorker> worker = source->NewWorker();
  PreparedRecord r;
  SP_ASSERT_OK(worker->Prepare(0, &r));
  const uint8_t* payload = r.payload.data();
  const char* key = r.key.data();
  SP_ASSERT_OK(worker->Prepare(1, &r));
  SP_ASSERT_OK(worker->Prepare(2, &r));
  EXPECT_EQ(r.payload.data(), payload);
  EXPECT_EQ(r.key.data(), key);
}

TEST(CifarTest, WorkerOutlivesItsSource) {
  TempDir dir;
  WriteCifar10(dir.path() / "data_batch_1.bin", 2, 3);
  std::unique_ptr<SourceWorker> worker;
  {
    SP_ASSERT_OK_AND_ASSIGN(auto source, OpenCifar(Options({dir.Join("data_batch_1.bin")})));
    worker = source->NewWorker();
  }
  PreparedRecord r;
  SP_ASSERT_OK(worker->Prepare(1, &r));
  EXPECT_EQ(r.labels, (Labels{4}));
  EXPECT_THAT(worker->Prepare(2, &r), StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("2")));
}

TEST(CifarTest, Cifar10ClassNamesFromBatchesMeta) {
  TempDir dir;
  WriteCifar10(dir.path() / "data_batch_1.bin", 1);
  // The official file ends in an empty line; names may carry stray spaces.
  WriteText(dir.path() / "batches.meta.txt",
            "airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck \n\n");
  SP_ASSERT_OK_AND_ASSIGN(auto source, OpenCifar(Options({dir.Join("data_batch_1.bin")})));
  ASSERT_THAT(source->schema().labels, SizeIs(1));
  EXPECT_THAT(source->schema().labels[0].classes,
              ElementsAre("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse",
                          "ship", "truck"));
}

TEST(CifarTest, WrongNumberOfClassNames) {
  TempDir dir;
  WriteCifar10(dir.path() / "data_batch_1.bin", 1);
  WriteText(dir.path() / "batches.meta.txt", Lines("class", 9));
  CifarOptions o = Options({dir.Join("data_batch_1.bin")});
  SP_ASSERT_OK_AND_ASSIGN(auto source, OpenCifar(o));
  EXPECT_THAT(source->schema().labels[0].classes, IsEmpty());
  ASSERT_THAT(source->open_problems(), SizeIs(1));
  EXPECT_EQ(source->open_problems()[0].path, dir.Join("batches.meta.txt"));
  EXPECT_THAT(source->open_problems()[0].reason, HasSubstr("9 class names, expected 10"));

  o.on_error = OnError::kFail;
  EXPECT_THAT(OpenCifar(o), StatusIs(absl::StatusCode::kDataLoss,
                                     HasSubstr(dir.Join("batches.meta.txt") + ": 9 class names")));
}

TEST(CifarTest, Cifar100LabelsAreFineThenCoarseWithClassNames) {
  TempDir dir;
  std::vector<uint8_t> bytes = Cifar100Record(/*coarse=*/3, /*fine=*/42, 0);
  std::vector<uint8_t> second = Cifar100Record(/*coarse=*/19, /*fine=*/99, 1);
  bytes.insert(bytes.end(), second.begin(), second.end());
  WriteBytes(dir.path() / "train.bin", bytes);
  WriteText(dir.path() / "fine_label_names.txt", Lines("fine", 100));
  WriteText(dir.path() / "coarse_label_names.txt", Lines("coarse", 20) + "\n");
  SP_ASSERT_OK_AND_ASSIGN(auto source, OpenCifar(Options({dir.Join("train.bin")})));
  ASSERT_EQ(source->size(), 2u);
  const Schema& schema = source->schema();
  ASSERT_THAT(schema.labels, SizeIs(2));
  EXPECT_EQ(schema.labels[0].name, "fine");
  EXPECT_EQ(schema.labels[1].name, "coarse");
  ASSERT_THAT(schema.labels[0].classes, SizeIs(100));
  ASSERT_THAT(schema.labels[1].classes, SizeIs(20));
  EXPECT_EQ(schema.labels[0].classes[42], "fine42");
  EXPECT_EQ(schema.labels[1].classes[19], "coarse19");

  std::unique_ptr<SourceWorker> worker = source->NewWorker();
  PreparedRecord r;
  SP_ASSERT_OK(worker->Prepare(0, &r));
  EXPECT_EQ(r.key, "train.bin/00000");
  EXPECT_EQ(r.labels, (Labels{42, 3}));
  EXPECT_EQ(r.payload[0], PatternPixel(0, 0, 0, 0));
  EXPECT_EQ(r.payload[1], PatternPixel(0, 1, 0, 0));
  EXPECT_EQ(r.payload[3 * 33 + 2], PatternPixel(0, 2, 1, 1));
  SP_ASSERT_OK(worker->Prepare(1, &r));
  EXPECT_EQ(r.labels, (Labels{99, 19}));
  EXPECT_EQ(r.payload[0], PatternPixel(1, 0, 0, 0));
  EXPECT_EQ(source->ParamsJson(),
            R"({"kind":"cifar","variant":100,"split":"train","layout":"hwc","pad":0,)"
            R"("files":["train.bin"]})");
}

// A fake cifar-10-batches-bin/ with batch b holding b records.
fs::path MakeCifar10Folder(const TempDir& dir) {
  fs::path folder = dir.path() / "cifar-10-batches-bin";
  fs::create_directory(folder);
  int seed = 0;
  for (int b = 1; b <= 5; ++b) {
    WriteCifar10(folder / ("data_batch_" + std::to_string(b) + ".bin"), b, b, seed);
    seed += b;
  }
  WriteCifar10(folder / "test_batch.bin", 4, 0, 100);
  WriteText(folder / "batches.meta.txt", Lines("c", 10) + "\n");
  WriteText(folder / "readme.html", "<html></html>");
  return folder;
}

TEST(CifarTest, FolderTrainSplitReadsTheFiveBatchesInOrder) {
  TempDir dir;
  fs::path folder = MakeCifar10Folder(dir);
  SP_ASSERT_OK_AND_ASSIGN(auto source, OpenCifar(Options({folder.string() + "/"})));
  ASSERT_EQ(source->size(), 15u);  // 1 + 2 + 3 + 4 + 5
  EXPECT_EQ(source->input_bytes(), 15u * 3073);
  EXPECT_THAT(source->schema().labels[0].classes, SizeIs(10));
  std::vector<std::string> keys;
  std::unique_ptr<SourceWorker> worker = source->NewWorker();
  PreparedRecord r;
  for (size_t i = 0; i < source->size(); ++i) {
    SP_ASSERT_OK(worker->Prepare(i, &r));
    keys.push_back(r.key);
    EXPECT_EQ(r.payload[0], PatternPixel(static_cast<int>(i), 0, 0, 0)) << r.key;
  }
  EXPECT_THAT(
      keys,
      ElementsAre("data_batch_1.bin/00000", "data_batch_2.bin/00000", "data_batch_2.bin/00001",
                  "data_batch_3.bin/00000", "data_batch_3.bin/00001", "data_batch_3.bin/00002",
                  "data_batch_4.bin/00000", "data_batch_4.bin/00001", "data_batch_4.bin/00002",
                  "data_batch_4.bin/00003", "data_batch_5.bin/00000", "data_batch_5.bin/00001",
                  "data_batch_5.bin/00002", "data_batch_5.bin/00003", "data_batch_5.bin/00004"));
  EXPECT_EQ(source->ItemPath(14), (folder / "data_batch_5.bin").string());
  EXPECT_EQ(source->ParamsJson(),
            R"({"kind":"cifar","variant":10,"split":"train","layout":"hwc","pad":0,)"
            R"("files":["data_batch_1.bin","data_batch_2.bin","data_batch_3.bin",)"
            R"("data_batch_4.bin","data_batch_5.bin"]})");
}

TEST(CifarTest, FolderTestSplit) {
  TempDir dir;
  fs::path folder = MakeCifar10Folder(dir);
  CifarOptions o = Options({folder.string()});
  o.split = "test";
  o.layout = Layout::kCHW;
  o.pad = 4;
  SP_ASSERT_OK_AND_ASSIGN(auto source, OpenCifar(o));
  ASSERT_EQ(source->size(), 4u);
  SP_ASSERT_OK_AND_ASSIGN(PreparedRecord r, PrepareOne(*source, 3));
  EXPECT_EQ(r.key, "test_batch.bin/00003");
  EXPECT_EQ(r.labels, (Labels{3}));
  EXPECT_EQ(source->ParamsJson(),
            R"({"kind":"cifar","variant":10,"split":"test","layout":"chw","pad":4,)"
            R"("files":["test_batch.bin"]})");
}

TEST(CifarTest, FolderWithAnotherNameIsDetectedByItsContents) {
  TempDir dir;
  fs::path folder = dir.path() / "c100";
  fs::create_directory(folder);
  WriteBytes(folder / "test.bin", Cifar100Record(1, 2, 0));
  WriteBytes(folder / "train.bin", Cifar100Record(3, 4, 0));
  CifarOptions o = Options({folder.string()});
  o.split = "test";
  SP_ASSERT_OK_AND_ASSIGN(auto source, OpenCifar(o));
  ASSERT_EQ(source->size(), 1u);
  SP_ASSERT_OK_AND_ASSIGN(PreparedRecord r, PrepareOne(*source, 0));
  EXPECT_EQ(r.key, "test.bin/00000");
  EXPECT_EQ(r.labels, (Labels{2, 1}));
  // No name files: CIFAR-100's own, fine then coarse, in label order.
  const std::vector<std::string>& fine = source->schema().labels[0].classes;
  const std::vector<std::string>& coarse = source->schema().labels[1].classes;
  ASSERT_THAT(fine, SizeIs(100));
  ASSERT_THAT(coarse, SizeIs(20));
  EXPECT_EQ(fine[0], "apple");
  EXPECT_EQ(fine[2], "baby");  // fine label 2, as the record above has
  EXPECT_EQ(fine[58], "pickup_truck");
  EXPECT_EQ(fine[99], "worm");
  EXPECT_EQ(coarse[1], "fish");  // coarse label 1
  EXPECT_EQ(coarse[19], "vehicles_2");
  EXPECT_TRUE(std::is_sorted(fine.begin(), fine.end())) << "CIFAR-100 lists them sorted";
  EXPECT_TRUE(std::is_sorted(coarse.begin(), coarse.end()));
}

TEST(CifarTest, FolderMissingABatchIsNotFound) {
  TempDir dir;
  fs::path folder = MakeCifar10Folder(dir);
  fs::remove(folder / "data_batch_4.bin");
  EXPECT_THAT(
      OpenCifar(Options({folder.string()})),
      StatusIs(absl::StatusCode::kNotFound, HasSubstr((folder / "data_batch_4.bin").string())));
}

TEST(CifarTest, FilesKeepInputOrderAndReportTheirSplit) {
  TempDir dir;
  WriteCifar10(dir.path() / "data_batch_2.bin", 1, 2);
  WriteCifar10(dir.path() / "data_batch_1.bin", 2, 1);
  SP_ASSERT_OK_AND_ASSIGN(
      auto source,
      OpenCifar(Options({dir.Join("data_batch_2.bin"), dir.Join("data_batch_1.bin")})));
  ASSERT_EQ(source->size(), 3u);
  SP_ASSERT_OK_AND_ASSIGN(PreparedRecord r, PrepareOne(*source, 1));
  EXPECT_EQ(r.key, "data_batch_1.bin/00000");
  EXPECT_THAT(source->ParamsJson(), HasSubstr(R"("split":"train")"));
  WriteCifar10(dir.path() / "test_batch.bin", 1);
  SP_ASSERT_OK_AND_ASSIGN(
      source, OpenCifar(Options({dir.Join("data_batch_1.bin"), dir.Join("test_batch.bin")})));
  EXPECT_THAT(source->ParamsJson(), HasSubstr(R"("split":null)"));
}

TEST(CifarTest, TruncatedFileFailsNamingTheLastWholeRecordOffset) {
  TempDir dir;
  WriteCifar10(dir.path() / "data_batch_1.bin", 3);
  std::vector<uint8_t> bytes(3 * 3073);
  {
    std::ifstream in(dir.path() / "data_batch_1.bin", std::ios::binary);
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  bytes.insert(bytes.end(), {1, 2, 3, 4, 5});
  WriteBytes(dir.path() / "data_batch_1.bin", bytes);
  CifarOptions o = Options({dir.Join("data_batch_1.bin")});
  o.on_error = OnError::kFail;
  absl::StatusOr<std::unique_ptr<Source>> failed = OpenCifar(o);
  EXPECT_THAT(failed,
              StatusIs(absl::StatusCode::kDataLoss,
                       dir.Join("data_batch_1.bin") +
                           ": 9224 bytes is not a whole number of 3073-byte records; the last "
                           "whole record ends at offset 9219"));
  EXPECT_EQ(common::ErrorOffset(failed.status()), 9219u);
}

TEST(CifarTest, TruncatedFileInSkipModeKeepsTheWholeRecords) {
  TempDir dir;
  std::vector<uint8_t> bytes;
  for (int i = 0; i < 3; ++i) {
    std::vector<uint8_t> r = Cifar10Record(static_cast<uint8_t>(i), i);
    bytes.insert(bytes.end(), r.begin(), r.end());
  }
  std::vector<uint8_t> partial = Cifar10Record(9, 3);
  bytes.insert(bytes.end(), partial.begin(), partial.begin() + 1000);
  WriteBytes(dir.path() / "data_batch_1.bin", bytes);
  WriteCifar10(dir.path() / "data_batch_2.bin", 2, 5);
  SP_ASSERT_OK_AND_ASSIGN(
      auto source,
      OpenCifar(Options({dir.Join("data_batch_1.bin"), dir.Join("data_batch_2.bin")})));
  ASSERT_EQ(source->size(), 5u);
  ASSERT_THAT(source->open_problems(), SizeIs(1));
  EXPECT_EQ(source->open_problems()[0].path, dir.Join("data_batch_1.bin"));
  EXPECT_THAT(source->open_problems()[0].reason,
              HasSubstr("10219 bytes is not a whole number of 3073-byte records; the last "
                        "whole record ends at offset 9219"));
  SP_ASSERT_OK_AND_ASSIGN(PreparedRecord r, PrepareOne(*source, 2));
  EXPECT_EQ(r.key, "data_batch_1.bin/00002");
  EXPECT_EQ(r.labels, (Labels{2}));
  SP_ASSERT_OK_AND_ASSIGN(r, PrepareOne(*source, 3));
  EXPECT_EQ(r.key, "data_batch_2.bin/00000");
  EXPECT_EQ(r.labels, (Labels{5}));
}

TEST(CifarTest, Cifar10LabelByteOutOfRangeNamesTheRecordOffset) {
  TempDir dir;
  std::vector<uint8_t> bytes = Cifar10Record(9, 0);
  std::vector<uint8_t> bad = Cifar10Record(10, 1);
  bytes.insert(bytes.end(), bad.begin(), bad.end());
  WriteBytes(dir.path() / "data_batch_1.bin", bytes);
  SP_ASSERT_OK_AND_ASSIGN(auto source, OpenCifar(Options({dir.Join("data_batch_1.bin")})));
  std::unique_ptr<SourceWorker> worker = source->NewWorker();
  PreparedRecord r;
  SP_EXPECT_OK(worker->Prepare(0, &r));
  absl::Status s = worker->Prepare(1, &r);
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kDataLoss,
                          dir.Join("data_batch_1.bin") +
                              " @3073: record 1: label byte 10 is out of range 0..9"));
  EXPECT_EQ(common::ErrorOffset(s), 3073u);
  SP_EXPECT_OK(worker->Prepare(0, &r));  // the worker goes on
}

TEST(CifarTest, Cifar100LabelBytesOutOfRange) {
  TempDir dir;
  std::vector<uint8_t> bytes = Cifar100Record(19, 99, 0);
  for (const auto& r : {Cifar100Record(0, 100, 1), Cifar100Record(20, 0, 2)}) {
    bytes.insert(bytes.end(), r.begin(), r.end());
  }
  WriteBytes(dir.path() / "test.bin", bytes);
  SP_ASSERT_OK_AND_ASSIGN(auto source, OpenCifar(Options({dir.Join("test.bin")})));
  std::unique_ptr<SourceWorker> worker = source->NewWorker();
  PreparedRecord r;
  SP_EXPECT_OK(worker->Prepare(0, &r));
  EXPECT_THAT(worker->Prepare(1, &r),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("test.bin @3074: record 1: fine label byte 100 is out of "
                                 "range 0..99")));
  EXPECT_THAT(worker->Prepare(2, &r),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("test.bin @6148: record 2: coarse label byte 20 is out of "
                                 "range 0..19")));
}

TEST(CifarTest, UnknownNamesAskForTheVariant) {
  TempDir dir;
  WriteCifar10(dir.path() / "batch.bin", 2);
  EXPECT_THAT(OpenCifar(Options({dir.Join("batch.bin")})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr(dir.Join("batch.bin")),
                                        HasSubstr("--cifar 10 or --cifar 100"))));
  CifarOptions o = Options({dir.Join("batch.bin")});
  o.variant = 10;
  SP_ASSERT_OK_AND_ASSIGN(auto source, OpenCifar(o));
  EXPECT_EQ(source->size(), 2u);

  fs::path folder = dir.path() / "stuff";
  fs::create_directory(folder);
  EXPECT_THAT(OpenCifar(Options({folder.string()})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--cifar")));
}

TEST(CifarTest, MixedVariantsAreRefused) {
  TempDir dir;
  WriteCifar10(dir.path() / "data_batch_1.bin", 1);
  WriteBytes(dir.path() / "train.bin", Cifar100Record(0, 0, 0));
  EXPECT_THAT(OpenCifar(Options({dir.Join("data_batch_1.bin"), dir.Join("train.bin")})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("mix CIFAR-10")));
}

TEST(CifarTest, MisdetectedVariantIsRefusedEvenInSkipMode) {
  TempDir dir;
  // CIFAR-10 records under a CIFAR-100 name.
  WriteCifar10(dir.path() / "train.bin", 3);
  EXPECT_THAT(OpenCifar(Options({dir.Join("train.bin")})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       dir.Join("train.bin") +
                           ": 9219 bytes is not a whole number of 3074-byte CIFAR-100 "
                           "records but is 3 3073-byte CIFAR-10 records; is this CIFAR-10? "
                           "choose with --cifar 10"));
  // The wrong variant chosen by hand for a CIFAR-100 file.
  WriteBytes(dir.path() / "test.bin", Cifar100Record(0, 0, 0));
  CifarOptions o = Options({dir.Join("test.bin")});
  o.variant = 10;
  EXPECT_THAT(OpenCifar(o), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("is this CIFAR-100? choose with --cifar 100")));
}

TEST(CifarTest, MissingInputIsNotFound) {
  TempDir dir;
  EXPECT_THAT(OpenCifar(Options({dir.Join("data_batch_9.bin")})),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(dir.Join("data_batch_9.bin"))));
}

TEST(CifarTest, EmptyFile) {
  TempDir dir;
  WriteBytes(dir.path() / "data_batch_1.bin", {});
  WriteCifar10(dir.path() / "data_batch_2.bin", 1);
  CifarOptions o = Options({dir.Join("data_batch_1.bin"), dir.Join("data_batch_2.bin")});
  o.on_error = OnError::kFail;
  EXPECT_THAT(OpenCifar(o),
              StatusIs(absl::StatusCode::kDataLoss,
                       dir.Join("data_batch_1.bin") + ": empty file (0 bytes), no CIFAR records"));
  o.on_error = OnError::kSkip;
  SP_ASSERT_OK_AND_ASSIGN(auto source, OpenCifar(o));
  EXPECT_EQ(source->size(), 1u);
  ASSERT_THAT(source->open_problems(), SizeIs(1));
  EXPECT_EQ(source->open_problems()[0].path, dir.Join("data_batch_1.bin"));
  SP_ASSERT_OK_AND_ASSIGN(PreparedRecord r, PrepareOne(*source, 0));
  EXPECT_EQ(r.key, "data_batch_2.bin/00000");
  // Nothing left at all: an error even in skip mode.
  EXPECT_THAT(OpenCifar(Options({dir.Join("data_batch_1.bin")})),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("no whole CIFAR-10 records")));
}

TEST(CifarTest, BadOptions) {
  TempDir dir;
  WriteCifar10(dir.path() / "data_batch_1.bin", 1);
  CifarOptions o = Options({dir.Join("data_batch_1.bin")});
  o.pad = kCifarMaxPad + 1;
  EXPECT_THAT(OpenCifar(o), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pad")));
  o.pad = -1;
  EXPECT_THAT(OpenCifar(o), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pad")));
  o = Options({dir.Join("data_batch_1.bin")});
  o.split = "val";
  EXPECT_THAT(OpenCifar(o), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("val")));
  o = Options({dir.Join("data_batch_1.bin")});
  o.variant = 20;
  EXPECT_THAT(OpenCifar(o), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("20")));
  EXPECT_THAT(OpenCifar(Options({})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no input")));
}

// The real CIFAR-10 data: the first 258 records of data_batch_1.bin, kept in
// ../shared beside the repository (see its README.md), never copied here.
fs::path FragmentDir() {
  return (fs::path(SHARDPACK_SOURCE_DIR) / "../shared/data/cifar10-fragment")
      .lexically_normal();
}

TEST(CifarRealDataTest, Cifar10FragmentOfDataBatch1) {
  const fs::path file = FragmentDir() / "data_batch_1.bin";
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    GTEST_SKIP() << "the real CIFAR-10 fragment is not at " << file.string()
                 << " (it lives in ../shared/data beside the repository)";
  }
  std::vector<uint8_t> bytes(fs::file_size(file));
  {
    std::ifstream in(file, std::ios::binary);
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(in.good());
  }
  // Facts from the fragment's README.md (258 whole records, 792,834 bytes).
  ASSERT_EQ(bytes.size(), 792834u);
  // The name alone says CIFAR-10: no --cifar needed.
  SP_ASSERT_OK_AND_ASSIGN(auto source, OpenCifar(Options({file.string()})));
  ASSERT_EQ(source->size(), 258u);
  EXPECT_THAT(source->open_problems(), IsEmpty());

  std::unique_ptr<SourceWorker> worker = source->NewWorker();
  PreparedRecord r;
  std::vector<int64_t> first_labels;
  std::array<int, 10> histogram{};
  for (size_t i = 0; i < source->size(); ++i) {
    SP_ASSERT_OK(worker->Prepare(i, &r));
    ASSERT_EQ(r.labels.size(), 1);
    if (i < 10) first_labels.push_back(r.labels[0]);
    ++histogram[r.labels[0]];
    // HWC keeps every pixel value of the CHW planes.
    const uint8_t* chw = bytes.data() + i * 3073 + 1;
    for (int p = 0; p < 1024; ++p) {
      for (int c = 0; c < 3; ++c) {
        ASSERT_EQ(r.payload[p * 3 + c], chw[c * 1024 + p]) << r.key << " pixel " << p;
      }
    }
  }
  EXPECT_THAT(first_labels, ElementsAre(6, 9, 9, 4, 1, 1, 2, 7, 8, 3));
  EXPECT_THAT(histogram, ElementsAre(18, 38, 23, 27, 21, 22, 33, 25, 22, 29));
  // Record 0, the frog: its top-left pixel is RGB (59, 62, 63), as
  // torchvision's CIFAR10 train[0] also shows it.
  SP_ASSERT_OK(worker->Prepare(0, &r));
  EXPECT_EQ(r.key, "data_batch_1.bin/00000");
  EXPECT_THAT(std::vector<uint8_t>(r.payload.begin(), r.payload.begin() + 3),
              ElementsAre(59, 62, 63));
  SP_ASSERT_OK(worker->Prepare(257, &r));
  EXPECT_EQ(r.key, "data_batch_1.bin/00257");
}

}  // namespace
}  // namespace shardpack::datasets

namespace shardpack::datasets {
namespace {

// The file-backed pages mapped into this process (RssFile), in bytes.
uint64_t RssFileBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("RssFile:", 0) == 0) return std::stoull(line.substr(8)) * 1024;
  }
  return 0;
}

// The packer's DoneWith hint lets the mapped input of items already packed
// go (a pack of 24.6 GB of CIFAR once peaked at 10.8 GB of RSS), across
// files and whatever range it is given; the items still read the same.
TEST(CifarTest, DoneWithReleasesTheMappedInputAndItemsReadTheSame) {
  TempDir dir;
  const int per_file = 2000;  // 6 MB per file
  WriteCifar10(dir.path() / "data_batch_1.bin", per_file, 0, 0);
  WriteCifar10(dir.path() / "data_batch_2.bin", per_file, 3, per_file);
  SP_ASSERT_OK_AND_ASSIGN(auto source, OpenCifar(Options({dir.Join("data_batch_1.bin"),
                                                          dir.Join("data_batch_2.bin")})));
  ASSERT_EQ(source->size(), 2u * per_file);
  // Opening reads every byte for the fingerprint with pread: none mapped.
  const uint64_t opened = RssFileBytes();
  source->WillNeed(0, source->size());
  std::unique_ptr<SourceWorker> worker = source->NewWorker();
  std::vector<PreparedRecord> before(source->size());
  for (size_t i = 0; i < source->size(); ++i) SP_ASSERT_OK(worker->Prepare(i, &before[i]));
  const uint64_t touched = RssFileBytes();
  EXPECT_GT(touched, opened + 10'000'000) << "the input was never mapped in";
  source->DoneWith(per_file / 2, source->size());  // across the two files
  source->DoneWith(0, per_file / 2);
  EXPECT_LT(RssFileBytes(), touched - 10'000'000);
  // Empty, reversed and out-of-range hints do nothing harmful.
  source->DoneWith(5, 5);
  source->DoneWith(9, 3);
  source->WillNeed(source->size(), source->size() + 100);
  source->DoneWith(0, SIZE_MAX);
  PreparedRecord again;
  for (size_t i = 0; i < source->size(); i += 97) {
    SP_ASSERT_OK(worker->Prepare(i, &again));
    EXPECT_EQ(again.payload, before[i].payload) << i;
    EXPECT_EQ(again.labels, before[i].labels) << i;
  }
}

}  // namespace
}  // namespace shardpack::datasets
