// BMP decoder of our own: what PIL 9.4's BmpImagePlugin opens, pixel for
// pixel as Image.open(f).convert("RGB") gives it. Three departures from 9.4,
// each a PIL bug that later Pillow fixed or that misreads a valid file:
// - the 52- and 56-byte info headers (BITMAPV2/V3INFOHEADER) are read, as
//   Pillow reads them since PR #7956; 9.4 refuses them;
// - an RLE delta escape moves by the two bytes after it (9.4 reads two bytes
//   more, Pillow PR #9443), and an RLE4 absolute run of an odd count takes
//   (count + 1) / 2 bytes (9.4 takes one fewer and loses its place, Pillow
//   PR #9710);
// - a palette PIL takes for gray (2 colors black and white, or n colors
//   0..n-1) is looked up at the file's bit depth; 9.4 then reads the pixels
//   as 1 or 8 bits whatever the file's depth, and refuses such a palette in
//   an RLE file. The image is still gray for keep_gray, as PIL's "1"/"L".
//
// Hostile input: every read is checked against the file, the size goes
// through CheckImageSize before anything is allocated, the pixel rows are
// checked to be in the file before the output is, and row arithmetic is
// 64-bit on 32-bit fields, so it cannot wrap.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "codec/bytes.h"
#include "codec/decode.h"
#include "common/errors.h"
#include "common/status_macros.h"

namespace shardpack::codec {
namespace {

using common::AsAbsl;
using common::DataLossAt;
using codec::Le16;
using codec::Le32;

// BITMAPFILEHEADER: "BM", u32 file size, 2 x u16 reserved, u32 bfOffBits
// (where the pixels start). The info header follows, its u32 size first.
constexpr size_t kOffBitsAt = 10;
constexpr size_t kInfoAt = 14;
// BI_BITFIELDS masks (R, G, B, then A) sit right after a 40-byte
// BITMAPINFOHEADER: outside it, inside every larger header.
constexpr size_t kMasksAt = kInfoAt + 40;
constexpr size_t kAlphaMaskAt = kMasksAt + 12;

enum : uint32_t { kBiRgb = 0, kBiRle8 = 1, kBiRle4 = 2, kBiBitfields = 3 };

// What the headers say, checked against what we decode.
struct Layout {
  uint32_t header_size = 0;
  uint32_t width = 0;
  uint32_t height = 0;
  bool top_down = false;
  uint32_t bits = 0;
  uint32_t compression = kBiRgb;
  uint64_t colors = 0;       // palette entries, bits <= 8 only
  size_t palette_at = 0;     // where the palette (or the pixels) would follow
  size_t palette_entry = 4;  // bytes per entry: BGR0, or BGR for the core header
  uint64_t pixels_at = 0;
  bool rgb565 = false;                     // 16 bits: 5-6-5 (else 5-5-5)
  std::array<uint8_t, 3> rgb_at{2, 1, 0};  // 24/32 bits: byte of R, G, B
};

absl::Status Unsupported(std::string_view name, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(AsAbsl(name), ": unsupported BMP: ", AsAbsl(what)));
}

absl::Status Truncated(std::string_view name, uint64_t at, std::string_view what) {
  return DataLossAt(name, at, absl::StrCat("truncated BMP: ", AsAbsl(what)));
}

// The info header's size and fields. PIL reads the 12-byte OS/2 core header
// and the Windows ones; the OS/2 2.x header (64) is read as a Windows one.
absl::Status ReadInfoHeader(ByteSpan d, std::string_view name, Layout* l) {
  if (d.size() < kInfoAt + 4) return Truncated(name, d.size(), "file ends before the info header");
  l->header_size = Le32(d, kInfoAt);
  switch (l->header_size) {
    case 12:
    case 40:
    case 52:
    case 56:
    case 64:
    case 108:
    case 124:
      break;
    default:
      return Unsupported(name, absl::StrCat("info header of ", l->header_size,
                                            " bytes (BMP has 12, 40, 52, 56, 64, 108 or 124)"));
  }
  if (d.size() - kInfoAt < l->header_size) {
    return Truncated(name, d.size(),
                     absl::StrCat("file ends in its ", l->header_size, "-byte info header"));
  }
  const size_t h = kInfoAt + 4;
  if (l->header_size == 12) {
    l->width = Le16(d, h);
    l->height = Le16(d, h + 2);
    l->bits = Le16(d, h + 6);
    l->palette_entry = 3;
    return absl::OkStatus();
  }
  l->width = Le32(d, h);
  const uint32_t height = Le32(d, h + 4);
  // PIL's test for a top-down image: the height's top byte is 0xFF, i.e.
  // a negative height down to -2^24; a more negative one reads as huge.
  l->top_down = (height >> 24) == 0xFF;
  l->height = l->top_down ? 0u - height : height;
  l->bits = Le16(d, h + 10);
  l->compression = Le32(d, h + 12);
  l->colors = Le32(d, h + 28);
  return absl::OkStatus();
}

// BI_BITFIELDS: only the mask sets PIL maps to a raw mode.
absl::Status ReadBitfields(ByteSpan d, std::string_view name, Layout* l) {
  if (d.size() < kAlphaMaskAt) return Truncated(name, d.size(), "file ends in the bit field masks");
  const uint32_t r = Le32(d, kMasksAt), g = Le32(d, kMasksAt + 4), b = Le32(d, kMasksAt + 8);
  // Only headers of 56 bytes and up hold an alpha mask (V3 added it).
  const uint32_t a = l->header_size >= 56 ? Le32(d, kAlphaMaskAt) : 0;
  // The bytes of R, G and B in each 32-bit layout PIL knows (BGRX, XBGR,
  // ABGR, RGBA, BGRA; all-zero masks read as BGRA).
  struct Masks32 {
    uint32_t r, g, b, a;
    std::array<uint8_t, 3> at;
  };
  static constexpr Masks32 kMasks32[] = {
      {0xFF0000, 0xFF00, 0xFF, 0, {2, 1, 0}},
      {0xFF000000, 0xFF0000, 0xFF00, 0, {3, 2, 1}},
      {0xFF000000, 0xFF0000, 0xFF00, 0xFF, {3, 2, 1}},
      {0xFF, 0xFF00, 0xFF0000, 0xFF000000, {0, 1, 2}},
      {0xFF0000, 0xFF00, 0xFF, 0xFF000000, {2, 1, 0}},
      {0, 0, 0, 0, {2, 1, 0}},
  };
  if (l->bits == 32) {
    for (const Masks32& m : kMasks32) {
      if (m.r == r && m.g == g && m.b == b && m.a == a) {
        l->rgb_at = m.at;
        return absl::OkStatus();
      }
    }
  } else if (l->bits == 24 && r == 0xFF0000 && g == 0xFF00 && b == 0xFF) {
    return absl::OkStatus();
  } else if (l->bits == 16 && b == 0x1F &&
             ((r == 0xF800 && g == 0x7E0) || (r == 0x7C00 && g == 0x3E0))) {
    l->rgb565 = r == 0xF800;
    return absl::OkStatus();
  }
  return Unsupported(
      name, absl::StrFormat("bit fields R %#x G %#x B %#x A %#x at %u bits per pixel", r, g, b, a,
                            l->bits));
}

// The depth and compression, the palette's size and where the pixels start,
// as PIL computes them.
absl::Status ReadLayout(ByteSpan d, std::string_view name, Layout* l) {
  if (d.size() < 2 || d[0] != 'B' || d[1] != 'M') {
    return DataLossAt(name, 0, "corrupt BMP data: no BM signature");
  }
  SP_RETURN_IF_ERROR(ReadInfoHeader(d, name, l));
  if (l->bits != 1 && l->bits != 4 && l->bits != 8 && l->bits != 16 && l->bits != 24 &&
      l->bits != 32) {
    return Unsupported(name, absl::StrCat(l->bits, " bits per pixel"));
  }
  l->palette_at = kInfoAt + l->header_size;
  switch (l->compression) {
    case kBiRgb:
      break;
    case kBiBitfields:
      SP_RETURN_IF_ERROR(ReadBitfields(d, name, l));
      // A 40-byte header's masks follow it.
      if (l->header_size == 40) l->palette_at += 12;
      break;
    case kBiRle8:
    case kBiRle4:
      if (l->bits > 8) {
        return Unsupported(name, absl::StrCat("RLE", l->compression == kBiRle8 ? 8 : 4, " at ",
                                              l->bits, " bits per pixel"));
      }
      break;
    default:
      return Unsupported(name, absl::StrCat("compression ", l->compression,
                                            l->compression == 4   ? " (embedded JPEG)"
                                            : l->compression == 5 ? " (embedded PNG)"
                                                                  : ""));
  }
  uint64_t after_palette = l->palette_at;
  if (l->bits <= 8) {
    if (l->colors == 0) l->colors = uint64_t{1} << l->bits;
    // PIL's palette holds at most 256 colors ("invalid palette size").
    if (l->colors > 256)
      return Unsupported(name, absl::StrCat("palette of ", l->colors, " colors"));
    after_palette += l->colors * l->palette_entry;
  }
  l->pixels_at = Le32(d, kOffBitsAt);
  // PIL's reading of a bfOffBits that skips the palette: the pixels follow
  // a palette of 4-byte entries; a zero one: they follow the headers.
  if (l->pixels_at == kInfoAt + l->header_size && l->bits <= 8) l->pixels_at += 4 * l->colors;
  if (l->pixels_at == 0) l->pixels_at = after_palette;
  return absl::OkStatus();
}

// 256 entries, RGB; past the file's palette, PIL's gray ramp (i, i, i).
struct Palette {
  std::array<uint8_t, 256 * 3> rgb;
  bool gray = true;  // what PIL opens as mode "1" or "L"
};

absl::Status ReadPalette(ByteSpan d, std::string_view name, const Layout& l, Palette* p) {
  const uint64_t bytes = l.colors * l.palette_entry;
  if (l.palette_at > d.size() || bytes > d.size() - l.palette_at) {
    return Truncated(name, l.palette_at,
                     absl::StrCat("palette of ", l.colors,
                                  " colors runs past the end of the file (", d.size(), " bytes)"));
  }
  for (int i = 0; i < 256; ++i) {
    p->rgb[3 * i] = p->rgb[3 * i + 1] = p->rgb[3 * i + 2] = static_cast<uint8_t>(i);
  }
  p->gray = true;
  for (uint64_t i = 0; i < l.colors; ++i) {
    const uint8_t* e = d.data() + l.palette_at + i * l.palette_entry;  // B, G, R
    uint8_t* rgb = &p->rgb[3 * i];
    rgb[0] = e[2];
    rgb[1] = e[1];
    rgb[2] = e[0];
    // PIL's test: 2 colors black then white, or color i = (i, i, i).
    const uint8_t want = l.colors == 2 ? (i == 0 ? 0 : 255) : static_cast<uint8_t>(i);
    if (rgb[0] != want || rgb[1] != want || rgb[2] != want) p->gray = false;
  }
  return absl::OkStatus();
}

// 5 or 6 bits to 8 as PIL's BGR;15 and BGR;16 unpackers do: v * 255 / max,
// truncated.
inline uint8_t Expand(uint32_t v, uint32_t max) { return static_cast<uint8_t>(v * 255 / max); }

// One row of `width` pixels from the file's bytes into `channels`-sample
// output pixels. Indexed rows are `bits` wide, most significant first.
void ConvertRow(const uint8_t* in, const Layout& l, uint32_t bits, const Palette& pal, int channels,
                uint8_t* out) {
  const uint32_t w = l.width;
  if (bits <= 8) {
    const uint32_t per_byte = 8 / bits, mask = (1u << bits) - 1;
    for (uint32_t x = 0; x < w; ++x) {
      const uint32_t shift = 8 - bits * (x % per_byte + 1);
      const uint8_t* rgb = &pal.rgb[3 * ((in[x / per_byte] >> shift) & mask)];
      if (channels == 1) {
        *out++ = rgb[0];
      } else {
        std::memcpy(out, rgb, 3);
        out += 3;
      }
    }
  } else if (bits == 16) {
    for (uint32_t x = 0; x < w; ++x, in += 2, out += 3) {
      const uint32_t v = uint32_t{in[0]} | uint32_t{in[1]} << 8;
      if (l.rgb565) {
        out[0] = Expand(v >> 11 & 31, 31);
        out[1] = Expand(v >> 5 & 63, 63);
      } else {
        out[0] = Expand(v >> 10 & 31, 31);
        out[1] = Expand(v >> 5 & 31, 31);
      }
      out[2] = Expand(v & 31, 31);
    }
  } else {
    const uint32_t step = bits / 8;
    for (uint32_t x = 0; x < w; ++x, in += step, out += 3) {
      out[0] = in[l.rgb_at[0]];
      out[1] = in[l.rgb_at[1]];
      out[2] = in[l.rgb_at[2]];
    }
  }
}

// Rows of `stride` bytes from `rows` (in file order: bottom-up unless
// top_down) into the output, top row first.
void ConvertRows(const uint8_t* rows, uint64_t stride, const Layout& l, uint32_t bits,
                 const Palette& pal, int channels, uint8_t* out) {
  const size_t out_stride = size_t{l.width} * static_cast<size_t>(channels);
  for (uint32_t y = 0; y < l.height; ++y) {
    const uint32_t file_row = l.top_down ? y : l.height - 1 - y;
    ConvertRow(rows + file_row * stride, l, bits, pal, channels, out + y * out_stride);
  }
}

// Uncompressed rows, each padded to 4 bytes: the bytes of one row and the
// stride. As PIL reads a file (not a mapping of it), the last row's padding
// may be missing; every row must be there.
absl::Status CheckRawRows(ByteSpan d, std::string_view name, const Layout& l, uint64_t* stride) {
  const uint64_t row_bytes = (uint64_t{l.width} * l.bits + 7) / 8;
  *stride = (uint64_t{l.width} * l.bits + 31) / 32 * 4;
  const uint64_t available = d.size() - l.pixels_at;
  const uint64_t rows = available < row_bytes ? 0 : 1 + (available - row_bytes) / *stride;
  if (rows < l.height) {
    return Truncated(name, d.size(),
                     absl::StrCat("the file holds ", rows, " of ", l.height,
                                  " pixel rows from offset ", l.pixels_at));
  }
  return absl::OkStatus();
}

// Run-length data into one palette index per pixel, rows of `width` in file
// order. PIL's BmpRleDecoder semantics: the pixels are one flat sequence; a
// run longer than the rest of its row is cut there, an absolute run is not
// (it flows into the next row); end of line pads the row with index 0; a
// delta appends (right + up * width) zeros; absolute runs end on an even
// file offset; the data must fill the image (an early end of bitmap is
// refused).
absl::Status DecodeRle(ByteSpan d, std::string_view name, const Layout& l, uint8_t* index) {
  const uint64_t w = l.width, total = w * l.height;
  const bool rle4 = l.compression == kBiRle4;
  uint64_t n = 0, x = 0;
  size_t pos = l.pixels_at;
  auto zeros = [&](uint64_t count) {
    count = std::min(count, total - n);
    std::memset(index + n, 0, count);
    n += count;
  };
  auto cut_short = [&](size_t at) {
    return Truncated(name, at, absl::StrCat("RLE data ends after ", n, " of ", total, " pixels"));
  };
  while (n < total) {
    if (d.size() - pos < 2) return cut_short(d.size());
    const uint8_t count = d[pos], code = d[pos + 1];
    pos += 2;
    if (count != 0) {
      const uint64_t run =
          std::min<uint64_t>(x + count > w ? (x < w ? w - x : 0) : count, total - n);
      for (uint64_t i = 0; i < run; ++i) {
        index[n + i] = rle4 ? (i % 2 == 0 ? code >> 4 : code & 15) : code;
      }
      n += run;
      x += run;
    } else if (code == 0) {  // end of line
      zeros((w - n % w) % w);
      x = 0;
    } else if (code == 1) {  // end of bitmap
      return DataLossAt(
          name, pos - 2,
          absl::StrCat("corrupt BMP data: RLE end of bitmap after ", n, " of ", total, " pixels"));
    } else if (code == 2) {  // delta: right, up
      if (d.size() - pos < 2) return cut_short(d.size());
      zeros(d[pos] + uint64_t{d[pos + 1]} * w);
      pos += 2;
      x = n % w;
    } else {  // absolute run of `code` pixels
      const size_t want = rle4 ? (code + 1u) / 2 : code;
      const size_t got = std::min(want, d.size() - pos);
      const uint64_t pixels =
          std::min<uint64_t>(rle4 ? std::min<size_t>(code, 2 * got) : got, total - n);
      for (uint64_t i = 0; i < pixels; ++i) {
        index[n + i] = rle4 ? (i % 2 == 0 ? d[pos + i / 2] >> 4 : d[pos + i / 2] & 15) : d[pos + i];
      }
      n += pixels;
      pos += got;
      if (got < want) return n < total ? cut_short(d.size()) : absl::OkStatus();
      x += code;
      if (pos % 2 != 0 && pos < d.size()) ++pos;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PixelView> DecodeBmp(ByteSpan data, std::string_view name, const DecodeSpec& spec,
                                    DecodeBuffers* buffers) {
  Layout l;
  SP_RETURN_IF_ERROR(ReadLayout(data, name, &l));
  SP_RETURN_IF_ERROR(CheckImageSize(name, ImageFormat::kBmp, l.width, l.height, spec));
  Palette pal;
  int channels = 3;
  if (l.bits <= 8) {
    SP_RETURN_IF_ERROR(ReadPalette(data, name, l, &pal));
    if (pal.gray && spec.keep_gray) channels = 1;
  }
  if (l.pixels_at > data.size()) {
    return DataLossAt(name, kOffBitsAt,
                      absl::StrCat("corrupt BMP data: pixel data offset ", l.pixels_at,
                                   " is past the end of the file (", data.size(), " bytes)"));
  }
  // Raw rows are in the file before the output is allocated; RLE's indices
  // (one byte a pixel) come first, in the scratch buffer.
  const uint8_t* rows = data.data() + l.pixels_at;
  uint64_t stride = l.width;
  uint32_t bits = 8;
  if (l.compression == kBiRle8 || l.compression == kBiRle4) {
    uint8_t* index = buffers->scratch.Get(size_t{l.width} * l.height);
    if (index == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat(AsAbsl(name), ": no memory to decode a ", l.width, "x", l.height, " image"));
    }
    SP_RETURN_IF_ERROR(DecodeRle(data, name, l, index));
    rows = index;
  } else {
    SP_RETURN_IF_ERROR(CheckRawRows(data, name, l, &stride));
    bits = l.bits;
  }
  SP_ASSIGN_OR_RETURN(uint8_t * out, PixelMemory(name, l.width, l.height, channels, buffers));
  ConvertRows(rows, stride, l, bits, pal, channels, out);
  return PixelView{out, l.width, l.height, channels};
}

}  // namespace shardpack::codec
