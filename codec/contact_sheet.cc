#include "codec/contact_sheet.h"

#include <png.h>  // brings <setjmp.h> for png_jmpbuf

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "codec/bitmap_font.h"
#include "codec/transcode.h"

namespace shardpack::codec {
namespace {

uint32_t SquareColumns(size_t tiles) {
  uint32_t c = static_cast<uint32_t>(std::ceil(std::sqrt(static_cast<double>(tiles))));
  return std::max<uint32_t>(c, 1);
}

// Sets every pixel of `rgb` to the background.
void Fill(std::vector<uint8_t>* rgb) { std::fill(rgb->begin(), rgb->end(), kSheetBackground); }

}  // namespace

void FitInTile(uint32_t width, uint32_t height, uint32_t tile, uint32_t* out_width,
               uint32_t* out_height) {
  const double scale = static_cast<double>(tile) / std::max(width, height);
  *out_width = std::clamp<uint32_t>(static_cast<uint32_t>(std::lround(width * scale)), 1, tile);
  *out_height = std::clamp<uint32_t>(static_cast<uint32_t>(std::lround(height * scale)), 1, tile);
}

absl::StatusOr<ContactSheet> ContactSheet::Create(size_t tiles, const SheetOptions& options) {
  if (tiles == 0) return absl::InvalidArgumentError("a contact sheet needs at least one image");
  if (options.tile < kMinSheetTile || options.tile > kMaxSheetTile) {
    return absl::InvalidArgumentError(absl::StrCat("tile size ", options.tile, ": expected ",
                                                   kMinSheetTile, "..", kMaxSheetTile, " pixels"));
  }
  ContactSheet s;
  s.tiles_ = tiles;
  s.tile_ = options.tile;
  const uint64_t columns = options.columns == 0 ? SquareColumns(tiles) : options.columns;
  s.columns_ = static_cast<uint32_t>(std::min<uint64_t>(columns, tiles));
  s.rows_ = static_cast<uint32_t>((tiles + s.columns_ - 1) / s.columns_);
  const uint64_t cell_w = uint64_t{s.tile_} + kSheetGap;
  const uint64_t cell_h = uint64_t{s.tile_} + kCaptionHeight + kSheetGap;
  const uint64_t width = kSheetGap + s.columns_ * cell_w;
  const uint64_t height = kSheetGap + s.rows_ * cell_h;
  if (width > kMaxSheetSide || height > kMaxSheetSide || width * height > kMaxSheetPixels) {
    const uint64_t fit = kMaxSheetPixels / (cell_w * cell_h);
    return absl::InvalidArgumentError(absl::StrCat(
        tiles, " tiles of ", s.tile_, " pixels in ", s.columns_, " columns make a ", width, "x",
        height, " sheet, over the limit of ", kMaxSheetPixels, " pixels and ", kMaxSheetSide,
        " per side: show fewer records (about ", fit, " fit), fewer columns or a smaller --tile"));
  }
  s.width_ = static_cast<uint32_t>(width);
  s.height_ = static_cast<uint32_t>(height);
  try {
    s.pixels_.resize(width * height * 3);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("no memory for a ", width, "x", height, " contact sheet"));
  }
  Fill(&s.pixels_);
  return s;
}

SheetRect ContactSheet::ImageRect(size_t i, uint32_t width, uint32_t height) const {
  uint32_t w, h;
  FitInTile(width, height, tile_, &w, &h);
  const uint32_t col = static_cast<uint32_t>(i % columns_),
                 row = static_cast<uint32_t>(i / columns_);
  const uint32_t x0 = kSheetGap + col * (tile_ + kSheetGap);
  const uint32_t y0 = kSheetGap + row * (tile_ + kCaptionHeight + kSheetGap);
  return SheetRect{x0 + (tile_ - w) / 2, y0 + (tile_ - h) / 2, w, h};
}

SheetRect ContactSheet::CaptionRect(size_t i) const {
  const uint32_t col = static_cast<uint32_t>(i % columns_),
                 row = static_cast<uint32_t>(i / columns_);
  return SheetRect{kSheetGap + col * (tile_ + kSheetGap),
                   kSheetGap + row * (tile_ + kCaptionHeight + kSheetGap) + tile_, tile_,
                   kCaptionHeight};
}

absl::Status ContactSheet::Draw(size_t i, const PixelView& image,
                                std::span<const std::string_view> caption) {
  if (i >= tiles_) {
    return absl::InvalidArgumentError(absl::StrCat("tile ", i, " of a sheet of ", tiles_));
  }
  if ((image.channels != 1 && image.channels != 3) || image.width == 0 || image.height == 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot show a ", image.width, "x", image.height,
                                                   " image of ", image.channels,
                                                   " channels (1 or 3 are shown)"));
  }
  const SheetRect r = ImageRect(i, image.width, image.height);
  PixelView fitted = image;
  if (r.width != image.width || r.height != image.height) {
    resized_.resize(size_t{r.width} * r.height * static_cast<size_t>(image.channels));
    codec::ResizeBilinearAA(image, r.width, r.height, resized_.data(), &scratch_);
    fitted = PixelView{resized_.data(), r.width, r.height, image.channels};
  }
  for (uint32_t y = 0; y < r.height; ++y) {
    const uint8_t* src = fitted.data + y * fitted.stride();
    uint8_t* dst = pixels_.data() + (size_t{r.y + y} * width_ + r.x) * 3;
    if (fitted.channels == 3) {
      std::memcpy(dst, src, size_t{r.width} * 3);
    } else {
      for (uint32_t x = 0; x < r.width; ++x) dst[3 * x] = dst[3 * x + 1] = dst[3 * x + 2] = src[x];
    }
  }
  const SheetRect c = CaptionRect(i);
  for (size_t line = 0; line < caption.size() && line < kCaptionLines; ++line) {
    DrawText(c.x + 1, c.y + 1 + static_cast<uint32_t>(line) * (codec::kFontHeight + 1),
             c.width - 1, caption[line]);
  }
  return absl::OkStatus();
}

void ContactSheet::DrawText(uint32_t x, uint32_t y, uint32_t max_width, std::string_view text) {
  const size_t fit = max_width / codec::kFontWidth;
  for (size_t k = 0; k < text.size() && k < fit; ++k) {
    const uint8_t* glyph = codec::FontGlyph(text[k]);
    const uint32_t gx = x + static_cast<uint32_t>(k) * codec::kFontWidth;
    for (int row = 0; row < codec::kFontHeight; ++row) {
      uint8_t* dst = pixels_.data() + (size_t{y + row} * width_ + gx) * 3;
      for (int col = 0; col < codec::kFontWidth; ++col) {
        if (glyph[row] & (0x20 >> col))
          dst[3 * col] = dst[3 * col + 1] = dst[3 * col + 2] = kCaptionInk;
      }
    }
  }
}

std::string IndexLabelCaption(uint64_t index, std::span<const int64_t> labels) {
  std::string s = absl::StrCat("#", index);
  for (size_t i = 0; i < labels.size(); ++i) absl::StrAppend(&s, i == 0 ? " " : ",", labels[i]);
  return s;
}

absl::StatusOr<PixelView> BatchSample(const BatchImages& b, int64_t i, std::vector<uint8_t>* out) {
  if (b.c != 1 && b.c != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot show images of ", b.c, " channels (1 or 3 are shown)"));
  }
  const size_t plane = static_cast<size_t>(b.h * b.w), c = static_cast<size_t>(b.c);
  const size_t sample = plane * c;
  out->resize(sample);
  for (size_t p = 0; p < plane; ++p) {
    for (size_t ch = 0; ch < c; ++ch) {
      const size_t from = static_cast<size_t>(i) * sample + (b.nchw ? ch * plane + p : p * c + ch);
      uint8_t v;
      if (b.is_float) {
        const float f = static_cast<const float*>(b.data)[from];
        const double x = (double{f} * b.std[ch] + b.mean[ch]) * 255.0;
        v = std::isnan(x) ? 0 : static_cast<uint8_t>(std::lround(std::clamp(x, 0.0, 255.0)));
      } else {
        v = static_cast<const uint8_t*>(b.data)[from];
      }
      (*out)[p * c + ch] = v;
    }
  }
  return PixelView{out->data(), static_cast<uint32_t>(b.w), static_cast<uint32_t>(b.h),
                   static_cast<int>(b.c)};
}

uint32_t DefaultBatchTile(const BatchImages& batch) {
  const int64_t side = std::max(batch.h, batch.w);
  return static_cast<uint32_t>(std::clamp<int64_t>(side, kMinSheetTile, kMaxSheetTile));
}

std::string ClassCaption(std::span<const int64_t> labels,
                         std::span<const std::vector<std::string>> classes) {
  std::string s;
  for (size_t j = 0; j < labels.size(); ++j) {
    const int64_t v = labels[j];
    const bool named = j < classes.size() && v >= 0 && static_cast<uint64_t>(v) < classes[j].size();
    absl::StrAppend(&s, j == 0 ? "" : "/", named ? classes[j][static_cast<size_t>(v)] : "-");
  }
  return s;
}

absl::StatusOr<ContactSheet> BatchSheet(const BatchImages& batch, const BatchCaptions& captions,
                                        SheetOptions options) {
  if (batch.n <= 0 || batch.h <= 0 || batch.w <= 0 || batch.h > kMaxSheetSide ||
      batch.w > kMaxSheetSide) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot show a batch of ", batch.n, " images of ", batch.h, "x", batch.w, " pixels"));
  }
  if (options.tile == 0) options.tile = DefaultBatchTile(batch);
  absl::StatusOr<ContactSheet> sheet = ContactSheet::Create(static_cast<size_t>(batch.n), options);
  if (!sheet.ok()) return sheet.status();
  std::vector<uint8_t> pixels;
  for (int64_t i = 0; i < batch.n; ++i) {
    absl::StatusOr<PixelView> sample = BatchSample(batch, i, &pixels);
    if (!sample.ok()) return sample.status();
    const uint64_t index = captions.record_indexes.empty()
                               ? static_cast<uint64_t>(i)
                               : captions.record_indexes[static_cast<size_t>(i)];
    const std::span<const int64_t> labels(captions.labels + i * captions.num_labels,
                                          static_cast<size_t>(captions.num_labels));
    const std::string line1 = IndexLabelCaption(index, labels);
    const std::string line2 = ClassCaption(labels, captions.classes);
    const std::string_view lines[] = {line1, line2};
    if (absl::Status s = sheet->Draw(static_cast<size_t>(i), *sample, lines); !s.ok()) return s;
  }
  return sheet;
}

namespace {

// What libpng's callbacks share with EncodePng: plain data, since a libpng
// error longjmps over EncodeRows' frame.
struct PngSink {
  std::vector<uint8_t>* out = nullptr;
  char message[160] = {};
};

void WriteToVector(png_structp png, png_bytep data, size_t n) {
  auto* sink = static_cast<PngSink*>(png_get_io_ptr(png));
  sink->out->insert(sink->out->end(), data, data + n);
}

void FlushNothing(png_structp) {}

[[noreturn]] void OnPngWriteError(png_structp png, png_const_charp message) {
  auto* sink = static_cast<PngSink*>(png_get_error_ptr(png));
  std::snprintf(sink->message, sizeof(sink->message), "%s", message);
  png_longjmp(png, 1);
}

void OnPngWriteWarning(png_structp, png_const_charp) {}

// The libpng calls, with no C++ object of its own for the longjmp to skip.
bool EncodeRows(png_structp png, png_infop info, const PixelView& image, PngSink* sink) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_write_fn(png, sink, WriteToVector, FlushNothing);
  png_set_IHDR(png, info, image.width, image.height, 8,
               image.channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (uint32_t y = 0; y < image.height; ++y) {
    png_write_row(png, image.data + y * image.stride());
  }
  png_write_end(png, nullptr);
  return true;
}

}  // namespace

absl::StatusOr<std::vector<uint8_t>> EncodePng(const PixelView& image) {
  if (image.channels != 1 && image.channels != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("PNG encode: ", image.channels, " channels (1 or 3 are written)"));
  }
  std::vector<uint8_t> out;
  PngSink sink{&out};
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, &sink, OnPngWriteError, OnPngWriteWarning);
  png_infop info = png == nullptr ? nullptr : png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    return absl::ResourceExhaustedError("PNG encode: libpng could not start");
  }
  const bool ok = EncodeRows(png, info, image, &sink);
  png_destroy_write_struct(&png, &info);
  if (!ok) return absl::InternalError(absl::StrCat("PNG encode failed: ", sink.message));
  return out;
}

absl::StatusOr<std::vector<uint8_t>> EncodeJpeg(const PixelView& image, int quality) {
  absl::StatusOr<std::unique_ptr<Transcoder>> t = Transcoder::Create();
  if (!t.ok()) return t.status();
  std::vector<uint8_t> out;
  absl::Status s = (*t)->Encode(image, quality, /*full_chroma=*/true, &out);
  if (!s.ok()) return s;
  return out;
}

namespace {

enum class SheetFormat { kNone, kPng, kJpeg };

SheetFormat FormatOf(std::string_view path) {
  const size_t dot = path.rfind('.');
  if (dot == std::string_view::npos || path.find('/', dot) != std::string_view::npos) {
    return SheetFormat::kNone;
  }
  const std::string_view tail = path.substr(dot + 1);
  const std::string ext = absl::AsciiStrToLower(absl::string_view(tail.data(), tail.size()));
  if (ext == "png") return SheetFormat::kPng;
  if (ext == "jpg" || ext == "jpeg") return SheetFormat::kJpeg;
  return SheetFormat::kNone;
}

}  // namespace

absl::Status CheckSheetPath(std::string_view path) {
  if (FormatOf(path) != SheetFormat::kNone) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      absl::string_view(path.data(), path.size()),
      ": a contact sheet is written as .png or .jpg (.jpeg): name the file with one of these"));
}

absl::StatusOr<std::vector<uint8_t>> EncodeForPath(const PixelView& image, std::string_view path) {
  if (absl::Status s = CheckSheetPath(path); !s.ok()) return s;
  return FormatOf(path) == SheetFormat::kPng ? EncodePng(image) : EncodeJpeg(image);
}

}  // namespace shardpack::codec
