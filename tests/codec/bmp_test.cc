// DecodeBmp on files built byte by byte: every header, depth, compression
// and orientation PIL opens, the refusals, and damaged files (truncated at
// every byte, flipped bytes, absurd sizes and offsets), which must give an
// error naming the file, never a signal.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/decode.h"
#include "common/errors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/codec/flip_sweep.h"
#include "tests/testing/status_matchers.h"

namespace shardpack::codec {
namespace {

using ::shardpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kName[] = "img.bmp";
using Rgb = std::array<uint8_t, 3>;

void Put16(std::string* s, uint32_t v) {
  s->push_back(static_cast<char>(v & 0xFF));
  s->push_back(static_cast<char>(v >> 8 & 0xFF));
}
void Put32(std::string* s, uint32_t v) {
  Put16(s, v & 0xFFFF);
  Put16(s, v >> 16);
}
void Set32(std::string* s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*s)[at + i] = static_cast<char>(v >> (8 * i) & 0xFF);
}

struct Bmp {
  uint32_t header = 40;
  uint32_t width = 1;
  uint32_t height = 1;  // written negated when top_down
  bool top_down = false;
  uint32_t bits = 24;
  uint32_t compression = 0;
  std::vector<Rgb> palette;
  std::optional<uint32_t> colors;   // default: palette.size()
  std::vector<uint32_t> masks;      // R, G, B[, A]
  std::optional<uint32_t> offbits;  // default: right after the palette
  std::string pixels;               // as stored (rows padded, in file order)

  std::string Build() const {
    std::string info;
    Put32(&info, header);
    if (header == 12) {
      Put16(&info, width);
      Put16(&info, height);
      Put16(&info, 1);
      Put16(&info, bits);
    } else {
      Put32(&info, width);
      Put32(&info, top_down ? 0u - height : height);
      Put16(&info, 1);
      Put16(&info, bits);
      Put32(&info, compression);
      Put32(&info, static_cast<uint32_t>(pixels.size()));
      Put32(&info, 2835);
      Put32(&info, 2835);
      Put32(&info, colors.value_or(static_cast<uint32_t>(palette.size())));
      Put32(&info, 0);
      // Masks where V2+ headers keep them, or after a 40-byte one.
      for (uint32_t m : masks) {
        if (header == 40 && info.size() == 52) break;
        if (header > 40 && info.size() + 4 > header) break;
        Put32(&info, m);
      }
      while (info.size() < header) info.push_back('\0');
    }
    for (const Rgb& c : palette) {
      info.push_back(static_cast<char>(c[2]));
      info.push_back(static_cast<char>(c[1]));
      info.push_back(static_cast<char>(c[0]));
      if (header != 12) info.push_back('\0');
    }
    std::string file = "BM";
    const uint32_t start = static_cast<uint32_t>(14 + info.size());
    Put32(&file, static_cast<uint32_t>(start + pixels.size()));
    Put32(&file, 0);
    Put32(&file, offbits.value_or(start));
    return file + info + pixels;
  }
};

ByteSpan Span(const std::string& s) {
  return ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

absl::StatusOr<PixelView> Decode(const std::string& file, DecodeBuffers* buffers,
                                 bool keep_gray = false) {
  DecodeSpec spec;
  spec.keep_gray = keep_gray;
  return DecodeBmp(Span(file), kName, spec, buffers);
}

// The decoded pixels as a vector, for EXPECT_EQ; empty on error.
std::vector<uint8_t> Pixels(const std::string& file, bool keep_gray = false) {
  DecodeBuffers buffers;
  auto view = Decode(file, &buffers, keep_gray);
  EXPECT_TRUE(view.ok()) << view.status();
  if (!view.ok()) return {};
  return std::vector<uint8_t>(view->data, view->data + view->bytes());
}

std::vector<uint8_t> Flat(const std::vector<Rgb>& pixels) {
  std::vector<uint8_t> out;
  for (const Rgb& p : pixels) out.insert(out.end(), p.begin(), p.end());
  return out;
}

const std::vector<Rgb> kPalette4 = {{10, 20, 30}, {40, 50, 60}, {70, 80, 90}, {100, 110, 120}};

TEST(DecodeBmpTest, OneBitRowsArePaddedAndBottomUp) {
  Bmp b;
  b.width = 9;
  b.height = 2;
  b.bits = 1;
  b.palette = {{0, 0, 255}, {255, 255, 0}};
  // File order: bottom row first; 9 bits take 2 bytes, padded to 4.
  b.pixels = std::string("\x80\x00\x00\x00\xFF\x80\x00\x00", 8);
  DecodeBuffers buffers;
  auto view = Decode(b.Build(), &buffers);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->width, 9u);
  EXPECT_EQ(view->height, 2u);
  EXPECT_EQ(view->channels, 3);
  const Rgb blue = {0, 0, 255}, yellow = {255, 255, 0};
  std::vector<Rgb> want(9, yellow);  // top row: all ones
  want.push_back(yellow);            // bottom row: a one, then zeros
  want.insert(want.end(), 8, blue);
  EXPECT_EQ(std::vector<uint8_t>(view->data, view->data + view->bytes()), Flat(want));
}

TEST(DecodeBmpTest, FourAndEightBitsWithAShortPaletteUsePilsGrayRamp) {
  Bmp b;
  b.width = 4;
  b.bits = 4;
  b.palette = kPalette4;
  b.pixels = std::string("\x01\x23\x00\x00", 4);  // 0 1 2 3
  EXPECT_EQ(Pixels(b.Build()), Flat({kPalette4[0], kPalette4[1], kPalette4[2], kPalette4[3]}));
  b.pixels = std::string("\x3F\xA0\x00\x00", 4);  // 3, then 15 and 10: past the palette
  EXPECT_EQ(Pixels(b.Build()), Flat({kPalette4[3], {15, 15, 15}, {10, 10, 10}, kPalette4[0]}));
  b.bits = 8;
  b.pixels = std::string("\x02\xC8\x04\x00", 4);
  EXPECT_EQ(Pixels(b.Build()), Flat({kPalette4[2], {200, 200, 200}, {4, 4, 4}, kPalette4[0]}));
}

TEST(DecodeBmpTest, CoreHeaderHasThreeBytePaletteEntries) {
  Bmp b;
  b.header = 12;
  b.width = 2;
  b.bits = 1;
  b.palette = {{1, 2, 3}, {4, 5, 6}};
  b.pixels = std::string("\x40\0\0\0", 4);
  EXPECT_EQ(Pixels(b.Build()), Flat({{1, 2, 3}, {4, 5, 6}}));
  b.bits = 24;
  b.palette.clear();
  b.pixels = std::string("\x03\x02\x01\x06\x05\x04\0\0", 8);
  EXPECT_EQ(Pixels(b.Build()), Flat({{1, 2, 3}, {4, 5, 6}}));
}

TEST(DecodeBmpTest, SixteenBitsExpandAsPilDoes) {
  Bmp b;
  b.width = 3;
  b.bits = 16;
  // 5-5-5: white, (1, 2, 3) and the top bit ignored.
  std::string px;
  Put16(&px, 0x7FFF);
  Put16(&px, 1 << 10 | 2 << 5 | 3);
  Put16(&px, 0x8000 | 31 << 10);
  px += std::string(2, '\0');
  b.pixels = px;
  // v * 255 / 31, truncated: 1 -> 8, 2 -> 16, 3 -> 24.
  EXPECT_EQ(Pixels(b.Build()), Flat({{255, 255, 255}, {8, 16, 24}, {255, 0, 0}}));
  for (uint32_t header : {40u, 52u, 56u, 108u, 124u}) {
    b.header = header;
    b.compression = 3;
    b.masks = {0xF800, 0x7E0, 0x1F};
    px.clear();
    Put16(&px, 0xFFFF);
    Put16(&px, 1 << 11 | 2 << 5 | 3);  // 6-bit green: 2 * 255 / 63 = 8
    Put16(&px, 0);
    px += std::string(2, '\0');
    b.pixels = px;
    EXPECT_EQ(Pixels(b.Build()), Flat({{255, 255, 255}, {8, 8, 24}, {0, 0, 0}})) << header;
  }
}

TEST(DecodeBmpTest, TwentyFourAndThirtyTwoBitsTopDownAndBottomUp) {
  Bmp b;
  b.width = 1;
  b.height = 2;
  b.pixels = std::string("\x03\x02\x01\0\x06\x05\x04\0", 8);
  EXPECT_EQ(Pixels(b.Build()), Flat({{4, 5, 6}, {1, 2, 3}}));
  b.top_down = true;
  EXPECT_EQ(Pixels(b.Build()), Flat({{1, 2, 3}, {4, 5, 6}}));
  b.bits = 32;  // BI_RGB: the fourth byte is ignored
  b.pixels = "\x03\x02\x01\xEE\x06\x05\x04\xFF";
  EXPECT_EQ(Pixels(b.Build()), Flat({{1, 2, 3}, {4, 5, 6}}));
}

TEST(DecodeBmpTest, ThirtyTwoBitFieldsInEveryLayoutPilKnows) {
  struct Case {
    std::vector<uint32_t> masks;
    std::string pixel;  // R=1 G=2 B=3, A/X = 9
  };
  const std::vector<Case> cases = {
      {{0xFF0000, 0xFF00, 0xFF, 0}, "\x03\x02\x01\x09"},
      {{0xFF000000, 0xFF0000, 0xFF00, 0}, "\x09\x03\x02\x01"},
      {{0xFF000000, 0xFF0000, 0xFF00, 0xFF}, "\x09\x03\x02\x01"},
      {{0xFF, 0xFF00, 0xFF0000, 0xFF000000}, "\x01\x02\x03\x09"},
      {{0xFF0000, 0xFF00, 0xFF, 0xFF000000}, "\x03\x02\x01\x09"},
      {{0, 0, 0, 0}, "\x03\x02\x01\x09"},
  };
  for (const Case& c : cases) {
    for (uint32_t header : {56u, 108u, 124u}) {
      Bmp b;
      b.header = header;
      b.bits = 32;
      b.compression = 3;
      b.masks = c.masks;
      b.pixels = c.pixel;
      EXPECT_EQ(Pixels(b.Build()), Flat({{1, 2, 3}})) << header << " " << c.masks[0];
    }
  }
  Bmp b;  // a 40-byte header: three masks after it, no alpha
  b.bits = 32;
  b.compression = 3;
  b.masks = {0xFF000000, 0xFF0000, 0xFF00};
  b.pixels = "\x09\x03\x02\x01";
  EXPECT_EQ(Pixels(b.Build()), Flat({{1, 2, 3}}));
}

TEST(DecodeBmpTest, GrayPalettesStayOneChannelWithKeepGray) {
  Bmp b;
  b.width = 4;
  b.bits = 8;
  for (int i = 0; i < 256; ++i) {
    b.palette.push_back(
        {static_cast<uint8_t>(i), static_cast<uint8_t>(i), static_cast<uint8_t>(i)});
  }
  b.pixels = std::string("\x00\x07\x80\xFF", 4);
  EXPECT_EQ(Pixels(b.Build(), true), (std::vector<uint8_t>{0, 7, 128, 255}));
  EXPECT_EQ(Pixels(b.Build(), false).size(), 12u);
  // Black and white: PIL's mode "1". At 8 bits, index 2 is past it.
  b.palette = {{0, 0, 0}, {255, 255, 255}};
  b.pixels = std::string("\x01\x00\x02\x01", 4);
  EXPECT_EQ(Pixels(b.Build(), true), (std::vector<uint8_t>{255, 0, 2, 255}));
  // Not gray: one sample off.
  b.palette = {{0, 0, 0}, {255, 254, 255}};
  EXPECT_EQ(Pixels(b.Build(), true).size(), 12u);
}

TEST(DecodeBmpTest, PixelOffsetsAsPilReadsThem) {
  Bmp b;
  b.width = 2;
  b.bits = 8;
  b.palette = kPalette4;
  b.pixels = std::string("\x01\x02\0\0", 4);
  const std::vector<uint8_t> want = Flat({kPalette4[1], kPalette4[2]});
  b.offbits = 0;  // zero: right after the palette
  EXPECT_EQ(Pixels(b.Build()), want);
  b.offbits = 14 + 40;  // pointing at the palette: PIL skips 4 bytes a color
  EXPECT_EQ(Pixels(b.Build()), want);
  b.offbits = 14 + 40 + 16 + 2;  // a gap
  b.pixels = std::string("\xEE\xEE\x01\x02\0\0", 6);
  EXPECT_EQ(Pixels(b.Build()), want);
}

TEST(DecodeBmpTest, TheLastRowsPaddingMayBeMissing) {
  Bmp b;
  b.width = 1;
  b.height = 2;
  b.pixels = std::string("\x03\x02\x01\0\x06\x05\x04", 7);
  EXPECT_EQ(Pixels(b.Build()), Flat({{4, 5, 6}, {1, 2, 3}}));
}

// RLE8 data on an 8-bit image of the 4-color palette; index 0 is
// kPalette4[0].
std::vector<uint8_t> Rle(uint32_t width, uint32_t height, std::string data, uint32_t bits = 8,
                         bool top_down = false) {
  Bmp b;
  b.width = width;
  b.height = height;
  b.top_down = top_down;
  b.bits = bits;
  b.compression = bits == 8 ? 1 : 2;
  b.palette = kPalette4;
  b.pixels = std::move(data);
  return Pixels(b.Build());
}

std::vector<uint8_t> Indexed(const std::vector<int>& indices) {
  std::vector<Rgb> out;
  for (int i : indices) out.push_back(kPalette4[i]);
  return Flat(out);
}

TEST(DecodeBmpTest, Rle8EncodedAbsoluteEndOfLineAndDelta) {
  using std::string_literals::operator""s;
  // Bottom row first: a run of 2, an absolute run of 3 (padded to even), end of line.
  EXPECT_EQ(Rle(5, 2, "\x02\x01\x00\x03\x03\x02\x01\x00\x00\x00\x05\x02\x00\x01"s, 8),
            Indexed({2, 2, 2, 2, 2, 1, 1, 3, 2, 1}));
  EXPECT_EQ(Rle(5, 2, "\x05\x02\x00\x00\x02\x01\x00\x03\x03\x02\x01\x00\x00\x01"s, 8, true),
            Indexed({2, 2, 2, 2, 2, 1, 1, 3, 2, 1}));
  // End of line pads with index 0; delta (right 1, up 1) skips with index 0.
  EXPECT_EQ(Rle(3, 3, "\x01\x03\x00\x00\x00\x02\x01\x01\x02\x02\x03\x01\x00\x01"s),
            Indexed({0, 2, 2, 0, 0, 0, 3, 0, 0}));
  // A run past the row's end is cut; more runs in the row are dropped.
  EXPECT_EQ(Rle(2, 2, "\x05\x01\x03\x02\x00\x00\x02\x03"s), Indexed({3, 3, 1, 1}));
  // An absolute run flows into the next row; end of line pads that one.
  EXPECT_EQ(Rle(2, 2, "\x00\x03\x01\x02\x03\x00\x00\x00"s), Indexed({3, 0, 1, 2}));
}

TEST(DecodeBmpTest, Rle4NibblesAndOddAbsoluteRuns) {
  using std::string_literals::operator""s;
  EXPECT_EQ(Rle(5, 1, "\x05\x12"s, 4), Indexed({1, 2, 1, 2, 1}));
  // 5 pixels from 3 bytes, then the pad byte.
  EXPECT_EQ(Rle(6, 1, "\x00\x05\x12\x30\x12\x00\x01\x20"s, 4), Indexed({1, 2, 3, 0, 1, 2}));
}

void ExpectError(const absl::StatusOr<PixelView>& r, absl::StatusCode code,
                 std::string_view fragment) {
  EXPECT_THAT(r, StatusIs(code, AllOf(StartsWith(kName), HasSubstr(std::string(fragment)))));
}

TEST(DecodeBmpTest, WhatPilRefusesIsRefused) {
  DecodeBuffers buffers;
  Bmp b;
  b.pixels = std::string(4, '\0');
  std::string f = b.Build();
  Set32(&f, 14, 20);
  ExpectError(Decode(f, &buffers), absl::StatusCode::kInvalidArgument,
              "unsupported BMP: info header of 20 bytes");
  for (uint32_t bits : {0u, 2u, 7u, 64u}) {
    b.bits = bits;
    ExpectError(Decode(b.Build(), &buffers), absl::StatusCode::kInvalidArgument,
                absl::StrCat("unsupported BMP: ", bits, " bits per pixel"));
  }
  b.bits = 24;
  b.compression = 4;
  ExpectError(Decode(b.Build(), &buffers), absl::StatusCode::kInvalidArgument,
              "compression 4 (embedded JPEG)");
  b.compression = 1;
  ExpectError(Decode(b.Build(), &buffers), absl::StatusCode::kInvalidArgument, "RLE8 at 24 bits");
  b.compression = 3;
  b.masks = {0xFF, 0xFF00, 0xFF0000};
  ExpectError(Decode(b.Build(), &buffers), absl::StatusCode::kInvalidArgument,
              "bit fields R 0xff G 0xff00 B 0xff0000");
  b.bits = 8;
  b.compression = 0;
  b.masks.clear();
  b.palette = kPalette4;
  b.colors = 257;
  ExpectError(Decode(b.Build(), &buffers), absl::StatusCode::kInvalidArgument,
              "palette of 257 colors");
  b.colors = 0xFFFFFFFF;
  ExpectError(Decode(b.Build(), &buffers), absl::StatusCode::kInvalidArgument,
              "palette of 4294967295 colors");
}

TEST(DecodeBmpTest, AbsurdSizesAreRefusedBeforeAllocation) {
  DecodeBuffers buffers;
  Bmp b;
  b.width = 1u << 31;
  b.height = 1u << 31;
  ExpectError(Decode(b.Build(), &buffers), absl::StatusCode::kInvalidArgument,
              "image too large: 2147483648x2147483648 BMP");
  b.width = 0xFFFFFFFF;  // -1
  b.height = 1;
  ExpectError(Decode(b.Build(), &buffers), absl::StatusCode::kInvalidArgument, "image too large");
  b.width = 1;
  b.height = 0x80000000;  // the most negative height: not top-down to PIL
  ExpectError(Decode(b.Build(), &buffers), absl::StatusCode::kInvalidArgument, "image too large");
  b.height = 0;
  ExpectError(Decode(b.Build(), &buffers), absl::StatusCode::kDataLoss, "bad BMP image size 1x0");
  // A valid header over a few bytes: refused before the pixels are taken.
  b.width = b.height = 10000;
  b.pixels = std::string(16, '\0');
  ExpectError(Decode(b.Build(), &buffers), absl::StatusCode::kDataLoss,
              "truncated BMP: the file holds 0 of 10000 pixel rows");
  EXPECT_EQ(buffers.pixels.capacity(), 0u);
}

TEST(DecodeBmpTest, OffsetsPalettesAndRunsPastTheEnd) {
  DecodeBuffers buffers;
  Bmp b;
  b.pixels = std::string(4, '\0');
  b.offbits = 1u << 30;
  auto r = Decode(b.Build(), &buffers);
  ExpectError(r, absl::StatusCode::kDataLoss,
              "@10: corrupt BMP data: pixel data offset 1073741824");
  EXPECT_EQ(common::ErrorOffset(r.status()), 10u);
  b.offbits.reset();
  b.bits = 8;
  b.colors = 200;  // a palette of 200 entries in a file with 4
  b.palette = kPalette4;
  ExpectError(Decode(b.Build(), &buffers), absl::StatusCode::kDataLoss,
              "@54: truncated BMP: palette of 200 colors runs past the end of the file");
  // A delta past the image's end, runs of 255 past the row: clipped, as
  // PIL clips them, then the image is full.
  EXPECT_EQ(Rle(2, 2, std::string("\x01\x01\x00\x02\xFF\xFF", 6)), Indexed({0, 0, 1, 0}));
  EXPECT_EQ(Rle(2, 1, std::string("\xFF\x02", 2)), Indexed({2, 2}));
  // An absolute run past the image's end.
  EXPECT_EQ(Rle(2, 1, std::string("\x00\xFF\x01\x02\x03", 5)), Indexed({1, 2}));
  b.compression = 1;
  b.pixels = std::string("\x02\x01\x00\x01", 4);
  b.colors.reset();
  b.width = 4;
  ExpectError(Decode(b.Build(), &buffers), absl::StatusCode::kDataLoss,
              "corrupt BMP data: RLE end of bitmap after 2 of 4 pixels");
}

// A few small files of every kind, with the shortest prefix that still
// decodes (the last row's padding, or an RLE end-of-bitmap, may go).
std::vector<std::pair<std::string, size_t>> SmallFiles() {
  std::vector<std::pair<std::string, size_t>> out;
  auto add = [&](Bmp b, size_t optional_tail) {
    std::string f = b.Build();
    out.emplace_back(f, f.size() - optional_tail);
  };
  Bmp b;
  b.width = 3;
  b.height = 2;
  b.pixels = std::string(24, '\x41');
  add(b, 3);
  b.bits = 1;
  b.palette = {{1, 2, 3}, {4, 5, 6}};
  b.pixels = std::string(8, '\x5A');
  add(b, 3);
  b.bits = 4;
  b.header = 12;
  b.palette.resize(16);
  add(b, 2);
  b.header = 124;
  b.bits = 32;
  b.compression = 3;
  b.masks = {0xFF, 0xFF00, 0xFF0000, 0xFF000000};
  b.palette.clear();
  b.pixels = std::string(24, '\x33');
  add(b, 0);
  b.header = 40;
  b.bits = 16;
  b.masks = {0xF800, 0x7E0, 0x1F};
  b.pixels = std::string(16, '\x77');
  add(b, 2);
  b.bits = 8;
  b.compression = 1;
  b.masks.clear();
  b.palette = kPalette4;
  b.pixels = std::string("\x03\x01\x00\x00\x00\x03\x01\x02\x03\x00\x00\x01", 12);
  add(b, 3);  // the absolute run's pad byte and the end of bitmap
  b.bits = 4;
  b.compression = 2;
  b.pixels = std::string("\x03\x12\x00\x00\x00\x03\x12\x30\x00\x00\x00\x01", 12);
  add(b, 4);  // end of line and end of bitmap
  return out;
}

TEST(DecodeBmpTest, EveryTruncationIsAnErrorWithTheOffset) {
  DecodeBuffers buffers;
  for (const auto& [file, shortest] : SmallFiles()) {
    auto whole = Decode(file, &buffers);
    ASSERT_TRUE(whole.ok()) << whole.status();
    const std::vector<uint8_t> want(whole->data, whole->data + whole->bytes());
    for (size_t cut = 0; cut < file.size(); ++cut) {
      auto r = Decode(file.substr(0, cut), &buffers);
      if (cut >= shortest) {
        ASSERT_TRUE(r.ok()) << cut << " " << r.status();
        EXPECT_EQ(std::vector<uint8_t>(r->data, r->data + r->bytes()), want) << cut;
        continue;
      }
      ASSERT_FALSE(r.ok()) << "a prefix of " << cut << " of " << file.size() << " bytes decodes";
      EXPECT_THAT(r, StatusIs(absl::StatusCode::kDataLoss, StartsWith(std::string(kName) + " @")))
          << cut;
      EXPECT_TRUE(common::ErrorOffset(r.status()).has_value()) << cut;
    }
  }
}

TEST(DecodeBmpTest, FlippedBytesGiveAnErrorOrAnImageNeverASignal) {
  std::vector<std::string> files;
  for (const auto& [file, shortest] : SmallFiles()) files.push_back(file);
  EXPECT_GT(SweepFlippedBytes(files, {0, 1, 0x7F, 0x80, 0xFF}, DecodeBmp, kName), 100);
}

TEST(DecodeBmpTest, ASignatureIsNeeded) {
  DecodeBuffers buffers;
  Bmp b;
  b.pixels = std::string(4, '\0');
  std::string f = b.Build();
  f[1] = 'X';
  ExpectError(Decode(f, &buffers), absl::StatusCode::kDataLoss, "@0: corrupt BMP data: no BM");
  ExpectError(Decode("", &buffers), absl::StatusCode::kDataLoss, "@0");
}

}  // namespace
}  // namespace shardpack::codec
