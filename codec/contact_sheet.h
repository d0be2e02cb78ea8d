// Contact sheets: many images on one RGB canvas, each in a square tile with
// a caption strip below it, written as PNG or JPEG. `sharddump show` (stored
// records), `shardbench --save-batch` (a batch after the transform) and
// Python's shardpack.contact_sheet draw through this one code.
//
// Layout: tiles of `tile` x `tile` pixels in `columns` columns, kSheetGap
// pixels between them and around the edge, each followed by a caption strip
// of kCaptionLines lines of the built-in 6x11 font (codec/bitmap_font.h),
// cut to the tile's width. An image is scaled to fit its tile keeping its
// aspect ratio (ResizeBilinearAA: codec/resize.h, up or down), centred, on
// the neutral kSheetBackground; gray images are shown as RGB (R = G = B).
// ImageRect says where an image's pixels land, so that a test can compare
// them with its own resize.
//
// Not thread-safe; the library never opens a path (the tools write
// EncodeForPath's bytes with WriteFileAtomically).
#ifndef SHARDPACK_CODEC_CONTACT_SHEET_H_
#define SHARDPACK_CODEC_CONTACT_SHEET_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/pixels.h"
#include "codec/resize.h"

namespace shardpack::codec {

using codec::PixelView;

inline constexpr uint32_t kSheetGap = 4;
inline constexpr int kCaptionLines = 2;
// The caption strip: a 1-pixel margin, then each line 11 + 1 pixels high.
inline constexpr uint32_t kCaptionHeight = 2 + kCaptionLines * 12;
inline constexpr uint8_t kSheetBackground = 64;  // every channel
inline constexpr uint8_t kCaptionInk = 240;
inline constexpr uint32_t kMinSheetTile = 16;
inline constexpr uint32_t kMaxSheetTile = 1024;
// A sheet holds at most this many pixels (192 MiB of RGB): more tiles are
// refused rather than making an image no viewer opens.
inline constexpr uint64_t kMaxSheetPixels = uint64_t{1} << 26;
// A sheet side may not exceed what a JPEG can hold.
inline constexpr uint32_t kMaxSheetSide = 65500;

struct SheetOptions {
  uint32_t tile = 96;    // pixels per tile side, kMinSheetTile..kMaxSheetTile
  uint32_t columns = 0;  // 0: about square (ceil(sqrt(tiles)))
};

struct SheetRect {
  uint32_t x = 0, y = 0, width = 0, height = 0;
};

// The size of a width x height image scaled to fit a tile x tile square,
// keeping the aspect ratio (rounded, each side at least 1).
void FitInTile(uint32_t width, uint32_t height, uint32_t tile, uint32_t* out_width,
               uint32_t* out_height);

class ContactSheet {
 public:
  // A sheet of `tiles` tiles. InvalidArgumentError for no tiles, a tile size
  // outside kMinSheetTile..kMaxSheetTile, or a sheet over kMaxSheetPixels or
  // kMaxSheetSide (the message says how many tiles would fit);
  // ResourceExhaustedError when its memory cannot be had.
  static absl::StatusOr<ContactSheet> Create(size_t tiles, const SheetOptions& options);

  size_t tiles() const { return tiles_; }
  uint32_t tile() const { return tile_; }
  uint32_t columns() const { return columns_; }
  uint32_t rows() const { return rows_; }
  // The canvas: RGB, rows packed.
  PixelView view() const { return PixelView{pixels_.data(), width_, height_, 3}; }

  // Where tile i's image lands when the image is width x height.
  SheetRect ImageRect(size_t i, uint32_t width, uint32_t height) const;
  // Tile i's caption strip.
  SheetRect CaptionRect(size_t i) const;

  // Draws `image` (1 channel gray or 3 channel RGB, rows packed) into tile i
  // with its caption lines. InvalidArgumentError for another channel count
  // or an image without pixels.
  absl::Status Draw(size_t i, const PixelView& image, std::span<const std::string_view> caption);

 private:
  ContactSheet() = default;
  void DrawText(uint32_t x, uint32_t y, uint32_t max_width, std::string_view text);

  size_t tiles_ = 0;
  uint32_t tile_ = 0, columns_ = 0, rows_ = 0, width_ = 0, height_ = 0;
  std::vector<uint8_t> pixels_;
  std::vector<uint8_t> resized_;
  codec::ResizeScratch scratch_;
};

// "#<index> <label>[,<label>...]": a tile's first caption line.
std::string IndexLabelCaption(uint64_t index, std::span<const int64_t> labels);

// The class names of `labels` ("/"-joined; "-" for a value that
// classes[field] does not name): a tile's second caption line.
std::string ClassCaption(std::span<const int64_t> labels,
                         std::span<const std::vector<std::string>> classes);

// A batch of images as the reader hands them out: n x h x w x c (NHWC) or
// n x c x h x w (NCHW), uint8 or float32. Float samples were normalized as
// (pixel / 255 - mean[ch]) / std[ch]; the sheet undoes that:
// pixel = round((value * std[ch] + mean[ch]) * 255), clamped to 0..255.
struct BatchImages {
  const void* data = nullptr;
  bool is_float = false;
  bool nchw = false;
  int64_t n = 0, h = 0, w = 0, c = 0;
  std::array<float, 3> mean = {0, 0, 0};
  std::array<float, 3> std = {1, 1, 1};
};

// Sample i of `batch` as HWC uint8 pixels in `out` (resized to fit).
// InvalidArgumentError for a channel count other than 1 or 3.
absl::StatusOr<PixelView> BatchSample(const BatchImages& batch, int64_t i,
                                      std::vector<uint8_t>* out);

// What a batch's tiles are captioned with: sample i's labels are
// labels[i * num_labels ...]; its index is record_indexes[i] (or i when
// empty); classes[j] names the values of label field j (may be empty).
struct BatchCaptions {
  const int64_t* labels = nullptr;
  int num_labels = 0;
  std::span<const uint64_t> record_indexes;
  std::span<const std::vector<std::string>> classes;
};

// The tile a batch's sheet uses when none is asked for: the images' longer
// side, within kMinSheetTile..kMaxSheetTile, so that a tile shows the
// batch's pixels unscaled where it can.
uint32_t DefaultBatchTile(const BatchImages& batch);

// A sheet of every sample of `batch` (options.tile 0: DefaultBatchTile),
// tile i captioned "#<index> <labels>" and its class names ("/"-joined).
absl::StatusOr<ContactSheet> BatchSheet(const BatchImages& batch, const BatchCaptions& captions,
                                        SheetOptions options);

// Encodes `image` (1 or 3 channels) as a PNG with libpng.
absl::StatusOr<std::vector<uint8_t>> EncodePng(const PixelView& image);
// Encodes `image` as a JPEG (quality 90, 4:4:4) with TurboJPEG.
absl::StatusOr<std::vector<uint8_t>> EncodeJpeg(const PixelView& image, int quality = 90);
// EncodePng or EncodeJpeg chosen by `path`'s extension (.png; .jpg or
// .jpeg, any case); InvalidArgumentError naming `path` for anything else.
absl::StatusOr<std::vector<uint8_t>> EncodeForPath(const PixelView& image, std::string_view path);
// OK when `path`'s extension is one EncodeForPath writes (checked before the
// work of making a sheet).
absl::Status CheckSheetPath(std::string_view path);

}  // namespace shardpack::codec

#endif  // SHARDPACK_CODEC_CONTACT_SHEET_H_
