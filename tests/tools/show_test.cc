// sharddump show and shardbench --save-batch, run as the built binaries:
// every tile of the written sheet is compared with the record's own pixels
// (raw) or its TurboJPEG decode, resized to the tile's scale; the batch
// sheet with the C++ reader's first batch of the same options and seed.
#include <turbojpeg.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/store.h"
#include "codec/color.h"
#include "codec/contact_sheet.h"
#include "codec/decode.h"
#include "codec/resize.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/dataset.h"
#include "shardpack/reader.h"
#include "tests/backends/backend_fixtures.h"
#include "tests/testing/shard_fixtures.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

namespace fs = std::filesystem;
using ::shardpack::codec::PixelView;
using ::shardpack::testing::OwnedRecord;
using ::shardpack::testing::RunResult;
using ::testing::HasSubstr;

RunResult Tool(const char* tool, std::vector<std::string> args) {
  args.insert(args.begin(), tool);
  return testing::Run(args);
}
RunResult Sharddump(std::vector<std::string> args) { return Tool(SHARDDUMP_PATH, std::move(args)); }

std::vector<uint8_t> FileBytes(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// A smooth image (so a JPEG of it looks like it), different per seed.
std::vector<uint8_t> Smooth(uint32_t h, uint32_t w, int c, int seed) {
  std::vector<uint8_t> p(size_t{h} * w * static_cast<size_t>(c));
  for (uint32_t y = 0; y < h; ++y) {
    for (uint32_t x = 0; x < w; ++x) {
      for (int k = 0; k < c; ++k) {
        p[(size_t{y} * w + x) * static_cast<size_t>(c) + static_cast<size_t>(k)] =
            static_cast<uint8_t>((x * 7 + y * 3 + static_cast<uint32_t>(k * 60 + seed * 40)) & 255);
      }
    }
  }
  return p;
}

// A JPEG of `pixels` (pf: TJPF_RGB, TJPF_GRAY or TJPF_CMYK).
std::vector<uint8_t> Jpeg(const std::vector<uint8_t>& pixels, uint32_t h, uint32_t w, int pf) {
  tjhandle t = tjInitCompress();
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const int samp = pf == TJPF_GRAY ? TJSAMP_GRAY : TJSAMP_444;
  EXPECT_EQ(tjCompress2(t, pixels.data(), static_cast<int>(w), 0, static_cast<int>(h), pf, &out,
                        &size, samp, 90, 0),
            0);
  std::vector<uint8_t> bytes(out, out + size);
  tjFree(out);
  tjDestroy(t);
  return bytes;
}

// The record's pixels as the reference sees them: raw interleaved, or the
// JPEG decoded by TurboJPEG (CMYK through codec/color.h's conversion).
std::vector<uint8_t> Reference(const OwnedRecord& r, int* channels) {
  const ImageInfo& im = r.image;
  const size_t plane = size_t{im.height} * im.width;
  if (im.encoding == Encoding::kRaw) {
    *channels = im.channels;
    if (im.layout == Layout::kHWC) return r.payload;
    std::vector<uint8_t> out(r.payload.size());
    for (size_t c = 0; c < im.channels; ++c) {
      for (size_t i = 0; i < plane; ++i) out[i * im.channels + c] = r.payload[c * plane + i];
    }
    return out;
  }
  tjhandle t = tjInitDecompress();
  const bool cmyk = im.channels == 4;
  std::vector<uint8_t> out(plane * 4);
  EXPECT_EQ(
      tjDecompress2(t, r.payload.data(), r.payload.size(), out.data(), static_cast<int>(im.width),
                    0, static_cast<int>(im.height), cmyk ? TJPF_CMYK : TJPF_RGB, 0),
      0);
  tjDestroy(t);
  if (cmyk) codec::JpegCmykToRgbInPlace(out.data(), plane);
  out.resize(plane * 3);
  *channels = 3;
  return out;
}

// Tile i of `sheet` (a decoded PNG) holds `expected` (w x h x c) resized to
// the tile's scale, with the background around it.
void ExpectTile(const PixelView& sheet, const codec::ContactSheet& layout, size_t i,
                const std::vector<uint8_t>& pixels, uint32_t w, uint32_t h, int c) {
  const codec::SheetRect r = layout.ImageRect(i, w, h);
  std::vector<uint8_t> resized(size_t{r.width} * r.height * static_cast<size_t>(c));
  codec::ResizeScratch scratch;
  if (r.width == w && r.height == h) {
    resized = pixels;
  } else {
    codec::ResizeBilinearAA(PixelView{pixels.data(), w, h, c}, r.width, r.height, resized.data(),
                               &scratch);
  }
  int mismatches = 0;
  for (uint32_t y = 0; y < r.height; ++y) {
    for (uint32_t x = 0; x < r.width; ++x) {
      for (int k = 0; k < 3; ++k) {
        const uint8_t want = resized[(size_t{y} * r.width + x) * c + (c == 3 ? k : 0)];
        const uint8_t got = sheet.data[(size_t{r.y + y} * sheet.width + r.x + x) * 3 + k];
        mismatches += want != got;
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << "tile " << i;
  // Left of a letterboxed image (or above it) is background.
  const codec::SheetRect full = layout.ImageRect(i, 1, 1);  // a 1x1 fills the tile
  if (r.x > full.x) {
    EXPECT_EQ(sheet.data[(size_t{r.y} * sheet.width + full.x) * 3], codec::kSheetBackground);
  }
  if (r.y > full.y) {
    EXPECT_EQ(sheet.data[(size_t{full.y} * sheet.width + r.x) * 3], codec::kSheetBackground);
  }
}

// The caption strip of tile i, as bytes.
std::string Strip(const PixelView& sheet, const codec::ContactSheet& layout, size_t i) {
  const codec::SheetRect c = layout.CaptionRect(i);
  std::string s;
  for (uint32_t y = c.y; y < c.y + c.height; ++y) {
    s.append(reinterpret_cast<const char*>(sheet.data) + (size_t{y} * sheet.width + c.x) * 3,
             size_t{c.width} * 3);
  }
  return s;
}

class ShowTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new testing::TempDir();
    // Raw RGB, 24x36 (letterboxed), CHW, 80 records: labels 0..9.
    for (int i = 0; i < 80; ++i) {
      raw_.push_back(testing::RawRecord(static_cast<uint64_t>(i), 24, 36, 3, Layout::kCHW));
    }
    Schema raw_schema = testing::RawSchema(24, 36, 3, Layout::kCHW, 1);
    for (Backend b : {Backend::kShard, Backend::kLmdb, Backend::kHdf5}) {
      const std::string dir = Dir(b == Backend::kShard  ? "raw"
                                  : b == Backend::kLmdb ? "lmdb"
                                                        : "h5");
      ASSERT_TRUE(testing::WriteDataset(dir, b, raw_, raw_schema, 30).ok());
    }
    // Raw gray 20x20.
    for (int i = 0; i < 4; ++i)
      gray_.push_back(testing::RawRecord(static_cast<uint64_t>(i), 20, 20, 1));
    ASSERT_TRUE(testing::WriteDataset(Dir("gray"), Backend::kShard, gray_,
                                      testing::RawSchema(20, 20, 1, Layout::kHWC, 1))
                    .ok());
    // JPEG: RGB 40x24, gray 30x50, CMYK 32x32.
    struct Spec {
      uint32_t h, w;
      int pf, c;
    } specs[] = {{40, 24, TJPF_RGB, 3}, {30, 50, TJPF_GRAY, 1}, {32, 32, TJPF_CMYK, 4}};
    for (int i = 0; i < 3; ++i) {
      OwnedRecord r;
      r.key = absl::StrCat("img", i);
      r.labels = Labels{i, 7};
      r.image = {Encoding::kJpeg, Layout::kHWC, specs[i].h, specs[i].w,
                 static_cast<uint8_t>(specs[i].c)};
      r.payload =
          Jpeg(Smooth(specs[i].h, specs[i].w, specs[i].c, i), specs[i].h, specs[i].w, specs[i].pf);
      jpeg_.push_back(std::move(r));
    }
    ASSERT_TRUE(
        testing::WriteDataset(Dir("jpeg"), Backend::kShard, jpeg_, testing::JpegSchema()).ok());
    // For the transforms: 12 RGB JPEGs, and 16 CIFAR-like records.
    std::vector<OwnedRecord> jpegs, cifar;
    for (int i = 0; i < 12; ++i) {
      OwnedRecord r = jpeg_[0];
      r.payload = Jpeg(Smooth(40 + 2 * i, 48, 3, i), 40 + 2 * i, 48, TJPF_RGB);
      r.image.height = 40 + 2 * i;
      r.image.width = 48;
      r.labels = Labels{i % 3, 1};
      jpegs.push_back(std::move(r));
    }
    ASSERT_TRUE(
        testing::WriteDataset(Dir("jpegs"), Backend::kShard, jpegs, testing::JpegSchema()).ok());
    for (int i = 0; i < 16; ++i)
      cifar.push_back(testing::RawRecord(static_cast<uint64_t>(i), 32, 32, 3, Layout::kCHW));
    ASSERT_TRUE(testing::WriteDataset(Dir("cifar"), Backend::kShard, cifar,
                                      testing::RawSchema(32, 32, 3, Layout::kCHW, 1))
                    .ok());
    // A record whose JPEG bytes do not decode.
    std::vector<OwnedRecord> bad = {jpeg_[0], testing::JpegLikeRecord(1, 300)};
    ASSERT_TRUE(
        testing::WriteDataset(Dir("bad"), Backend::kShard, bad, testing::JpegSchema()).ok());
  }
  static void TearDownTestSuite() { delete tmp_; }

  static std::string Dir(const std::string& name) {
    fs::create_directories(tmp_->path() / name);
    return tmp_->Join(name);
  }
  static std::string Out(const std::string& name) { return tmp_->Join(name); }

  // Runs show and decodes the PNG it wrote.
  PixelView Show(const std::vector<std::string>& args, const std::string& out) {
    std::vector<std::string> all = {"show"};
    all.insert(all.end(), args.begin(), args.end());
    all.insert(all.end(), {"-o", out, "-q"});
    RunResult r = Sharddump(all);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    png_ = FileBytes(out);
    auto view = codec::DecodePng(png_, out, {}, &buffers_);
    EXPECT_TRUE(view.ok()) << view.status();
    return view.ok() ? *view : PixelView{};
  }

  static testing::TempDir* tmp_;
  static std::vector<OwnedRecord> raw_, gray_, jpeg_;
  std::vector<uint8_t> png_;
  codec::DecodeBuffers buffers_;
};

testing::TempDir* ShowTest::tmp_ = nullptr;
std::vector<OwnedRecord> ShowTest::raw_, ShowTest::gray_, ShowTest::jpeg_;

TEST_F(ShowTest, RawTilesAreTheRecordsAtTheTileScaleOnEveryBackend) {
  std::string first;
  for (const char* name : {"raw", "lmdb", "h5"}) {
    // 28:34 crosses the shard boundary at 30.
    PixelView sheet = Show({Dir(name), "--range", "28:34", "--tile", "48", "--columns", "4"},
                           Out(absl::StrCat(name, ".png")));
    ASSERT_NE(sheet.data, nullptr);
    auto layout = codec::ContactSheet::Create(6, {48, 4});
    ASSERT_TRUE(layout.ok());
    ASSERT_EQ(sheet.width, layout->view().width);
    ASSERT_EQ(sheet.height, layout->view().height);
    for (size_t i = 0; i < 6; ++i) {
      int c;
      std::vector<uint8_t> ref = Reference(raw_[28 + i], &c);
      ExpectTile(sheet, *layout, i, ref, 36, 24, c);
    }
    const std::string bytes(reinterpret_cast<const char*>(sheet.data), sheet.bytes());
    if (first.empty()) first = bytes;
    EXPECT_EQ(bytes, first) << name << " draws another sheet than .shard";
  }
}

TEST_F(ShowTest, GrayRawIsShownAsRgbUpscaled) {
  PixelView sheet = Show({Dir("gray"), "--tile", "64"}, Out("gray.png"));
  ASSERT_NE(sheet.data, nullptr);
  auto layout = codec::ContactSheet::Create(4, {64, 0});
  ASSERT_TRUE(layout.ok());
  for (size_t i = 0; i < 4; ++i) ExpectTile(sheet, *layout, i, gray_[i].payload, 20, 20, 1);
}

TEST_F(ShowTest, JpegTilesAreTheDecodeAtTheTileScale) {
  PixelView sheet = Show({Dir("jpeg"), "--tile", "40"}, Out("jpeg.png"));
  ASSERT_NE(sheet.data, nullptr);
  auto layout = codec::ContactSheet::Create(3, {40, 0});
  ASSERT_TRUE(layout.ok());
  for (size_t i = 0; i < 3; ++i) {
    int c;
    std::vector<uint8_t> ref = Reference(jpeg_[i], &c);
    ExpectTile(sheet, *layout, i, ref, jpeg_[i].image.width, jpeg_[i].image.height, c);
  }
}

TEST_F(ShowTest, CaptionsAreDrawnAndDifferByLabel) {
  PixelView sheet = Show({Dir("raw"), "--range", "0:3"}, Out("cap.png"));
  ASSERT_NE(sheet.data, nullptr);
  auto layout = codec::ContactSheet::Create(3, {});
  ASSERT_TRUE(layout.ok());
  std::string strips[3];
  for (size_t i = 0; i < 3; ++i) {
    strips[i] = Strip(sheet, *layout, i);
    EXPECT_GT(std::count(strips[i].begin(), strips[i].end(), static_cast<char>(codec::kCaptionInk)),
              20)
        << "tile " << i << " has no text";
  }
  EXPECT_NE(strips[0], strips[1]);
  EXPECT_NE(strips[1], strips[2]);
}

TEST_F(ShowTest, RandomIsSeededAndJpegOutputDecodes) {
  const std::string a = Out("r1.png"), b = Out("r2.png"), c = Out("r3.png");
  for (auto [out, seed] : {std::pair{a, "1"}, std::pair{b, "1"}, std::pair{c, "2"}}) {
    RunResult r = Sharddump({"show", Dir("raw"), "--random", "5", "--seed", seed, "-o", out, "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  EXPECT_EQ(FileBytes(a), FileBytes(b));
  EXPECT_NE(FileBytes(a), FileBytes(c));
  const std::string jpg = Out("r.JPG");
  RunResult r = Sharddump({"show", Dir("jpeg"), "-o", jpg, "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<uint8_t> bytes = FileBytes(jpg);
  ASSERT_GT(bytes.size(), 2u);
  EXPECT_EQ(bytes[0], 0xFF);
  EXPECT_EQ(bytes[1], 0xD8);
}

TEST_F(ShowTest, BadRequestsAreClearErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  } cases[] = {
      {{Dir("raw"), "--range", "5:5", "-o", Out("e.png")}, "selects no records"},
      {{Dir("raw"), "--range", "70:90", "-o", Out("e.png")}, "outside the dataset's 80 records"},
      {{Dir("raw"), "--random", "0", "-o", Out("e.png")}, "--random 0"},
      {{Dir("raw"), "--random", "81", "-o", Out("e.png")}, "has 80 records"},
      {{Dir("raw"), "-o", Out("e.gif")}, "written as .png or .jpg"},
      {{Dir("raw"), "-o", Out("e")}, "written as .png or .jpg"},
      {{Dir("bad"), "-o", Out("e.png")}, "record 1 (key"},
      {{Dir("raw"), "--range", "0:80", "--tile", "1024", "-o", Out("e.png")}, "over the limit"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"show"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    RunResult r = Sharddump(args);
    EXPECT_EQ(r.exit_code, 1) << c.needle << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.needle));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_FALSE(fs::exists(Out("e.png")));
  // --seed without --random, both selections: usage errors.
  EXPECT_EQ(Sharddump({"show", Dir("raw"), "--seed", "3", "-o", Out("e.png")}).exit_code, 2);
  EXPECT_EQ(Sharddump({"show", Dir("raw"), "--range", "0:2", "--random", "2", "-o", Out("e.png")})
                .exit_code,
            2);
}

// shardbench --save-batch: the sheet is the C++ reader's first batch with
// the same options and seed, each tile the batch's own pixels.
TEST_F(ShowTest, SaveBatchIsTheTransformedFirstBatch) {
  struct Case {
    std::string dataset, transform, layout, dtype;
  } cases[] = {{"jpegs", "rrc:32", "nhwc", "uint8"},
               {"jpegs", "center:24", "nchw", "float32"},
               {"cifar", "cifar-train", "nchw", "uint8"}};
  for (const Case& c : cases) {
    const std::string out = Out("batch.png");
    RunResult r = Tool(SHARDBENCH_PATH, {Dir(c.dataset), "--batch-size", "8", "--transform",
                                         c.transform, "--seed", "5", "--threads", "2", "--layout",
                                         c.layout, "--dtype", c.dtype, "--save-batch", out, "-q",
                                         "--overwrite"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    png_ = FileBytes(out);
    auto sheet = codec::DecodePng(png_, out, {}, &buffers_);
    ASSERT_TRUE(sheet.ok()) << sheet.status();

    ReaderOptions o;
    o.path = Dir(c.dataset);
    o.batch_size = 8;
    o.seed = 5;
    o.threads = 1;
    auto t = ParseTransform(c.transform);
    ASSERT_TRUE(t.ok());
    o.transform = *t;
    auto reader = Reader::Open(o);  // uint8 NHWC: the pixels the sheet shows
    ASSERT_TRUE(reader.ok()) << reader.status();
    auto batch = (*reader)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status();
    const auto shape = batch->shape();
    const uint32_t side = static_cast<uint32_t>(shape[1]);
    auto layout = codec::ContactSheet::Create(8, {side, 0});
    ASSERT_TRUE(layout.ok());
    ASSERT_EQ(sheet->width, layout->view().width);
    const auto* pixels = static_cast<const uint8_t*>(batch->images());
    const size_t sample = size_t{side} * side * 3;
    for (int i = 0; i < 8; ++i) {
      std::vector<uint8_t> one(pixels + i * sample, pixels + (i + 1) * sample);
      ExpectTile(*sheet, *layout, static_cast<size_t>(i), one, side, side, 3);
    }
  }
}

TEST_F(ShowTest, SaveBatchRefusesAnUnknownExtension) {
  RunResult r = Tool(SHARDBENCH_PATH, {Dir("raw"), "--save-batch", Out("b.bmp"), "-q"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("written as .png or .jpg"));
}

}  // namespace
}  // namespace shardpack
