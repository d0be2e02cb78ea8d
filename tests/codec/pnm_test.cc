// DecodePnm on files built byte by byte: P1-P6, comments, every kind of
// maxval and its scaling, keep_gray, and damaged files (truncated at every
// byte, flipped bytes, plain data with samples over maxval, missing or
// garbage, absurd sizes), which must give an error naming the file with
// its offset, never a signal.
#include <cstdint>
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
using std::string_literals::operator""s;

constexpr char kName[] = "img.pnm";

ByteSpan Span(const std::string& s) {
  return ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

absl::StatusOr<PixelView> Decode(const std::string& file, DecodeBuffers* buffers,
                                 bool keep_gray = false) {
  DecodeSpec spec;
  spec.keep_gray = keep_gray;
  return DecodePnm(Span(file), kName, spec, buffers);
}

// The pixels, with the view's shape checked; empty on error.
std::vector<uint8_t> Pixels(const std::string& file, uint32_t width, uint32_t height, int channels,
                            bool keep_gray = false) {
  DecodeBuffers buffers;
  auto view = Decode(file, &buffers, keep_gray);
  EXPECT_TRUE(view.ok()) << view.status();
  if (!view.ok()) return {};
  EXPECT_EQ(view->width, width);
  EXPECT_EQ(view->height, height);
  EXPECT_EQ(view->channels, channels);
  return std::vector<uint8_t>(view->data, view->data + view->bytes());
}

using Bytes = std::vector<uint8_t>;

void ExpectError(const absl::StatusOr<PixelView>& r, absl::StatusCode code,
                 std::string_view fragment) {
  EXPECT_THAT(r, StatusIs(code, AllOf(StartsWith(kName), HasSubstr(std::string(fragment)))));
}

TEST(DecodePnmTest, BitmapsPlainAndRawOneIsBlack) {
  EXPECT_EQ(Pixels("P1\n3 2\n1 0 1\n0 1 1\n", 3, 2, 1, true), (Bytes{0, 255, 0, 255, 0, 0}));
  EXPECT_EQ(Pixels("P1\n3 2\n101011", 3, 2, 1, true), (Bytes{0, 255, 0, 255, 0, 0}));
  // Rows pad to a byte: 9 pixels take 2.
  EXPECT_EQ(Pixels("P4\n9 1\n\x80\x80"s, 9, 1, 1, true),
            (Bytes{0, 255, 255, 255, 255, 255, 255, 255, 0}));
  EXPECT_EQ(Pixels("P4 2 1 \x40"s, 2, 1, 3), (Bytes{255, 255, 255, 0, 0, 0}));
}

TEST(DecodePnmTest, GraymapsAndPixmapsPlainAndRaw) {
  EXPECT_EQ(Pixels("P2\n2 1\n255\n0 200\n", 2, 1, 1, true), (Bytes{0, 200}));
  EXPECT_EQ(Pixels("P2\n2 1\n255\n0 200\n", 2, 1, 3), (Bytes{0, 0, 0, 200, 200, 200}));
  EXPECT_EQ(Pixels("P5\n2 1\n255\n\x00\xC8"s, 2, 1, 1, true), (Bytes{0, 200}));
  EXPECT_EQ(Pixels("P3\n1 2\n255\n1 2 3\n4 5 6\n", 1, 2, 3, true), (Bytes{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Pixels("P6\n1 2\n255\n\x01\x02\x03\x04\x05\x06"s, 1, 2, 3), (Bytes{1, 2, 3, 4, 5, 6}));
}

TEST(DecodePnmTest, MaxvalScalesAsPythonsRoundTiesToEven) {
  // round(v / M * 255): 1/2 -> 127.5 -> 128; 5/6 -> 212.5 -> 212 (to even,
  // not 213); 5/10 -> 127.5 -> 128.
  EXPECT_EQ(Pixels("P2 2 1 2 1 2", 2, 1, 1, true), (Bytes{128, 255}));
  EXPECT_EQ(Pixels("P2 3 1 6 1 3 5", 3, 1, 1, true), (Bytes{42, 128, 212}));
  EXPECT_EQ(Pixels("P5 3 1 10 \x01\x05\x0A"s, 3, 1, 1, true), (Bytes{26, 128, 255}));
  EXPECT_EQ(Pixels("P2 2 1 1 0 1", 2, 1, 1, true), (Bytes{0, 255}));
  // Over 255: two bytes a sample, big-endian, scaled the same way (PIL
  // clips a PGM's mode "I" instead; decode.h).
  EXPECT_EQ(Pixels("P5 3 1 65535 \x00\x01\x80\x80\xFF\xFE"s, 3, 1, 1, true), (Bytes{0, 128, 255}));
  EXPECT_EQ(Pixels("P6 1 1 1000 \x00\x32\x00\x7F\x01\x2C"s, 1, 1, 3), (Bytes{13, 32, 76}));
  EXPECT_EQ(Pixels("P3 1 1 1000 50 127 300", 1, 1, 3), (Bytes{13, 32, 76}));
  // A raw sample over maxval is clipped, as PIL clips it.
  EXPECT_EQ(Pixels("P5 2 1 100 \x32\xC8"s, 2, 1, 1, true), (Bytes{128, 255}));
  EXPECT_EQ(Pixels("P5 1 1 300 \xFF\xFF"s, 1, 1, 1, true), (Bytes{255}));
}

TEST(DecodePnmTest, CommentsAndWhitespaceAsPilReadsThem) {
  EXPECT_EQ(Pixels("P5\n# made by hand\n2 # width\n#\n1\r\n255\n\x07\x08"s, 2, 1, 1, true),
            (Bytes{7, 8}));
  EXPECT_EQ(Pixels("P5\t2\x0b"
                   "1\x0c"
                   "255\r\x07\x08"s,
                   2, 1, 1, true),
            (Bytes{7, 8}));
  // A comment inside a token does not end it.
  EXPECT_EQ(Pixels("P5\n2#x\n 1 255\n\x07\x08"s, 2, 1, 1, true), (Bytes{7, 8}));
  // A comment ends at CR or LF, either.
  EXPECT_EQ(Pixels("P6 # cr\r1 1 255\n\x01\x02\x03"s, 1, 1, 3), (Bytes{1, 2, 3}));
  // Plain data: comments are cut out wherever they stand.
  EXPECT_EQ(Pixels("P2\n2 2\n255\n# first\n1 2 #c\n3\n4\n", 2, 2, 1, true), (Bytes{1, 2, 3, 4}));
  EXPECT_EQ(Pixels("P2\n2 1\n255\n1#c\n2 3\n", 2, 1, 1, true), (Bytes{12, 3}));
  EXPECT_EQ(Pixels("P1\n3 1 #x\n1#0\n01", 3, 1, 1, true), (Bytes{0, 255, 0}));
  // The raster starts one byte after the maxval; that byte may be anything
  // white, and the raster may start with white.
  EXPECT_EQ(Pixels("P5 2 1 255\n\n\x20"s, 2, 1, 1, true), (Bytes{10, 32}));
}

TEST(DecodePnmTest, PlainDamageIsDataLossWithTheOffset) {
  DecodeBuffers buffers;
  auto r = Decode("P2\n2 1\n10\n5 11\n", &buffers);
  ExpectError(r, absl::StatusCode::kDataLoss, "@12: corrupt PNM data: sample 11 is over maxval 10");
  EXPECT_EQ(common::ErrorOffset(r.status()), 12u);
  ExpectError(Decode("P3\n2 1\n255\n1 2 3 4 5\n", &buffers), absl::StatusCode::kDataLoss,
              "@21: truncated PNM: plain data holds 5 of 6 samples");
  ExpectError(Decode("P2\n2 1\n255\n1 x2\n", &buffers), absl::StatusCode::kDataLoss,
              "@13: corrupt PNM data: sample 'x2' is not a number");
  ExpectError(Decode("P2\n2 1\n255\n1 -2\n", &buffers), absl::StatusCode::kDataLoss,
              "sample '-2' is not a number");
  ExpectError(Decode("P2\n1 1\n255\n00000000001\n", &buffers), absl::StatusCode::kDataLoss,
              "@11: corrupt PNM data: sample '00000000001...' is over 10 characters");
  ExpectError(Decode("P1\n2 1\n12\n", &buffers), absl::StatusCode::kDataLoss,
              "@8: corrupt PNM data: '2' in a plain PBM");
  ExpectError(Decode("P1\n2 1\n1\x00"s, &buffers), absl::StatusCode::kDataLoss,
              "@8: corrupt PNM data: byte 0x00 in a plain PBM");
  // PIL checks what follows the pixels in the block it read.
  ExpectError(Decode("P1\n2 1\n10 x\n", &buffers), absl::StatusCode::kDataLoss,
              "@10: corrupt PNM data: 'x' in a plain PBM");
  ExpectError(Decode("P1\n2 2\n101\n", &buffers), absl::StatusCode::kDataLoss,
              "truncated PNM: plain data holds 3 of 4 pixels");
}

TEST(DecodePnmTest, PlainPbmGarbageIsCheckedToTheEndOfPilsBlock) {
  // PIL reads plain data in 1 MiB blocks from the raster (offset 7 here)
  // and checks all of the block that holds the last pixel.
  constexpr size_t kBlock = 1024 * 1024;
  const std::string head = "P1\n1 1\n1";
  EXPECT_EQ(Pixels(head + std::string(kBlock - 1, ' ') + "x", 1, 1, 1, true), (Bytes{0}));
  DecodeBuffers buffers;
  ExpectError(Decode(head + std::string(kBlock - 2, ' ') + "x", &buffers),
              absl::StatusCode::kDataLoss, absl::StrCat("@", 7 + kBlock - 1, ": corrupt PNM data"));
}

TEST(DecodePnmTest, HeaderDamage) {
  DecodeBuffers buffers;
  ExpectError(Decode("P5\n1 1\n0\n\x00"s, &buffers), absl::StatusCode::kDataLoss,
              "@7: corrupt PNM header: maxval 0 (must be 1 to 65535)");
  ExpectError(Decode("P5\n1 1\n65536\n\x00\x00"s, &buffers), absl::StatusCode::kDataLoss,
              "maxval 65536");
  ExpectError(Decode("P5\n2 ", &buffers), absl::StatusCode::kDataLoss,
              "@5: truncated PNM: file ends before the height");
  ExpectError(Decode("P5\nab 1 255\n\x00"s, &buffers), absl::StatusCode::kDataLoss,
              "@3: corrupt PNM header: width 'ab' is not a number");
  ExpectError(Decode("P5\n00000000001 1 255\n\x00"s, &buffers), absl::StatusCode::kDataLoss,
              "width '00000000001...' is over 10 characters");
  ExpectError(Decode("P5\n0 1 255\n"s, &buffers), absl::StatusCode::kDataLoss,
              "bad PNM image size 0x1");
}

TEST(DecodePnmTest, AMagicNumberIsNeeded) {
  DecodeBuffers buffers;
  for (const std::string& bad :
       {""s, "P"s, "P5"s, "P7\n1 1\n255\n\x00"s, "P5x1 1 255\n\x00"s, "Q5\n1 1\n255\n\x00"s}) {
    ExpectError(Decode(bad, &buffers), absl::StatusCode::kDataLoss,
                "@0: corrupt PNM data: no P1 to P6 magic number");
  }
}

TEST(DecodePnmTest, AbsurdSizesAreRefusedBeforeAllocation) {
  DecodeBuffers buffers;
  ExpectError(Decode("P5\n2147483648 2147483648\n255\n\x00"s, &buffers),
              absl::StatusCode::kInvalidArgument, "image too large: 2147483648x2147483648 PNM");
  ExpectError(Decode("P6\n9999999999 9999999999\n255\n\x00"s, &buffers),
              absl::StatusCode::kInvalidArgument, "image too large: 9999999999x9999999999 PNM");
  ExpectError(Decode("P6\n10000 10000\n65535\n\x00"s, &buffers), absl::StatusCode::kDataLoss,
              "truncated PNM: the file holds 0 of 10000 rows");
  ExpectError(Decode("P3\n10000 10000\n255\n1 2 3\n"s, &buffers), absl::StatusCode::kDataLoss,
              "plain data cannot hold 100000000 pixels");
  ExpectError(Decode("P1\n10000 10000\n0101\n"s, &buffers), absl::StatusCode::kDataLoss,
              "plain data cannot hold 100000000 pixels");
  EXPECT_EQ(buffers.pixels.capacity(), 0u);
}

std::vector<std::string> SmallFiles() {
  return {"P1\n3 2\n1 0 1\n0 1 1\n",
          "P2\n# c\n2 2\n1000\n1000 999 1 0\n",
          "P3\n2 1\n7\n1 2 3 4 5 6\n",
          "P4\n10 2\n\x80\x40\xFF\x00"s,
          "P5\n2 2\n255\n\x01\x02\x03\x04"s,
          "P5\n2 1\n65535\n\x01\x02\x03\x04"s,
          "P6\n2 1\n100\n\x01\x02\x03\x04\x05\x06"s};
}

TEST(DecodePnmTest, EveryTruncationIsAnErrorWithTheOffset) {
  DecodeBuffers buffers;
  for (const std::string& file : SmallFiles()) {
    // A plain file's trailing newline may go; a raw one needs every byte.
    const size_t shortest = file[1] <= '3' ? file.size() - 1 : file.size();
    ASSERT_TRUE(Decode(file, &buffers).ok()) << file;
    for (size_t cut = 0; cut < shortest; ++cut) {
      auto r = Decode(file.substr(0, cut), &buffers);
      ASSERT_FALSE(r.ok()) << "a prefix of " << cut << " bytes decodes: " << file;
      EXPECT_THAT(r, StatusIs(absl::StatusCode::kDataLoss, StartsWith(std::string(kName) + " @")))
          << cut;
      EXPECT_TRUE(common::ErrorOffset(r.status()).has_value()) << cut;
    }
  }
}

TEST(DecodePnmTest, FlippedBytesGiveAnErrorOrAnImageNeverASignal) {
  EXPECT_GT(SweepFlippedBytes(SmallFiles(), {1, 0x10, 0x7F, 0x80, 0xFF}, DecodePnm, kName), 50);
}

}  // namespace
}  // namespace shardpack::codec
