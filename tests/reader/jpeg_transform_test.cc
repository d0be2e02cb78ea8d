// The JPEG transforms: RandomResizedCrop's box distribution against an
// independent implementation of torchvision's sampler, CenterCrop's box,
// and JPEG datasets end to end through the Reader.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/jpeg_restart.h"
#include "datasets/demo.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "reader/transform.h"
#include "shardpack/dataset.h"
#include "shardpack/reader.h"
#include "tests/testing/jpeg_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

using ::shardpack::testing::StatusIs;
using ::testing::HasSubstr;

struct Box {
  int w, h;
  bool fallback;
};

// torchvision.transforms.RandomResizedCrop.get_params, transcribed, with
// its own generator: the reference distribution.
Box TorchvisionBox(int width, int height, std::mt19937_64& gen) {
  std::uniform_real_distribution<double> scale(0.08, 1.0);
  std::uniform_real_distribution<double> log_ratio(std::log(3.0 / 4), std::log(4.0 / 3));
  const double area = double(width) * height;
  for (int k = 0; k < 10; ++k) {
    const double target = area * scale(gen);
    const double aspect = std::exp(log_ratio(gen));
    const int w = int(std::nearbyint(std::sqrt(target * aspect)));
    const int h = int(std::nearbyint(std::sqrt(target / aspect)));
    if (w > 0 && h > 0 && w <= width && h <= height) return {w, h, false};
  }
  const double in_ratio = double(width) / height;
  if (in_ratio < 0.75) return {width, int(std::nearbyint(width / 0.75)), true};
  if (in_ratio > 4.0 / 3) return {int(std::nearbyint(height * 4.0 / 3)), height, true};
  return {width, height, true};
}

struct Histograms {
  std::vector<double> area = std::vector<double>(10), log_ratio = std::vector<double>(10);
  double fallback = 0, flip = 0;
};

void Add(Histograms* hist, int width, int height, double w, double h, int n) {
  const double a = w * h / (double(width) * height);
  const double lr = (std::log(w / h) - std::log(0.75)) / (std::log(4.0 / 3) - std::log(0.75));
  hist->area[std::min(9, int(a * 10))] += 1.0 / n;
  hist->log_ratio[std::clamp(int(lr * 10), 0, 9)] += 1.0 / n;
}

// Bins agree within 5 standard errors of a difference of two proportions.
void ExpectClose(const std::vector<double>& got, const std::vector<double>& want, int n) {
  for (size_t i = 0; i < got.size(); ++i) {
    const double p = std::max(want[i], 1.0 / n);
    EXPECT_NEAR(got[i], want[i], 5 * std::sqrt(2 * p * (1 - p) / n) + 1e-3) << "bin " << i;
  }
}

TEST(RandomResizedCropTest, BoxesFollowTorchvisionsDistribution) {
  const int n = 40000;
  const Transform t = Transform::RandomResizedCrop(224);
  for (auto [width, height] : {std::pair{500, 375}, std::pair{1000, 100}, std::pair{120, 400}}) {
    SCOPED_TRACE(::testing::Message() << width << "x" << height);
    Histograms ours, ref;
    std::mt19937_64 gen(width * 7 + height);
    for (int i = 0; i < n; ++i) {
      reader::JpegCrop c = reader::SampleRandomResizedCrop(width, height, t, 42, 3, i);
      ASSERT_GE(c.x0, 0);
      ASSERT_GE(c.y0, 0);
      ASSERT_LE(c.x1, width);
      ASSERT_LE(c.y1, height);
      Add(&ours, width, height, c.x1 - c.x0, c.y1 - c.y0, n);
      ours.fallback += c.fallback ? 1.0 / n : 0;
      ours.flip += c.flip ? 1.0 / n : 0;
      Box b = TorchvisionBox(width, height, gen);
      Add(&ref, width, height, b.w, b.h, n);
      ref.fallback += b.fallback ? 1.0 / n : 0;
    }
    ExpectClose(ours.area, ref.area, n);
    ExpectClose(ours.log_ratio, ref.log_ratio, n);
    ExpectClose({ours.fallback}, {ref.fallback}, n);
    EXPECT_NEAR(ours.flip, 0.5, 5 * std::sqrt(0.25 / n));
  }
  // 500x375 almost never falls back; 1000x100 mostly does (each attempt
  // needs area fraction <= 0.1 x ratio).
  std::mt19937_64 gen(1);
  int fallbacks = 0;
  for (int i = 0; i < n; ++i) fallbacks += TorchvisionBox(1000, 100, gen).fallback;
  EXPECT_GT(fallbacks, n / 2);
}

TEST(RandomResizedCropTest, PositionsAreUniformAndDrawsAreDeterministic) {
  const Transform t = Transform::RandomResizedCrop(64);
  std::vector<int> left_third(2);
  for (int i = 0; i < 20000; ++i) {
    reader::JpegCrop a = reader::SampleRandomResizedCrop(500, 375, t, 9, 0, i);
    reader::JpegCrop b = reader::SampleRandomResizedCrop(500, 375, t, 9, 0, i);
    ASSERT_EQ(a.x0, b.x0);
    ASSERT_EQ(a.y1, b.y1);
    ASSERT_EQ(a.flip, b.flip);
    // The crop's free range is [0, width - w]: its relative position ~ U(0, 1).
    const double span = 500 - (a.x1 - a.x0);
    if (span > 10) ++left_third[a.x0 / span < 1.0 / 3 ? 0 : 1];
  }
  const double frac = double(left_third[0]) / (left_third[0] + left_third[1]);
  EXPECT_NEAR(frac, 1.0 / 3, 0.02);
  reader::JpegCrop other = reader::SampleRandomResizedCrop(500, 375, t, 9, 1, 0);
  reader::JpegCrop same = reader::SampleRandomResizedCrop(500, 375, t, 9, 0, 0);
  EXPECT_FALSE(other.x0 == same.x0 && other.y0 == same.y0 && other.x1 == same.x1);
}

TEST(CenterCropTest, BoxIsResize256ThenCenterCrop224) {
  // 500x375: Resize(256) -> 341x256 (341 = int(256 * 500 / 375)), crop at
  // left round(58.5) = 58 (half to even), top 16.
  reader::JpegCrop c = reader::CenterCropBox(500, 375, 224);
  const double f = 375.0 / 256;
  EXPECT_NEAR(c.y0, 16 * f, 1e-9);
  EXPECT_NEAR(c.y1, 240 * f, 1e-9);
  EXPECT_NEAR(c.x0, 58 * 500.0 / 341, 1e-9);
  EXPECT_NEAR(c.x1, 282 * 500.0 / 341, 1e-9);
  // Portrait, and size 64 -> shorter side 73.
  reader::JpegCrop p = reader::CenterCropBox(300, 600, 64);
  EXPECT_NEAR(p.x0, 4 * 300.0 / 73, 1e-9);  // round(4.5) = 4
  EXPECT_NEAR(p.y0, 41 * 600.0 / 146, 1e-9);
}

TEST(ParseTransformTest, AcceptsRrcAndCenter) {
  SP_ASSERT_OK_AND_ASSIGN(Transform a, ParseTransform("rrc:224"));
  EXPECT_EQ(a.kind, Transform::Kind::kRandomResizedCrop);
  EXPECT_EQ(a.size, 224);
  SP_ASSERT_OK_AND_ASSIGN(Transform b, ParseTransform("center:64"));
  EXPECT_EQ(b.kind, Transform::Kind::kCenterCrop);
  EXPECT_EQ(b.size, 64);
  SP_ASSERT_OK_AND_ASSIGN(Transform c, ParseTransform("rrc"));
  EXPECT_EQ(c.size, 224);
  EXPECT_FALSE(ParseTransform("rrc:0").ok());
}

// ---- End to end ---------------------------------------------------------

namespace fs = std::filesystem;

constexpr int kRecords = 300;
constexpr uint64_t kCorrupt = 137;  // the damaged record, when asked for

// kRecords demo-scene JPEGs of varying sizes (gray, progressive and
// restart-marker ones among them) as passthrough records.
// `restart_markers`: every record re-coded as `shardpack images
// --restart-markers` stores it (the same pixels).
std::string MakeJpegDataset(const testing::TempDir& dir, const std::string& name,
                            bool corrupt, bool restart_markers = false) {
  codec::JpegRestartRecoder recoder;
  std::vector<uint8_t> recoded;
  std::string path = dir.Join(name);
  fs::create_directories(path);
  DatasetWriterOptions o;
  o.directory = path;
  o.shard.block_size = 256 << 10;
  o.shard_max_records = 120;
  o.schema.image = {Encoding::kJpeg, Layout::kHWC, 0, 0, 3};
  o.schema.labels = {{"label", {}}};
  auto writer = DatasetWriter::Create(o);
  EXPECT_TRUE(writer.ok()) << writer.status();
  for (int i = 0; i < kRecords; ++i) {
    const int w = 96 + (i * 13) % 80, h = 72 + (i * 7) % 60;
    std::vector<uint8_t> rgb(size_t(w) * h * 3);
    datasets::RenderDemoScene(w, h, i % 4, uint64_t(i), rgb.data());
    std::vector<uint8_t> jpeg;
    if (i % 10 == 3) {
      std::vector<uint8_t> gray(size_t(w) * h);
      for (size_t p = 0; p < gray.size(); ++p) gray[p] = rgb[3 * p];
      jpeg = testing::EncodeJpeg(gray, w, h, TJPF_GRAY, TJSAMP_GRAY);
    } else if (i % 10 == 7) {
      jpeg = testing::RestartJpeg(w, h, 1);
    } else {
      jpeg = testing::EncodeJpeg(rgb, w, h, TJPF_RGB, TJSAMP_420, 85,
                                 i % 10 == 5 ? TJFLAG_PROGRESSIVE : 0);
    }
    if (restart_markers) {
      absl::StatusOr<bool> done = recoder.Recode(jpeg, &recoded);
      EXPECT_TRUE(done.ok()) << done.status();
      if (done.ok() && *done) jpeg = recoded;
    }
    if (corrupt && uint64_t(i) == kCorrupt) {  // a header libjpeg rejects
      for (size_t p = 2; p < 64; ++p) jpeg[p] = uint8_t(p * 37);
    }
    std::string key = absl::StrCat("img", i);
    Record r{key, {int64_t(i % 4)}, {Encoding::kJpeg, Layout::kHWC, uint32_t(h), uint32_t(w), 3},
             jpeg, {}};
    EXPECT_TRUE((*writer)->Add(r).ok());
  }
  EXPECT_TRUE((*writer)->Finish().ok());
  return path;
}

ReaderOptions JpegOptions(const std::string& path, const char* transform, int threads) {
  ReaderOptions o;
  o.path = path;
  o.batch_size = 32;
  o.threads = threads;
  o.rank = 0;
  o.world_size = 1;
  o.seed = 5;
  o.remainder = Remainder::kPartial;  // every record, every epoch
  o.shuffle_bytes = 1 << 20;
  o.read_ahead_bytes = 1 << 20;
  o.transform = *ParseTransform(transform);
  return o;
}

// Every batch's bytes of `epochs` epochs, and the samples skipped.
std::string ReadAll(const ReaderOptions& o, int epochs, uint64_t* skipped = nullptr) {
  auto reader = Reader::Open(o);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return {};
  std::string bytes;
  for (int e = 0; e < epochs; ++e) {
    for (;;) {
      absl::StatusOr<Batch> b = (*reader)->Next();
      if (absl::IsOutOfRange(b.status())) break;
      EXPECT_TRUE(b.ok()) << b.status();
      if (!b.ok()) return bytes;
      bytes.append(static_cast<const char*>(b->images()), b->image_bytes());
    }
  }
  if (skipped != nullptr) *skipped = (*reader)->stats().skipped;
  return bytes;
}

TEST(JpegReaderTest, RrcAndCenterAreByteIdenticalWithOneAndThreeThreads) {
  testing::TempDir dir;
  std::string path = MakeJpegDataset(dir, "jpegs", false);
  for (const char* t : {"rrc:64", "center:64"}) {
    SCOPED_TRACE(t);
    std::string one = ReadAll(JpegOptions(path, t, 1), 2);
    std::string three = ReadAll(JpegOptions(path, t, 3), 2);
    ASSERT_EQ(one.size(), size_t(2) * kRecords * 64 * 64 * 3);
    EXPECT_TRUE(one == three);
  }
  // The two epochs of rrc differ (new crops), center's are the same images
  // in another order.
  std::string rrc = ReadAll(JpegOptions(path, "rrc:64", 2), 2);
  EXPECT_NE(rrc.substr(0, rrc.size() / 2), rrc.substr(rrc.size() / 2));
}

// Each record's output of `epochs` epochs, by epoch and record index.
std::vector<std::string> ReadByRecord(const ReaderOptions& o, int epochs) {
  std::vector<std::string> out(size_t(epochs) * kRecords);
  auto reader = Reader::Open(o);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return out;
  for (int e = 0; e < epochs; ++e) {
    for (;;) {
      absl::StatusOr<Batch> b = (*reader)->Next();
      if (absl::IsOutOfRange(b.status())) break;
      EXPECT_TRUE(b.ok()) << b.status();
      if (!b.ok()) return out;
      const size_t each = b->image_bytes() / size_t(b->size());
      for (int i = 0; i < b->size(); ++i) {
        out[size_t(e) * kRecords + b->record_index(i)].assign(
            static_cast<const char*>(b->images()) + i * each, each);
      }
    }
  }
  return out;
}

// Restart markers change how much is decoded, never what comes out: each
// record of a dataset re-coded with them gives the original's bytes. (The
// batches' order may differ: the shards' blocks hold other byte counts.)
TEST(JpegReaderTest, RestartMarkersGiveTheSameSamples) {
  testing::TempDir dir;
  std::string original = MakeJpegDataset(dir, "original", false);
  std::string recoded = MakeJpegDataset(dir, "recoded", false, true);
  for (const char* t : {"rrc:64", "center:64", "rrc:160"}) {
    SCOPED_TRACE(t);
    std::vector<std::string> want = ReadByRecord(JpegOptions(original, t, 2), 2);
    std::vector<std::string> got = ReadByRecord(JpegOptions(recoded, t, 2), 2);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_FALSE(want[i].empty()) << i;
      ASSERT_TRUE(got[i] == want[i]) << "epoch " << i / kRecords << " record " << i % kRecords;
    }
  }
}

TEST(JpegReaderTest, FloatNchwIsTheNormalizedUint8Nhwc) {
  testing::TempDir dir;
  std::string path = MakeJpegDataset(dir, "jpegs", false);
  ReaderOptions u8 = JpegOptions(path, "rrc:32", 2);
  ReaderOptions f32 = u8;
  f32.dtype = DType::kFloat32;
  f32.layout = OutputLayout::kNCHW;
  f32.mean = {0.485f, 0.456f, 0.406f};
  f32.std = {0.229f, 0.224f, 0.225f};
  std::string a = ReadAll(u8, 1), b = ReadAll(f32, 1);
  ASSERT_EQ(b.size(), a.size() * 4);
  const auto* f = reinterpret_cast<const float*>(b.data());
  const int hw = 32 * 32;
  for (size_t s = 0; s < a.size() / (hw * 3); ++s) {
    for (int i = 0; i < hw; i += 37) {
      for (int c = 0; c < 3; ++c) {
        const float want = (uint8_t(a[(s * hw + i) * 3 + c]) / 255.f - f32.mean[c]) / f32.std[c];
        ASSERT_NEAR(f[(s * 3 + c) * hw + i], want, 1e-5);
      }
    }
  }
}

TEST(JpegReaderTest, CorruptJpegRecordIsAnErrorOrSkippedAndCounted) {
  testing::TempDir dir;
  std::string path = MakeJpegDataset(dir, "bad", true);
  {  // kError: the batch that needs it fails, naming shard and record.
    auto reader = Reader::Open(JpegOptions(path, "rrc:64", 2));
    ASSERT_TRUE(reader.ok()) << reader.status();
    absl::Status error;
    for (;;) {
      absl::StatusOr<Batch> b = (*reader)->Next();
      if (absl::IsOutOfRange(b.status())) break;
      if (!b.ok()) error = b.status();
    }
    EXPECT_THAT(error, StatusIs(absl::StatusCode::kDataLoss,
                                HasSubstr(absl::StrCat("record ", kCorrupt, " ('img137')"))));
    EXPECT_THAT(error, StatusIs(absl::StatusCode::kDataLoss, HasSubstr(".shard")));
  }
  for (const char* t : {"rrc:64", "center:64"}) {
    ReaderOptions o = JpegOptions(path, t, 3);
    o.on_corrupt = OnCorrupt::kSkip;
    uint64_t skipped = 0, skipped1 = 0;
    std::string three = ReadAll(o, 1, &skipped);
    o.threads = 1;
    std::string one = ReadAll(o, 1, &skipped1);
    EXPECT_EQ(skipped, 1u);
    EXPECT_EQ(skipped1, skipped);
    EXPECT_TRUE(one == three);
  }
}

TEST(JpegReaderTest, RawTransformOnJpegDatasetIsRefused) {
  testing::TempDir dir;
  std::string path = MakeJpegDataset(dir, "jpegs", false);
  ReaderOptions o = JpegOptions(path, "none", 1);
  EXPECT_THAT(Reader::Open(o).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rrc")));
}

}  // namespace
}  // namespace shardpack
