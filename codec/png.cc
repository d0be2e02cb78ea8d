// PNG through libpng 1.6, read from memory, into the decode.h contract:
// 8-bit RGB (or 1-channel gray with keep_gray), alpha dropped, palette looked
// up, 16-bit samples cut to their high byte, 1/2/4-bit gray scaled to 0..255.
#include <png.h>  // brings <setjmp.h> for png_jmpbuf

#include <cstdio>
#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "codec/decode.h"
#include "common/errors.h"
#include "common/status_macros.h"

namespace shardpack::codec {
namespace {

using common::AsAbsl;
using common::DataLossAt;

// Where the decode was when the bytes ran out, for the message.
enum class PngStage : uint8_t { kHeader, kRows, kEnd };

// What libpng's callbacks share with DecodePng. Plain data: a libpng error
// longjmps over the frames of the *C functions below, which therefore hold
// no C++ object with a destructor.
struct PngSource {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;          // bytes handed to libpng so far
  bool truncated = false;  // the last error was a read past the end
  PngStage stage = PngStage::kHeader;
  uint32_t row = 0;  // the row being read in kRows
  int pass = 0;      // its Adam7 pass (0 when not interlaced)
  char message[160] = {};
};

void ReadFromSpan(png_structp png, png_bytep out, size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->size - src->pos) {
    src->truncated = true;
    src->pos = src->size;
    png_error(png, "truncated");
  }
  std::memcpy(out, src->data + src->pos, n);
  src->pos += n;
}

// Keeps libpng's message and goes back to the setjmp of the running call;
// libpng's default would print to stderr first.
[[noreturn]] void OnPngError(png_structp png, png_const_charp message) {
  auto* src = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(src->message, sizeof(src->message), "%s", message);
  png_longjmp(png, 1);
}

// Warnings are what libpng could step over without touching the pixels we
// keep (compressed data past the last row, say): quiet, never on stderr.
void OnPngWarning(png_structp, png_const_charp) {}

// The read struct and its info struct, destroyed together.
class PngReader {
 public:
  explicit PngReader(PngSource* src)
      : png_(png_create_read_struct(PNG_LIBPNG_VER_STRING, src, OnPngError, OnPngWarning)) {
    if (png_ != nullptr) info_ = png_create_info_struct(png_);
    if (info_ != nullptr) png_set_read_fn(png_, src, ReadFromSpan);
  }
  ~PngReader() { png_destroy_read_struct(&png_, &info_, nullptr); }
  PngReader(const PngReader&) = delete;
  PngReader& operator=(const PngReader&) = delete;

  bool ok() const { return info_ != nullptr; }
  png_structp png() const { return png_; }
  png_infop info() const { return info_; }

 private:
  png_structp png_ = nullptr;
  png_infop info_ = nullptr;
};

// The limits, then the chunks up to the first IDAT. Returns false when
// libpng failed (the message is in the PngSource).
bool ReadPngInfoC(png_structp png, png_infop info) {
  if (setjmp(png_jmpbuf(png))) return false;
  // Damage is damage: a CRC mismatch in any chunk ends the decode (libpng
  // would warn and drop an ancillary chunk; PIL refuses one before IDAT).
  png_set_crc_action(png, PNG_CRC_ERROR_QUIT, PNG_CRC_ERROR_QUIT);
  // Every ancillary chunk (text, iCCP, gAMA, ... and tRNS, whose alpha we
  // would drop) is skipped unread but for its CRC: nothing is inflated or
  // kept, so no zTXt/iCCP bomb costs memory or time, and the pixels are
  // PIL's, which applies none of them either.
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, nullptr, -1);
  static constexpr png_byte kTrns[] = {'t', 'R', 'N', 'S', '\0'};
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, kTrns, 1);
  // Should a chunk still be read whole, it is bounded (PLTE is 768 bytes).
  png_set_chunk_malloc_max(png, 1 << 20);
  png_set_chunk_cache_max(png, 64);
  // The size limit is CheckImageSize's, with its own message: libpng's
  // default (10^6 per side) would refuse first, and wider valid images.
  png_set_user_limits(png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);
  png_read_info(png, info);
  return true;
}

// PIL's palette starts as a gray ramp that PLTE's colors overwrite, so an
// index past them reads as (i, i, i) there, where libpng's reads as black:
// PLTE is padded to 2^depth colors with that ramp.
void PadPaletteAsPil(png_structp png, png_infop info) {
  png_colorp plte = nullptr;
  int count = 0;
  if (png_get_color_type(png, info) != PNG_COLOR_TYPE_PALETTE ||
      png_get_PLTE(png, info, &plte, &count) == 0) {
    return;
  }
  const int full = 1 << png_get_bit_depth(png, info);
  if (count >= full) return;
  png_color padded[PNG_MAX_PALETTE_LENGTH];
  std::memcpy(padded, plte, sizeof(png_color) * static_cast<size_t>(count));
  for (int i = count; i < full; ++i) {
    padded[i] = {static_cast<png_byte>(i), static_cast<png_byte>(i), static_cast<png_byte>(i)};
  }
  png_set_PLTE(png, info, padded, full);  // copies; `plte` is freed
}

// Sets the output transforms, reads every row into `out` (rows `stride`
// bytes apart) and reads on to IEND, so that a cut or damaged tail is seen.
// Returns false when libpng failed.
bool ReadPngRowsC(png_structp png, png_infop info, bool to_rgb, uint8_t* out, size_t stride,
                  PngSource* src) {
  if (setjmp(png_jmpbuf(png))) return false;
  PadPaletteAsPil(png, info);
  png_set_expand(png);       // palette to RGB, 1/2/4-bit gray to 0..255
  png_set_strip_16(png);     // v >> 8, as PIL keeps 16-bit samples
  png_set_strip_alpha(png);  // dropped, not composited: convert("RGB")
  if (to_rgb) png_set_gray_to_rgb(png);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != stride) png_error(png, "unexpected row size after transforms");
  const uint32_t height = png_get_image_height(png, info);
  src->stage = PngStage::kRows;
  // Row by row rather than png_read_image: no row-pointer array to allocate.
  // An Adam7 pass writes only its own pixels into each row it visits.
  for (int pass = 0; pass < passes; ++pass) {
    for (uint32_t y = 0; y < height; ++y) {
      src->pass = pass;
      src->row = y;
      png_read_row(png, out + y * stride, nullptr);
    }
  }
  src->stage = PngStage::kEnd;
  png_read_end(png, nullptr);
  return true;
}

absl::Status PngError(std::string_view name, const PngSource& src, uint32_t height,
                      bool interlaced) {
  if (src.truncated) {
    switch (src.stage) {
      case PngStage::kHeader:
        return DataLossAt(name, src.size,
                          "truncated PNG data: the file ends before the image data");
      case PngStage::kRows:
        return DataLossAt(
            name, src.size,
            absl::StrCat("truncated PNG data: the file ends in the image data (decoding row ",
                         src.row + 1, " of ", height,
                         interlaced ? absl::StrCat(" in pass ", src.pass + 1, " of 7") : "", ")"));
      case PngStage::kEnd:
        return DataLossAt(name, src.size,
                          "truncated PNG data: the file ends after the image data, before IEND");
    }
  }
  // libpng's out-of-memory errors all say "memory" ("Out of memory",
  // "insufficient memory to read chunk"); nothing else does.
  if (std::strstr(src.message, "memory") != nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat(AsAbsl(name), ": no memory to decode the PNG: ", src.message));
  }
  return DataLossAt(name, src.pos, absl::StrCat("corrupt PNG data: ", src.message));
}

}  // namespace

absl::StatusOr<PixelView> DecodePng(ByteSpan data, std::string_view name, const DecodeSpec& spec,
                                    DecodeBuffers* buffers) {
  PngSource src;
  src.data = data.data();
  src.size = data.size();
  PngReader reader(&src);
  if (!reader.ok()) {
    return absl::ResourceExhaustedError(
        absl::StrCat(AsAbsl(name), ": no memory for a PNG decoder"));
  }
  if (!ReadPngInfoC(reader.png(), reader.info())) return PngError(name, src, 0, false);
  const uint32_t width = png_get_image_width(reader.png(), reader.info());
  const uint32_t height = png_get_image_height(reader.png(), reader.info());
  // Before png_read_update_info, which allocates rows of IHDR's width.
  SP_RETURN_IF_ERROR(CheckImageSize(name, ImageFormat::kPng, width, height, spec));
  const bool interlaced = png_get_interlace_type(reader.png(), reader.info()) != PNG_INTERLACE_NONE;
  // Gray and gray + alpha; a palette is color (PIL's "P" is RGB when
  // converted) whatever colors it holds.
  const bool gray = (png_get_color_type(reader.png(), reader.info()) & PNG_COLOR_MASK_COLOR) == 0;
  const int channels = gray && spec.keep_gray ? 1 : 3;
  SP_ASSIGN_OR_RETURN(uint8_t * out, PixelMemory(name, width, height, channels, buffers));
  const size_t stride = size_t{width} * static_cast<size_t>(channels);
  if (!ReadPngRowsC(reader.png(), reader.info(), channels == 3, out, stride, &src)) {
    return PngError(name, src, height, interlaced);
  }
  return PixelView{out, width, height, channels};
}

}  // namespace shardpack::codec
