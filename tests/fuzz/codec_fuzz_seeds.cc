// Writes codec_fuzzer's seed corpus, so that no binary image is checked in:
//
//   codec_fuzz_seeds DIR  ->  DIR/*.png, *.webp, *.tiff  written by libpng,
//                             libwebp and libtiff; DIR/*.bmp, *.pnm built
//                             byte by byte
//   codec_fuzz_seeds --jpeg DIR  ->  jpeg_fuzzer's: DIR/*.jpg written by
//                             TurboJPEG (4:2:0, 4:4:4, gray, quality 100,
//                             progressive) and re-coded with a restart
//                             marker after every MCU (JpegRestartRecoder)
//
// Images are small (at most 8x8) so the fuzzer runs fast, and cover each
// decoder's main paths: PNG gray/RGB/RGBA/16-bit/palette, WebP lossy and
// lossless with alpha, TIFF RGB/gray/16-bit/palette under three
// compressions, BMP at every depth with bit fields, RLE8/RLE4 and a
// top-down V5 header, PNM P1-P6 with a 16-bit maxval.
#include <png.h>
#include <tiffio.h>
#include <turbojpeg.h>
#include <webp/encode.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "codec/jpeg_restart.h"

namespace {

namespace fs = std::filesystem;

bool WriteFile(const fs::path& path, const std::string& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

// Deterministic samples with every channel varying.
std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>((i * 37 + seed * 101) ^ (i >> 3));
  return out;
}

bool WritePng(const fs::path& path, uint32_t format, int w, int h, const void* pixels,
              const void* colormap = nullptr, int colors = 0) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(w);
  image.height = static_cast<png_uint_32>(h);
  image.format = format;
  image.colormap_entries = static_cast<png_uint_32>(colors);
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&image, nullptr, &size, 0, pixels, 0, colormap)) return false;
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&image, out.data(), &size, 0, pixels, 0, colormap)) return false;
  out.resize(size);
  return WriteFile(path, out);
}

bool WritePngs(const fs::path& dir) {
  const std::vector<uint8_t> rgba = Pattern(8 * 8 * 4, 1);
  std::vector<uint16_t> wide(6 * 5 * 3);
  for (size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<uint16_t>(i * 2221);
  const std::vector<uint8_t> index = Pattern(7 * 3, 2);
  std::vector<uint8_t> index16(index);
  for (uint8_t& i : index16) i %= 16;
  const std::vector<uint8_t> colormap = Pattern(16 * 3, 3);
  return WritePng(dir / "gray.png", PNG_FORMAT_GRAY, 5, 4, rgba.data()) &&
         WritePng(dir / "rgb.png", PNG_FORMAT_RGB, 8, 8, rgba.data()) &&
         WritePng(dir / "rgba.png", PNG_FORMAT_RGBA, 4, 3, rgba.data()) &&
         WritePng(dir / "ga.png", PNG_FORMAT_GA, 3, 3, rgba.data()) &&
         WritePng(dir / "rgb16.png", PNG_FORMAT_LINEAR_RGB, 6, 5, wide.data()) &&
         WritePng(dir / "palette.png", PNG_FORMAT_RGB_COLORMAP, 7, 3, index16.data(),
                  colormap.data(), 16);
}

bool WriteWebp(const fs::path& path, size_t (*encode)(const uint8_t*, int, int, int, uint8_t**),
               int w, int h, int channels) {
  const std::vector<uint8_t> px = Pattern(size_t(w) * h * channels, 4);
  uint8_t* out = nullptr;
  const size_t n = encode(px.data(), w, h, w * channels, &out);
  const bool ok = n > 0 && WriteFile(path, std::string(reinterpret_cast<char*>(out), n));
  WebPFree(out);
  return ok;
}

size_t LossyRgb(const uint8_t* p, int w, int h, int stride, uint8_t** out) {
  return WebPEncodeRGB(p, w, h, stride, 60, out);
}
size_t LossyRgba(const uint8_t* p, int w, int h, int stride, uint8_t** out) {
  return WebPEncodeRGBA(p, w, h, stride, 60, out);
}

bool WriteWebps(const fs::path& dir) {
  return WriteWebp(dir / "lossy.webp", LossyRgb, 8, 6, 3) &&
         WriteWebp(dir / "lossy_alpha.webp", LossyRgba, 5, 5, 4) &&
         WriteWebp(dir / "lossless.webp", WebPEncodeLosslessRGB, 7, 4, 3) &&
         WriteWebp(dir / "lossless_alpha.webp", WebPEncodeLosslessRGBA, 4, 4, 4);
}

struct TiffKind {
  const char* name;
  uint16_t samples, bits, photometric, compression;
};

bool WriteTiff(const fs::path& path, const TiffKind& k) {
  constexpr uint32_t w = 6, h = 4;
  TIFF* t = TIFFOpen(path.c_str(), "w");
  if (t == nullptr) return false;
  TIFFSetField(t, TIFFTAG_IMAGEWIDTH, w);
  TIFFSetField(t, TIFFTAG_IMAGELENGTH, h);
  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, k.samples);
  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, k.bits);
  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, k.photometric);
  TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  TIFFSetField(t, TIFFTAG_COMPRESSION, k.compression);
  TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 2u);
  std::vector<uint16_t> map(size_t{1} << k.bits);
  if (k.photometric == PHOTOMETRIC_PALETTE) {
    for (size_t i = 0; i < map.size(); ++i) map[i] = static_cast<uint16_t>(i * 4099);
    TIFFSetField(t, TIFFTAG_COLORMAP, map.data(), map.data(), map.data());
  }
  const size_t row = (size_t{w} * k.samples * k.bits + 7) / 8;
  std::vector<uint8_t> px = Pattern(row * h, 5);
  bool ok = true;
  for (uint32_t y = 0; y < h && ok; ++y) ok = TIFFWriteScanline(t, px.data() + y * row, y, 0) == 1;
  TIFFClose(t);
  return ok;
}

bool WriteTiffs(const fs::path& dir) {
  const TiffKind kinds[] = {
      {"rgb.tiff", 3, 8, PHOTOMETRIC_RGB, COMPRESSION_NONE},
      {"rgb_lzw.tiff", 3, 8, PHOTOMETRIC_RGB, COMPRESSION_LZW},
      {"gray_deflate.tiff", 1, 8, PHOTOMETRIC_MINISBLACK, COMPRESSION_ADOBE_DEFLATE},
      {"rgb16.tiff", 3, 16, PHOTOMETRIC_RGB, COMPRESSION_NONE},
      {"rgba_packbits.tiff", 4, 8, PHOTOMETRIC_RGB, COMPRESSION_PACKBITS},
      {"palette.tiff", 1, 4, PHOTOMETRIC_PALETTE, COMPRESSION_NONE},
      {"bilevel.tiff", 1, 1, PHOTOMETRIC_MINISWHITE, COMPRESSION_NONE},
  };
  for (const TiffKind& k : kinds) {
    if (!WriteTiff(dir / k.name, k)) return false;
  }
  return true;
}

void Put16(std::string* s, uint32_t v) {
  s->push_back(static_cast<char>(v & 0xFF));
  s->push_back(static_cast<char>(v >> 8 & 0xFF));
}
void Put32(std::string* s, uint32_t v) {
  Put16(s, v & 0xFFFF);
  Put16(s, v >> 16);
}

// A BMP: info header of `header` bytes (the bit field masks where V2+
// headers hold them, or after a 40-byte one), a palette of `colors`
// entries, then `pixels` as stored.
std::string Bmp(uint32_t header, uint32_t w, int32_t h, uint32_t bits, uint32_t compression,
                uint32_t colors, const std::vector<uint32_t>& masks, const std::string& pixels) {
  std::string info;
  Put32(&info, header);
  if (header == 12) {
    Put16(&info, w);
    Put16(&info, static_cast<uint32_t>(h));
    Put16(&info, 1);
    Put16(&info, bits);
  } else {
    Put32(&info, w);
    Put32(&info, static_cast<uint32_t>(h));
    Put16(&info, 1);
    Put16(&info, bits);
    Put32(&info, compression);
    Put32(&info, static_cast<uint32_t>(pixels.size()));
    Put32(&info, 2835);
    Put32(&info, 2835);
    Put32(&info, colors);
    Put32(&info, 0);
    for (uint32_t m : masks) Put32(&info, m);
    while (info.size() < header) info.push_back('\0');
  }
  const std::vector<uint8_t> pal = Pattern(colors * 4, 6);
  for (uint32_t i = 0; i < colors; ++i) {
    info.append(reinterpret_cast<const char*>(&pal[i * 4]), header == 12 ? 3 : 4);
  }
  std::string file = "BM";
  Put32(&file, static_cast<uint32_t>(14 + info.size() + pixels.size()));
  Put32(&file, 0);
  Put32(&file, static_cast<uint32_t>(14 + info.size()));
  return file + info + pixels;
}

std::string Bytes(size_t n, uint32_t seed) {
  const std::vector<uint8_t> p = Pattern(n, seed);
  return std::string(p.begin(), p.end());
}

bool WriteBmps(const fs::path& dir) {
  const std::string rle8(
      "\x03\x01\x00\x03\x02\x03\x01\x00\x00\x00\x00\x02\x01\x00\x02\x02"
      "\x00\x00\x06\x03\x00\x01",
      22);
  const std::string rle4("\x04\x12\x00\x05\x34\x56\x70\x00\x00\x00\x06\x21\x00\x01", 14);
  return WriteFile(dir / "pal1.bmp", Bmp(40, 8, 4, 1, 0, 2, {}, Bytes(16, 1))) &&
         WriteFile(dir / "pal4_core.bmp", Bmp(12, 5, 3, 4, 0, 16, {}, Bytes(12, 2))) &&
         WriteFile(dir / "pal8_short.bmp", Bmp(40, 6, 3, 8, 0, 9, {}, Bytes(24, 3))) &&
         WriteFile(dir / "rgb555.bmp", Bmp(40, 3, 3, 16, 0, 0, {}, Bytes(24, 4))) &&
         WriteFile(dir / "rgb565.bmp",
                   Bmp(56, 3, 3, 16, 3, 0, {0xF800, 0x7E0, 0x1F, 0}, Bytes(24, 5))) &&
         WriteFile(dir / "rgb24_topdown.bmp", Bmp(40, 5, -3, 24, 0, 0, {}, Bytes(48, 6))) &&
         WriteFile(dir / "rgba32_v5.bmp",
                   Bmp(124, 4, 2, 32, 3, 0, {0xFF, 0xFF00, 0xFF0000, 0xFF000000}, Bytes(32, 7))) &&
         WriteFile(dir / "rle8.bmp", Bmp(40, 6, 3, 8, 1, 4, {}, rle8)) &&
         WriteFile(dir / "rle4.bmp", Bmp(108, 6, 2, 4, 2, 8, {}, rle4));
}

bool WritePnms(const fs::path& dir) {
  return WriteFile(dir / "p1.pnm", "P1\n# plain bitmap\n5 2\n1 0 1 1 0\n01100\n") &&
         WriteFile(dir / "p2.pnm", "P2\n3 2\n1000\n0 999 1000\n# c\n5 50 500\n") &&
         WriteFile(dir / "p3.pnm", "P3\n2 2\n15\n0 1 2 3 4 5\n6 7 8 9 10 15\n") &&
         WriteFile(dir / "p4.pnm", "P4\n10 3\n" + Bytes(6, 8)) &&
         WriteFile(dir / "p5.pnm", "P5 4 3 255\n" + Bytes(12, 9)) &&
         WriteFile(dir / "p5_16.pnm", "P5\n3 2\n65535\n" + Bytes(12, 10)) &&
         WriteFile(dir / "p6.pnm", "P6\n3 3\n100\n" + Bytes(27, 11));
}

}  // namespace

// A w x h pattern as JPEG (TurboJPEG), and re-coded with a restart marker
// after every MCU when `restart`.
bool WriteJpeg(const fs::path& path, int w, int h, int subsamp, int quality, int flags,
               bool restart) {
  const int pf = subsamp == TJSAMP_GRAY ? TJPF_GRAY : TJPF_RGB;
  const std::vector<uint8_t> pixels = Pattern(size_t(w) * h * tjPixelSize[pf], uint32_t(w + h));
  tjhandle tj = tjInitCompress();
  unsigned char* out = nullptr;
  unsigned long n = 0;
  const bool ok = tj != nullptr && tjCompress2(tj, pixels.data(), w, 0, h, pf, &out, &n, subsamp,
                                              quality, flags) == 0;
  std::vector<uint8_t> jpeg(out, out + (ok ? n : 0));
  tjFree(out);
  if (tj != nullptr) tjDestroy(tj);
  if (!ok) return false;
  if (restart) {
    shardpack::codec::JpegRestartRecoder recoder;
    std::vector<uint8_t> recoded;
    absl::StatusOr<bool> done = recoder.Recode({jpeg.data(), jpeg.size()}, &recoded);
    if (!done.ok() || !*done) return false;
    jpeg = recoded;
  }
  return WriteFile(path, std::string(jpeg.begin(), jpeg.end()));
}

bool WriteJpegs(const fs::path& dir) {
  return WriteJpeg(dir / "420.jpg", 40, 24, TJSAMP_420, 75, 0, false) &&
         WriteJpeg(dir / "444_q100.jpg", 17, 9, TJSAMP_444, 100, 0, false) &&
         WriteJpeg(dir / "gray.jpg", 24, 16, TJSAMP_GRAY, 90, 0, false) &&
         WriteJpeg(dir / "progressive.jpg", 24, 16, TJSAMP_420, 80, TJFLAG_PROGRESSIVE, false) &&
         WriteJpeg(dir / "420_rst.jpg", 40, 24, TJSAMP_420, 75, 0, true) &&
         WriteJpeg(dir / "422_rst.jpg", 33, 17, TJSAMP_422, 90, 0, true);
}

int main(int argc, char** argv) {
  const bool jpeg = argc == 3 && std::strcmp(argv[1], "--jpeg") == 0;
  if (argc != 2 && !jpeg) {
    std::fprintf(stderr, "usage: codec_fuzz_seeds [--jpeg] DIR\n");
    return 2;
  }
  const fs::path dir = argv[argc - 1];
  std::error_code error;
  fs::create_directories(dir, error);
  if (jpeg) {
    if (error || !WriteJpegs(dir)) {
      std::fprintf(stderr, "codec_fuzz_seeds: cannot write JPEG seeds into %s\n", dir.c_str());
      return 1;
    }
    return 0;
  }
  if (error || !WritePngs(dir) || !WriteWebps(dir) || !WriteTiffs(dir) || !WriteBmps(dir) ||
      !WritePnms(dir)) {
    std::fprintf(stderr, "codec_fuzz_seeds: cannot write seeds into %s\n", dir.c_str());
    return 1;
  }
  return 0;
}
