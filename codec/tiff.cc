// TIFF through libtiff, read from memory, first directory only.
//
// The common layouts (gray, bilevel, palette, RGB with or without alpha,
// CMYK; 1 to 16 bits; strips or tiles; contiguous or separate planes; any
// compression libtiff has) are read strip by strip or tile by tile with
// TIFFReadEncoded{Strip,Tile} and unpacked here, because libtiff's
// TIFFRGBAImage premultiplies unassociated alpha and PIL does not. Only
// YCbCr that libjpeg does not convert to RGB (uncompressed, LZW, deflate...,
// JPEG in separate planes, old-style JPEG) goes through TIFFRGBAImage, as
// PIL sends it there too. The Orientation tag is applied last, to every
// kind, as PIL applies it on load.
#include <tiffio.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "codec/color.h"
#include "codec/decode.h"
#include "common/errors.h"
#include "common/status_macros.h"

namespace shardpack::codec {
namespace {

using common::AsAbsl;

// The file as libtiff's client I/O sees it: read-only, mapped, so strips are
// decoded straight from `data` without copies.
struct MemorySource {
  const uint8_t* data;
  uint64_t size;
  uint64_t pos;
};

tmsize_t ReadProc(thandle_t handle, void* buf, tmsize_t n) {
  auto* src = static_cast<MemorySource*>(handle);
  if (n <= 0 || src->pos >= src->size) return 0;
  const uint64_t count = std::min<uint64_t>(static_cast<uint64_t>(n), src->size - src->pos);
  std::memcpy(buf, src->data + src->pos, count);
  src->pos += count;
  return static_cast<tmsize_t>(count);
}

tmsize_t WriteProc(thandle_t, void*, tmsize_t) { return -1; }

toff_t SeekProc(thandle_t handle, toff_t offset, int whence) {
  auto* src = static_cast<MemorySource*>(handle);
  // Relative offsets may be negative, passed wrapped as unsigned.
  int64_t base = 0;
  if (whence == SEEK_CUR) base = static_cast<int64_t>(src->pos);
  if (whence == SEEK_END) base = static_cast<int64_t>(src->size);
  const int64_t delta = static_cast<int64_t>(offset);
  if (whence == SEEK_SET ? delta < 0 : (delta < -base || delta > INT64_MAX - base)) {
    return static_cast<toff_t>(-1);
  }
  src->pos = static_cast<uint64_t>(whence == SEEK_SET ? delta : base + delta);
  return src->pos;
}

int CloseProc(thandle_t) { return 0; }
toff_t SizeProc(thandle_t handle) { return static_cast<MemorySource*>(handle)->size; }

int MapProc(thandle_t handle, void** base, toff_t* size) {
  auto* src = static_cast<MemorySource*>(handle);
  // libtiff only reads through the map of a file opened for reading.
  *base = const_cast<uint8_t*>(src->data);
  *size = src->size;
  return 1;
}

void UnmapProc(thandle_t, void*, toff_t) {}

// The name libtiff knows the file by. Its messages that carry it drop it:
// ours start with the caller's `name`.
constexpr char kClientName[] = "tiff";

// The first error libtiff reports for this handle, kept in place of the
// global handlers (which print to stderr and are shared by every thread).
struct LibtiffMessages {
  char text[320] = {};
  bool failed = false;
};

// An Orientation tag outside 1..8 (some writers put 0) is reported as an
// error by libtiff, which then keeps the default, 1. It is not damage: PIL
// reads such a file, as stored (TiffImagePlugin applies only 2..8).
bool IsIgnoredError(const char* module, const char* text) {
  return module != nullptr && std::strcmp(module, "_TIFFVSetField") == 0 &&
         std::strstr(text, "for \"Orientation\" tag") != nullptr;
}

int OnError(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* messages = static_cast<LibtiffMessages*>(user);
  char text[sizeof(messages->text)];
  std::vsnprintf(text, sizeof(text), fmt, ap);
  std::string prefixed;
  if (!messages->failed && !IsIgnoredError(module, text)) {
    messages->failed = true;
    std::string_view all = text;
    if (module != nullptr && module[0] != '\0' && std::strcmp(module, kClientName) != 0) {
      prefixed = absl::StrCat(module, ": ", text);
      all = prefixed;
    }
    const size_t n = std::min(all.size(), sizeof(messages->text) - 1);
    std::memcpy(messages->text, all.data(), n);
    messages->text[n] = '\0';
  }
  return 1;  // handled: the global handler is not called
}

int OnWarning(TIFF* tif, void* user, const char* module, const char* fmt, va_list ap) {
  // libjpeg only warns about a corrupt or cut JPEG strip and fills the rest
  // with gray, so for us its warnings are damage. Other warnings (unknown
  // tags, odd but readable values) leave a correct image, as PIL sees it.
  if (module != nullptr && std::strcmp(module, "JPEGLib") == 0) {
    return OnError(tif, user, module, fmt, ap);
  }
  return 1;
}

struct TiffCloser {
  void operator()(TIFF* tif) const { TIFFClose(tif); }
};
struct OptionsFreer {
  void operator()(TIFFOpenOptions* options) const { TIFFOpenOptionsFree(options); }
};
using TiffPtr = std::unique_ptr<TIFF, TiffCloser>;

absl::Status Corrupt(std::string_view name, const LibtiffMessages& messages,
                     std::string_view fallback) {
  return absl::DataLossError(absl::StrCat(
      AsAbsl(name), ": corrupt TIFF data: ", messages.failed ? messages.text : AsAbsl(fallback)));
}

absl::Status Unsupported(std::string_view name, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(AsAbsl(name), ": unsupported TIFF: ", AsAbsl(what)));
}

absl::Status UnsupportedBits(std::string_view name, uint16_t bits, std::string_view what) {
  return Unsupported(name, absl::StrCat(bits, "-bit ", AsAbsl(what)));
}

// Bytes in one pixel of the widest layout we read (8 samples of 16 bits),
// the bound of any one buffer libtiff needs for an image within max_pixels.
constexpr uint64_t kMaxBytesPerPixel = 16;
constexpr uint64_t kAllocSlack = uint64_t{16} << 20;  // codec state, tag arrays
constexpr uint16_t kMaxSamples = 8;

absl::StatusOr<TiffPtr> Open(MemorySource* src, std::string_view name, const DecodeSpec& spec,
                             LibtiffMessages* messages) {
  std::unique_ptr<TIFFOpenOptions, OptionsFreer> options(TIFFOpenOptionsAlloc());
  if (options == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(AsAbsl(name), ": no memory to open a TIFF"));
  }
  const uint64_t limit = std::numeric_limits<tmsize_t>::max() / 2;
  const uint64_t cap = spec.max_pixels > (limit - kAllocSlack) / kMaxBytesPerPixel
                           ? limit
                           : spec.max_pixels * kMaxBytesPerPixel + kAllocSlack;
  TIFFOpenOptionsSetMaxSingleMemAlloc(options.get(), static_cast<tmsize_t>(cap));
  TIFFOpenOptionsSetErrorHandlerExtR(options.get(), OnError, messages);
  TIFFOpenOptionsSetWarningHandlerExtR(options.get(), OnWarning, messages);
  // "r": mapped, strips chopped. The name only appears in libtiff's own
  // messages, which we prefix with `name` ourselves.
  TiffPtr tif(TIFFClientOpenExt(kClientName, "r", src, ReadProc, WriteProc, SeekProc, CloseProc,
                                SizeProc, MapProc, UnmapProc, options.get()));
  if (tif == nullptr || messages->failed) {
    return Corrupt(name, *messages, "not a readable TIFF file");
  }
  return tif;
}

enum class Kind { kGray, kPalette, kRgb, kRgbAssociatedAlpha, kCmyk, kRgbaImage };

// What the first directory holds, as far as unpacking needs it.
struct Layout {
  uint32_t width = 0;
  uint32_t height = 0;
  Kind kind = Kind::kGray;
  uint16_t bits = 8;      // per sample
  uint16_t samples = 1;   // per pixel in the file
  int taken = 1;          // leading samples we use: 1 (gray, index), 3 (RGB) or 4
  bool separate = false;  // PLANARCONFIG_SEPARATE
  bool min_is_white = false;
};

bool BitsIn(uint16_t bits, std::initializer_list<uint16_t> allowed) {
  return std::find(allowed.begin(), allowed.end(), bits) != allowed.end();
}

// Fills the kind-specific part of `layout` from the photometric tag.
absl::Status ClassifyPhotometric(TIFF* tif, std::string_view name, uint16_t photometric,
                                 Layout* layout) {
  const uint16_t bits = layout->bits;
  uint16_t compression = COMPRESSION_NONE;
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
  switch (photometric) {
    case PHOTOMETRIC_MINISWHITE:
    case PHOTOMETRIC_MINISBLACK:
      if (!BitsIn(bits, {1, 2, 4, 8, 16})) return UnsupportedBits(name, bits, "grayscale");
      layout->min_is_white = photometric == PHOTOMETRIC_MINISWHITE;
      return absl::OkStatus();
    case PHOTOMETRIC_PALETTE:
      if (!BitsIn(bits, {1, 2, 4, 8})) return UnsupportedBits(name, bits, "palette");
      layout->kind = Kind::kPalette;
      return absl::OkStatus();
    case PHOTOMETRIC_RGB: {
      if (!BitsIn(bits, {8, 16}) || layout->samples < 3) return UnsupportedBits(name, bits, "RGB");
      uint16_t extra_count = 0;
      uint16_t* extra = nullptr;
      TIFFGetFieldDefaulted(tif, TIFFTAG_EXTRASAMPLES, &extra_count, &extra);
      const bool associated = layout->samples >= 4 && extra_count >= 1 && extra != nullptr &&
                              extra[0] == EXTRASAMPLE_ASSOCALPHA;
      layout->kind = associated ? Kind::kRgbAssociatedAlpha : Kind::kRgb;
      layout->taken = associated ? 4 : 3;
      return absl::OkStatus();
    }
    case PHOTOMETRIC_SEPARATED: {
      uint16_t inkset = INKSET_CMYK;
      TIFFGetFieldDefaulted(tif, TIFFTAG_INKSET, &inkset);
      if (inkset != INKSET_CMYK || layout->samples < 4) return Unsupported(name, "non-CMYK inks");
      if (!BitsIn(bits, {8, 16})) return UnsupportedBits(name, bits, "CMYK");
      layout->kind = Kind::kCmyk;
      layout->taken = 4;
      return absl::OkStatus();
    }
    case PHOTOMETRIC_YCBCR:
      if (bits != 8 || layout->samples < 3) return UnsupportedBits(name, bits, "YCbCr");
      if (compression == COMPRESSION_JPEG && !layout->separate) {
        // libjpeg upsamples and converts to RGB, as PIL has it do.
        TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
        layout->kind = Kind::kRgb;
        layout->taken = 3;
      } else {
        layout->kind = Kind::kRgbaImage;
      }
      return absl::OkStatus();
    default:
      return Unsupported(name, absl::StrCat("photometric interpretation ", photometric));
  }
}

absl::StatusOr<Layout> ReadLayout(TIFF* tif, std::string_view name) {
  Layout layout;
  uint16_t photometric = PHOTOMETRIC_MINISWHITE;  // PIL's default when the tag is missing
  uint16_t sample_format = SAMPLEFORMAT_UINT;
  uint16_t planar = PLANARCONFIG_CONTIG;
  if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &layout.width) ||
      !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &layout.height)) {
    return absl::DataLossError(absl::StrCat(AsAbsl(name), ": corrupt TIFF data: no image size"));
  }
  TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photometric);
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &layout.bits);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &layout.samples);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &sample_format);
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
  layout.separate = planar == PLANARCONFIG_SEPARATE && layout.samples > 1;
  if (sample_format == SAMPLEFORMAT_IEEEFP) return Unsupported(name, "floating-point samples");
  if (sample_format != SAMPLEFORMAT_UINT) return Unsupported(name, "signed samples");
  if (layout.samples == 0 || layout.samples > kMaxSamples) {
    return Unsupported(name, absl::StrCat(layout.samples, " samples per pixel"));
  }
  SP_RETURN_IF_ERROR(ClassifyPhotometric(tif, name, photometric, &layout));
  return layout;
}

// How the pixel data is cut: strips (chunk_width = the image's width) or
// tiles, and the decoded size of one chunk.
struct Chunking {
  bool tiled = false;
  uint32_t width = 0;
  uint32_t height = 0;
  uint64_t row_bytes = 0;    // one row of a decoded chunk (of one plane when separate)
  uint64_t chunk_bytes = 0;  // one decoded chunk
};

// A tile may overhang the image (its grid is whole tiles), but one larger
// than both the image (rounded to the 16 the spec asks tiles to be a
// multiple of) and this is damage: the decode buffer is one tile.
constexpr uint32_t kMaxTileSide = 1024;

bool TileSideFits(uint32_t tile, uint32_t image) {
  return tile != 0 && (tile <= kMaxTileSide || uint64_t{tile} <= (uint64_t{image} + 15) / 16 * 16);
}

absl::StatusOr<Chunking> ReadChunking(TIFF* tif, std::string_view name, const Layout& layout,
                                      const LibtiffMessages& messages) {
  Chunking c;
  c.tiled = TIFFIsTiled(tif) != 0;
  if (c.tiled) {
    TIFFGetField(tif, TIFFTAG_TILEWIDTH, &c.width);
    TIFFGetField(tif, TIFFTAG_TILELENGTH, &c.height);
    if (!TileSideFits(c.width, layout.width) || !TileSideFits(c.height, layout.height)) {
      return absl::DataLossError(
          absl::StrFormat("%s: corrupt TIFF data: %ux%u tiles for a %ux%u image", AsAbsl(name),
                          c.width, c.height, layout.width, layout.height));
    }
    c.row_bytes = TIFFTileRowSize64(tif);
    c.chunk_bytes = TIFFTileSize64(tif);
  } else {
    uint32_t rows_per_strip = 0;
    TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rows_per_strip);
    c.width = layout.width;
    c.height = std::clamp<uint32_t>(rows_per_strip, 1, layout.height);
    c.row_bytes = TIFFScanlineSize64(tif);
    c.chunk_bytes = TIFFStripSize64(tif);
  }
  // Each row must hold the samples we unpack from it.
  const uint64_t samples_per_row = uint64_t{c.width} * (layout.separate ? 1 : layout.samples);
  if (c.row_bytes == 0 || c.chunk_bytes < c.row_bytes * c.height ||
      c.row_bytes < (samples_per_row * layout.bits + 7) / 8) {
    return Corrupt(name, messages, "bad strip or tile size");
  }
  return c;
}

// Copies `count` leading samples of each of `cols` pixels (of `per_pixel`
// samples of `bits` bits, rows `src_stride` bytes apart) into every
// `dst_step`th byte of `dst`, reduced to 8 bits: 16-bit samples (in host
// order, as libtiff hands them back) keep their high byte; 1, 2 and 4-bit
// samples stay as they are, scaled later.
void UnpackRows(const uint8_t* src, uint64_t src_stride, uint16_t bits, int per_pixel, int count,
                uint32_t rows, uint32_t cols, uint8_t* dst, size_t dst_stride, int dst_step) {
  for (uint32_t r = 0; r < rows; ++r) {
    const uint8_t* in = src + r * src_stride;
    uint8_t* out = dst + r * dst_stride;
    for (uint32_t x = 0; x < cols; ++x) {
      for (int j = 0; j < count; ++j) {
        const size_t i = size_t{x} * per_pixel + j;
        uint8_t v;
        if (bits == 8) {
          v = in[i];
        } else if (bits == 16) {
          uint16_t wide;
          std::memcpy(&wide, in + 2 * i, 2);
          v = static_cast<uint8_t>(wide >> 8);
        } else {
          const size_t bit = i * bits;
          v = static_cast<uint8_t>((in[bit / 8] >> (8 - bits - bit % 8)) & ((1u << bits) - 1));
        }
        out[size_t{x} * dst_step + j] = v;
      }
    }
  }
}

// Where the unpacking goes: `taken` bytes per pixel, rows packed.
struct Raster {
  uint8_t* data;
  const Layout& layout;
};

// Decodes chunk `index` (covering x, y of plane `plane`) into `buf` and
// unpacks it into `raster`.
absl::Status ReadChunk(TIFF* tif, std::string_view name, const Chunking& c, uint32_t index,
                       uint32_t x, uint32_t y, int plane, uint8_t* buf, const Raster& raster,
                       const LibtiffMessages& messages, uint64_t file_size) {
  const char* what = c.tiled ? "tile" : "strip";
  const uint64_t offset = TIFFGetStrileOffset(tif, index);
  const uint64_t count = TIFFGetStrileByteCount(tif, index);
  if (offset > file_size || count > file_size - offset) {
    return common::DataLossAt(
        name, offset,
        absl::StrFormat(
            "truncated TIFF data: %s %u (%u bytes) ends past the end of the file (%u bytes)", what,
            index, count, file_size));
  }
  const tmsize_t got =
      c.tiled ? TIFFReadEncodedTile(tif, index, buf, static_cast<tmsize_t>(c.chunk_bytes))
              : TIFFReadEncodedStrip(tif, index, buf, static_cast<tmsize_t>(c.chunk_bytes));
  const Layout& layout = raster.layout;
  const uint32_t rows = std::min(c.height, layout.height - y);
  const uint32_t cols = std::min(c.width, layout.width - x);
  const uint64_t last_row_bits =
      uint64_t{cols} * (layout.separate ? 1 : layout.samples) * layout.bits;
  if (got < 0 || messages.failed ||
      static_cast<uint64_t>(got) < (rows - 1) * c.row_bytes + (last_row_bits + 7) / 8) {
    return Corrupt(name, messages, absl::StrFormat("%s %u decodes short", what, index));
  }
  const int taken = layout.taken;
  const size_t stride = size_t{layout.width} * taken;
  uint8_t* dst = raster.data + size_t{y} * stride + size_t{x} * taken;
  if (layout.separate) {
    UnpackRows(buf, c.row_bytes, layout.bits, 1, 1, rows, cols, dst + plane, stride, taken);
  } else {
    UnpackRows(buf, c.row_bytes, layout.bits, layout.samples, taken, rows, cols, dst, stride,
               taken);
  }
  return absl::OkStatus();
}

absl::Status ReadChunks(TIFF* tif, std::string_view name, const Chunking& c, uint8_t* buf,
                        const Raster& raster, const LibtiffMessages& messages, uint64_t file_size) {
  const Layout& layout = raster.layout;
  const int planes = layout.separate ? layout.taken : 1;
  for (int plane = 0; plane < planes; ++plane) {
    for (uint32_t y = 0; y < layout.height; y += std::min(c.height, layout.height - y)) {
      for (uint32_t x = 0; x < layout.width; x += std::min(c.width, layout.width - x)) {
        const uint32_t index = c.tiled ? TIFFComputeTile(tif, x, y, 0, static_cast<uint16_t>(plane))
                                       : TIFFComputeStrip(tif, y, static_cast<uint16_t>(plane));
        SP_RETURN_IF_ERROR(
            ReadChunk(tif, name, c, index, x, y, plane, buf, raster, messages, file_size));
      }
    }
  }
  return absl::OkStatus();
}

// Gray samples to 0..255 (v * 255 / (2^bits - 1)), inverted for
// MinIsWhite, as PIL's "1", "L;2", "L;4" and "L;I" modes have them.
void FinishGray(const Layout& layout, uint8_t* p, size_t count, int channels) {
  uint8_t lut[256];
  const unsigned max = layout.bits < 8 ? (1u << layout.bits) - 1 : 255;
  for (unsigned v = 0; v < 256; ++v) {
    const unsigned scaled = std::min(v, max) * 255 / max;
    lut[v] = static_cast<uint8_t>(layout.min_is_white ? 255 - scaled : scaled);
  }
  // Back to front: 3 bytes out per byte in never overwrite unread input.
  for (size_t i = count; i-- > 0;) {
    const uint8_t v = lut[p[i]];
    for (int ch = 0; ch < channels; ++ch) p[i * channels + ch] = v;
  }
}

// Palette indices to RGB through the colormap's high bytes (PIL: v // 256).
absl::Status FinishPalette(TIFF* tif, std::string_view name, const Layout& layout, uint8_t* p,
                           size_t count) {
  uint16_t* red = nullptr;
  uint16_t* green = nullptr;
  uint16_t* blue = nullptr;
  if (!TIFFGetField(tif, TIFFTAG_COLORMAP, &red, &green, &blue) || red == nullptr ||
      green == nullptr || blue == nullptr) {
    return absl::DataLossError(
        absl::StrCat(AsAbsl(name), ": corrupt TIFF data: palette image without a colormap"));
  }
  uint8_t lut[256][3] = {};
  const size_t entries = size_t{1} << layout.bits;  // libtiff reads this many
  for (size_t i = 0; i < entries; ++i) {
    lut[i][0] = static_cast<uint8_t>(red[i] >> 8);
    lut[i][1] = static_cast<uint8_t>(green[i] >> 8);
    lut[i][2] = static_cast<uint8_t>(blue[i] >> 8);
  }
  for (size_t i = count; i-- > 0;) std::memcpy(p + 3 * i, lut[p[i]], 3);
  return absl::OkStatus();
}

// Associated (premultiplied) alpha to RGB, front to back (3 bytes out
// behind 4 in).
void Unpremultiply(uint8_t* p, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const unsigned a = p[4 * i], b = p[4 * i + 1], c = p[4 * i + 2], d = p[4 * i + 3];
    uint8_t* out = p + 3 * i;
    if (d == 0) {
      // PIL's unpremultiply ("RGBa"): alpha 0 gives black.
      out[0] = out[1] = out[2] = 0;
    } else {
      out[0] = static_cast<uint8_t>(std::min(255u, a * 255 / d));
      out[1] = static_cast<uint8_t>(std::min(255u, b * 255 / d));
      out[2] = static_cast<uint8_t>(std::min(255u, c * 255 / d));
    }
  }
}

// YCbCr libjpeg does not convert: libtiff's RGBA reader, which applies the
// YCbCr coefficients and reference black/white and upsamples.
absl::StatusOr<PixelView> DecodeWithRgbaImage(TIFF* tif, std::string_view name,
                                              const Layout& layout, DecodeBuffers* buffers,
                                              const LibtiffMessages& messages) {
  char reason[1024] = {};
  if (!TIFFRGBAImageOK(tif, reason)) return Unsupported(name, reason);
  SP_ASSIGN_OR_RETURN(uint8_t * p, PixelMemory(name, layout.width, layout.height, 4, buffers));
  TIFFRGBAImage image;
  if (!TIFFRGBAImageBegin(&image, tif, 0, reason)) return Corrupt(name, messages, reason);
  // Rows as stored, as for every other kind: DecodeTiff applies the
  // orientation tag after. (Pillow before 11.2 left libtiff's default here,
  // which mirrors each block of rows it reads, and then transposed the
  // whole image as well.)
  image.req_orientation = image.orientation;
  auto* raster = reinterpret_cast<uint32_t*>(p);
  const int ok = TIFFRGBAImageGet(&image, raster, layout.width, layout.height);
  TIFFRGBAImageEnd(&image);
  if (!ok || messages.failed) return Corrupt(name, messages, "YCbCr data does not decode");
  const size_t count = size_t{layout.width} * layout.height;
  for (size_t i = 0; i < count; ++i) {
    uint32_t abgr;
    std::memcpy(&abgr, p + 4 * i, 4);
    p[3 * i] = static_cast<uint8_t>(TIFFGetR(abgr));
    p[3 * i + 1] = static_cast<uint8_t>(TIFFGetG(abgr));
    p[3 * i + 2] = static_cast<uint8_t>(TIFFGetB(abgr));
  }
  return PixelView{p, layout.width, layout.height, 3};
}

// The image with its rows and columns as stored.
absl::StatusOr<PixelView> DecodeAsStored(TIFF* tif, std::string_view name, const Layout& layout,
                                         const DecodeSpec& spec, DecodeBuffers* buffers,
                                         const LibtiffMessages& messages, uint64_t file_size) {
  if (layout.kind == Kind::kRgbaImage) {
    return DecodeWithRgbaImage(tif, name, layout, buffers, messages);
  }
  SP_ASSIGN_OR_RETURN(Chunking chunking, ReadChunking(tif, name, layout, messages));
  uint8_t* buf = buffers->scratch.Get(chunking.chunk_bytes);
  const int channels = layout.kind == Kind::kGray && spec.keep_gray ? 1 : 3;
  SP_ASSIGN_OR_RETURN(uint8_t * p, PixelMemory(name, layout.width, layout.height,
                                               std::max(channels, layout.taken), buffers));
  if (buf == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(
        AsAbsl(name), ": no memory for a TIFF strip of ", chunking.chunk_bytes, " bytes"));
  }
  SP_RETURN_IF_ERROR(
      ReadChunks(tif, name, chunking, buf, Raster{p, layout}, messages, file_size));
  const size_t count = size_t{layout.width} * layout.height;
  switch (layout.kind) {
    case Kind::kGray:
      FinishGray(layout, p, count, channels);
      break;
    case Kind::kPalette:
      SP_RETURN_IF_ERROR(FinishPalette(tif, name, layout, p, count));
      break;
    case Kind::kRgbAssociatedAlpha:
      Unpremultiply(p, count);
      break;
    case Kind::kCmyk:
      // TIFF's InkSet CMYK is plain ink (PIL's rawmode "CMYK"), unlike JPEG.
      codec::CmykToRgbInPlace(p, count, codec::CmykInk::kPlain);
      break;
    default:
      break;
  }
  return PixelView{p, layout.width, layout.height, channels};
}

// `stored` shown as the Orientation tag says, as PIL shows it: its TIFF
// plugin transposes the image on load (TiffImagePlugin.load_end), in every
// decode path, so Image.open(f).convert("RGB") is oriented. The result is
// in buffers->pixels, as every decoder's.
absl::StatusOr<PixelView> ApplyOrientation(TIFF* tif, std::string_view name,
                                           const PixelView& stored, DecodeBuffers* buffers) {
  uint16_t orientation = ORIENTATION_TOPLEFT;
  TIFFGetFieldDefaulted(tif, TIFFTAG_ORIENTATION, &orientation);
  if (orientation <= ORIENTATION_TOPLEFT || orientation > ORIENTATION_LEFTBOT) return stored;
  uint8_t* dst = buffers->scratch.Get(stored.bytes());
  if (dst == nullptr) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s: no memory to orient a %ux%u image", AsAbsl(name), stored.width, stored.height));
  }
  const PixelView shown =
      codec::Orient(stored, static_cast<codec::Orientation>(orientation), dst);
  std::swap(buffers->pixels, buffers->scratch);
  return shown;
}

}  // namespace

absl::StatusOr<PixelView> DecodeTiff(ByteSpan data, std::string_view name, const DecodeSpec& spec,
                                     DecodeBuffers* buffers) {
  MemorySource src{data.data(), data.size(), 0};
  LibtiffMessages messages;
  SP_ASSIGN_OR_RETURN(TiffPtr tif, Open(&src, name, spec, &messages));
  SP_ASSIGN_OR_RETURN(Layout layout, ReadLayout(tif.get(), name));
  SP_RETURN_IF_ERROR(CheckImageSize(name, ImageFormat::kTiff, layout.width, layout.height, spec));
  uint16_t compression = COMPRESSION_NONE;
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_COMPRESSION, &compression);
  if (compression == COMPRESSION_ADOBE_DEFLATE || compression == COMPRESSION_DEFLATE) {
    // libtiff's libdeflate path reports success for a stream that inflates
    // past the strip and leaves the strip partly unwritten (uninitialized
    // pixels); zlib's stops at the strip's end with the stream's prefix.
    TIFFSetField(tif.get(), TIFFTAG_DEFLATE_SUBCODEC, DEFLATE_SUBCODEC_ZLIB);
  }
  SP_ASSIGN_OR_RETURN(PixelView stored, DecodeAsStored(tif.get(), name, layout, spec, buffers,
                                                       messages, data.size()));
  return ApplyOrientation(tif.get(), name, stored, buffers);
}

}  // namespace shardpack::codec
