// JPEG decode of just what a transform needs, with libjpeg-turbo's libjpeg
// API: the smallest DCT scale (scale_num / 8) that keeps a region at least
// as large as the output, jpeg_crop_scanline for the region's columns,
// jpeg_skip_scanlines for the rows above it, and a stop after its last row.
// Sequential files are Huffman-decoded by codec/jpeg_entropy.h's decoder
// (the same coefficients, faster), the rest of the work is libjpeg's, up to
// the IDCT for a region asked for as YCbCr planes (RegionPixels).
//
// A JpegDecoder is long-lived and belongs to one thread (the reader keeps one
// per worker thread for life): it holds one libjpeg decompressor and pixel
// buffers that keep their capacity, so decoding allocates nothing of ours
// once the buffers have grown to the largest region seen (libjpeg's own
// per-image work memory is its business, as it is inside TurboJPEG).
//
// Output is RGB (or, when asked, a YCbCr image's planes): grayscale becomes
// three equal channels; CMYK and YCCK become RGB by JpegCmykToRgbInPlace
// (codec/color.h), the packer's rule too; EXIF orientation is not applied
// (PIL's convert("RGB") does not apply it). Progressive, restart markers
// and arithmetic coding work as libjpeg-turbo decodes them.
//
// Errors never abort the process: libjpeg's error_exit is replaced by a
// longjmp back into the decoder, and a warning that means damaged pixels
// (anything but IsBenignJpegWarning) is an error too. Damage below the
// decoded region of a baseline JPEG is not seen (its bytes are not read):
// the price of decoding only what is needed; `sharddump verify --decode`
// decodes whole images.
#ifndef SHARDPACK_CODEC_JPEG_DECODER_H_
#define SHARDPACK_CODEC_JPEG_DECODER_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/resize.h"
#include "shardpack/record.h"

namespace shardpack::codec {

// A rectangle of a JPEG at full size, in pixels.
struct JpegRect {
  uint32_t x = 0, y = 0, width = 0, height = 0;
};

// What the header says.
struct JpegHeader {
  uint32_t width = 0;
  uint32_t height = 0;
  int components = 0;  // 1, 3 or 4
  bool progressive = false;
};

// What DecodeRegion hands back.
enum class RegionPixels : uint8_t {
  kRgb,  // RGB pixels, always
  // The YCbCr planes as the IDCT leaves them (no chroma upsampling, no color
  // conversion) when the JPEG is a 3-component YCbCr one whose chroma is
  // subsampled by 1 or 2 each way (4:4:4, 4:2:2, 4:2:0, 4:4:0) and luma is
  // not; RGB otherwise (grayscale, CMYK, other samplings).
  kYccPlanesWhenPossible,
};

// Pixels of a decoded region.
struct DecodedRegion {
  // RGB, or when `planar` the region's size with planes[0] holding it
  // (luma, factors 1) and planes[1..2] Cb and Cr. Valid until the decoder's
  // next call.
  PixelView pixels;
  bool planar = false;
  SubsampledPlane planes[3];
  // The requested rectangle within `pixels`, in its (DCT-scaled) pixel
  // coordinates: possibly fractional, and with up to kJpegRegionMargin
  // decoded pixels around it where the image has them.
  ResizeBox box;
  int scale_num = 8;  // the DCT scale used: scale_num / 8
  // The pixels came from a cut of the MCUs around the region (the JPEG has
  // restart markers: jpeg_restart.h) rather than from the whole JPEG; they
  // are the same pixels either way.
  bool cut = false;
};

// Decoded pixels kept around a requested region (at the decoded scale), so
// that chroma upsampling and filter taps at its edges see real neighbours.
inline constexpr uint32_t kJpegRegionMargin = 2;

struct JpegDecoderOptions {
  // Images with more pixels are refused (DataLossError: inside a shard such
  // a header is damage). Default 2^28, as the packer's probe.
  uint64_t max_pixels = uint64_t{1} << 28;
  // Decode Huffman data with libjpeg's own decoder instead of
  // JpegEntropyDecoder (the same coefficients, slower): for the tests and
  // benchmarks that compare the two.
  bool libjpeg_entropy = false;
  // JpegEntropyDecoder's multi-symbol lookups built for every table at once
  // (for the tests and the fuzzer: see jpeg_entropy.h), the wide skip
  // lookups at a table's second scan unless `eager_wide_lookups` is false.
  bool eager_huffman_lookups = false;
  bool eager_wide_lookups = true;
};

// Not thread-safe: one per thread.
class JpegDecoder {
 public:
  explicit JpegDecoder(const JpegDecoderOptions& options = {});
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  // Reads the header of `jpeg` and starts a decode. `jpeg` must stay valid
  // until DecodeRegion returns or the next Start. DataLossError "corrupt
  // JPEG data: <libjpeg's message>" (or "not a JPEG") on bad bytes.
  absl::StatusOr<JpegHeader> Start(ByteSpan jpeg);

  // Decodes `rect` (clamped to the image) of the started JPEG at the
  // smallest DCT scale n/8 (n = 1, 2, 4, 8: ChooseDctScale) that keeps it at
  // least min_width x min_height (full size when none does). Only the region's iMCU columns
  // and the rows up to its last are decoded; when the region reaches the
  // image's last row the rest of the data is read to EOI, so truncation is
  // seen. DataLossError on corrupt data.
  // `grow` more full-size pixels are decoded on each side of `rect` (where
  // the image has them) for filters that read beyond it; the scale depends
  // on `rect` alone.
  // Chroma is upsampled smoothly (libjpeg's fancy upsampling), so a
  // full-scale region equals that region of tjDecompress2's output.
  // (Replicated chroma, do_fancy_upsampling = FALSE, was an option once: on
  // this crop + skip path libjpeg-turbo 2.1.5 gave output that varied now
  // and then between runs; docs/reader.md.)
  // With RegionPixels::kYccPlanesWhenPossible the region may come back as
  // planes (DecodedRegion::planar): the same IDCT output, before libjpeg's
  // upsampling and color conversion, for a caller that resizes first and
  // converts after (codec/resize.h, ResizeYccToRgb).
  absl::StatusOr<DecodedRegion> DecodeRegion(const JpegRect& rect, uint32_t min_width,
                                             uint32_t min_height, uint32_t grow = 0,
                                             RegionPixels want = RegionPixels::kRgb);

  // Start + the whole image at full size: what tjDecompress2 gives with
  // TJPF_RGB and no flags.
  absl::StatusOr<PixelView> Decode(ByteSpan jpeg);

  // Start + the whole image at 1/8 scale: every byte of entropy-coded data
  // is decoded and checked, and little else is done.
  absl::Status Validate(ByteSpan jpeg);

 private:
  // Where the JPEG being decoded starts in the image, at the decode's scale.
  struct Offset {
    uint32_t x = 0, y = 0;
    bool cut = false;  // it is a cut, not the whole JPEG
  };
  // For a started JPEG with restart markers often enough (jpeg_restart.h):
  // restarts the decompressor on a cut holding only the MCUs that the
  // rectangle [x0, x1) x [y0, y1) of the image at scale n/8 needs, and
  // returns the cut's offset; {0, 0, false}, the JPEG left as started, when
  // there is no cut to make or none worth making.
  Offset StartCut(int n, uint32_t x0, uint32_t x1, uint32_t y0, uint32_t y1);

  struct State;
  std::unique_ptr<State> s_;
  JpegDecoderOptions options_;
};

// Resizes `box` of a decoded region to width x height RGB in `dst`:
// ResizeYccToRgb when the region is planar, ResizeBoxAA when it is RGB.
void ResizeRegion(const DecodedRegion& region, const ResizeBox& box, uint32_t width,
                  uint32_t height, const ResizeOptions& options, uint8_t* dst,
                  ResizeScratch* scratch);

// The smallest n in 1, 2, 4 with ceil(width * n / 8) >= min_width and
// likewise for height; 8 when none. Only powers of two: libjpeg-turbo has
// SIMD IDCTs for 8x8, 4x4 and 2x2 blocks (1x1 is the DC term), while the
// other scales (3/8, 5/8, 6/8, 7/8) run plain C IDCTs, and for 4:2:0 chroma
// 10x10 to 14x14 ones; on ImageNet-sized photos those cost more than the
// extra pixels a power of two decodes (docs/benchmarks.md).
int ChooseDctScale(uint32_t width, uint32_t height, uint32_t min_width, uint32_t min_height);

}  // namespace shardpack::codec

#endif  // SHARDPACK_CODEC_JPEG_DECODER_H_
