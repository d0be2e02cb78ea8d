// DecodeTiff on files written at test time: by libtiff's own writer (to
// memory, through TIFFClientOpen) for every layout we read, and byte by
// byte for the damaged and hostile ones. The PIL comparison of the same
// variants is tiff_pil_test.py.
#include <tiffio.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/decode.h"
#include "common/errors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace shardpack::codec {
namespace {

using ::shardpack::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kName[] = "dir/img.tif";

// ---- libtiff's writer, to memory ----

struct MemFile {
  std::vector<uint8_t> bytes;
  uint64_t pos = 0;
};

tmsize_t MemRead(thandle_t h, void* buf, tmsize_t n) {
  auto* f = static_cast<MemFile*>(h);
  const uint64_t count =
      std::min<uint64_t>(n, f->bytes.size() - std::min<uint64_t>(f->pos, f->bytes.size()));
  std::memcpy(buf, f->bytes.data() + f->pos, count);
  f->pos += count;
  return static_cast<tmsize_t>(count);
}
tmsize_t MemWrite(thandle_t h, void* buf, tmsize_t n) {
  auto* f = static_cast<MemFile*>(h);
  if (f->pos + n > f->bytes.size()) f->bytes.resize(f->pos + n);
  std::memcpy(f->bytes.data() + f->pos, buf, n);
  f->pos += n;
  return n;
}
toff_t MemSeek(thandle_t h, toff_t off, int whence) {
  auto* f = static_cast<MemFile*>(h);
  const int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? f->pos : f->bytes.size();
  f->pos = base + static_cast<int64_t>(off);
  return f->pos;
}
int MemClose(thandle_t) { return 0; }
toff_t MemSize(thandle_t h) { return static_cast<MemFile*>(h)->bytes.size(); }
int NoMap(thandle_t, void**, toff_t*) { return 0; }
void NoUnmap(thandle_t, void*, toff_t) {}

// What a fixture holds. Samples are h x w x samples values below 2^bits.
struct TiffSpec {
  uint32_t width = 37;
  uint32_t height = 23;
  uint16_t bits = 8;
  uint16_t samples = 3;
  uint16_t photometric = PHOTOMETRIC_RGB;
  uint16_t planar = PLANARCONFIG_CONTIG;
  uint16_t compression = COMPRESSION_NONE;
  uint16_t predictor = PREDICTOR_NONE;
  uint16_t sample_format = SAMPLEFORMAT_UINT;
  uint32_t rows_per_strip = 5;
  uint32_t tile = 0;               // tile side (a multiple of 16); 0: strips
  std::vector<uint16_t> extra;     // ExtraSamples
  std::vector<uint16_t> colormap;  // 3 * 2^bits: red, then green, then blue
  uint16_t ycbcr_subsampling = 0;  // JPEG from RGB samples into YCbCr
  uint16_t orientation = 0;
};

std::vector<uint32_t> Samples(const TiffSpec& s, uint32_t seed = 1) {
  std::vector<uint32_t> v(size_t{s.width} * s.height * s.samples);
  const uint64_t mask = (uint64_t{1} << s.bits) - 1;
  uint64_t x = seed * 0x9E3779B97F4A7C15ull;
  for (auto& e : v) {
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x += 0x94D049BB133111EBull;
    e = static_cast<uint32_t>((x >> 17) & mask);
  }
  return v;
}

// Row `y` of plane `plane` (all samples when contiguous), `cols` pixels
// from column x0, packed as libtiff takes it (host order, bits MSB first).
std::vector<uint8_t> PackRow(const TiffSpec& s, const std::vector<uint32_t>& v, uint32_t y,
                             uint32_t x0, uint32_t cols, int plane) {
  const bool separate = s.planar == PLANARCONFIG_SEPARATE;
  const int per_pixel = separate ? 1 : s.samples;
  std::vector<uint8_t> row((size_t{cols} * per_pixel * s.bits + 7) / 8, 0);
  for (uint32_t x = 0; x < cols; ++x) {
    for (int j = 0; j < per_pixel; ++j) {
      const size_t i = size_t{x} * per_pixel + j;
      const uint32_t value =
          x0 + x >= s.width
              ? 0
              : v[(size_t{y} * s.width + x0 + x) * s.samples + (separate ? plane : j)];
      if (s.bits >= 8) {
        const uint16_t v16 = static_cast<uint16_t>(value);
        if (s.bits == 8) row[i] = static_cast<uint8_t>(value);
        if (s.bits == 16) std::memcpy(&row[2 * i], &v16, 2);
        if (s.bits == 32) std::memcpy(&row[4 * i], &value, 4);
      } else {
        row[i * s.bits / 8] |= static_cast<uint8_t>(value << (8 - s.bits - (i * s.bits) % 8));
      }
    }
  }
  return row;
}

void SetTags(TIFF* tif, const TiffSpec& s) {
  TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, s.width);
  TIFFSetField(tif, TIFFTAG_IMAGELENGTH, s.height);
  TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, s.bits);
  TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, s.samples);
  TIFFSetField(tif, TIFFTAG_PLANARCONFIG, s.planar);
  TIFFSetField(tif, TIFFTAG_COMPRESSION, s.compression);
  TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, s.sample_format);
  if (s.ycbcr_subsampling != 0) {
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_YCBCR);
    TIFFSetField(tif, TIFFTAG_YCBCRSUBSAMPLING, s.ycbcr_subsampling, s.ycbcr_subsampling);
    TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
  } else {
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, s.photometric);
  }
  if (s.predictor != PREDICTOR_NONE) TIFFSetField(tif, TIFFTAG_PREDICTOR, s.predictor);
  if (!s.extra.empty()) {
    TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, static_cast<uint16_t>(s.extra.size()), s.extra.data());
  }
  if (!s.colormap.empty()) {
    const size_t n = s.colormap.size() / 3;
    TIFFSetField(tif, TIFFTAG_COLORMAP, s.colormap.data(), s.colormap.data() + n,
                 s.colormap.data() + 2 * n);
  }
  if (s.orientation != 0) TIFFSetField(tif, TIFFTAG_ORIENTATION, s.orientation);
  if (s.tile != 0) {
    TIFFSetField(tif, TIFFTAG_TILEWIDTH, s.tile);
    TIFFSetField(tif, TIFFTAG_TILELENGTH, s.tile);
  } else {
    TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, s.rows_per_strip);
  }
}

// Writes one directory of `s` holding `v` into `tif`.
void WriteDirectory(TIFF* tif, const TiffSpec& s, const std::vector<uint32_t>& v) {
  SetTags(tif, s);
  const int planes = s.planar == PLANARCONFIG_SEPARATE ? s.samples : 1;
  for (int p = 0; p < planes; ++p) {
    if (s.tile == 0) {
      for (uint32_t y = 0; y < s.height; ++y) {
        std::vector<uint8_t> row = PackRow(s, v, y, 0, s.width, p);
        ASSERT_EQ(TIFFWriteScanline(tif, row.data(), y, static_cast<uint16_t>(p)), 1);
      }
      continue;
    }
    for (uint32_t ty = 0; ty < s.height; ty += s.tile) {
      for (uint32_t tx = 0; tx < s.width; tx += s.tile) {
        std::vector<uint8_t> tile;
        for (uint32_t y = ty; y < ty + s.tile; ++y) {
          std::vector<uint8_t> row =
              y < s.height ? PackRow(s, v, y, tx, s.tile, p) : PackRow(s, v, 0, s.width, s.tile, p);
          tile.insert(tile.end(), row.begin(), row.end());
        }
        ASSERT_GE(TIFFWriteTile(tif, tile.data(), tx, ty, 0, static_cast<uint16_t>(p)), 0);
      }
    }
  }
  ASSERT_EQ(TIFFWriteDirectory(tif), 1);
}

// A TIFF file of one directory per spec, written by libtiff.
std::string WriteTiff(const std::vector<TiffSpec>& pages, uint32_t seed = 1) {
  MemFile file;
  TIFF* tif = TIFFClientOpen("fixture", "w", &file, MemRead, MemWrite, MemSeek, MemClose, MemSize,
                             NoMap, NoUnmap);
  EXPECT_NE(tif, nullptr);
  if (tif == nullptr) return "";
  for (size_t i = 0; i < pages.size(); ++i) {
    WriteDirectory(tif, pages[i], Samples(pages[i], seed + static_cast<uint32_t>(i)));
  }
  TIFFClose(tif);
  return std::string(file.bytes.begin(), file.bytes.end());
}

std::string WriteTiff(const TiffSpec& s, uint32_t seed = 1) {
  return WriteTiff(std::vector<TiffSpec>{s}, seed);
}

// ---- what the contract says the pixels are (codec/decode.h) ----

uint8_t To8(const TiffSpec& s, uint32_t v) {
  if (s.bits == 16) return static_cast<uint8_t>(v >> 8);
  if (s.bits < 8) return static_cast<uint8_t>(v * 255 / ((1u << s.bits) - 1));
  return static_cast<uint8_t>(v);
}

std::vector<uint8_t> Expected(const TiffSpec& s, const std::vector<uint32_t>& v, int channels) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < size_t{s.width} * s.height; ++i) {
    const uint32_t* p = &v[i * s.samples];
    uint8_t rgb[3];
    if (s.photometric == PHOTOMETRIC_PALETTE) {
      const size_t n = s.colormap.size() / 3;
      for (int c = 0; c < 3; ++c) rgb[c] = static_cast<uint8_t>(s.colormap[c * n + p[0]] >> 8);
    } else if (s.photometric == PHOTOMETRIC_SEPARATED) {
      const int k = To8(s, p[3]);
      for (int c = 0; c < 3; ++c) {
        rgb[c] = static_cast<uint8_t>(std::lround((255 - To8(s, p[c])) * (255 - k) / 255.0));
      }
    } else if (s.photometric == PHOTOMETRIC_RGB) {
      const bool associated = !s.extra.empty() && s.extra[0] == EXTRASAMPLE_ASSOCALPHA;
      const int a = To8(s, p[3 % s.samples]);
      for (int c = 0; c < 3; ++c) {
        rgb[c] = !associated ? To8(s, p[c])
                 : a == 0    ? 0
                             : static_cast<uint8_t>(std::min(255, To8(s, p[c]) * 255 / a));
      }
    } else {
      const uint8_t g = To8(s, p[0]);
      rgb[0] = rgb[1] = rgb[2] = s.photometric == PHOTOMETRIC_MINISWHITE ? 255 - g : g;
    }
    out.insert(out.end(), rgb, rgb + channels);
  }
  return out;
}

class TiffTest : public ::testing::Test {
 protected:
  absl::StatusOr<PixelView> Decode(const std::string& file, const DecodeSpec& spec = {}) {
    const auto start = std::chrono::steady_clock::now();
    auto result = DecodeTiff(ByteSpan(reinterpret_cast<const uint8_t*>(file.data()), file.size()),
                             kName, spec, &buffers_);
    // Every case, hostile or not, is bounded in time.
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
    return result;
  }

  // Decodes a fixture of `s` and compares it with the contract's pixels.
  void ExpectDecodes(const TiffSpec& s, bool keep_gray = false) {
    SCOPED_TRACE(::testing::Message()
                 << "bits " << s.bits << " samples " << s.samples << " photometric "
                 << s.photometric << " planar " << s.planar << " compression " << s.compression
                 << " predictor " << s.predictor << " tile " << s.tile);
    const std::string file = WriteTiff(s);
    DecodeSpec spec;
    spec.keep_gray = keep_gray;
    absl::StatusOr<PixelView> got = Decode(file, spec);
    ASSERT_THAT(got, ::shardpack::testing::IsOk());
    const bool gray = s.photometric <= PHOTOMETRIC_MINISBLACK;
    const int channels = gray && keep_gray ? 1 : 3;
    ASSERT_EQ(got->width, s.width);
    ASSERT_EQ(got->height, s.height);
    ASSERT_EQ(got->channels, channels);
    const std::vector<uint8_t> want = Expected(s, Samples(s), channels);
    ASSERT_EQ(std::vector<uint8_t>(got->data, got->data + got->bytes()), want);
  }

  DecodeBuffers buffers_;
};

const uint16_t kLossless[] = {COMPRESSION_NONE, COMPRESSION_LZW, COMPRESSION_ADOBE_DEFLATE,
                              COMPRESSION_PACKBITS};

TEST_F(TiffTest, Rgb8EveryCompressionLayoutAndPredictor) {
  for (uint16_t compression : kLossless) {
    for (uint16_t planar : {PLANARCONFIG_CONTIG, PLANARCONFIG_SEPARATE}) {
      for (uint32_t tile : {0u, 16u}) {
        TiffSpec s;
        s.compression = compression;
        s.planar = planar;
        s.tile = tile;
        ExpectDecodes(s);
        if (compression == COMPRESSION_LZW || compression == COMPRESSION_ADOBE_DEFLATE) {
          s.predictor = PREDICTOR_HORIZONTAL;
          ExpectDecodes(s);
        }
      }
    }
  }
}

TEST_F(TiffTest, TilesLargerThanTheImage) {
  TiffSpec s;
  s.width = 20;
  s.height = 3;
  s.compression = COMPRESSION_ADOBE_DEFLATE;
  for (uint32_t tile : {32u, 1024u}) {
    s.tile = tile;
    ExpectDecodes(s);
  }
}

TEST_F(TiffTest, UnassociatedAlphaIsDroppedAssociatedIsUnpremultiplied) {
  for (uint16_t kind : {EXTRASAMPLE_UNASSALPHA, EXTRASAMPLE_ASSOCALPHA, EXTRASAMPLE_UNSPECIFIED}) {
    for (uint16_t planar : {PLANARCONFIG_CONTIG, PLANARCONFIG_SEPARATE}) {
      TiffSpec s;
      s.samples = 4;
      s.extra = {kind};
      s.planar = planar;
      s.compression = COMPRESSION_LZW;
      ExpectDecodes(s);
    }
  }
  TiffSpec wide;  // 16-bit associated alpha works on the high bytes, as PIL's "RGBa;16"
  wide.samples = 4;
  wide.bits = 16;
  wide.extra = {EXTRASAMPLE_ASSOCALPHA};
  ExpectDecodes(wide);
}

TEST_F(TiffTest, GrayAndBilevelEveryDepth) {
  for (uint16_t bits : {1, 2, 4, 8, 16}) {
    for (uint16_t photometric : {PHOTOMETRIC_MINISBLACK, PHOTOMETRIC_MINISWHITE}) {
      for (bool keep_gray : {false, true}) {
        TiffSpec s;
        s.bits = bits;
        s.samples = 1;
        s.photometric = photometric;
        s.compression = bits == 1 ? COMPRESSION_PACKBITS : COMPRESSION_ADOBE_DEFLATE;
        s.predictor = bits >= 8 ? PREDICTOR_HORIZONTAL : PREDICTOR_NONE;
        ExpectDecodes(s, keep_gray);
        s.tile = 16;
        s.compression = COMPRESSION_NONE;
        s.predictor = PREDICTOR_NONE;
        ExpectDecodes(s, keep_gray);
      }
    }
  }
  TiffSpec alpha;  // gray + alpha: the gray sample
  alpha.samples = 2;
  alpha.photometric = PHOTOMETRIC_MINISBLACK;
  alpha.extra = {EXTRASAMPLE_UNASSALPHA};
  ExpectDecodes(alpha, true);
}

TEST_F(TiffTest, BilevelFaxCompressions) {
  for (uint16_t compression :
       {COMPRESSION_CCITTFAX4, COMPRESSION_CCITTFAX3, COMPRESSION_CCITTRLE}) {
    TiffSpec s;
    s.bits = 1;
    s.samples = 1;
    s.photometric = PHOTOMETRIC_MINISWHITE;
    s.compression = compression;
    ExpectDecodes(s);
  }
}

TEST_F(TiffTest, PalettesLookUpTheColormapHighBytes) {
  for (uint16_t bits : {1, 2, 4, 8}) {
    TiffSpec s;
    s.bits = bits;
    s.samples = 1;
    s.photometric = PHOTOMETRIC_PALETTE;
    s.compression = COMPRESSION_LZW;
    for (size_t i = 0; i < 3 * (size_t{1} << bits); ++i) {
      s.colormap.push_back(static_cast<uint16_t>(i * 7919 % 65536));
    }
    ExpectDecodes(s);
    ExpectDecodes(s, /*keep_gray=*/true);  // a palette stays RGB
  }
}

TEST_F(TiffTest, Rgb16KeepsTheHighByte) {
  for (uint16_t planar : {PLANARCONFIG_CONTIG, PLANARCONFIG_SEPARATE}) {
    TiffSpec s;
    s.bits = 16;
    s.planar = planar;
    s.compression = COMPRESSION_ADOBE_DEFLATE;
    s.predictor = PREDICTOR_HORIZONTAL;
    ExpectDecodes(s);
    s.tile = 32;
    ExpectDecodes(s);
  }
}

TEST_F(TiffTest, CmykAsPilConvertsIt) {
  for (uint16_t bits : {8, 16}) {
    for (uint16_t planar : {PLANARCONFIG_CONTIG, PLANARCONFIG_SEPARATE}) {
      TiffSpec s;
      s.bits = bits;
      s.samples = 4;
      s.photometric = PHOTOMETRIC_SEPARATED;
      s.planar = planar;
      s.compression = COMPRESSION_LZW;
      ExpectDecodes(s);
    }
  }
}

// JPEG is lossy: the decode stays near the samples (PIL's equality is in
// tiff_pil_test.py).
void ExpectNear(const PixelView& got, const TiffSpec& s, const std::vector<uint32_t>& v,
                double max_mean_error) {
  ASSERT_EQ(got.width, s.width);
  ASSERT_EQ(got.height, s.height);
  const int per = got.channels;
  double error = 0;
  for (size_t i = 0; i < size_t{s.width} * s.height; ++i) {
    for (int c = 0; c < per; ++c) {
      error +=
          std::abs(int{got.data[i * per + c]} - static_cast<int>(v[i * s.samples + c % s.samples]));
    }
  }
  EXPECT_LT(error / (static_cast<double>(s.width) * s.height * per), max_mean_error);
}

// A smooth image, so that JPEG keeps it close.
std::vector<uint32_t> Smooth(const TiffSpec& s) {
  std::vector<uint32_t> v(size_t{s.width} * s.height * s.samples);
  for (uint32_t y = 0; y < s.height; ++y) {
    for (uint32_t x = 0; x < s.width; ++x) {
      for (int c = 0; c < s.samples; ++c) {
        v[(size_t{y} * s.width + x) * s.samples + c] = x * 2 + y + c * 30;
      }
    }
  }
  return v;
}

TEST_F(TiffTest, JpegInTiffYCbCrRgbAndGray) {
  struct Case {
    uint16_t samples, photometric, subsampling;
    uint32_t tile;
  };
  for (const Case& c : {Case{3, PHOTOMETRIC_RGB, 0, 0}, Case{3, PHOTOMETRIC_RGB, 2, 0},
                        Case{3, PHOTOMETRIC_RGB, 2, 16}, Case{3, PHOTOMETRIC_RGB, 1, 0},
                        Case{1, PHOTOMETRIC_MINISBLACK, 0, 0}}) {
    TiffSpec s;
    s.width = 64;
    s.height = 48;
    s.rows_per_strip = 16;
    s.samples = c.samples;
    s.photometric = c.photometric;
    s.ycbcr_subsampling = c.subsampling;
    s.tile = c.tile;
    s.compression = COMPRESSION_JPEG;
    MemFile file;
    TIFF* tif = TIFFClientOpen("fixture", "w", &file, MemRead, MemWrite, MemSeek, MemClose, MemSize,
                               NoMap, NoUnmap);
    ASSERT_NE(tif, nullptr);
    const std::vector<uint32_t> v = Smooth(s);
    WriteDirectory(tif, s, v);
    TIFFClose(tif);
    absl::StatusOr<PixelView> got = Decode(std::string(file.bytes.begin(), file.bytes.end()));
    ASSERT_THAT(got, ::shardpack::testing::IsOk());
    ExpectNear(*got, s, v, 4.0);
  }
}

// YCbCr that is not JPEG goes through libtiff's RGBA reader.
TEST_F(TiffTest, UncompressedYCbCrConverts) {
  const uint8_t units[] = {
      // one 2x2 data unit (4 Y, Cb, Cr) per block of a 4x2 image
      100, 110, 120, 130, 128, 128, 60, 60, 60, 60, 150, 200,
  };
  std::string file;
  {
    MemFile f;
    TIFF* tif = TIFFClientOpen("fixture", "w", &f, MemRead, MemWrite, MemSeek, MemClose, MemSize,
                               NoMap, NoUnmap);
    ASSERT_NE(tif, nullptr);
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, 4);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, 2);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 3);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_YCBCR);
    TIFFSetField(tif, TIFFTAG_YCBCRSUBSAMPLING, 2, 2);
    TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, 2);
    ASSERT_EQ(TIFFWriteRawStrip(tif, 0, const_cast<uint8_t*>(units), sizeof(units)),
              static_cast<tmsize_t>(sizeof(units)));
    TIFFClose(tif);
    file.assign(f.bytes.begin(), f.bytes.end());
  }
  absl::StatusOr<PixelView> got = Decode(file);
  ASSERT_THAT(got, ::shardpack::testing::IsOk());
  ASSERT_EQ(got->channels, 3);
  // First block: gray (Cb = Cr = 128): R = G = B = Y.
  EXPECT_EQ(got->data[0], 100);
  EXPECT_EQ(got->data[1], 100);
  EXPECT_EQ(got->data[2], 100);
  EXPECT_EQ(got->data[3 * 4 + 3 * 1], 130);  // row 1, column 1
  // Second block: Y 60, Cr 200 adds red, Cb 150 adds blue.
  const uint8_t* second = got->data + 3 * 2;
  EXPECT_NEAR(second[0], 60 + 1.402 * 72, 2);
  EXPECT_NEAR(second[2], 60 + 1.772 * 22, 2);
}

TEST_F(TiffTest, FirstDirectoryOnly) {
  TiffSpec first;
  TiffSpec second;
  second.width = 5;
  second.height = 90;
  const std::string file = WriteTiff({first, second});
  absl::StatusOr<PixelView> got = Decode(file);
  ASSERT_THAT(got, ::shardpack::testing::IsOk());
  ASSERT_EQ(got->width, first.width);
  EXPECT_EQ(std::vector<uint8_t>(got->data, got->data + got->bytes()),
            Expected(first, Samples(first, 1), 3));
}

// The stored pixel (column, row) that output pixel (x, y) of a w x h image
// shows under `orientation`: PIL's FLIP_LEFT_RIGHT, ROTATE_180,
// FLIP_TOP_BOTTOM, TRANSPOSE, ROTATE_270, TRANSVERSE and ROTATE_90 for 2..8.
std::pair<uint32_t, uint32_t> StoredPixel(int orientation, uint32_t x, uint32_t y, uint32_t w,
                                          uint32_t h) {
  switch (orientation) {
    case 2: return {w - 1 - x, y};
    case 3: return {w - 1 - x, h - 1 - y};
    case 4: return {x, h - 1 - y};
    case 5: return {y, x};
    case 6: return {y, h - 1 - x};
    case 7: return {w - 1 - y, h - 1 - x};
    case 8: return {w - 1 - y, x};
    default: return {x, y};
  }
}

// Regression: the Orientation tag was not applied, where PIL's TIFF
// plugin applies it on load in every decode path.
TEST_F(TiffTest, OrientationIsAppliedAsPilDoes) {
  for (uint16_t photometric : {PHOTOMETRIC_RGB, PHOTOMETRIC_MINISBLACK}) {
    for (uint32_t tile : {0u, 16u}) {
      for (bool keep_gray : {false, true}) {
        for (uint16_t orientation = 1; orientation <= 8; ++orientation) {
          SCOPED_TRACE(::testing::Message() << "photometric " << photometric << " tile " << tile
                                            << " keep_gray " << keep_gray << " orientation "
                                            << orientation);
          TiffSpec s;
          s.photometric = photometric;
          s.samples = photometric == PHOTOMETRIC_RGB ? 3 : 1;
          s.tile = tile;
          s.compression = COMPRESSION_ADOBE_DEFLATE;
          s.orientation = orientation;
          const int channels = keep_gray && s.samples == 1 ? 1 : 3;
          const std::vector<uint8_t> stored = Expected(s, Samples(s), channels);
          DecodeSpec spec;
          spec.keep_gray = keep_gray;
          absl::StatusOr<PixelView> got = Decode(WriteTiff(s), spec);
          ASSERT_THAT(got, ::shardpack::testing::IsOk());
          const bool swap = orientation >= 5;
          ASSERT_EQ(got->width, swap ? s.height : s.width);
          ASSERT_EQ(got->height, swap ? s.width : s.height);
          ASSERT_EQ(got->channels, channels);
          std::vector<uint8_t> want;
          for (uint32_t y = 0; y < got->height; ++y) {
            for (uint32_t x = 0; x < got->width; ++x) {
              const auto [u, v] = StoredPixel(orientation, x, y, s.width, s.height);
              const uint8_t* px = &stored[(size_t{v} * s.width + u) * channels];
              want.insert(want.end(), px, px + channels);
            }
          }
          ASSERT_EQ(std::vector<uint8_t>(got->data, got->data + got->bytes()), want);
        }
      }
    }
  }
}

TEST_F(TiffTest, UnsupportedKindsAreRefused) {
  struct Case {
    uint16_t bits, samples, photometric, sample_format;
    const char* what;
  };
  for (const Case& c : {
           Case{32, 1, PHOTOMETRIC_MINISBLACK, SAMPLEFORMAT_IEEEFP, "floating-point samples"},
           Case{32, 3, PHOTOMETRIC_RGB, SAMPLEFORMAT_IEEEFP, "floating-point samples"},
           Case{32, 1, PHOTOMETRIC_MINISBLACK, SAMPLEFORMAT_UINT, "32-bit grayscale"},
           Case{16, 1, PHOTOMETRIC_MINISBLACK, SAMPLEFORMAT_INT, "signed samples"},
           Case{8, 3, PHOTOMETRIC_CIELAB, SAMPLEFORMAT_UINT, "photometric interpretation 8"},
           Case{4, 3, PHOTOMETRIC_RGB, SAMPLEFORMAT_UINT, "4-bit RGB"},
       }) {
    TiffSpec s;
    s.bits = c.bits;
    s.samples = c.samples;
    s.photometric = c.photometric;
    s.sample_format = c.sample_format;
    EXPECT_THAT(Decode(WriteTiff(s)),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(std::string(kName) + ": unsupported TIFF: " + c.what)));
  }
}

TEST_F(TiffTest, SizeIsCheckedBeforeDecoding) {
  TiffSpec s;
  DecodeSpec spec;
  spec.max_pixels = uint64_t{s.width} * s.height - 1;
  EXPECT_THAT(Decode(WriteTiff(s), spec), StatusIs(absl::StatusCode::kInvalidArgument,
                                                   HasSubstr("image too large: 37x23 TIFF")));
}

// ---- hand-built files, for damage libtiff's writer would not make ----

struct Entry {
  uint16_t tag;
  uint16_t type;  // TIFF_SHORT or TIFF_LONG
  std::vector<uint32_t> values;
  bool in_data = false;  // the values are offsets into the data block
};

void Put16(std::string* out, uint32_t v) {
  out->push_back(static_cast<char>(v & 0xFF));
  out->push_back(static_cast<char>(v >> 8));
}
void Put32(std::string* out, uint32_t v) {
  Put16(out, v & 0xFFFF);
  Put16(out, v >> 16);
}

// A little-endian TIFF: the header, the IFD at 8, its out-of-line values,
// then `data`; the IFD's next offset is `next_ifd`.
std::string BuildTiff(std::vector<Entry> entries, const std::string& data, uint32_t next_ifd = 0) {
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.tag < b.tag; });
  const auto bytes_of = [](const Entry& e) {
    return e.values.size() * (e.type == TIFF_SHORT ? 2 : 4);
  };
  uint32_t values_at = 8 + 2 + 12 * static_cast<uint32_t>(entries.size()) + 4;
  uint32_t data_at = values_at;
  for (const Entry& e : entries) {
    if (bytes_of(e) > 4) data_at += static_cast<uint32_t>(bytes_of(e));
  }
  std::string head = "II*";
  head.push_back('\0');
  Put32(&head, 8);
  std::string ifd, values;
  Put16(&ifd, static_cast<uint32_t>(entries.size()));
  for (const Entry& e : entries) {
    std::string packed;
    for (uint32_t v : e.values) {
      const uint32_t value = e.in_data ? data_at + v : v;
      e.type == TIFF_SHORT ? Put16(&packed, value) : Put32(&packed, value);
    }
    Put16(&ifd, e.tag);
    Put16(&ifd, e.type);
    Put32(&ifd, static_cast<uint32_t>(e.values.size()));
    if (packed.size() <= 4) {
      packed.resize(4, '\0');
      ifd += packed;
    } else {
      Put32(&ifd, values_at + static_cast<uint32_t>(values.size()));
      values += packed;
    }
  }
  Put32(&ifd, next_ifd);
  return head + ifd + values + data;
}

constexpr uint32_t kW = 16, kH = 8;

// A 16x8 RGB image in two uncompressed strips of 4 rows.
std::vector<Entry> RgbEntries(uint32_t width = kW, uint32_t height = kH) {
  const uint32_t strip = width * 4 * 3;
  return {{TIFFTAG_IMAGEWIDTH, TIFF_LONG, {width}},
          {TIFFTAG_IMAGELENGTH, TIFF_LONG, {height}},
          {TIFFTAG_BITSPERSAMPLE, TIFF_SHORT, {8, 8, 8}},
          {TIFFTAG_COMPRESSION, TIFF_SHORT, {COMPRESSION_NONE}},
          {TIFFTAG_PHOTOMETRIC, TIFF_SHORT, {PHOTOMETRIC_RGB}},
          {TIFFTAG_STRIPOFFSETS, TIFF_LONG, {0, strip}, true},
          {TIFFTAG_SAMPLESPERPIXEL, TIFF_SHORT, {3}},
          {TIFFTAG_ROWSPERSTRIP, TIFF_LONG, {4}},
          {TIFFTAG_STRIPBYTECOUNTS, TIFF_LONG, {strip, strip}}};
}

std::string RgbData() {
  std::string data(kW * kH * 3, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 13 + 7);
  return data;
}

Entry* Find(std::vector<Entry>* entries, uint16_t tag) {
  for (Entry& e : *entries) {
    if (e.tag == tag) return &e;
  }
  return nullptr;
}

// A damaged file gives an error naming it, of a code that means damage,
// an unsupported kind or a size limit; or, where the damage left a valid
// file, pixels. Never a signal (the test would die) or a hang (Decode
// bounds the time).
void ExpectErrorOrPixels(const absl::StatusOr<PixelView>& got) {
  if (got.ok()) return;
  EXPECT_THAT(std::string(got.status().message()), HasSubstr(kName));
  EXPECT_THAT(got.status().code(),
              ::testing::AnyOf(absl::StatusCode::kDataLoss, absl::StatusCode::kInvalidArgument,
                               absl::StatusCode::kResourceExhausted))
      << got.status();
}

TEST_F(TiffTest, HandBuiltFileDecodes) {
  absl::StatusOr<PixelView> got = Decode(BuildTiff(RgbEntries(), RgbData()));
  ASSERT_THAT(got, ::shardpack::testing::IsOk());
  EXPECT_EQ(std::string(got->data, got->data + got->bytes()), RgbData());
}

TEST_F(TiffTest, EveryTruncationIsAnError) {
  const std::string file = BuildTiff(RgbEntries(), RgbData());
  const size_t data_at = file.size() - RgbData().size();
  for (size_t cut = 0; cut < file.size(); ++cut) {
    SCOPED_TRACE(cut);
    absl::StatusOr<PixelView> got = Decode(file.substr(0, cut));
    ASSERT_FALSE(got.ok());
    ExpectErrorOrPixels(got);
    if (cut >= data_at) {
      // The strip that the cut reaches is named, at its offset.
      const uint32_t strip = cut < data_at + RgbData().size() / 2 ? 0 : 1;
      EXPECT_THAT(got, StatusIs(absl::StatusCode::kDataLoss,
                                HasSubstr(absl::StrCat("truncated TIFF data: strip ", strip))));
      EXPECT_EQ(common::ErrorOffset(got.status()), data_at + strip * RgbData().size() / 2);
    }
  }
}

// Files libtiff writes (IFD last, compressed strips and tiles, JPEG).
std::vector<std::string> WrittenFixtures() {
  TiffSpec lzw;
  lzw.compression = COMPRESSION_LZW;
  lzw.predictor = PREDICTOR_HORIZONTAL;
  TiffSpec tiles;
  tiles.compression = COMPRESSION_ADOBE_DEFLATE;
  tiles.tile = 16;
  tiles.planar = PLANARCONFIG_SEPARATE;
  TiffSpec jpeg;
  jpeg.compression = COMPRESSION_JPEG;
  jpeg.width = jpeg.height = 32;
  jpeg.rows_per_strip = 16;
  jpeg.ycbcr_subsampling = 2;
  TiffSpec palette;
  palette.bits = 4;
  palette.samples = 1;
  palette.photometric = PHOTOMETRIC_PALETTE;
  palette.compression = COMPRESSION_PACKBITS;
  palette.colormap.assign(48, 0x8000);
  TiffSpec fax;
  fax.bits = 1;
  fax.samples = 1;
  fax.photometric = PHOTOMETRIC_MINISWHITE;
  fax.compression = COMPRESSION_CCITTFAX4;
  return {WriteTiff(lzw), WriteTiff(tiles), WriteTiff(jpeg), WriteTiff(palette), WriteTiff(fax)};
}

TEST_F(TiffTest, TruncatedWrittenFilesAreErrors) {
  for (const std::string& file : WrittenFixtures()) {
    SP_EXPECT_OK(Decode(file));
    for (size_t cut = 0; cut < file.size(); cut += 5) {
      SCOPED_TRACE(cut);
      absl::StatusOr<PixelView> got = Decode(file.substr(0, cut));
      EXPECT_FALSE(got.ok());
      ExpectErrorOrPixels(got);
    }
  }
}

TEST_F(TiffTest, FlippedBytesGiveErrorsOrPixelsNeverASignal) {
  std::vector<std::string> files = WrittenFixtures();
  files.push_back(BuildTiff(RgbEntries(), RgbData()));
  uint64_t x = 12345;
  for (const std::string& file : files) {
    for (size_t at = 0; at < file.size(); ++at) {
      for (uint8_t mask : {0xFF, 0x01, 0x80}) {
        std::string bad = file;
        bad[at] = static_cast<char>(bad[at] ^ mask);
        ExpectErrorOrPixels(Decode(bad));
      }
    }
    for (int round = 0; round < 300; ++round) {  // several bytes at once
      std::string bad = file;
      for (int k = 0; k < 4; ++k) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        bad[(x >> 33) % bad.size()] = static_cast<char>(x >> 24);
      }
      ExpectErrorOrPixels(Decode(bad));
    }
  }
}

std::vector<Entry> GrayDeflateEntries(uint32_t width, uint32_t height, uint32_t bytes) {
  return {{TIFFTAG_IMAGEWIDTH, TIFF_LONG, {width}},
          {TIFFTAG_IMAGELENGTH, TIFF_LONG, {height}},
          {TIFFTAG_BITSPERSAMPLE, TIFF_SHORT, {8}},
          {TIFFTAG_COMPRESSION, TIFF_SHORT, {COMPRESSION_ADOBE_DEFLATE}},
          {TIFFTAG_PHOTOMETRIC, TIFF_SHORT, {PHOTOMETRIC_MINISBLACK}},
          {TIFFTAG_STRIPOFFSETS, TIFF_LONG, {0}, true},
          {TIFFTAG_ROWSPERSTRIP, TIFF_LONG, {0xFFFFFFFFu}},  // one strip
          {TIFFTAG_STRIPBYTECOUNTS, TIFF_LONG, {bytes}}};
}

TEST_F(TiffTest, AbsurdSizesAreRefusedBeforeAllocation) {
  // One compressed strip: a directory libtiff finds sound.
  for (auto [width, height] : {std::pair{1u << 31, 1u << 31}, std::pair{1u << 31, 1u},
                               std::pair{1u, 0xFFFFFFFFu}, std::pair{1u << 16, 1u << 16}}) {
    EXPECT_THAT(Decode(BuildTiff(GrayDeflateEntries(width, height, 64), std::string(64, 'x'))),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(absl::StrCat(kName, ": image too large: ", width, "x", height,
                                                " TIFF"))));
  }
  // Uncompressed, or with a strip count that does not match: libtiff
  // refuses the directory itself.
  for (uint32_t side : {0x80000000u, 0xFFFFFFFFu, 0u}) {
    std::vector<Entry> one_strip = RgbEntries(side, side);
    Find(&one_strip, TIFFTAG_ROWSPERSTRIP)->values = {0xFFFFFFFFu};
    Find(&one_strip, TIFFTAG_STRIPOFFSETS)->values = {0};
    Find(&one_strip, TIFFTAG_STRIPBYTECOUNTS)->values = {kW * kH * 3};
    for (const std::string& file :
         {BuildTiff(one_strip, RgbData()), BuildTiff(RgbEntries(side, side), RgbData())}) {
      absl::StatusOr<PixelView> got = Decode(file);
      EXPECT_FALSE(got.ok());
      ExpectErrorOrPixels(got);
    }
  }
}

TEST_F(TiffTest, StripPastTheEndIsTruncation) {
  std::vector<Entry> entries = RgbEntries();
  Find(&entries, TIFFTAG_STRIPOFFSETS)->values[1] = 1u << 30;
  absl::StatusOr<PixelView> got = Decode(BuildTiff(entries, RgbData()));
  EXPECT_THAT(got, StatusIs(absl::StatusCode::kDataLoss,
                            HasSubstr("truncated TIFF data: strip 1 (192 bytes) ends past")));
  EXPECT_EQ(common::ErrorOffset(got.status()),
            Find(&entries, TIFFTAG_STRIPOFFSETS)->values[1] + BuildTiff(entries, "").size());
  entries = RgbEntries();
  Find(&entries, TIFFTAG_STRIPBYTECOUNTS)->values[0] = 0xFFFFFFF0u;
  EXPECT_THAT(Decode(BuildTiff(entries, RgbData())),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("truncated TIFF data: strip 0")));
}

TEST_F(TiffTest, DirectoryLoopsDoNotHang) {
  // The first directory points at itself: only the first is read.
  absl::StatusOr<PixelView> got = Decode(BuildTiff(RgbEntries(), RgbData(), /*next_ifd=*/8));
  ASSERT_THAT(got, ::shardpack::testing::IsOk());
  EXPECT_EQ(std::string(got->data, got->data + got->bytes()), RgbData());
}

// The deflate stream of a large image of zeros, from libtiff's writer.
std::string ZerosStream(uint32_t side) {
  TiffSpec s;
  s.width = s.height = side;
  s.samples = 1;
  s.photometric = PHOTOMETRIC_MINISBLACK;
  s.rows_per_strip = side;
  s.compression = COMPRESSION_ADOBE_DEFLATE;
  MemFile file;
  TIFF* tif = TIFFClientOpen("fixture", "w", &file, MemRead, MemWrite, MemSeek, MemClose, MemSize,
                             NoMap, NoUnmap);
  SetTags(tif, s);
  std::vector<uint8_t> zeros(size_t{side} * side, 0);
  TIFFWriteEncodedStrip(tif, 0, zeros.data(), static_cast<tmsize_t>(zeros.size()));
  TIFFClose(tif);
  MemFile copy = file;
  copy.pos = 0;
  tif = TIFFClientOpen("fixture", "r", &copy, MemRead, MemWrite, MemSeek, MemClose, MemSize, NoMap,
                       NoUnmap);
  std::string raw(TIFFGetStrileByteCount(tif, 0), '\0');
  TIFFReadRawStrip(tif, 0, raw.data(), static_cast<tmsize_t>(raw.size()));
  TIFFClose(tif);
  return raw;
}

TEST_F(TiffTest, DeflateBombsAreBounded) {
  const std::string bomb = ZerosStream(4096);  // 16 MiB of zeros in a few KiB
  ASSERT_LT(bomb.size(), 64u << 10);
  const auto bytes = static_cast<uint32_t>(bomb.size());
  // Claimed in full: refused by size before anything is inflated.
  DecodeSpec spec;
  spec.max_pixels = 1 << 20;
  EXPECT_THAT(Decode(BuildTiff(GrayDeflateEntries(4096, 4096, bytes), bomb), spec),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("image too large")));
  EXPECT_THAT(Decode(BuildTiff(GrayDeflateEntries(1u << 20, 1u << 20, bytes), bomb)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("image too large")));
  // Under a small image: inflated only as far as the strip reaches.
  absl::StatusOr<PixelView> got = Decode(BuildTiff(GrayDeflateEntries(16, 16, bytes), bomb));
  ASSERT_THAT(got, ::shardpack::testing::IsOk());
  EXPECT_EQ(std::vector<uint8_t>(got->data, got->data + got->bytes()),
            std::vector<uint8_t>(16 * 16 * 3, 0));
}

TEST_F(TiffTest, AbsurdTilesAndSamplesAreErrors) {
  std::vector<Entry> tiles = RgbEntries();
  std::erase_if(tiles, [](const Entry& e) {
    return e.tag == TIFFTAG_STRIPOFFSETS || e.tag == TIFFTAG_STRIPBYTECOUNTS ||
           e.tag == TIFFTAG_ROWSPERSTRIP;
  });
  tiles.push_back({TIFFTAG_TILEWIDTH, TIFF_LONG, {1u << 20}});
  tiles.push_back({TIFFTAG_TILELENGTH, TIFF_LONG, {1u << 20}});
  tiles.push_back({TIFFTAG_TILEOFFSETS, TIFF_LONG, {0}, true});
  tiles.push_back({TIFFTAG_TILEBYTECOUNTS, TIFF_LONG, {kW * kH * 3}});
  absl::StatusOr<PixelView> got = Decode(BuildTiff(tiles, RgbData()));
  EXPECT_THAT(got, StatusIs(absl::StatusCode::kDataLoss, HasSubstr(kName)));

  std::vector<Entry> samples = RgbEntries();
  Find(&samples, TIFFTAG_SAMPLESPERPIXEL)->values[0] = 40000;
  got = Decode(BuildTiff(samples, RgbData()));
  EXPECT_FALSE(got.ok());
  ExpectErrorOrPixels(got);

  // A 4-bit palette without its colormap. (libtiff reads an 8-bit one as
  // gray, where PIL refuses it.)
  std::vector<Entry> palette = RgbEntries();
  Find(&palette, TIFFTAG_PHOTOMETRIC)->values[0] = PHOTOMETRIC_PALETTE;
  Find(&palette, TIFFTAG_SAMPLESPERPIXEL)->values[0] = 1;
  Find(&palette, TIFFTAG_BITSPERSAMPLE)->values = {4};
  got = Decode(BuildTiff(palette, RgbData()));
  EXPECT_FALSE(got.ok());
  ExpectErrorOrPixels(got);
}

TEST_F(TiffTest, CorruptJpegStripIsAnError) {
  TiffSpec s;
  s.compression = COMPRESSION_JPEG;
  s.width = s.height = 64;
  s.rows_per_strip = 64;
  std::string file = WriteTiff(s);
  MemFile copy;
  copy.bytes.assign(file.begin(), file.end());
  TIFF* tif = TIFFClientOpen("fixture", "r", &copy, MemRead, MemWrite, MemSeek, MemClose, MemSize,
                             NoMap, NoUnmap);
  ASSERT_NE(tif, nullptr);
  const uint64_t offset = TIFFGetStrileOffset(tif, 0);
  const uint64_t count = TIFFGetStrileByteCount(tif, 0);
  TIFFClose(tif);
  // The entropy data ends early (an EOI marker halfway), as in a cut file
  // whose byte counts were left as they were.
  file[offset + count / 2] = '\xFF';
  file[offset + count / 2 + 1] = '\xD9';
  EXPECT_THAT(Decode(file), StatusIs(absl::StatusCode::kDataLoss,
                                     HasSubstr(absl::StrCat(kName, ": corrupt TIFF data: JPEG"))));
}

TEST_F(TiffTest, NothingIsWrittenToStderr) {
  ::testing::internal::CaptureStderr();
  const std::string file = BuildTiff(RgbEntries(), RgbData());
  for (size_t cut = 0; cut < file.size(); cut += 3) (void)Decode(file.substr(0, cut));
  for (const std::string& written : WrittenFixtures()) {
    for (size_t at = 0; at < written.size(); at += 7) {
      std::string bad = written;
      bad[at] = static_cast<char>(bad[at] ^ 0x55);
      (void)Decode(bad);
    }
  }
  std::vector<Entry> entries = RgbEntries();
  entries.push_back({TIFFTAG_ARTIST, TIFF_LONG, {1, 2, 3}});  // a tag of the wrong type: a warning
  (void)Decode(BuildTiff(entries, RgbData()));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST_F(TiffTest, ThreadsDecodeIndependently) {
  TiffSpec lzw;
  lzw.compression = COMPRESSION_LZW;
  TiffSpec jpeg;
  jpeg.compression = COMPRESSION_JPEG;
  jpeg.width = jpeg.height = 32;
  jpeg.rows_per_strip = 16;
  const std::string files[] = {WriteTiff(lzw), WriteTiff(jpeg), WriteTiff(lzw).substr(0, 200)};
  std::vector<std::string> first(3);
  for (int i = 0; i < 3; ++i) {
    auto got = Decode(files[i]);
    first[i] = got.ok() ? std::string(got->data, got->data + got->bytes())
                        : std::string(got.status().message());
  }
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      DecodeBuffers buffers;
      for (int round = 0; round < 30; ++round) {
        const int i = (round + t) % 3;
        auto got =
            DecodeTiff(ByteSpan(reinterpret_cast<const uint8_t*>(files[i].data()), files[i].size()),
                       kName, {}, &buffers);
        const std::string out = got.ok() ? std::string(got->data, got->data + got->bytes())
                                         : std::string(got.status().message());
        mismatches[t] += out != first[i];
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace shardpack::codec
