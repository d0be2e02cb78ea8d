#include "codec/image_format.h"

#include <cstdint>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace shardpack::codec {
namespace {

ImageFormat Sniff(std::string_view bytes) {
  return SniffImageFormat(ByteSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

using std::string_view_literals::operator""sv;

TEST(SniffImageFormatTest, TellsEachFormatByItsFirstBytes) {
  EXPECT_EQ(Sniff("\xFF\xD8\xFF\xE0"sv), ImageFormat::kJpeg);
  EXPECT_EQ(Sniff("\x89PNG\r\n\x1a\n\0\0\0\rIHDR"sv), ImageFormat::kPng);
  EXPECT_EQ(Sniff("RIFF\x10\0\0\0WEBPVP8 "sv), ImageFormat::kWebp);
  EXPECT_EQ(Sniff("BM\x46\0\0\0\0\0\0\0\x36\0\0\0"sv), ImageFormat::kBmp);
  EXPECT_EQ(Sniff("II*\0\x08\0\0\0"sv), ImageFormat::kTiff);
  EXPECT_EQ(Sniff("MM\0*\0\0\0\x08"sv), ImageFormat::kTiff);
  EXPECT_EQ(Sniff("II+\0\x08\0\0\0"sv), ImageFormat::kTiff);  // BigTIFF
  for (char kind = '1'; kind <= '6'; ++kind) {
    const char pnm[] = {'P', kind, '\n', '1', ' ', '1', '\n'};
    EXPECT_EQ(Sniff({pnm, sizeof(pnm)}), ImageFormat::kPnm) << kind;
  }
  EXPECT_EQ(Sniff("GIF89a\x01\0\x01\0"sv), ImageFormat::kGif);
  EXPECT_EQ(Sniff(""sv), ImageFormat::kEmpty);
}

TEST(SniffImageFormatTest, LookAlikesAreUnknown) {
  EXPECT_EQ(Sniff("\xFF"sv), ImageFormat::kUnknown);
  EXPECT_EQ(Sniff("\x89PNG\r\n"sv), ImageFormat::kUnknown);        // cut signature
  EXPECT_EQ(Sniff("RIFF\x10\0\0\0WAVEfmt "sv), ImageFormat::kUnknown);  // a sound
  EXPECT_EQ(Sniff("BM short"sv), ImageFormat::kUnknown);          // under a file header
  EXPECT_EQ(Sniff("P7\nWIDTH 1\n"sv), ImageFormat::kUnknown);     // PAM: not decoded
  EXPECT_EQ(Sniff("Plain text\n"sv), ImageFormat::kUnknown);
  EXPECT_EQ(Sniff("P3x"sv), ImageFormat::kUnknown);
}

TEST(ImageFormatNameTest, NamesEveryFormat) {
  EXPECT_EQ(ImageFormatName(ImageFormat::kPng), "PNG");
  EXPECT_EQ(ImageFormatName(ImageFormat::kWebp), "WebP");
  EXPECT_EQ(ImageFormatName(ImageFormat::kTiff), "TIFF");
  EXPECT_EQ(ImageFormatName(ImageFormat::kPnm), "PNM");
  EXPECT_EQ(ImageFormatName(ImageFormat::kBmp), "BMP");
  EXPECT_EQ(ImageFormatName(ImageFormat::kJpeg), "JPEG");
  EXPECT_EQ(ImageFormatName(ImageFormat::kEmpty), "empty");
}

}  // namespace
}  // namespace shardpack::codec
