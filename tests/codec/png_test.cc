// DecodePng on PNGs written here by libpng's writer (every color type, bit
// depth, tRNS, Adam7) or built byte by byte (absurd IHDRs), and on damaged
// copies: cut at every byte, a byte flipped anywhere.
#include <png.h>  // brings <setjmp.h> for png_jmpbuf

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/decode.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace shardpack::codec {
namespace {

using ::shardpack::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

ByteSpan Span(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// What a test PNG holds: its IHDR, one sample per channel per pixel, and the
// chunks around them.
struct PngFixture {
  uint32_t width = 13;
  uint32_t height = 11;
  int color_type = PNG_COLOR_TYPE_RGB;
  int depth = 8;
  bool interlace = false;
  std::vector<uint16_t> samples;     // height x width x ChannelsOf(color_type)
  std::vector<png_color> palette;    // PLTE
  std::vector<png_byte> trns_alpha;  // a palette's tRNS
  std::optional<png_color_16> trns;  // gray's or RGB's tRNS
  std::string text;                  // a tEXt chunk (zTXt when compress_text)
  bool compress_text = false;
};

int ChannelsOf(int color_type) {
  switch (color_type) {
    case PNG_COLOR_TYPE_GRAY_ALPHA:
      return 2;
    case PNG_COLOR_TYPE_RGB:
      return 3;
    case PNG_COLOR_TYPE_RGB_ALPHA:
      return 4;
    default:  // gray, palette
      return 1;
  }
}

// Samples spread over the whole range of `depth` bits (16-bit ones vary in
// both bytes); palette indices stay inside the palette.
void FillSamples(PngFixture* f) {
  const size_t n = size_t{f->width} * f->height * static_cast<size_t>(ChannelsOf(f->color_type));
  const uint32_t range = f->palette.empty() ? 1u << f->depth : uint32_t(f->palette.size());
  f->samples.resize(n);
  uint32_t state = 12345;
  for (size_t i = 0; i < n; ++i) {
    state = state * 1103515245u + 12345u;
    f->samples[i] = static_cast<uint16_t>((state >> 8) % range);
  }
}

// Rows as PNG stores them: samples big-endian, packed MSB first below 8 bits.
std::vector<uint8_t> PackRows(const PngFixture& f, size_t* row_bytes) {
  const size_t per_row = f.width * static_cast<size_t>(ChannelsOf(f.color_type));
  *row_bytes = (per_row * static_cast<size_t>(f.depth) + 7) / 8;
  std::vector<uint8_t> out(*row_bytes * f.height, 0);
  for (uint32_t y = 0; y < f.height; ++y) {
    uint8_t* row = out.data() + y * *row_bytes;
    for (size_t i = 0; i < per_row; ++i) {
      const uint16_t v = f.samples[y * per_row + i];
      if (f.depth == 16) {
        row[2 * i] = static_cast<uint8_t>(v >> 8);
        row[2 * i + 1] = static_cast<uint8_t>(v);
      } else if (f.depth == 8) {
        row[i] = static_cast<uint8_t>(v);
      } else {
        const size_t bit = i * static_cast<size_t>(f.depth);
        row[bit / 8] |= static_cast<uint8_t>(v << (8 - f.depth - bit % 8));
      }
    }
  }
  return out;
}

void AppendToString(png_structp png, png_bytep data, size_t n) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<char*>(data), n);
}
void FlushNothing(png_structp) {}
[[noreturn]] void WriteFailed(png_structp png, png_const_charp) { png_longjmp(png, 1); }
void WriteWarning(png_structp, png_const_charp) {}

// No C++ object with a destructor lives in this frame: libpng's errors
// longjmp back to it.
bool WritePngC(png_structp png, png_infop info, const PngFixture& f, png_bytepp rows,
               png_textp text) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_IHDR(png, info, f.width, f.height, f.depth, f.color_type,
               f.interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  // The writer would refuse an index past the palette; a test wants one.
  png_set_check_for_invalid_index(png, -1);
  if (!f.palette.empty()) png_set_PLTE(png, info, f.palette.data(), int(f.palette.size()));
  if (!f.trns_alpha.empty()) {
    png_set_tRNS(png, info, f.trns_alpha.data(), int(f.trns_alpha.size()), nullptr);
  }
  if (f.trns.has_value()) png_set_tRNS(png, info, nullptr, 0, &*f.trns);
  if (text != nullptr) png_set_text(png, info, text, 1);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, info);
  return true;
}

std::string WritePng(const PngFixture& f) {
  std::string out;
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, WriteFailed, WriteWarning);
  png_infop info = png_create_info_struct(png);
  png_set_write_fn(png, &out, AppendToString, FlushNothing);
  size_t row_bytes = 0;
  std::vector<uint8_t> packed = PackRows(f, &row_bytes);
  std::vector<png_bytep> rows(f.height);
  for (uint32_t y = 0; y < f.height; ++y) rows[y] = packed.data() + y * row_bytes;
  png_text text = {};
  text.compression = f.compress_text ? PNG_TEXT_COMPRESSION_zTXt : PNG_TEXT_COMPRESSION_NONE;
  text.key = const_cast<char*>("Comment");
  text.text = const_cast<char*>(f.text.c_str());
  text.text_length = f.text.size();
  const bool ok = WritePngC(png, info, f, rows.data(), f.text.empty() ? nullptr : &text);
  png_destroy_write_struct(&png, &info);
  EXPECT_TRUE(ok) << "libpng could not write the fixture";
  return out;
}

// The contract's pixels for `f`, computed from its samples (decode.h).
std::vector<uint8_t> Expected(const PngFixture& f, bool keep_gray) {
  const bool gray = (f.color_type & PNG_COLOR_MASK_COLOR) == 0;
  const int out_channels = gray && keep_gray ? 1 : 3;
  const int in_channels = ChannelsOf(f.color_type);
  auto scale = [&](uint16_t v) -> uint8_t {
    if (f.depth == 16) return static_cast<uint8_t>(v >> 8);
    if (f.depth == 8) return static_cast<uint8_t>(v);
    return static_cast<uint8_t>(v * 255 / ((1 << f.depth) - 1));
  };
  std::vector<uint8_t> out;
  for (size_t p = 0; p < size_t{f.width} * f.height; ++p) {
    const uint16_t* s = &f.samples[p * static_cast<size_t>(in_channels)];
    if (f.color_type == PNG_COLOR_TYPE_PALETTE) {
      // Past PLTE: PIL's gray ramp.
      const png_byte i = static_cast<png_byte>(s[0]);
      const png_color c = s[0] < f.palette.size() ? f.palette[s[0]] : png_color{i, i, i};
      out.insert(out.end(), {c.red, c.green, c.blue});
    } else if (gray) {
      out.insert(out.end(), static_cast<size_t>(out_channels), scale(s[0]));
    } else {
      out.insert(out.end(), {scale(s[0]), scale(s[1]), scale(s[2])});
    }
  }
  return out;
}

std::vector<png_color> TestPalette(size_t n) {
  std::vector<png_color> palette(n);
  for (size_t i = 0; i < n; ++i) {
    palette[i] = {static_cast<png_byte>(i * 37 + 5), static_cast<png_byte>(255 - i * 11),
                  static_cast<png_byte>(i * i + 3)};
  }
  return palette;
}

struct Variant {
  int color_type;
  int depth;
  bool trns;
};

PngFixture MakeFixture(const Variant& v, bool interlace) {
  PngFixture f;
  f.color_type = v.color_type;
  f.depth = v.depth;
  f.interlace = interlace;
  if (v.color_type == PNG_COLOR_TYPE_PALETTE) {
    // Short of 2^depth at 8 bits, as real palettes are.
    f.palette = TestPalette(v.depth == 8 ? 200 : size_t{1} << v.depth);
    if (v.trns) f.trns_alpha = {0, 128, 0};
  }
  FillSamples(&f);
  if (v.trns && v.color_type == PNG_COLOR_TYPE_GRAY) {
    f.trns = png_color_16{0, 0, 0, 0, f.samples[0]};  // the first pixel is transparent
  } else if (v.trns && v.color_type == PNG_COLOR_TYPE_RGB) {
    f.trns = png_color_16{0, f.samples[0], f.samples[1], f.samples[2], 0};
  }
  return f;
}

std::string VariantName(const Variant& v) {
  const char* kind = "";
  switch (v.color_type) {
    case PNG_COLOR_TYPE_GRAY:
      kind = "Gray";
      break;
    case PNG_COLOR_TYPE_GRAY_ALPHA:
      kind = "GrayAlpha";
      break;
    case PNG_COLOR_TYPE_RGB:
      kind = "Rgb";
      break;
    case PNG_COLOR_TYPE_RGB_ALPHA:
      kind = "Rgba";
      break;
    default:
      kind = "Palette";
      break;
  }
  return absl::StrCat(kind, v.depth, v.trns ? "Trns" : "");
}

const Variant kVariants[] = {
    {PNG_COLOR_TYPE_GRAY, 1, false},        {PNG_COLOR_TYPE_GRAY, 2, false},
    {PNG_COLOR_TYPE_GRAY, 4, false},        {PNG_COLOR_TYPE_GRAY, 8, false},
    {PNG_COLOR_TYPE_GRAY, 16, false},       {PNG_COLOR_TYPE_GRAY, 1, true},
    {PNG_COLOR_TYPE_GRAY, 4, true},         {PNG_COLOR_TYPE_GRAY, 8, true},
    {PNG_COLOR_TYPE_GRAY, 16, true},        {PNG_COLOR_TYPE_GRAY_ALPHA, 8, false},
    {PNG_COLOR_TYPE_GRAY_ALPHA, 16, false}, {PNG_COLOR_TYPE_RGB, 8, false},
    {PNG_COLOR_TYPE_RGB, 16, false},        {PNG_COLOR_TYPE_RGB, 8, true},
    {PNG_COLOR_TYPE_RGB, 16, true},         {PNG_COLOR_TYPE_RGB_ALPHA, 8, false},
    {PNG_COLOR_TYPE_RGB_ALPHA, 16, false},  {PNG_COLOR_TYPE_PALETTE, 1, false},
    {PNG_COLOR_TYPE_PALETTE, 2, false},     {PNG_COLOR_TYPE_PALETTE, 4, false},
    {PNG_COLOR_TYPE_PALETTE, 8, false},     {PNG_COLOR_TYPE_PALETTE, 1, true},
    {PNG_COLOR_TYPE_PALETTE, 2, true},      {PNG_COLOR_TYPE_PALETTE, 4, true},
    {PNG_COLOR_TYPE_PALETTE, 8, true},
};

// (variant, interlaced, keep_gray)
class PngVariantTest : public ::testing::TestWithParam<std::tuple<Variant, bool, bool>> {};

TEST_P(PngVariantTest, DecodesToTheContractsPixels) {
  const auto& [variant, interlace, keep_gray] = GetParam();
  const PngFixture f = MakeFixture(variant, interlace);
  const std::string png = WritePng(f);
  DecodeSpec spec;
  spec.keep_gray = keep_gray;
  DecodeBuffers buffers;
  SP_ASSERT_OK_AND_ASSIGN(const PixelView view, DecodePng(Span(png), "v.png", spec, &buffers));
  const bool gray = (f.color_type & PNG_COLOR_MASK_COLOR) == 0;
  EXPECT_EQ(view.width, f.width);
  EXPECT_EQ(view.height, f.height);
  EXPECT_EQ(view.channels, gray && keep_gray ? 1 : 3);
  const std::vector<uint8_t> want = Expected(f, keep_gray);
  ASSERT_EQ(view.bytes(), want.size());
  EXPECT_EQ(std::vector<uint8_t>(view.data, view.data + view.bytes()), want);
}

INSTANTIATE_TEST_SUITE_P(EveryColorTypeAndDepth, PngVariantTest,
                         ::testing::Combine(::testing::ValuesIn(kVariants), ::testing::Bool(),
                                            ::testing::Bool()),
                         [](const auto& p) {
                           return absl::StrCat(VariantName(std::get<0>(p.param)),
                                               std::get<1>(p.param) ? "Adam7" : "",
                                               std::get<2>(p.param) ? "KeepGray" : "");
                         });

// Adam7 passes that hold no pixel at all (a side under 5) are skipped.
TEST(PngTest, TinyInterlacedImages) {
  for (const auto& [w, h] : {std::pair{1u, 1u}, {2u, 3u}, {5u, 1u}, {1u, 9u}, {9u, 9u}}) {
    for (const Variant& v :
         {Variant{PNG_COLOR_TYPE_GRAY, 2, false}, Variant{PNG_COLOR_TYPE_RGB_ALPHA, 16, false},
          Variant{PNG_COLOR_TYPE_PALETTE, 4, true}}) {
      PngFixture f = MakeFixture(v, /*interlace=*/true);
      f.width = w;
      f.height = h;
      FillSamples(&f);
      DecodeBuffers buffers;
      SP_ASSERT_OK_AND_ASSIGN(const PixelView view,
                              DecodePng(Span(WritePng(f)), "t.png", {}, &buffers));
      EXPECT_EQ(std::vector<uint8_t>(view.data, view.data + view.bytes()), Expected(f, false))
          << w << "x" << h << " " << VariantName(v);
    }
  }
}

TEST(PngTest, BuffersAreReusedAcrossImagesOfEverySize) {
  DecodeBuffers buffers;
  for (uint32_t side : {40u, 7u, 64u, 1u}) {
    PngFixture f = MakeFixture({PNG_COLOR_TYPE_RGB, 8, false}, false);
    f.width = side;
    f.height = side + 3;
    FillSamples(&f);
    SP_ASSERT_OK_AND_ASSIGN(const PixelView view, DecodeImage(ImageFormat::kPng, Span(WritePng(f)),
                                                              "r.png", {}, &buffers));
    EXPECT_EQ(std::vector<uint8_t>(view.data, view.data + view.bytes()), Expected(f, false));
  }
}

// PLTE with 4 colors, an index of 200: (200, 200, 200) as in PIL, whose
// palette is a gray ramp past PLTE's colors (libpng's is black there).
TEST(PngTest, IndexPastThePaletteReadsAsPilsGrayRamp) {
  PngFixture f = MakeFixture({PNG_COLOR_TYPE_PALETTE, 8, false}, false);
  f.palette = TestPalette(4);
  FillSamples(&f);
  f.samples[5] = 200;
  DecodeBuffers buffers;
  SP_ASSERT_OK_AND_ASSIGN(const PixelView view,
                          DecodePng(Span(WritePng(f)), "p.png", {}, &buffers));
  EXPECT_EQ(std::vector<uint8_t>(view.data, view.data + view.bytes()), Expected(f, false));
  EXPECT_EQ(view.data[5 * 3], 200);
}

// A zTXt chunk inflating to 64 MiB: never inflated (ancillary chunks are
// skipped), so the pixels come back as if it were not there.
TEST(PngTest, CompressedTextBombIsSkipped) {
  PngFixture f = MakeFixture({PNG_COLOR_TYPE_RGB, 8, false}, false);
  f.text.assign(size_t{64} << 20, 'a');
  f.compress_text = true;
  const std::string png = WritePng(f);
  f.text.clear();
  ASSERT_LT(png.size(), size_t{1} << 20);
  DecodeBuffers buffers;
  SP_ASSERT_OK_AND_ASSIGN(const PixelView view, DecodePng(Span(png), "bomb.png", {}, &buffers));
  EXPECT_EQ(std::vector<uint8_t>(view.data, view.data + view.bytes()), Expected(f, false));
}

TEST(PngTest, MaxPixelsIsCheckedBeforeDecoding) {
  PngFixture f = MakeFixture({PNG_COLOR_TYPE_RGB, 8, false}, false);
  f.width = 10;
  f.height = 10;
  FillSamples(&f);
  const std::string png = WritePng(f);
  DecodeSpec spec;
  spec.max_pixels = 99;
  DecodeBuffers buffers;
  EXPECT_THAT(DecodePng(Span(png), "big.png", spec, &buffers),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       StartsWith("big.png: image too large: 10x10 PNG (limit: 99 pixels)")));
  EXPECT_EQ(buffers.pixels.capacity(), 0u);
  spec.max_pixels = 100;
  SP_EXPECT_OK(DecodePng(Span(png), "big.png", spec, &buffers));
}

// ---- Bytes built by hand ----

uint32_t Crc32(const std::string& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::string Be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

std::string Chunk(const std::string& type, const std::string& data) {
  return Be32(uint32_t(data.size())) + type + data + Be32(Crc32(type + data));
}

// A PNG whose IHDR says width x height (8-bit RGB), then an empty IDAT.
std::string PngClaiming(uint32_t width, uint32_t height) {
  const std::string ihdr = Be32(width) + Be32(height) + std::string("\x08\x02\x00\x00\x00", 5);
  return std::string("\x89PNG\r\n\x1a\n", 8) + Chunk("IHDR", ihdr) + Chunk("IDAT", "") +
         Chunk("IEND", "");
}

TEST(PngTest, AbsurdSizesAreRefusedBeforeAllocating) {
  DecodeBuffers buffers;
  EXPECT_THAT(DecodePng(Span(PngClaiming(0x7FFFFFFF, 0x7FFFFFFF)), "huge.png", {}, &buffers),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       StartsWith("huge.png: image too large: 2147483647x2147483647 PNG")));
  EXPECT_THAT(DecodePng(Span(PngClaiming(0x7FFFFFFF, 1)), "wide.png", {}, &buffers),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("image too large")));
  EXPECT_EQ(buffers.pixels.capacity(), 0u);
  // Over 31 bits or zero: not a valid IHDR at all.
  EXPECT_THAT(DecodePng(Span(PngClaiming(0x80000000u, 1)), "w31.png", {}, &buffers),
              StatusIs(absl::StatusCode::kDataLoss, StartsWith("w31.png @")));
  EXPECT_THAT(DecodePng(Span(PngClaiming(0, 5)), "zero.png", {}, &buffers),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("corrupt PNG data")));
  EXPECT_EQ(buffers.pixels.capacity(), 0u);
}

TEST(PngTest, NotAPngIsDataLoss) {
  DecodeBuffers buffers;
  EXPECT_THAT(
      DecodePng(Span(std::string("\xFF\xD8\xFF\xE0 not a png at all")), "j.png", {}, &buffers),
      StatusIs(absl::StatusCode::kDataLoss, HasSubstr("j.png @8: corrupt PNG data")));
  EXPECT_THAT(DecodePng({}, "empty.png", {}, &buffers),
              StatusIs(absl::StatusCode::kDataLoss, StartsWith("empty.png @0: truncated PNG")));
}

// Compressed rows past IHDR's height (a taller image's IDAT under a cut
// IHDR): libpng warns ("Too much image data") and goes on; the warning must
// not reach stderr.
TEST(PngTest, WarningsStayOffStderr) {
  PngFixture f = MakeFixture({PNG_COLOR_TYPE_RGB, 8, false}, false);
  std::string png = WritePng(f);
  f.height -= 4;
  f.samples.resize(size_t{f.width} * f.height * 3);
  constexpr size_t kIhdrData = 16, kIhdrCrc = kIhdrData + 13;
  png.replace(kIhdrData + 4, 4, Be32(f.height));
  png.replace(kIhdrCrc, 4, Be32(Crc32(png.substr(kIhdrData - 4, 17))));
  DecodeBuffers buffers;
  ::testing::internal::CaptureStderr();
  auto view = DecodePng(Span(png), "w.png", {}, &buffers);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  SP_ASSERT_OK(view);
  EXPECT_EQ(std::vector<uint8_t>(view->data, view->data + view->bytes()), Expected(f, false));
}

// ---- Damage sweeps ----

// Two fixtures covering the readers' paths: RGB with a tEXt chunk (an
// ancillary CRC), and an interlaced 2-bit palette with tRNS.
std::vector<std::string> SweepFixtures() {
  PngFixture rgb = MakeFixture({PNG_COLOR_TYPE_RGB, 8, false}, false);
  rgb.text = "written by png_test";
  PngFixture palette = MakeFixture({PNG_COLOR_TYPE_PALETTE, 2, true}, true);
  return {WritePng(rgb), WritePng(palette)};
}

TEST(PngDamageTest, CutAtEveryByteIsTruncated) {
  DecodeBuffers buffers;
  for (const std::string& png : SweepFixtures()) {
    SP_ASSERT_OK(DecodePng(Span(png), "whole.png", {}, &buffers));
    for (size_t n = 0; n < png.size(); ++n) {
      const std::string cut = png.substr(0, n);
      EXPECT_THAT(DecodePng(Span(cut), "cut.png", {}, &buffers),
                  StatusIs(absl::StatusCode::kDataLoss,
                           StartsWith(absl::StrCat("cut.png @", n, ": truncated PNG data"))))
          << "cut at " << n << " of " << png.size();
    }
  }
}

// Every chunk has a CRC and every byte is in a chunk or the signature, so
// no flip goes unseen.
TEST(PngDamageTest, FlippedByteAnywhereIsDataLoss) {
  DecodeBuffers buffers;
  for (const std::string& png : SweepFixtures()) {
    for (size_t i = 0; i < png.size(); ++i) {
      for (uint8_t mask : {0x01, 0x80}) {
        std::string bad = png;
        bad[i] = static_cast<char>(bad[i] ^ mask);
        EXPECT_THAT(DecodePng(Span(bad), "flip.png", {}, &buffers),
                    StatusIs(absl::StatusCode::kDataLoss, StartsWith("flip.png @")))
            << "byte " << i << " ^ " << int{mask};
      }
    }
  }
}

TEST(PngDamageTest, DamagedIdatSaysCorruptWithLibpngsReason) {
  const std::string png = SweepFixtures()[0];
  const size_t idat = png.find("IDAT");
  ASSERT_NE(idat, std::string::npos);
  std::string bad = png;
  bad[idat + 10] = static_cast<char>(bad[idat + 10] ^ 0x40);
  DecodeBuffers buffers;
  EXPECT_THAT(DecodePng(Span(bad), "d.png", {}, &buffers),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr(": corrupt PNG data: ")));
}

}  // namespace
}  // namespace shardpack::codec
