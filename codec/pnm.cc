// PNM decoder of our own (PBM, PGM, PPM; plain P1-P3 and raw P4-P6), read
// as PIL 9.4's PpmImagePlugin reads them:
// - header tokens are separated by whitespace (space, \t, \n, \v, \f, \r); a
//   '#' starts a comment up to the next \r or \n, which is skipped without
//   ending a token; a token has at most 10 characters; exactly one
//   whitespace byte follows the last one, then the raster;
// - samples scale to 0..255 as round(v / maxval * 255) in doubles, ties to
//   even (Python's round), clipped at 255 for raw samples over maxval (a
//   plain sample over maxval is damage); PBM's 1 is black;
// - plain data: comments are cut out wherever a '#' stands (so "1#c\n2"
//   reads as 12, as PIL reads it), tokens of over 10 characters are refused,
//   and a plain PBM's data must be 0s and 1s up to the end of the 1 MiB
//   block PIL reads it in.
// One difference, from the decoder contract: a PGM with maxval over 255 is
// scaled the same way, where PIL opens it as mode "I" and convert("RGB")
// clips it at 255. Header and sample numbers are plain digits; PIL's int()
// also takes "+7" or "1_0".
//
// Hostile input: the size goes through CheckImageSize, and the raster (raw)
// or one byte per sample (plain) must be in the file before the output is
// allocated; row sizes are 64-bit products of 32-bit values.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "codec/decode.h"
#include "common/errors.h"
#include "common/status_macros.h"

namespace shardpack::codec {
namespace {

using common::AsAbsl;
using common::DataLossAt;

// PIL reads a plain file in blocks of ImageFile.SAFEBLOCK bytes.
constexpr size_t kPilBlock = 1024 * 1024;
// PIL's longest header or sample token.
constexpr size_t kMaxToken = 10;

bool IsSpace(uint8_t c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

struct Header {
  char kind = 0;  // '1'..'6'
  uint64_t width = 0;
  uint64_t height = 0;
  uint32_t maxval = 1;
  size_t raster = 0;  // offset of the first sample
  bool gray() const { return kind == '1' || kind == '2' || kind == '4' || kind == '5'; }
  bool plain() const { return kind <= '3'; }
  int samples() const { return kind == '3' || kind == '6' ? 3 : 1; }  // per pixel
};

// Skips a comment at d[*pos] == '#': up to and with the next \r or \n.
void SkipComment(ByteSpan d, size_t* pos) {
  while (*pos < d.size() && d[*pos] != '\r' && d[*pos] != '\n') ++*pos;
  if (*pos < d.size()) ++*pos;
}

// The next token from *pos, as PIL's _read_token reads one: whitespace and
// comments before it skipped, a comment inside it cut out, the whitespace
// byte that ends it consumed; it stops at kMaxToken + 1 characters. Empty
// at the end of the data.
struct Token {
  char text[kMaxToken + 1];
  size_t len = 0;
  size_t start = 0;  // offset of its first character
  std::string_view view() const { return {text, len}; }
};

Token NextToken(ByteSpan d, size_t* pos) {
  Token t;
  while (*pos < d.size() && t.len <= kMaxToken) {
    const uint8_t c = d[(*pos)++];
    if (IsSpace(c)) {
      if (t.len == 0) continue;
      break;
    }
    if (c == '#') {
      SkipComment(d, pos);
      continue;
    }
    if (t.len == 0) t.start = *pos - 1;
    t.text[t.len++] = static_cast<char>(c);
  }
  return t;
}

// A token's decimal value; `kind` starts the message ("corrupt PNM
// header" or "corrupt PNM data"), `what` names the field.
absl::StatusOr<uint64_t> TokenValue(const Token& t, std::string_view name, std::string_view kind,
                                    std::string_view what) {
  if (t.len > kMaxToken) {
    return DataLossAt(name, t.start,
                      absl::StrCat(AsAbsl(kind), ": ", AsAbsl(what), " '", AsAbsl(t.view()),
                                   "...' is over ", kMaxToken, " characters"));
  }
  uint64_t v = 0;
  for (char c : t.view()) {
    if (c < '0' || c > '9') {
      return DataLossAt(name, t.start,
                        absl::StrCat(AsAbsl(kind), ": ", AsAbsl(what), " '", AsAbsl(t.view()),
                                     "' is not a number"));
    }
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

absl::StatusOr<uint64_t> HeaderNumber(ByteSpan d, std::string_view name, std::string_view what,
                                      size_t* pos, size_t* start = nullptr) {
  const Token t = NextToken(d, pos);
  if (start != nullptr) *start = t.start;
  if (t.len == 0) {
    return DataLossAt(name, d.size(),
                      absl::StrCat("truncated PNM: file ends before the ", AsAbsl(what)));
  }
  return TokenValue(t, name, "corrupt PNM header", what);
}

absl::StatusOr<Header> ReadHeader(ByteSpan d, std::string_view name) {
  // The magic number, ended by whitespace as PIL's _read_magic wants it
  // (the sniffer checks the same, with fewer kinds of whitespace).
  if (d.size() < 3 || d[0] != 'P' || d[1] < '1' || d[1] > '6' || !IsSpace(d[2])) {
    return DataLossAt(name, 0, "corrupt PNM data: no P1 to P6 magic number");
  }
  Header h;
  h.kind = static_cast<char>(d[1]);
  size_t pos = 3;
  SP_ASSIGN_OR_RETURN(h.width, HeaderNumber(d, name, "width", &pos));
  SP_ASSIGN_OR_RETURN(h.height, HeaderNumber(d, name, "height", &pos));
  if (h.kind != '1' && h.kind != '4') {
    size_t at = 0;
    SP_ASSIGN_OR_RETURN(uint64_t maxval, HeaderNumber(d, name, "maxval", &pos, &at));
    if (maxval == 0 || maxval > 65535) {
      return DataLossAt(
          name, at, absl::StrCat("corrupt PNM header: maxval ", maxval, " (must be 1 to 65535)"));
    }
    h.maxval = static_cast<uint32_t>(maxval);
  }
  h.raster = pos;
  return h;
}

// round(v / maxval * 255) as Python computes it: the double quotient, then
// the product, rounded to nearest, ties to even; clipped at 255.
uint8_t Scale(uint32_t v, uint32_t maxval) {
  const double scaled = std::nearbyint(static_cast<double>(v) / maxval * 255.0);
  return scaled >= 255.0 ? 255 : static_cast<uint8_t>(scaled);
}

// Writes one decoded sample; a gray one three times when the output is RGB.
struct Writer {
  uint8_t* out;
  int repeat;  // 3: gray into RGB; 1 otherwise
  void Put(uint8_t v) {
    for (int i = 0; i < repeat; ++i) *out++ = v;
  }
};

// The bytes of one raw row; DataLossError unless every row is in the file.
absl::StatusOr<uint64_t> RawRowBytes(ByteSpan d, std::string_view name, const Header& h) {
  const uint64_t sample_bytes = h.maxval > 255 ? 2 : 1;
  const uint64_t row_bytes = h.kind == '4'
                                 ? (h.width + 7) / 8
                                 : h.width * static_cast<uint64_t>(h.samples()) * sample_bytes;
  const uint64_t rows = (d.size() - h.raster) / row_bytes;
  if (rows < h.height) {
    return DataLossAt(name, d.size(),
                      absl::StrCat("truncated PNM: the file holds ", rows, " of ", h.height,
                                   " rows from offset ", h.raster));
  }
  return row_bytes;
}

void DecodeRaw(ByteSpan d, const Header& h, uint64_t row_bytes, Writer w) {
  const uint8_t* row = d.data() + h.raster;
  for (uint64_t y = 0; y < h.height; ++y, row += row_bytes) {
    if (h.kind == '4') {
      for (uint64_t x = 0; x < h.width; ++x) w.Put((row[x / 8] >> (7 - x % 8) & 1) ? 0 : 255);
    } else if (h.maxval > 255) {
      for (uint64_t i = 0; i < row_bytes; i += 2) {
        w.Put(Scale(uint32_t{row[i]} << 8 | row[i + 1], h.maxval));
      }
    } else if (h.maxval == 255) {
      for (uint64_t i = 0; i < row_bytes; ++i) w.Put(row[i]);
    } else {
      for (uint64_t i = 0; i < row_bytes; ++i) w.Put(Scale(row[i], h.maxval));
    }
  }
}

// A data byte for a message: '7', or byte 0x07 when it does not print.
std::string Describe(uint8_t c) {
  if (c >= 0x21 && c < 0x7F) return absl::StrFormat("'%c'", c);
  return absl::StrFormat("byte 0x%02x", c);
}

// P1: one character a pixel, whitespace optional.
absl::Status DecodePlainBits(ByteSpan d, std::string_view name, const Header& h, Writer w) {
  const uint64_t total = h.width * h.height;
  uint64_t n = 0;
  size_t pos = h.raster;
  // PIL checks every character of each block it reads, past the last
  // sample too; it reads the block that holds the last one.
  size_t end = d.size();
  while (pos < end) {
    const uint8_t c = d[pos];
    if (c == '#') {
      SkipComment(d, &pos);
      continue;
    }
    if (!IsSpace(c)) {
      if (c != '0' && c != '1') {
        return DataLossAt(
            name, pos,
            absl::StrCat("corrupt PNM data: ", Describe(c), " in a plain PBM (0 and 1 only)"));
      }
      if (n < total) {
        w.Put(c == '1' ? 0 : 255);
        if (++n == total) {
          end = std::min(d.size(), h.raster + ((pos - h.raster) / kPilBlock + 1) * kPilBlock);
        }
      }
    }
    ++pos;
  }
  if (n < total) {
    return DataLossAt(
        name, d.size(),
        absl::StrCat("truncated PNM: plain data holds ", n, " of ", total, " pixels"));
  }
  return absl::OkStatus();
}

// P2, P3: decimal samples separated by whitespace.
absl::Status DecodePlainNumbers(ByteSpan d, std::string_view name, const Header& h, Writer w) {
  const uint64_t total = h.width * h.height * static_cast<uint64_t>(h.samples());
  size_t pos = h.raster;
  for (uint64_t n = 0; n < total; ++n) {
    const Token t = NextToken(d, &pos);
    if (t.len == 0) {
      return DataLossAt(
          name, d.size(),
          absl::StrCat("truncated PNM: plain data holds ", n, " of ", total, " samples"));
    }
    SP_ASSIGN_OR_RETURN(uint64_t v, TokenValue(t, name, "corrupt PNM data", "sample"));
    if (v > h.maxval) {
      return DataLossAt(name, t.start,
                        absl::StrCat("corrupt PNM data: sample ", v, " is over maxval ", h.maxval));
    }
    w.Put(Scale(static_cast<uint32_t>(v), h.maxval));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PixelView> DecodePnm(ByteSpan data, std::string_view name, const DecodeSpec& spec,
                                    DecodeBuffers* buffers) {
  SP_ASSIGN_OR_RETURN(Header h, ReadHeader(data, name));
  // CheckImageSize takes sides of 32 bits at most; a PNM's has 10 digits.
  if (h.width > UINT32_MAX || h.height > UINT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat(AsAbsl(name), ": image too large: ", h.width, "x", h.height, " PNM"));
  }
  SP_RETURN_IF_ERROR(CheckImageSize(name, ImageFormat::kPnm, h.width, h.height, spec));
  // The raster must be in the file before the output is allocated: every
  // raw row, or a byte for each plain sample.
  uint64_t row_bytes = 0;
  if (h.plain()) {
    const uint64_t available = data.size() - h.raster, pixels = h.width * h.height;
    if (pixels > available || pixels * static_cast<uint64_t>(h.samples()) > available) {
      return DataLossAt(name, data.size(),
                        absl::StrCat("truncated PNM: ", available,
                                     " bytes of plain data cannot hold ", pixels, " pixels"));
    }
  } else {
    SP_ASSIGN_OR_RETURN(row_bytes, RawRowBytes(data, name, h));
  }
  const int channels = h.gray() && spec.keep_gray ? 1 : 3;
  const auto width = static_cast<uint32_t>(h.width), height = static_cast<uint32_t>(h.height);
  SP_ASSIGN_OR_RETURN(uint8_t * out, PixelMemory(name, width, height, channels, buffers));
  const Writer w{out, h.gray() && channels == 3 ? 3 : 1};
  if (h.kind == '1') {
    SP_RETURN_IF_ERROR(DecodePlainBits(data, name, h, w));
  } else if (h.plain()) {
    SP_RETURN_IF_ERROR(DecodePlainNumbers(data, name, h, w));
  } else {
    DecodeRaw(data, h, row_bytes, w);
  }
  return PixelView{out, width, height, channels};
}

}  // namespace shardpack::codec
