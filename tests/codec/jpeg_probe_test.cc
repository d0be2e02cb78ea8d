#include "codec/jpeg_probe.h"

#include <turbojpeg.h>

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/demo.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/jpeg_fixtures.h"
#include "tests/testing/status_matchers.h"

namespace shardpack::codec {
namespace {

using ::shardpack::datasets::CmykJpegKind;
using ::shardpack::datasets::EncodeCmykJpeg;
using ::shardpack::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kName[] = "cls/img.jpg";

// A width x height JPEG of a smooth pattern, compressed by TurboJPEG.
std::vector<uint8_t> MakeJpeg(int width, int height, int pixel_format, int subsamp, int flags = 0) {
  const int channels = tjPixelSize[pixel_format];
  std::vector<uint8_t> pixels(static_cast<size_t>(width) * height * channels);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>((i * 7) / 5);
  return testing::EncodeJpeg(pixels, width, height, pixel_format, subsamp, 90, flags);
}

std::vector<uint8_t> MakeRgbJpeg(int width = 64, int height = 48) {
  return MakeJpeg(width, height, TJPF_RGB, TJSAMP_420);
}

// Offset of the first marker 0xFF `code` (a frame header, say) at or after
// `from`.
size_t FindMarker(const std::vector<uint8_t>& jpeg, uint8_t code, size_t from = 0) {
  for (size_t i = from; i + 1 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == code) return i;
  }
  ADD_FAILURE() << "no marker " << int{code};
  return 0;
}

void SetBE16(std::vector<uint8_t>* data, size_t at, uint16_t v) {
  (*data)[at] = static_cast<uint8_t>(v >> 8);
  (*data)[at + 1] = static_cast<uint8_t>(v);
}

// A hand-made header: SOI, the given segments, a frame, a scan, EOI.
// Segment data is not checked by the probe beyond its markers and lengths.
class HeaderBuilder {
 public:
  HeaderBuilder() { bytes_ = {0xFF, 0xD8}; }
  HeaderBuilder& Segment(uint8_t marker, const std::vector<uint8_t>& body) {
    bytes_.push_back(0xFF);
    bytes_.push_back(marker);
    const size_t length = body.size() + 2;
    bytes_.push_back(static_cast<uint8_t>(length >> 8));
    bytes_.push_back(static_cast<uint8_t>(length));
    bytes_.insert(bytes_.end(), body.begin(), body.end());
    return *this;
  }
  HeaderBuilder& Adobe(uint8_t transform) {
    std::vector<uint8_t> body = {'A', 'd', 'o', 'b', 'e', 0, 100, 0, 0, 0, 0, transform};
    return Segment(0xEE, body);
  }
  HeaderBuilder& Frame(uint8_t marker, uint16_t width, uint16_t height,
                       const std::vector<uint8_t>& ids, uint8_t precision = 8) {
    std::vector<uint8_t> body = {precision,
                                 static_cast<uint8_t>(height >> 8),
                                 static_cast<uint8_t>(height),
                                 static_cast<uint8_t>(width >> 8),
                                 static_cast<uint8_t>(width),
                                 static_cast<uint8_t>(ids.size())};
    for (uint8_t id : ids) body.insert(body.end(), {id, 0x11, 0});
    return Segment(marker, body);
  }
  std::vector<uint8_t> Finish() {
    Segment(0xDA, {1, 1, 0, 0, 63, 0});
    bytes_.insert(bytes_.end(), {0x12, 0x34, 0xFF, 0xD9});
    return bytes_;
  }

 private:
  std::vector<uint8_t> bytes_;
};

TEST(JpegProbeTest, BaselineRgb) {
  const std::vector<uint8_t> jpeg = MakeRgbJpeg(64, 48);
  SP_ASSERT_OK_AND_ASSIGN(JpegInfo info, ProbeJpeg(jpeg, kName));
  EXPECT_EQ(info.width, 64u);
  EXPECT_EQ(info.height, 48u);
  EXPECT_EQ(info.components, 3);
  EXPECT_EQ(info.color_space, JpegColorSpace::kYCbCr);
  EXPECT_EQ(info.sof_marker, 0xC0);
  EXPECT_FALSE(info.progressive);
  EXPECT_TRUE(info.jfif);
  EXPECT_FALSE(info.adobe);
  EXPECT_EQ(info.sos_offset, FindMarker(jpeg, 0xDA));
}

TEST(JpegProbeTest, Grayscale) {
  SP_ASSERT_OK_AND_ASSIGN(JpegInfo info,
                          ProbeJpeg(MakeJpeg(33, 17, TJPF_GRAY, TJSAMP_GRAY), kName));
  EXPECT_EQ(info.width, 33u);
  EXPECT_EQ(info.height, 17u);
  EXPECT_EQ(info.components, 1);
  EXPECT_EQ(info.color_space, JpegColorSpace::kGray);
}

TEST(JpegProbeTest, Progressive) {
  SP_ASSERT_OK_AND_ASSIGN(
      JpegInfo info, ProbeJpeg(MakeJpeg(40, 30, TJPF_RGB, TJSAMP_444, TJFLAG_PROGRESSIVE), kName));
  EXPECT_EQ(info.sof_marker, 0xC2);
  EXPECT_TRUE(info.progressive);
  EXPECT_EQ(info.width, 40u);
}

TEST(JpegProbeTest, YcckFromTurboJpeg) {
  // tjCompress2 with TJPF_CMYK writes a YCCK JPEG with an Adobe marker.
  SP_ASSERT_OK_AND_ASSIGN(JpegInfo info, ProbeJpeg(MakeJpeg(16, 16, TJPF_CMYK, TJSAMP_444), kName));
  EXPECT_EQ(info.components, 4);
  EXPECT_TRUE(info.adobe);
  EXPECT_EQ(info.adobe_transform, 2);
  EXPECT_EQ(info.color_space, JpegColorSpace::kYCCK);
}

TEST(JpegProbeTest, AdobeAndPlainCmyk) {
  std::vector<uint8_t> cmyk(16 * 8 * 4, 100);
  SP_ASSERT_OK_AND_ASSIGN(auto adobe,
                          EncodeCmykJpeg(cmyk.data(), 16, 8, 90, CmykJpegKind::kAdobeCmyk));
  SP_ASSERT_OK_AND_ASSIGN(JpegInfo info, ProbeJpeg(adobe, kName));
  EXPECT_EQ(info.color_space, JpegColorSpace::kCMYK);
  EXPECT_TRUE(info.adobe);
  EXPECT_EQ(info.adobe_transform, 0);

  SP_ASSERT_OK_AND_ASSIGN(auto plain,
                          EncodeCmykJpeg(cmyk.data(), 16, 8, 90, CmykJpegKind::kPlainCmyk));
  SP_ASSERT_OK_AND_ASSIGN(info, ProbeJpeg(plain, kName));
  EXPECT_EQ(info.color_space, JpegColorSpace::kCMYK);
  EXPECT_FALSE(info.adobe);
  EXPECT_EQ(info.components, 4);
}

TEST(JpegProbeTest, ColorSpaceRulesFollowLibjpeg) {
  // Adobe transform 0 on 3 components: RGB.
  SP_ASSERT_OK_AND_ASSIGN(
      JpegInfo info,
      ProbeJpeg(HeaderBuilder().Adobe(0).Frame(0xC0, 8, 8, {1, 2, 3}).Finish(), kName));
  EXPECT_EQ(info.color_space, JpegColorSpace::kRGB);
  // No JFIF, no Adobe, component ids 'R','G','B': RGB.
  SP_ASSERT_OK_AND_ASSIGN(
      info, ProbeJpeg(HeaderBuilder().Frame(0xC0, 8, 8, {'R', 'G', 'B'}).Finish(), kName));
  EXPECT_EQ(info.color_space, JpegColorSpace::kRGB);
  // Ids 1, 2, 3: YCbCr.
  SP_ASSERT_OK_AND_ASSIGN(info,
                          ProbeJpeg(HeaderBuilder().Frame(0xC1, 8, 8, {1, 2, 3}).Finish(), kName));
  EXPECT_EQ(info.color_space, JpegColorSpace::kYCbCr);
  EXPECT_EQ(info.sof_marker, 0xC1);
  // 4 components with an unknown Adobe transform: YCCK, as libjpeg assumes.
  SP_ASSERT_OK_AND_ASSIGN(
      info, ProbeJpeg(HeaderBuilder().Adobe(7).Frame(0xC0, 8, 8, {1, 2, 3, 4}).Finish(), kName));
  EXPECT_EQ(info.color_space, JpegColorSpace::kYCCK);
  // Arithmetic progressive.
  SP_ASSERT_OK_AND_ASSIGN(info, ProbeJpeg(HeaderBuilder().Frame(0xCA, 8, 8, {1}).Finish(), kName));
  EXPECT_TRUE(info.progressive);
  EXPECT_TRUE(info.arithmetic);
}

TEST(JpegProbeTest, PngNamedJpgIsNotAJpeg) {
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0, 0, 13};
  EXPECT_THAT(ProbeJpeg(png, kName), StatusIs(absl::StatusCode::kInvalidArgument,
                                              HasSubstr("cls/img.jpg: not a JPEG: PNG image")));
}

TEST(JpegProbeTest, OtherContentIsNotAJpeg) {
  const std::string text = "hello, this is a text file\n";
  EXPECT_THAT(ProbeJpeg({reinterpret_cast<const uint8_t*>(text.data()), text.size()}, kName),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("cls/img.jpg: not a JPEG: unknown content")));
  const std::vector<uint8_t> gif = {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0};
  EXPECT_THAT(ProbeJpeg(gif, kName),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("GIF image")));
}

TEST(JpegProbeTest, EmptyData) {
  EXPECT_THAT(ProbeJpeg({}, kName),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("cls/img.jpg @0: empty file")));
}

TEST(JpegProbeTest, TruncatedHeader) {
  std::vector<uint8_t> jpeg = MakeRgbJpeg();
  jpeg.resize(FindMarker(jpeg, 0xC0) + 5);  // inside the frame header
  EXPECT_THAT(ProbeJpeg(jpeg, kName), StatusIs(absl::StatusCode::kDataLoss,
                                               HasSubstr("truncated JPEG header: segment 0xC0")));
  jpeg.resize(2);  // SOI only
  EXPECT_THAT(ProbeJpeg(jpeg, kName),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("cls/img.jpg @2: truncated JPEG header: no start-of-scan")));
}

TEST(JpegProbeTest, TruncatedDataHasNoEndOfImage) {
  std::vector<uint8_t> jpeg = MakeRgbJpeg();
  jpeg.resize(jpeg.size() - 40);
  EXPECT_THAT(ProbeJpeg(jpeg, kName),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("cls/img.jpg @" + std::to_string(jpeg.size()) +
                                 ": truncated JPEG: no end-of-image marker (FFD9)")));
  // Without the check (require_eoi = false) the header alone is fine.
  JpegProbeOptions options;
  options.require_eoi = false;
  SP_EXPECT_OK(ProbeJpeg(jpeg, kName, options));
}

// Bytes after EOI (camera trailers, a second image, padding) are kept:
// libjpeg, PIL and torchvision decode such files.
TEST(JpegProbeTest, BytesAfterEndOfImageAreAccepted) {
  const std::vector<uint8_t> plain = MakeRgbJpeg();
  std::vector<uint8_t> jpeg = plain;
  jpeg.insert(jpeg.end(), 100, 0);
  SP_EXPECT_OK(ProbeJpeg(jpeg, kName));
  for (uint8_t b : {0x01, 0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x10}) jpeg.push_back(b);  // a trailer
  SP_EXPECT_OK(ProbeJpeg(jpeg, kName));
  jpeg.insert(jpeg.end(), plain.begin(), plain.end());  // a whole second image
  SP_EXPECT_OK(ProbeJpeg(jpeg, kName));
}

// The EOI search steps over marker segments between scans: a truncated
// progressive file is still truncated, even when a segment between its scans
// holds the bytes FF D9.
TEST(JpegProbeTest, TruncatedProgressiveFileHasNoEndOfImage) {
  std::vector<uint8_t> jpeg = MakeJpeg(64, 48, TJPF_RGB, TJSAMP_420, TJFLAG_PROGRESSIVE);
  SP_ASSERT_OK(ProbeJpeg(jpeg, kName).status());
  // A COM segment holding FF D9, put after the first scan's header region.
  const size_t second_sos = FindMarker(jpeg, 0xDA, FindMarker(jpeg, 0xDA) + 2);
  const std::vector<uint8_t> com = {0xFF, 0xFE, 0x00, 0x06, 0xFF, 0xD9, 0xFF, 0xD9};
  jpeg.insert(jpeg.begin() + static_cast<std::ptrdiff_t>(second_sos), com.begin(), com.end());
  SP_EXPECT_OK(ProbeJpeg(jpeg, kName).status());
  jpeg.resize(second_sos + com.size() + 20);
  EXPECT_THAT(ProbeJpeg(jpeg, kName),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("no end-of-image marker")));
}

TEST(JpegProbeTest, MissingFrameHeader) {
  std::vector<uint8_t> jpeg = MakeRgbJpeg();
  const size_t sof = FindMarker(jpeg, 0xC0);
  const size_t length = (jpeg[sof + 2] << 8) | jpeg[sof + 3];
  jpeg.erase(jpeg.begin() + static_cast<std::ptrdiff_t>(sof),
             jpeg.begin() + static_cast<std::ptrdiff_t>(sof + 2 + length));
  EXPECT_THAT(ProbeJpeg(jpeg, kName),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("no frame header (SOF) before the first scan")));
}

TEST(JpegProbeTest, ZeroDimensions) {
  std::vector<uint8_t> jpeg = MakeRgbJpeg(64, 48);
  const size_t sof = FindMarker(jpeg, 0xC0);
  SetBE16(&jpeg, sof + 5, 0);  // height
  EXPECT_THAT(ProbeJpeg(jpeg, kName),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("cls/img.jpg @" + std::to_string(sof) + ": bad image size 64x0")));
}

TEST(JpegProbeTest, AbsurdDimensions) {
  std::vector<uint8_t> jpeg = MakeRgbJpeg(64, 48);
  const size_t sof = FindMarker(jpeg, 0xC0);
  SetBE16(&jpeg, sof + 5, 65535);
  SetBE16(&jpeg, sof + 7, 65535);
  EXPECT_THAT(ProbeJpeg(jpeg, kName),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("cls/img.jpg: image too large: 65535x65535")));
  // Under the side limit but over max_pixels.
  SetBE16(&jpeg, sof + 5, 20000);
  SetBE16(&jpeg, sof + 7, 20000);
  JpegProbeOptions options;
  options.max_pixels = 100'000'000;
  EXPECT_THAT(ProbeJpeg(jpeg, kName, options), StatusIs(absl::StatusCode::kInvalidArgument,
                                                        HasSubstr("image too large: 20000x20000")));
  options.max_pixels = 400'000'000;
  SP_EXPECT_OK(ProbeJpeg(jpeg, kName, options));
}

TEST(JpegProbeTest, UnsupportedFrames) {
  EXPECT_THAT(ProbeJpeg(HeaderBuilder().Frame(0xC3, 8, 8, {1}).Finish(), kName),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unsupported JPEG process: lossless")));
  EXPECT_THAT(ProbeJpeg(HeaderBuilder().Frame(0xC5, 8, 8, {1}).Finish(), kName),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("hierarchical")));
  EXPECT_THAT(ProbeJpeg(HeaderBuilder().Frame(0xC0, 8, 8, {1}, 12).Finish(), kName),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unsupported 12-bit")));
  EXPECT_THAT(ProbeJpeg(HeaderBuilder().Frame(0xC0, 8, 8, {1, 2}).Finish(), kName),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("with 2 components")));
}

TEST(JpegProbeTest, BadSegments) {
  std::vector<uint8_t> jpeg = MakeRgbJpeg();
  const size_t sof = FindMarker(jpeg, 0xC0);
  SetBE16(&jpeg, sof + 2, 1);  // a length below 2
  EXPECT_THAT(ProbeJpeg(jpeg, kName),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("bad JPEG segment length 1")));
  jpeg = MakeRgbJpeg();
  jpeg[sof] = 0x42;  // not a marker where one must be
  EXPECT_THAT(ProbeJpeg(jpeg, kName), StatusIs(absl::StatusCode::kDataLoss,
                                               HasSubstr("@" + std::to_string(sof) +
                                                         ": bad JPEG header: expected a marker")));
  jpeg = MakeRgbJpeg();
  SetBE16(&jpeg, sof + 2, 0xFFF0);  // runs past the end
  EXPECT_THAT(ProbeJpeg(jpeg, kName),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("passes the end of the file")));
  EXPECT_THAT(ProbeJpeg(HeaderBuilder().Segment(0xD8, {}).Finish(), kName),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("unexpected marker 0xD8")));
}

TEST(JpegProbeTest, EveryPrefixAndByteFlipIsHandled) {
  // The probe parses untrusted bytes: no prefix and no single damaged header
  // byte may make it read out of bounds (ASan builds check this) or crash.
  const std::vector<uint8_t> jpeg = MakeRgbJpeg(24, 16);
  const size_t header = FindMarker(jpeg, 0xDA) + 16;
  for (size_t n = 0; n <= jpeg.size(); ++n) {
    std::vector<uint8_t> prefix(jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(n));
    absl::StatusOr<JpegInfo> info = ProbeJpeg(prefix, kName);
    if (n < jpeg.size()) {
      EXPECT_FALSE(info.ok()) << n;
    }
  }
  for (size_t i = 0; i < header; ++i) {
    for (uint8_t flip : {0x01, 0x80, 0xFF}) {
      std::vector<uint8_t> damaged = jpeg;
      damaged[i] ^= flip;
      absl::StatusOr<JpegInfo> info = ProbeJpeg(damaged, kName);
      if (!info.ok()) {
        EXPECT_THAT(std::string(info.status().message()), HasSubstr(kName));
      }
    }
  }
}

}  // namespace
}  // namespace shardpack::codec
