#include "datasets/images.h"

#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codec/jpeg_decoder.h"
#include "codec/jpeg_probe.h"
#include "datasets/demo.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/jpeg_fixtures.h"
#include "tests/testing/png_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack::datasets {
namespace {

namespace fs = std::filesystem;
using ::shardpack::testing::StatusIs;
using ::shardpack::testing::TempDir;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A flat-color JPEG (TJPF_GRAY gives a grayscale file).
std::vector<uint8_t> MakeJpeg(int width, int height, uint8_t value = 128,
                              int pixel_format = TJPF_RGB) {
  const int channels = tjPixelSize[pixel_format];
  std::vector<uint8_t> pixels(static_cast<size_t>(width) * height * channels, value);
  const int subsamp = pixel_format == TJPF_GRAY   ? TJSAMP_GRAY
                      : pixel_format == TJPF_CMYK ? TJSAMP_444
                                                  : TJSAMP_420;
  return testing::EncodeJpeg(pixels, width, height, pixel_format, subsamp);
}

// A JPEG of pseudo-random pixels: most of its bytes are entropy-coded data.
std::vector<uint8_t> NoisyJpeg(int width, int height) {
  std::vector<uint8_t> pixels(static_cast<size_t>(width) * height * 3);
  for (size_t i = 0; i < pixels.size(); ++i) {
    pixels[i] = static_cast<uint8_t>((i * 2654435761u) >> 24);
  }
  return testing::EncodeJpeg(pixels, width, height, TJPF_RGB, TJSAMP_420);
}

void WriteBytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

void WriteText(const fs::path& path, const std::string& text) {
  WriteBytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

std::vector<uint8_t> ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::unique_ptr<Source> MustOpen(const ImageOptions& options) {
  absl::StatusOr<std::unique_ptr<Source>> source = OpenImages(options);
  EXPECT_TRUE(source.ok()) << source.status();
  return source.ok() ? *std::move(source) : nullptr;
}

ImageOptions FolderOptions(const TempDir& dir, ImageMode mode = ImageMode::kPassthrough) {
  ImageOptions options;
  options.root = dir.path().string();
  options.mode = mode;
  return options;
}

// (key, label) of every item, in order.
std::vector<std::pair<std::string, int64_t>> Items(const Source& source) {
  std::vector<std::pair<std::string, int64_t>> items;
  auto worker = source.NewWorker();
  PreparedRecord record;
  for (size_t i = 0; i < source.size(); ++i) {
    absl::Status s = worker->Prepare(i, &record);
    EXPECT_TRUE(s.ok()) << s;
    items.emplace_back(record.key, record.labels[0]);
  }
  return items;
}

// Options for a one-image folder: raw 16x12, reencode to a longer side of 32.
ImageOptions OneImageOptions(const TempDir& dir, ImageMode mode) {
  ImageOptions options = FolderOptions(dir, mode);
  options.raw_width = 16;
  options.raw_height = 12;
  options.max_side = 32;
  return options;
}

// Prepares the single item of a one-image folder.
absl::Status PrepareOnly(const ImageOptions& options, PreparedRecord* record) {
  absl::StatusOr<std::unique_ptr<Source>> source = OpenImages(options);
  if (!source.ok()) return source.status();
  EXPECT_EQ((*source)->size(), 1u);
  return (*source)->NewWorker()->Prepare(0, record);
}

absl::Status PrepareOnly(const TempDir& dir, ImageMode mode, PreparedRecord* record,
                         bool validate = false, bool restart_markers = false) {
  ImageOptions options = OneImageOptions(dir, mode);
  options.validate_decode = validate;
  options.restart_markers = restart_markers;
  return PrepareOnly(options, record);
}

// A PNG of `channels` (1 gray, 3 RGB, 4 RGBA) flat at `value`.
std::vector<uint8_t> MakePng(uint32_t width, uint32_t height, int channels, uint8_t value) {
  return testing::EncodePng(std::vector<uint8_t>(size_t{width} * height * channels, value), width,
                            height, channels);
}

// --- The torchvision ImageFolder walk ------------------------------------

TEST(ImagesWalkTest, ClassesAndFilesInTorchvisionOrder) {
  TempDir dir;
  const fs::path root = dir.path();
  const std::vector<uint8_t> jpeg = MakeJpeg(8, 8);
  // Classes sort by bytes: "B" < "_c" < "a" < "a b".
  for (const char* f : {"B/1.jpg", "_c/k.jpeg", "a b/m.jpg", "a/z.jpg", "a/Y.JPEG", "a/x.Jpg",
                        "a/a.jpeg", "a/sub/b.jpg", "a/sub-2/c.jpeg", "a/sub/deeper/d.jpg"}) {
    WriteBytes(root / f, jpeg);
  }
  // torchvision's other IMG_EXTENSIONS are items too, any case; walked by
  // name (the content is read only when prepared).
  for (const char* f : {"a/p.png", "a/q.PPM", "a/r.bmp", "a/s.pgm", "a/t.tif", "a/u.TIFF",
                        "a/v.webp"}) {
    WriteBytes(root / f, jpeg);
  }
  // Not items: other extensions (.gif is not in IMG_EXTENSIONS, nor .pbm),
  // files at the root, a folder named *.jpg.
  WriteText(root / "a/notes.txt", "x");
  WriteBytes(root / "a/anim.gif", jpeg);
  WriteBytes(root / "a/bits.pbm", jpeg);
  WriteBytes(root / "a/img.png~", jpeg);
  WriteBytes(root / "a/jpg", jpeg);
  WriteBytes(root / "root.jpg", jpeg);
  fs::create_directories(root / "a/folder.jpg");
  WriteBytes(root / "a/folder.jpg/inner.jpg", jpeg);

  auto source = MustOpen(FolderOptions(dir));
  ASSERT_NE(source, nullptr);
  EXPECT_THAT(source->schema().labels, ElementsAre(LabelField{"label", {"B", "_c", "a", "a b"}}));
  // Within a class, os.walk's directories sorted by path: a folder's own
  // files first, and "sub" < "sub-2" < "sub/deeper" as strings ('-' < '/').
  EXPECT_THAT(Items(*source), ElementsAreArray(std::vector<std::pair<std::string, int64_t>>{
                                  {"B/1.jpg", 0},
                                  {"_c/k.jpeg", 1},
                                  {"a/Y.JPEG", 2},
                                  {"a/a.jpeg", 2},
                                  {"a/p.png", 2},
                                  {"a/q.PPM", 2},
                                  {"a/r.bmp", 2},
                                  {"a/s.pgm", 2},
                                  {"a/t.tif", 2},
                                  {"a/u.TIFF", 2},
                                  {"a/v.webp", 2},
                                  {"a/x.Jpg", 2},
                                  {"a/z.jpg", 2},
                                  {"a/folder.jpg/inner.jpg", 2},
                                  {"a/sub/b.jpg", 2},
                                  {"a/sub-2/c.jpeg", 2},
                                  {"a/sub/deeper/d.jpg", 2},
                                  {"a b/m.jpg", 3},
                              }));
  EXPECT_THAT(source->open_problems(), IsEmpty());
  EXPECT_EQ(source->ItemPath(0), (root / "B/1.jpg").string());
  EXPECT_EQ(source->input_bytes(), 18 * jpeg.size());
}

TEST(ImagesWalkTest, FollowsSymlinksButNotLoops) {
  TempDir dir;
  const fs::path root = dir.path() / "root";
  WriteBytes(dir.path() / "elsewhere/x.jpg", MakeJpeg(8, 8));
  WriteBytes(root / "cls/own.jpg", MakeJpeg(8, 8));
  fs::create_directory_symlink(dir.path() / "elsewhere", root / "cls/linked");
  fs::create_directory_symlink(root / "cls", root / "cls/loop");  // back up the tree
  fs::create_directory_symlink(dir.path() / "elsewhere", root / "linked_class");
  ImageOptions options;
  options.root = root.string();
  auto source = MustOpen(options);
  ASSERT_NE(source, nullptr);
  EXPECT_THAT(source->schema().labels[0].classes, ElementsAre("cls", "linked_class"));
  EXPECT_THAT(Items(*source), ElementsAreArray(std::vector<std::pair<std::string, int64_t>>{
                                  {"cls/own.jpg", 0},
                                  {"cls/linked/x.jpg", 0},
                                  {"linked_class/x.jpg", 1},
                              }));
}

// Opening the folder in `dir` is InvalidArgumentError with `message`, with
// --on-error skip as with fail.
void ExpectRefusedInBothModes(const TempDir& dir,
                              const ::testing::Matcher<const std::string&>& message) {
  for (OnError on_error : {OnError::kSkip, OnError::kFail}) {
    ImageOptions options = FolderOptions(dir);
    options.on_error = on_error;
    EXPECT_THAT(OpenImages(options), StatusIs(absl::StatusCode::kInvalidArgument, message));
  }
}

// torchvision's ImageFolder refuses a class folder without images; keeping
// it (or dropping it) would shift labels, so it is refused in both modes.
TEST(ImagesWalkTest, EmptyClassFolderIsRefusedInBothModes) {
  TempDir dir;
  WriteBytes(dir.path() / "a/1.jpg", MakeJpeg(8, 8));
  WriteText(dir.path() / "b_empty/readme.txt", "no images here");
  WriteBytes(dir.path() / "c/2.jpg", MakeJpeg(8, 8));
  ExpectRefusedInBothModes(
      dir, AllOf(HasSubstr((dir.path() / "b_empty").string() + ": empty class folder"),
                 HasSubstr("torchvision")));
}

// A class folder whose name is not UTF-8 cannot be a class name in a
// manifest: refused when the classes are found, naming the folder (the
// dataset writer refused it later, without the name). A file name that is
// not UTF-8 is a key, which may be any bytes.
TEST(ImagesWalkTest, NonUtf8ClassFolderIsRefusedNamingIt) {
  TempDir dir;
  WriteBytes(dir.path() / "a/1.jpg", MakeJpeg(8, 8));
  WriteBytes(dir.path() / "b/caf\xe9.jpg", MakeJpeg(8, 8));
  auto source = MustOpen(FolderOptions(dir));
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->size(), 2u);
  WriteBytes(dir.path() / "caf\xe9/2.jpg", MakeJpeg(8, 8));
  ExpectRefusedInBothModes(dir, HasSubstr((dir.path() / "caf\xe9").string() +
                                          ": class folder name is not UTF-8; class names are "
                                          "stored in manifest.json, which holds UTF-8 text only"));
}

TEST(ImagesWalkTest, UnlistableFolderIsAProblem) {
  if (geteuid() == 0) GTEST_SKIP() << "running as root, which lists any folder";
  TempDir dir;
  WriteBytes(dir.path() / "a/1.jpg", MakeJpeg(8, 8));
  WriteBytes(dir.path() / "a/locked/2.jpg", MakeJpeg(8, 8));
  fs::permissions(dir.path() / "a/locked", fs::perms::none);
  auto source = MustOpen(FolderOptions(dir));
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->size(), 1u);
  ASSERT_EQ(source->open_problems().size(), 1u);
  EXPECT_EQ(source->open_problems()[0].path, (dir.path() / "a/locked").string());
  EXPECT_THAT(source->open_problems()[0].reason, HasSubstr("cannot list directory"));
  fs::permissions(dir.path() / "a/locked", fs::perms::owner_all);
}

TEST(ImagesWalkTest, MissingRoot) {
  TempDir dir;
  ImageOptions options;
  options.root = (dir.path() / "nope").string();
  EXPECT_THAT(OpenImages(options),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("image folder " + options.root + ": No such file")));
}

TEST(ImagesWalkTest, RootThatIsAFileOrHasNoClasses) {
  TempDir dir;
  WriteText(dir.path() / "file", "x");
  ImageOptions options;
  options.root = (dir.path() / "file").string();
  EXPECT_THAT(OpenImages(options), StatusIs(absl::StatusCode::kFailedPrecondition,
                                            HasSubstr("file: image folder is not a directory")));
  WriteBytes(dir.path() / "flat/1.jpg", MakeJpeg(8, 8));
  options.root = (dir.path() / "flat").string();
  EXPECT_THAT(OpenImages(options),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("flat: no class folders")));
}

TEST(ImagesWalkTest, RootWithTrailingSlash) {
  TempDir dir;
  WriteBytes(dir.path() / "a/1.jpg", MakeJpeg(8, 8));
  ImageOptions options;
  options.root = dir.path().string() + "//";
  auto source = MustOpen(options);
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->ItemPath(0), (dir.path() / "a/1.jpg").string());
}

// --- List files ------------------------------------------------------------

TEST(ImagesListTest, ReadsPathsAndLabels) {
  TempDir dir;
  WriteBytes(dir.path() / "imgs/x/1.jpg", MakeJpeg(8, 8));
  WriteBytes(dir.path() / "imgs/with space/2.JPEG", MakeJpeg(8, 8));
  WriteText(dir.path() / "list.txt", "x/1.jpg 7\r\n\n  with space/2.JPEG\t0  \n");
  ImageOptions options;
  options.root = (dir.path() / "imgs").string();
  options.list_file = (dir.path() / "list.txt").string();
  auto source = MustOpen(options);
  ASSERT_NE(source, nullptr);
  EXPECT_THAT(Items(*source), ElementsAreArray(std::vector<std::pair<std::string, int64_t>>{
                                  {"x/1.jpg", 7}, {"with space/2.JPEG", 0}}));
  EXPECT_THAT(source->schema().labels, ElementsAre(LabelField{"label", {}}));
  EXPECT_THAT(source->ParamsJson(), HasSubstr("\"list\":"));
}

TEST(ImagesListTest, RootDefaultsToTheListFilesFolder) {
  TempDir dir;
  WriteBytes(dir.path() / "a.jpg", MakeJpeg(8, 8));
  WriteText(dir.path() / "list.txt", "a.jpg 1\n");
  ImageOptions options;
  options.list_file = (dir.path() / "list.txt").string();
  auto source = MustOpen(options);
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->ItemPath(0), (dir.path() / "a.jpg").string());
}

TEST(ImagesListTest, BadLinesAreReportedWithTheirNumbers) {
  TempDir dir;
  WriteBytes(dir.path() / "a.jpg", MakeJpeg(8, 8));
  const std::string list = (dir.path() / "list.txt").string();
  WriteText(list, "a.jpg 1\nno_label\na.jpg -3\na.jpg cat\n/abs.jpg 2\na.jpg 0\n");
  ImageOptions options;
  options.list_file = list;
  auto source = MustOpen(options);
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->size(), 2u);
  const auto& problems = source->open_problems();
  ASSERT_EQ(problems.size(), 4u);
  EXPECT_EQ(problems[0].path, list + ":2");
  EXPECT_THAT(problems[0].reason, HasSubstr("bad list line: expected '<relative/path> <label>'"));
  EXPECT_EQ(problems[1].path, list + ":3");
  EXPECT_THAT(problems[1].reason, HasSubstr("bad label '-3'"));
  EXPECT_EQ(problems[2].path, list + ":4");
  EXPECT_THAT(problems[2].reason, HasSubstr("bad label 'cat'"));
  EXPECT_EQ(problems[3].path, list + ":5");
  EXPECT_THAT(problems[3].reason, HasSubstr("path '/abs.jpg' is not relative"));

  options.on_error = OnError::kFail;
  EXPECT_THAT(OpenImages(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(list + ":2: bad list line")));
}

TEST(ImagesListTest, MissingListFile) {
  TempDir dir;
  ImageOptions options;
  options.root = dir.path().string();
  options.list_file = (dir.path() / "missing.txt").string();
  EXPECT_THAT(OpenImages(options), StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.txt")));
}

// --- Modes -------------------------------------------------------------------

TEST(ImagesModeTest, PassthroughStoresTheBytesUntouched) {
  TempDir dir;
  const std::vector<uint8_t> jpeg = MakeJpeg(40, 30, 90);
  WriteBytes(dir.path() / "c/p.jpg", jpeg);
  PreparedRecord record;
  SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kPassthrough, &record));
  EXPECT_EQ(record.key, "c/p.jpg");
  EXPECT_EQ(record.labels, Labels{0});
  EXPECT_EQ(record.payload, jpeg);
  EXPECT_EQ(record.image, (ImageInfo{Encoding::kJpeg, Layout::kHWC, 30, 40, 3}));
}

TEST(ImagesModeTest, ReencodeAndRaw) {
  TempDir dir;
  WriteBytes(dir.path() / "c/p.jpg", MakeJpeg(128, 64, 200));
  PreparedRecord record;
  SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kReencode, &record));
  EXPECT_EQ(record.image, (ImageInfo{Encoding::kJpeg, Layout::kHWC, 16, 32, 3}));
  SP_ASSERT_OK_AND_ASSIGN(codec::JpegInfo info, codec::ProbeJpeg(record.payload, "out"));
  EXPECT_EQ(info.width, 32u);

  SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kRaw, &record));
  EXPECT_EQ(record.image, (ImageInfo{Encoding::kRaw, Layout::kHWC, 12, 16, 3}));
  ASSERT_EQ(record.payload.size(), 16u * 12 * 3);
  for (uint8_t v : record.payload) EXPECT_NEAR(v, 200, 3);
}

// --restart-markers: the stored JPEG is re-coded (a DRI of 1 MCU) and
// decodes to the input's pixels; progressive files are stored as they are.
TEST(ImagesModeTest, RestartMarkersKeepThePixels) {
  TempDir dir;
  const std::vector<uint8_t> jpeg = MakeJpeg(300, 200, 90);
  WriteBytes(dir.path() / "c/p.jpg", jpeg);
  const uint8_t dri[] = {0xFF, 0xDD, 0x00, 0x04, 0x00, 0x01};
  auto has_dri = [&](const std::vector<uint8_t>& b) {
    return std::search(b.begin(), b.end(), std::begin(dri), std::end(dri)) != b.end();
  };
  codec::JpegDecoder decoder;
  SP_ASSERT_OK_AND_ASSIGN(codec::PixelView want_view, decoder.Decode(jpeg));
  const std::vector<uint8_t> want(want_view.data, want_view.data + want_view.bytes());
  PreparedRecord record;
  for (bool validate : {false, true}) {
    SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kPassthrough, &record, validate, true));
    EXPECT_EQ(record.image, (ImageInfo{Encoding::kJpeg, Layout::kHWC, 200, 300, 3}));
    EXPECT_NE(record.payload, jpeg);
    EXPECT_TRUE(has_dri(record.payload));
    SP_ASSERT_OK_AND_ASSIGN(codec::PixelView got, decoder.Decode(record.payload));
    EXPECT_TRUE(std::vector<uint8_t>(got.data, got.data + got.bytes()) == want);
  }
  // Reencode: the re-encoded JPEG, re-coded.
  SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kReencode, &record));
  const std::vector<uint8_t> reencoded = record.payload;
  SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kReencode, &record, false, true));
  EXPECT_TRUE(has_dri(record.payload));
  SP_ASSERT_OK_AND_ASSIGN(codec::PixelView r1, decoder.Decode(reencoded));
  const std::vector<uint8_t> reencoded_pixels(r1.data, r1.data + r1.bytes());
  SP_ASSERT_OK_AND_ASSIGN(codec::PixelView r2, decoder.Decode(record.payload));
  EXPECT_TRUE(std::vector<uint8_t>(r2.data, r2.data + r2.bytes()) == reencoded_pixels);
  // Progressive: untouched.
  TempDir progressive_dir;
  const std::vector<uint8_t> progressive = testing::TjSceneJpeg(64, 48, TJSAMP_420, TJFLAG_PROGRESSIVE);
  WriteBytes(progressive_dir.path() / "c/p.jpg", progressive);
  SP_ASSERT_OK(PrepareOnly(progressive_dir, ImageMode::kPassthrough, &record, false, true));
  EXPECT_EQ(record.payload, progressive);
  // Recorded in the pack parameters.
  ImageOptions options = FolderOptions(dir);
  options.restart_markers = true;
  auto source = MustOpen(options);
  ASSERT_NE(source, nullptr);
  EXPECT_THAT(source->ParamsJson(), HasSubstr("\"restart_markers\":true"));
}

TEST(ImagesModeTest, SchemasAndParams) {
  TempDir dir;
  WriteBytes(dir.path() / "c/p.jpg", MakeJpeg(8, 8));
  ImageOptions options = FolderOptions(dir, ImageMode::kRaw);
  options.raw_width = 32;
  options.raw_height = 24;
  auto raw = MustOpen(options);
  ASSERT_NE(raw, nullptr);
  EXPECT_EQ(raw->schema().image, (ImageInfo{Encoding::kRaw, Layout::kHWC, 24, 32, 3}));
  EXPECT_THAT(raw->ParamsJson(), HasSubstr("\"kind\":\"images\""));
  EXPECT_THAT(raw->ParamsJson(), HasSubstr("\"mode\":\"raw\""));
  EXPECT_THAT(raw->ParamsJson(), HasSubstr("\"width\":32"));
  auto pass = MustOpen(FolderOptions(dir));
  ASSERT_NE(pass, nullptr);
  EXPECT_EQ(pass->schema().image, (ImageInfo{Encoding::kJpeg, Layout::kHWC, 0, 0, 0}));
  EXPECT_THAT(pass->ParamsJson(), HasSubstr("\"mode\":\"passthrough\""));
}

TEST(ImagesModeTest, BadOptions) {
  TempDir dir;
  ImageOptions options = FolderOptions(dir, ImageMode::kRaw);
  EXPECT_THAT(OpenImages(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("raw mode needs --size")));
  options = FolderOptions(dir, ImageMode::kReencode);
  options.quality = 0;
  EXPECT_THAT(OpenImages(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("quality")));
  EXPECT_THAT(OpenImages(ImageOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("root")));
  options = FolderOptions(dir, ImageMode::kRaw);
  options.raw_width = options.raw_height = 8;
  options.restart_markers = true;
  EXPECT_THAT(OpenImages(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("restart markers")));
  // The size and the limits, not "raw size too large".
  options.restart_markers = false;
  options.raw_width = 20000;
  options.raw_height = 20000;
  EXPECT_THAT(OpenImages(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("raw size 20000x20000 is too large: each side at most 65500, "
                                 "width x height at most 268435456 pixels")));
}

TEST(ImagesModeTest, ModeNames) {
  for (ImageMode m : {ImageMode::kPassthrough, ImageMode::kReencode, ImageMode::kRaw}) {
    EXPECT_EQ(*ParseImageMode(ImageModeName(m)), m);
  }
  EXPECT_THAT(ParseImageMode("jpeg"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown image mode 'jpeg' (passthrough, reencode, raw)")));
}

TEST(ImagesModeTest, WorkerReusesItsRecord) {
  TempDir dir;
  WriteBytes(dir.path() / "a/big.jpg", MakeJpeg(300, 200, 10));
  WriteBytes(dir.path() / "a/small.jpg", MakeJpeg(20, 10, 250));
  WriteBytes(dir.path() / "b/gray.jpg", MakeJpeg(50, 50, 128, TJPF_GRAY));
  for (ImageMode mode : {ImageMode::kPassthrough, ImageMode::kReencode, ImageMode::kRaw}) {
    ImageOptions options = FolderOptions(dir, mode);
    options.raw_width = options.raw_height = 8;
    options.max_side = 64;
    auto source = MustOpen(options);
    ASSERT_NE(source, nullptr);
    auto worker = source->NewWorker();
    PreparedRecord record;
    for (int round = 0; round < 2; ++round) {
      for (size_t i = 0; i < source->size(); ++i) {
        SP_ASSERT_OK(worker->Prepare(i, &record));
        EXPECT_EQ(record.labels[0], i < 2 ? 0 : 1);
      }
    }
  }
}

// --- Bad inputs: each names the file and says what is wrong ---------------

TEST(ImagesBadInputTest, TruncatedJpeg) {
  TempDir dir;
  std::vector<uint8_t> jpeg = NoisyJpeg(64, 64);
  jpeg.resize(jpeg.size() - 100);
  const fs::path path = dir.path() / "c/cut.jpg";
  WriteBytes(path, jpeg);
  PreparedRecord record;
  for (ImageMode mode : {ImageMode::kPassthrough, ImageMode::kReencode, ImageMode::kRaw}) {
    EXPECT_THAT(PrepareOnly(dir, mode, &record),
                StatusIs(absl::StatusCode::kDataLoss,
                         HasSubstr(path.string() + " @" + std::to_string(jpeg.size()) +
                                   ": truncated JPEG: no end-of-image marker")));
  }
}

// Bytes after the end-of-image marker (a camera's trailer) are not damage:
// the file is packed in every mode, passthrough keeping it byte for byte.
TEST(ImagesBadInputTest, BytesAfterEndOfImageAreKept) {
  TempDir dir;
  std::vector<uint8_t> jpeg = NoisyJpeg(64, 64);
  for (uint8_t b : {0xFF, 0xD8, 0xFF, 0xE1, 0x12, 0x34, 0x00, 0xFF}) jpeg.push_back(b);
  WriteBytes(dir.path() / "c/trailer.jpg", jpeg);
  PreparedRecord record;
  SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kPassthrough, &record));
  EXPECT_EQ(record.payload, jpeg);
  SP_EXPECT_OK(PrepareOnly(dir, ImageMode::kReencode, &record));
  SP_EXPECT_OK(PrepareOnly(dir, ImageMode::kRaw, &record));
}

TEST(ImagesBadInputTest, CorruptJpeg) {
  // Damaged entropy data that still ends in EOI: only a decode can tell.
  TempDir dir;
  std::vector<uint8_t> jpeg = NoisyJpeg(96, 96);
  SP_ASSERT_OK_AND_ASSIGN(codec::JpegInfo info, codec::ProbeJpeg(jpeg, "x"));
  jpeg.resize(info.sos_offset + 14 + 300);
  jpeg.insert(jpeg.end(), {0xFF, 0xD9});
  const fs::path path = dir.path() / "c/corrupt.jpg";
  WriteBytes(path, jpeg);
  PreparedRecord record;
  SP_EXPECT_OK(PrepareOnly(dir, ImageMode::kPassthrough, &record));  // markers look fine
  EXPECT_THAT(
      PrepareOnly(dir, ImageMode::kPassthrough, &record, /*validate=*/true),
      StatusIs(absl::StatusCode::kDataLoss, HasSubstr(path.string() + ": corrupt JPEG data: ")));
  EXPECT_THAT(
      PrepareOnly(dir, ImageMode::kPassthrough, &record, false, /*restart_markers=*/true),
      StatusIs(absl::StatusCode::kDataLoss, HasSubstr(path.string() + ": corrupt JPEG data: ")));
  EXPECT_THAT(PrepareOnly(dir, ImageMode::kReencode, &record),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr(path.string() + ": corrupt JPEG")));
  EXPECT_THAT(PrepareOnly(dir, ImageMode::kRaw, &record),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr(path.string() + ": corrupt JPEG")));
}

TEST(ImagesBadInputTest, CmykJpeg) {
  TempDir dir;
  std::vector<uint8_t> cmyk(48 * 32 * 4);
  for (size_t i = 0; i < cmyk.size(); i += 4) {
    cmyk[i] = 200;
    cmyk[i + 1] = 100;
    cmyk[i + 2] = 50;
    cmyk[i + 3] = 180;
  }
  SP_ASSERT_OK_AND_ASSIGN(auto jpeg,
                          EncodeCmykJpeg(cmyk.data(), 48, 32, 95, CmykJpegKind::kAdobeCmyk));
  WriteBytes(dir.path() / "c/cmyk.jpg", jpeg);
  PreparedRecord record;
  // Passthrough: stored as is, with its 4 channels, for the reader to convert.
  SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kPassthrough, &record, /*validate=*/true));
  EXPECT_EQ(record.image, (ImageInfo{Encoding::kJpeg, Layout::kHWC, 32, 48, 4}));
  EXPECT_EQ(record.payload, jpeg);
  // Reencode: an RGB JPEG.
  SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kReencode, &record));
  EXPECT_EQ(record.image.channels, 3);
  SP_ASSERT_OK_AND_ASSIGN(codec::JpegInfo info, codec::ProbeJpeg(record.payload, "out"));
  EXPECT_EQ(info.color_space, codec::JpegColorSpace::kYCbCr);
  // Raw: RGB pixels, R = C*K/255 etc. (Adobe convention).
  SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kRaw, &record));
  ASSERT_EQ(record.payload.size(), 16u * 12 * 3);
  for (size_t i = 0; i < record.payload.size(); i += 3) {
    EXPECT_NEAR(record.payload[i], 141, 3);
    EXPECT_NEAR(record.payload[i + 1], 71, 3);
    EXPECT_NEAR(record.payload[i + 2], 35, 3);
  }
}

TEST(ImagesBadInputTest, YcckJpeg) {
  TempDir dir;
  WriteBytes(dir.path() / "c/ycck.jpg", MakeJpeg(32, 32, 255, TJPF_CMYK));  // white paper
  PreparedRecord record;
  SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kPassthrough, &record));
  EXPECT_EQ(record.image.channels, 4);
  SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kRaw, &record));
  for (uint8_t v : record.payload) EXPECT_NEAR(v, 255, 2);
}

TEST(ImagesBadInputTest, GrayscaleJpeg) {
  TempDir dir;
  WriteBytes(dir.path() / "c/gray.jpg", MakeJpeg(40, 20, 77, TJPF_GRAY));
  PreparedRecord record;
  SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kPassthrough, &record, /*validate=*/true));
  EXPECT_EQ(record.image, (ImageInfo{Encoding::kJpeg, Layout::kHWC, 20, 40, 1}));
  SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kReencode, &record));
  EXPECT_EQ(record.image, (ImageInfo{Encoding::kJpeg, Layout::kHWC, 16, 32, 1}));
  SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kRaw, &record));
  EXPECT_EQ(record.image, (ImageInfo{Encoding::kRaw, Layout::kHWC, 12, 16, 3}));
  for (uint8_t v : record.payload) EXPECT_NEAR(v, 77, 1);
}

TEST(ImagesFormatsTest, PngNamedJpgIsConvertedByItsContent) {
  // ImageNet's n02105855_2933.JPEG is a PNG.
  TempDir dir;
  WriteBytes(dir.path() / "n02105855/n02105855_2933.JPEG", MakePng(40, 20, 3, 90));
  PreparedRecord record;
  SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kPassthrough, &record));
  EXPECT_EQ(record.converted_from, "PNG");
  EXPECT_EQ(record.left_out, "");
  EXPECT_EQ(record.image, (ImageInfo{Encoding::kJpeg, Layout::kHWC, 20, 40, 3}));
  // Stored as a JPEG at full size and full chroma, near the source's pixels.
  SP_ASSERT_OK_AND_ASSIGN(codec::JpegInfo info, codec::ProbeJpeg(record.payload, "stored"));
  EXPECT_EQ(info.width, 40u);
  EXPECT_EQ(info.height, 20u);
  SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kRaw, &record));
  EXPECT_EQ(record.converted_from, "PNG");
  EXPECT_EQ(record.image, (ImageInfo{Encoding::kRaw, Layout::kHWC, 12, 16, 3}));
  for (uint8_t v : record.payload) ASSERT_EQ(v, 90);  // a flat PNG resizes to itself
  SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kReencode, &record));
  EXPECT_EQ(record.image, (ImageInfo{Encoding::kJpeg, Layout::kHWC, 16, 32, 3}));
}

TEST(ImagesFormatsTest, JpegNamedPngIsStoredUntouched) {
  TempDir dir;
  const std::vector<uint8_t> jpeg = MakeJpeg(24, 16);
  WriteBytes(dir.path() / "c/photo.png", jpeg);
  PreparedRecord record;
  SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kPassthrough, &record));
  EXPECT_EQ(record.converted_from, "");
  EXPECT_EQ(record.payload, jpeg);
  EXPECT_EQ(record.image, (ImageInfo{Encoding::kJpeg, Layout::kHWC, 16, 24, 3}));
}

TEST(ImagesFormatsTest, GrayPngStaysGrayAsJpegAndAlphaIsDropped) {
  TempDir dir;
  WriteBytes(dir.path() / "c/g.png", MakePng(8, 8, 1, 200));
  PreparedRecord record;
  SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kPassthrough, &record));
  EXPECT_EQ(record.image.channels, 1);
  fs::remove(dir.path() / "c/g.png");
  WriteBytes(dir.path() / "c/a.png", MakePng(8, 8, 4, 60));
  SP_ASSERT_OK(PrepareOnly(dir, ImageMode::kRaw, &record));
  EXPECT_EQ(record.image.channels, 3);
  for (uint8_t v : record.payload) ASSERT_EQ(v, 60);  // alpha 60 dropped, not composited
}

TEST(ImagesFormatsTest, NonJpegSkipLeavesItOutWithTheReason) {
  TempDir dir;
  WriteBytes(dir.path() / "c/x.png", MakePng(8, 8, 3, 1));
  ImageOptions options = OneImageOptions(dir, ImageMode::kPassthrough);
  options.non_jpeg = NonJpeg::kSkip;
  for (OnError on_error : {OnError::kSkip, OnError::kFail}) {
    options.on_error = on_error;  // a choice, not bad input: fail mode too
    PreparedRecord record;
    SP_ASSERT_OK(PrepareOnly(options, &record));
    EXPECT_EQ(record.left_out,
              "PNG image, not a JPEG: left out by --non-jpeg skip (--non-jpeg convert stores it "
              "as JPEG)");
  }
  // A damaged PNG is not decoded when skipped, so it is left out the same way;
  // unknown content is still bad input.
  WriteBytes(dir.path() / "c/x.png", {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0});
  PreparedRecord record;
  SP_ASSERT_OK(PrepareOnly(options, &record));
  EXPECT_THAT(record.left_out, HasSubstr("PNG image, not a JPEG"));
  WriteText(dir.path() / "c/x.png", "not an image");
  EXPECT_THAT(PrepareOnly(options, &record),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("x.png: unknown content")));
}

TEST(ImagesFormatsTest, WorkerClearsLastItemsFormatNotes) {
  // One worker, a PNG then a JPEG: the JPEG must not inherit "PNG".
  TempDir dir;
  WriteBytes(dir.path() / "c/1.png", MakePng(8, 8, 3, 1));
  WriteBytes(dir.path() / "c/2.jpg", MakeJpeg(8, 8));
  ImageOptions options = FolderOptions(dir);
  SP_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Source> source, OpenImages(options));
  auto worker = source->NewWorker();
  PreparedRecord record;
  SP_ASSERT_OK(worker->Prepare(0, &record));
  EXPECT_EQ(record.converted_from, "PNG");
  SP_ASSERT_OK(worker->Prepare(1, &record));
  EXPECT_EQ(record.converted_from, "");
  options.non_jpeg = NonJpeg::kSkip;
  SP_ASSERT_OK_AND_ASSIGN(source, OpenImages(options));
  worker = source->NewWorker();
  SP_ASSERT_OK(worker->Prepare(0, &record));
  EXPECT_NE(record.left_out, "");
  SP_ASSERT_OK(worker->Prepare(1, &record));
  EXPECT_EQ(record.left_out, "");
}

TEST(ImagesBadInputTest, DamagedPngIsBadInputLikeADamagedJpeg) {
  TempDir dir;
  const fs::path path = dir.path() / "c/cut.png";
  const std::vector<uint8_t> png = MakePng(64, 64, 3, 7);
  WriteBytes(path, std::vector<uint8_t>(png.begin(), png.begin() + png.size() / 2));
  PreparedRecord record;
  for (ImageMode mode : {ImageMode::kPassthrough, ImageMode::kReencode, ImageMode::kRaw}) {
    EXPECT_THAT(PrepareOnly(dir, mode, &record),
                StatusIs(absl::StatusCode::kDataLoss,
                         AllOf(HasSubstr(path.string() + " @"), HasSubstr("truncated PNG"))));
  }
}

TEST(ImagesBadInputTest, GifIsNamedAsNotDecoded) {
  TempDir dir;
  const fs::path path = dir.path() / "c/anim.png";
  WriteBytes(path, {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0, 0, 0});
  PreparedRecord record;
  EXPECT_THAT(PrepareOnly(dir, ImageMode::kPassthrough, &record),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(path.string() + ": GIF image: not a format shardpack decodes")));
}

TEST(ImagesBadInputTest, ZeroByteFile) {
  TempDir dir;
  const fs::path path = dir.path() / "c/empty.jpg";
  WriteBytes(path, {});
  PreparedRecord record;
  EXPECT_THAT(PrepareOnly(dir, ImageMode::kPassthrough, &record),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr(path.string() + " @0: empty file")));
}

TEST(ImagesBadInputTest, UnreadableFile) {
  if (geteuid() == 0) {
    GTEST_SKIP() << "running as root, which reads any file whatever its mode; "
                    "DanglingSymlink and NotARegularFile cover the root case";
  }
  TempDir dir;
  const fs::path path = dir.path() / "c/locked.jpg";
  WriteBytes(path, MakeJpeg(8, 8));
  fs::permissions(path, fs::perms::none);
  PreparedRecord record;
  EXPECT_THAT(PrepareOnly(dir, ImageMode::kPassthrough, &record),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("open " + path.string() + ": Permission denied")));
}

TEST(ImagesBadInputTest, DanglingSymlink) {
  // Listed by the walk (os.walk lists it among the files), unreadable.
  TempDir dir;
  const fs::path path = dir.path() / "c/gone.jpg";
  fs::create_directories(path.parent_path());
  fs::create_symlink(dir.path() / "nowhere.jpg", path);
  PreparedRecord record;
  EXPECT_THAT(PrepareOnly(dir, ImageMode::kPassthrough, &record),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("open " + path.string() + ": No such file or directory")));
}

TEST(ImagesBadInputTest, NotARegularFile) {
  // A FIFO named *.jpg must fail at once, not block the packer.
  TempDir dir;
  const fs::path path = dir.path() / "c/fifo.jpg";
  fs::create_directories(path.parent_path());
  ASSERT_EQ(mkfifo(path.c_str(), 0644), 0);
  PreparedRecord record;
  EXPECT_THAT(PrepareOnly(dir, ImageMode::kPassthrough, &record),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr(path.string() + ": a FIFO, not a regular file")));
}

TEST(ImagesBadInputTest, NonImageFile) {
  TempDir dir;
  const fs::path path = dir.path() / "c/notes.jpg";
  WriteText(path, "these are my notes, saved with the wrong extension\n");
  PreparedRecord record;
  for (ImageMode mode : {ImageMode::kPassthrough, ImageMode::kReencode, ImageMode::kRaw}) {
    EXPECT_THAT(PrepareOnly(dir, mode, &record),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(path.string() + ": unknown content: not a format shardpack "
                                                   "decodes")));
  }
}

TEST(ImagesBadInputTest, AbsurdDimensions) {
  TempDir dir;
  std::vector<uint8_t> jpeg = MakeJpeg(16, 16);
  for (size_t i = 0; i + 8 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {  // SOF0: height, width at +5, +7
      jpeg[i + 5] = jpeg[i + 6] = jpeg[i + 7] = jpeg[i + 8] = 0xFF;
      break;
    }
  }
  const fs::path path = dir.path() / "c/huge.jpg";
  WriteBytes(path, jpeg);
  PreparedRecord record;
  for (ImageMode mode : {ImageMode::kPassthrough, ImageMode::kReencode, ImageMode::kRaw}) {
    EXPECT_THAT(PrepareOnly(dir, mode, &record),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(path.string() + ": image too large: 65535x65535")));
  }
}

TEST(ImagesBadInputTest, ListEntryThatIsADirectory) {
  TempDir dir;
  fs::create_directories(dir.path() / "x.jpg");
  WriteText(dir.path() / "list.txt", "x.jpg 0\n");
  ImageOptions options;
  options.list_file = (dir.path() / "list.txt").string();
  auto source = MustOpen(options);
  ASSERT_NE(source, nullptr);
  PreparedRecord record;
  EXPECT_THAT(source->NewWorker()->Prepare(0, &record),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not a regular file")));
}

TEST(ImagesBadInputTest, OneBadFileDoesNotStopTheOthers) {
  TempDir dir;
  WriteBytes(dir.path() / "c/1.jpg", MakeJpeg(8, 8));
  WriteBytes(dir.path() / "c/2.jpg", {});
  WriteBytes(dir.path() / "c/3.jpg", MakeJpeg(8, 8));
  auto source = MustOpen(FolderOptions(dir, ImageMode::kReencode));
  ASSERT_NE(source, nullptr);
  auto worker = source->NewWorker();
  PreparedRecord record;
  SP_EXPECT_OK(worker->Prepare(0, &record));
  EXPECT_FALSE(worker->Prepare(1, &record).ok());
  SP_EXPECT_OK(worker->Prepare(2, &record));
  EXPECT_EQ(record.key, "c/3.jpg");
}

// --- The demo generator, through the image source --------------------------

TEST(DemoDataTest, ImageFolderIsDeterministicAndPacksCleanly) {
  TempDir dir;
  DemoImagesOptions options;
  options.classes = 3;
  options.images_per_class = 4;
  options.width = 160;
  options.height = 120;
  options.seed = 7;
  SP_ASSERT_OK(WriteDemoImageFolder((dir.path() / "one").string(), options));
  SP_ASSERT_OK(WriteDemoImageFolder((dir.path() / "two").string(), options));
  EXPECT_EQ(ReadBytes(dir.path() / "one/class_02/img_0003.JPEG"),
            ReadBytes(dir.path() / "two/class_02/img_0003.JPEG"));
  EXPECT_NE(ReadBytes(dir.path() / "one/class_02/img_0003.JPEG"),
            ReadBytes(dir.path() / "one/class_02/img_0002.JPEG"));

  ImageOptions images;
  images.root = (dir.path() / "one").string();
  images.validate_decode = true;
  auto source = MustOpen(images);
  ASSERT_NE(source, nullptr);
  EXPECT_THAT(source->schema().labels[0].classes, ElementsAre("class_00", "class_01", "class_02"));
  ASSERT_EQ(source->size(), 12u);
  auto worker = source->NewWorker();
  PreparedRecord record;
  for (size_t i = 0; i < source->size(); ++i) {
    SP_ASSERT_OK(worker->Prepare(i, &record));
    EXPECT_EQ(record.image, (ImageInfo{Encoding::kJpeg, Layout::kHWC, 120, 160, 3}));
    EXPECT_EQ(record.labels[0], static_cast<int64_t>(i / 4));
  }
}

TEST(DemoDataTest, ScenesAreNotNoise) {
  // Neighboring pixels of a photo are alike; of white noise they are not.
  const int w = 200, h = 150;
  std::vector<uint8_t> rgb(w * h * 3);
  RenderDemoScene(w, h, 1, 42, rgb.data());
  double diff = 0;
  for (int y = 0; y < h; ++y) {
    for (int x = 1; x < w; ++x) diff += std::abs(rgb[(y * w + x) * 3] - rgb[(y * w + x - 1) * 3]);
  }
  diff /= h * (w - 1);
  EXPECT_LT(diff, 40);  // white noise: about 85
  EXPECT_GT(diff, 2);   // not flat either
}

TEST(DemoDataTest, Cifar10File) {
  TempDir dir;
  const std::string path = (dir.path() / "cifar/data_batch_1.bin").string();
  SP_ASSERT_OK(WriteDemoCifar10(path, 25, 3));
  const std::vector<uint8_t> data = ReadBytes(path);
  ASSERT_EQ(data.size(), 25u * 3073);
  for (int i = 0; i < 25; ++i) EXPECT_EQ(data[i * 3073], i % 10);
  const std::vector<uint8_t> meta = ReadBytes(dir.path() / "cifar/batches.meta.txt");
  EXPECT_EQ(std::string(meta.begin(), meta.end()),
            "airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n");
}

}  // namespace
}  // namespace shardpack::datasets
