// DecodeWebp on WebPs encoded here by libwebp (lossy, lossless, with alpha)
// or put together chunk by chunk (animations, absurd VP8X canvases), and on
// damaged copies: cut at every byte, a byte flipped anywhere.
#include <webp/decode.h>
#include <webp/encode.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/decode.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace shardpack::codec {
namespace {

using ::shardpack::testing::StatusIs;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

ByteSpan Span(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::vector<uint8_t> Pixels(const PixelView& v) { return {v.data, v.data + v.bytes()}; }

// w x h RGBA: smooth ramps (lossy stays close) with a little noise; with
// `holes`, every third pixel fully transparent over a color that is not
// black.
std::vector<uint8_t> TestRgba(int w, int h, bool holes, uint32_t seed = 7) {
  std::vector<uint8_t> rgba;
  uint32_t state = seed;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      state = state * 1103515245u + 12345u;
      const int noise = static_cast<int>((state >> 16) & 7);
      const size_t p = size_t(y) * size_t(w) + size_t(x);
      const uint8_t alpha = !holes ? 255 : p % 3 == 0 ? 0 : p % 3 == 1 ? 255 : 100;
      rgba.insert(rgba.end(), {static_cast<uint8_t>(x * 240 / w + noise),
                               static_cast<uint8_t>(y * 240 / h + noise),
                               static_cast<uint8_t>((x + y) * 240 / (w + h) + 8 - noise), alpha});
    }
  }
  return rgba;
}

std::vector<uint8_t> DropAlpha(const std::vector<uint8_t>& rgba) {
  std::vector<uint8_t> rgb;
  for (size_t i = 0; i < rgba.size(); i += 4)
    rgb.insert(rgb.end(), {rgba[i], rgba[i + 1], rgba[i + 2]});
  return rgb;
}

struct Encoding {
  bool lossless = false;
  bool exact = false;  // keep the colors under alpha 0
  bool alpha = false;  // import RGBA (else RGB: no alpha in the file)
};

std::string Encode(const std::vector<uint8_t>& rgba, int w, int h, const Encoding& e) {
  WebPConfig config;
  EXPECT_TRUE(WebPConfigInit(&config));
  config.lossless = e.lossless;
  config.exact = e.exact;
  config.quality = 90;
  WebPPicture picture;
  EXPECT_TRUE(WebPPictureInit(&picture));
  picture.width = w;
  picture.height = h;
  picture.use_argb = e.lossless;
  const std::vector<uint8_t> rgb = DropAlpha(rgba);
  EXPECT_TRUE(e.alpha ? WebPPictureImportRGBA(&picture, rgba.data(), w * 4)
                      : WebPPictureImportRGB(&picture, rgb.data(), w * 3));
  WebPMemoryWriter writer;
  WebPMemoryWriterInit(&writer);
  picture.writer = WebPMemoryWrite;
  picture.custom_ptr = &writer;
  EXPECT_TRUE(WebPEncode(&config, &picture)) << "error " << picture.error_code;
  std::string out(reinterpret_cast<char*>(writer.mem), writer.size);
  WebPMemoryWriterClear(&writer);
  WebPPictureFree(&picture);
  return out;
}

// PIL's path: libwebp's RGBA decode (not premultiplied), alpha then dropped.
std::vector<uint8_t> ReferenceRgb(const std::string& webp) {
  int w = 0, h = 0;
  uint8_t* rgba =
      WebPDecodeRGBA(reinterpret_cast<const uint8_t*>(webp.data()), webp.size(), &w, &h);
  EXPECT_NE(rgba, nullptr);
  if (rgba == nullptr) return {};
  std::vector<uint8_t> rgb = DropAlpha({rgba, rgba + size_t(w) * size_t(h) * 4});
  WebPFree(rgba);
  return rgb;
}

absl::StatusOr<PixelView> Decode(const std::string& webp, std::string_view name,
                                 DecodeBuffers* buffers, const DecodeSpec& spec = {}) {
  return DecodeWebp(Span(webp), name, spec, buffers);
}

TEST(WebpTest, LosslessRgbIsExact) {
  const std::vector<uint8_t> rgba = TestRgba(23, 17, false);
  DecodeBuffers buffers;
  SP_ASSERT_OK_AND_ASSIGN(const PixelView view,
                          Decode(Encode(rgba, 23, 17, {.lossless = true}), "l.webp", &buffers));
  EXPECT_EQ(view.width, 23u);
  EXPECT_EQ(view.height, 17u);
  EXPECT_EQ(view.channels, 3);
  EXPECT_EQ(Pixels(view), DropAlpha(rgba));
}

// PIL (through WebPAnimDecoder, RGBA) keeps the colors under alpha 0 when
// the file holds them; so do we.
TEST(WebpTest, LosslessAlphaIsDroppedAndTheColorsUnderItKept) {
  const std::vector<uint8_t> rgba = TestRgba(23, 17, true);
  const std::string webp = Encode(rgba, 23, 17, {.lossless = true, .exact = true, .alpha = true});
  DecodeBuffers buffers;
  SP_ASSERT_OK_AND_ASSIGN(const PixelView view, Decode(webp, "la.webp", &buffers));
  EXPECT_EQ(Pixels(view), DropAlpha(rgba));
  EXPECT_EQ(Pixels(view), ReferenceRgb(webp));
}

TEST(WebpTest, LossyMatchesLibwebpsRgbaDecode) {
  for (const bool alpha : {false, true}) {
    const std::vector<uint8_t> rgba = TestRgba(40, 24, alpha);
    const std::string webp = Encode(rgba, 40, 24, {.alpha = alpha});
    DecodeBuffers buffers;
    SP_ASSERT_OK_AND_ASSIGN(const PixelView view, Decode(webp, "q.webp", &buffers));
    EXPECT_EQ(Pixels(view), ReferenceRgb(webp)) << "alpha " << alpha;
    // And near the source where the encoder kept the colors.
    const std::vector<uint8_t> want = DropAlpha(rgba);
    int worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      if (rgba[i / 3 * 4 + 3] == 255)
        worst = std::max(worst, std::abs(int{view.data[i]} - want[i]));
    }
    EXPECT_LT(worst, 40) << "alpha " << alpha;
  }
}

TEST(WebpTest, KeepGrayDoesNotApply) {
  std::vector<uint8_t> gray = TestRgba(8, 8, false);
  for (size_t i = 0; i < gray.size(); i += 4) gray[i + 1] = gray[i + 2] = gray[i];
  DecodeSpec spec;
  spec.keep_gray = true;
  DecodeBuffers buffers;
  SP_ASSERT_OK_AND_ASSIGN(const PixelView view,
                          Decode(Encode(gray, 8, 8, {.lossless = true}), "g.webp", &buffers, spec));
  EXPECT_EQ(view.channels, 3);
  EXPECT_EQ(Pixels(view), DropAlpha(gray));
}

// ---- Files put together chunk by chunk ----

std::string Le(uint32_t v, int bytes) {
  std::string s;
  for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  return s;
}

std::string Chunk(const std::string& fourcc, const std::string& data) {
  return fourcc + Le(uint32_t(data.size()), 4) + data +
         (data.size() % 2 ? std::string(1, '\0') : "");
}

std::string Riff(const std::string& chunks) {
  return "RIFF" + Le(uint32_t(4 + chunks.size()), 4) + "WEBP" + chunks;
}

// The image chunks (ALPH, VP8, VP8L) of an encoded still file.
std::string ImageChunks(const std::string& still) {
  std::string out;
  for (size_t at = 12; at + 8 <= still.size();) {
    const std::string fourcc = still.substr(at, 4);
    const uint32_t size = uint8_t(still[at + 4]) | uint8_t(still[at + 5]) << 8 |
                          uint8_t(still[at + 6]) << 16 | uint32_t(uint8_t(still[at + 7])) << 24;
    const size_t whole = 8 + size + size % 2;
    if (fourcc != "VP8X") out += still.substr(at, whole);
    at += whole;
  }
  return out;
}

std::string Vp8x(uint8_t flags, uint32_t canvas_w, uint32_t canvas_h) {
  return Chunk("VP8X",
               std::string(1, char(flags)) + Le(0, 3) + Le(canvas_w - 1, 3) + Le(canvas_h - 1, 3));
}

constexpr uint8_t kAnimationFlag = 0x02, kAlphaFlag = 0x10;

std::string Frame(uint32_t x, uint32_t y, uint32_t w, uint32_t h, const std::string& still) {
  return Chunk("ANMF", Le(x / 2, 3) + Le(y / 2, 3) + Le(w - 1, 3) + Le(h - 1, 3) + Le(100, 3) +
                           std::string(1, '\0') + ImageChunks(still));
}

std::string Animation(uint32_t canvas_w, uint32_t canvas_h, const std::string& frames) {
  return Riff(Vp8x(kAnimationFlag | kAlphaFlag, canvas_w, canvas_h) +
              Chunk("ANIM", Le(0xFF336699u, 4) + Le(0, 2)) + frames);
}

// A 24x20 canvas: frame 1 (10x8 at 4,6, holes over colors), then a full
// frame that must not show.
struct TestAnimation {
  std::string webp;
  std::vector<uint8_t> first;  // frame 1's RGBA
};

TestAnimation MakeAnimation(bool lossy_first) {
  TestAnimation a;
  a.first = TestRgba(10, 8, true, 1);
  const std::string f1 =
      Encode(a.first, 10, 8, {.lossless = !lossy_first, .exact = true, .alpha = true});
  const std::string f2 = Encode(TestRgba(24, 20, false, 2), 24, 20, {.lossless = true});
  a.webp = Animation(24, 20, Frame(4, 6, 10, 8, f1) + Frame(0, 0, 24, 20, f2));
  if (lossy_first) a.first.clear();
  return a;
}

// Frame 1 of `a` on a black canvas, as WebPAnimDecoder (PIL) composes it
// and convert("RGB") drops its alpha.
std::vector<uint8_t> FirstFrameOnCanvas(const std::vector<uint8_t>& frame_rgb) {
  std::vector<uint8_t> canvas(24 * 20 * 3, 0);
  for (size_t y = 0; y < 8; ++y) {
    std::copy_n(&frame_rgb[y * 10 * 3], 10 * 3, &canvas[((6 + y) * 24 + 4) * 3]);
  }
  return canvas;
}

TEST(WebpAnimationTest, FirstFrameOnTransparentBlack) {
  const TestAnimation a = MakeAnimation(/*lossy_first=*/false);
  DecodeBuffers buffers;
  // Buffers that held a larger image: the canvas is not left with its bytes.
  SP_ASSERT_OK(
      Decode(Encode(TestRgba(40, 40, false), 40, 40, {.lossless = true}), "before.webp", &buffers));
  SP_ASSERT_OK_AND_ASSIGN(const PixelView view, Decode(a.webp, "anim.webp", &buffers));
  EXPECT_EQ(view.width, 24u);
  EXPECT_EQ(view.height, 20u);
  EXPECT_EQ(Pixels(view), FirstFrameOnCanvas(DropAlpha(a.first)));
}

TEST(WebpAnimationTest, LossyFirstFrameWithAlpha) {
  const TestAnimation a = MakeAnimation(/*lossy_first=*/true);
  const std::string still = Encode(TestRgba(10, 8, true, 1), 10, 8, {.exact = true, .alpha = true});
  DecodeBuffers buffers;
  SP_ASSERT_OK_AND_ASSIGN(const PixelView view, Decode(a.webp, "animq.webp", &buffers));
  EXPECT_EQ(Pixels(view), FirstFrameOnCanvas(ReferenceRgb(still)));
}

TEST(WebpAnimationTest, FrameOutsideTheCanvasIsDataLoss) {
  const std::string f1 = Encode(TestRgba(10, 8, false), 10, 8, {.lossless = true});
  DecodeBuffers buffers;
  EXPECT_THAT(Decode(Animation(12, 12, Frame(4, 6, 10, 8, f1)), "out.webp", &buffers),
              StatusIs(absl::StatusCode::kDataLoss, StartsWith("out.webp: corrupt WebP data")));
  EXPECT_THAT(Decode(Animation(12, 12, ""), "none.webp", &buffers),
              StatusIs(absl::StatusCode::kDataLoss, StartsWith("none.webp: corrupt WebP data")));
}

// A VP8L header (signature 0x2F, then 14 bits of width - 1, 14 of height
// - 1, alpha, version) and a few bytes of nothing.
std::string Vp8lClaiming(uint32_t width, uint32_t height) {
  return Chunk("VP8L", "\x2F" + Le((width - 1) | (height - 1) << 14, 4) + std::string(8, '\0'));
}

TEST(WebpTest, AbsurdSizesAreRefusedBeforeAllocating) {
  DecodeBuffers buffers;
  // An animation's canvas may reach 2^24 a side: within libwebp's own bound
  // (2^32 pixels), CheckImageSize refuses it.
  EXPECT_THAT(Decode(Animation(20000, 20000, ""), "biganim.webp", &buffers),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       StartsWith("biganim.webp: image too large: 20000x20000 WebP")));
  // A still image is at most 2^14 a side, 2^28 pixels in all.
  DecodeSpec spec;
  spec.max_pixels = 1 << 20;
  EXPECT_THAT(Decode(Riff(Vp8lClaiming(16384, 16384)), "big.webp", &buffers, spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       StartsWith("big.webp: image too large: 16384x16384 WebP")));
  EXPECT_THAT(
      Decode(Riff(Vp8x(0, 16384, 16384) + Vp8lClaiming(16384, 16384)), "bigx.webp", &buffers, spec),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("image too large")));
  // Past libwebp's bound, or a canvas that is not the still image's size:
  // its header parse refuses them.
  EXPECT_THAT(Decode(Animation(1u << 24, 1u << 24, ""), "huge.webp", &buffers),
              StatusIs(absl::StatusCode::kDataLoss, StartsWith("huge.webp: corrupt WebP data")));
  EXPECT_THAT(Decode(Riff(Vp8x(0, 20000, 20000) + Vp8lClaiming(4, 4)), "odd.webp", &buffers),
              StatusIs(absl::StatusCode::kDataLoss, StartsWith("odd.webp: corrupt WebP data")));
  EXPECT_EQ(buffers.pixels.capacity(), 0u);
  // Within the limit, the header's promise is not kept: the pixel data ends.
  EXPECT_THAT(Decode(Riff(Vp8lClaiming(64, 64)), "short.webp", &buffers),
              StatusIs(absl::StatusCode::kDataLoss, StartsWith("short.webp")));
}

TEST(WebpTest, MaxPixelsIsCheckedBeforeDecoding) {
  const std::string webp = Encode(TestRgba(10, 10, false), 10, 10, {.lossless = true});
  DecodeSpec spec;
  spec.max_pixels = 99;
  DecodeBuffers buffers;
  EXPECT_THAT(Decode(webp, "m.webp", &buffers, spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       StartsWith("m.webp: image too large: 10x10 WebP (limit: 99 pixels)")));
  EXPECT_EQ(buffers.pixels.capacity(), 0u);
  spec.max_pixels = 100;
  SP_EXPECT_OK(Decode(webp, "m.webp", &buffers, spec));
}

TEST(WebpTest, NotAWebpIsDataLoss) {
  DecodeBuffers buffers;
  EXPECT_THAT(Decode("RIFF\x10\0\0\0WEBPjunkjunk", "j.webp", &buffers),
              StatusIs(absl::StatusCode::kDataLoss, StartsWith("j.webp")));
  EXPECT_THAT(DecodeWebp({}, "empty.webp", {}, &buffers),
              StatusIs(absl::StatusCode::kDataLoss, StartsWith("empty.webp @0: truncated WebP")));
}

// ---- Damage sweeps ----

std::vector<std::string> SweepFixtures() {
  return {Encode(TestRgba(16, 12, false), 16, 12, {.lossless = true}),
          Encode(TestRgba(16, 12, true), 16, 12, {.alpha = true}),  // VP8X + ALPH + VP8
          MakeAnimation(false).webp};
}

TEST(WebpDamageTest, CutAtEveryByteIsTruncated) {
  DecodeBuffers buffers;
  for (const std::string& webp : SweepFixtures()) {
    SP_ASSERT_OK(Decode(webp, "whole.webp", &buffers));
    for (size_t n = 0; n < webp.size(); ++n) {
      EXPECT_THAT(Decode(webp.substr(0, n), "cut.webp", &buffers),
                  StatusIs(absl::StatusCode::kDataLoss,
                           StartsWith(absl::StrCat("cut.webp @", n, ": truncated WebP data"))))
          << "cut at " << n << " of " << webp.size();
    }
  }
}

// WebP has no checksum: a flip in the compressed data may decode to other
// pixels. What must hold: no signal, and an error, when there is one, of
// the contract's kinds naming the file.
TEST(WebpDamageTest, FlippedByteAnywhereNeverCrashes) {
  DecodeBuffers buffers;
  for (const std::string& webp : SweepFixtures()) {
    int refused = 0;
    for (size_t i = 0; i < webp.size(); ++i) {
      for (uint8_t mask : {0x01, 0x80}) {
        std::string bad = webp;
        bad[i] = static_cast<char>(bad[i] ^ mask);
        auto view = Decode(bad, "flip.webp", &buffers);
        if (view.ok()) continue;
        ++refused;
        EXPECT_THAT(view,
                    AnyOf(StatusIs(absl::StatusCode::kDataLoss, StartsWith("flip.webp")),
                          StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("flip.webp"))))
            << "byte " << i << " ^ " << int{mask};
      }
    }
    EXPECT_GT(refused, 0);  // the headers' flips at least
  }
}

}  // namespace
}  // namespace shardpack::codec
