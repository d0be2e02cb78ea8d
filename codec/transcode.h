// Decode (JPEG, and through codec/ every other format we read), resize and
// JPEG encode for the packer's reencode and raw modes and passthrough's
// conversion of non-JPEG inputs.
//
// A Transcoder is long-lived and belongs to one worker thread: it holds one
// TurboJPEG handle for decoding, one for encoding, and buffers that keep
// their capacity, so transcoding an image allocates nothing once the buffers
// have grown to the largest image seen.
//
// Color: every decoded image is RGB (or gray, where asked to keep gray).
// TurboJPEG decodes CMYK and YCCK JPEGs only to TJPF_CMYK; they become RGB
// with JpegCmykToRgbInPlace, the rule the reader's decoder uses too
// (codec/color.h). A JPEG's EXIF orientation is not applied, as PIL's
// convert("RGB") does not apply it.
#ifndef SHARDPACK_CODEC_TRANSCODE_H_
#define SHARDPACK_CODEC_TRANSCODE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/color.h"
#include "codec/decode.h"
#include "codec/jpeg_probe.h"
#include "codec/pixels.h"
#include "codec/resize.h"
#include "shardpack/record.h"

namespace shardpack::codec {

// The pixel helpers (codec/pixels.h, codec/color.h, codec/resize.h) are
// shared with the reader's JPEG transforms.
using codec::JpegCmykToRgbInPlace;
using codec::PixelView;
using codec::ResizeBilinearAA;
using codec::ResizeScratch;

struct DecodeOptions {
  // Decode at the smallest TurboJPEG DCT scale (1/8, 1/4, 3/8, ... 1) whose
  // result is still at least min_width x min_height; 0 x 0 (the default)
  // decodes at full size. Scales above 1 are never used: upscaling is left
  // to Resize.
  uint32_t min_width = 0;
  uint32_t min_height = 0;
  // Keep grayscale JPEGs as 1 channel; otherwise (the default) every image
  // comes out RGB.
  bool keep_gray = false;
  // Header checks run before decoding (size limits, EOI).
  JpegProbeOptions probe;
};

struct ReencodeOptions {
  // Downscale so the longer side is at most this; 0 (the default) keeps the
  // size.
  int max_side = 0;
  int quality = 90;  // JPEG quality, 1..100
  // Keep full chroma resolution (4:4:4) instead of 4:2:0 (the default): the
  // closest a JPEG comes to the pixels of a lossless source.
  bool full_chroma = false;
};

// Size that fits `width` x `height` into a longer side of at most
// `max_side`, keeping the aspect ratio (rounded, each side at least 1).
// Unchanged when max_side <= 0 or the image already fits.
void FitLongerSide(uint32_t width, uint32_t height, int max_side, uint32_t* out_width,
                   uint32_t* out_height);

// Decodes, resizes and encodes. Not thread-safe: one per thread. Errors name
// the input (`name`): header problems as ProbeJpeg reports them; corrupt or
// truncated entropy data as DataLossError "<name>: corrupt JPEG data:
// <libjpeg's message>"; libjpeg-turbo never aborts the process.
class Transcoder {
 public:
  // Fails (InternalError) only if TurboJPEG cannot make its handles.
  static absl::StatusOr<std::unique_ptr<Transcoder>> Create();
  ~Transcoder();
  Transcoder(const Transcoder&) = delete;
  Transcoder& operator=(const Transcoder&) = delete;

  // Decodes `jpeg` (after ProbeJpeg with options.probe). The view points
  // into this Transcoder and stays valid until its next call. `info`, if
  // not null, receives the probed header.
  absl::StatusOr<PixelView> Decode(ByteSpan jpeg, std::string_view name,
                                   const DecodeOptions& options, JpegInfo* info = nullptr);

  // Decodes an image of any format we decode, told by its content, at its
  // own size: RGB, or 1 channel for a grayscale image when `keep_gray` (as
  // DecodeSpec and DecodeOptions say). The view points into this Transcoder
  // and stays valid until its next call. Errors are the probe's and the
  // decoders'.
  absl::StatusOr<PixelView> DecodeFull(ByteSpan image, std::string_view name,
                                       const JpegProbeOptions& probe, bool keep_gray);
  // Decodes `jpeg` fully (at the smallest DCT scale, which still reads all
  // of the entropy-coded data) and reports corrupt data; keeps no pixels.
  absl::Status Validate(ByteSpan jpeg, std::string_view name, const JpegProbeOptions& probe);

  // Resizes into this Transcoder's resize buffer; `src` may be a view from
  // Decode. Valid until the next call. Returns `src` unchanged when the size
  // already matches.
  PixelView Resize(const PixelView& src, uint32_t width, uint32_t height);

  // Encodes `src` as a baseline JPEG: 4:2:0 for RGB (4:4:4 with
  // full_chroma), gray for 1 channel, at `quality` (1..100). `out` is resized
  // to the JPEG's size (its capacity is reused). A side over kMaxJpegSide is
  // InvalidArgumentError.
  absl::Status Encode(const PixelView& src, int quality, bool full_chroma,
                      std::vector<uint8_t>* out);

  // Reencode and DecodeToRaw take an image of any format we decode, told by
  // its content (codec/image_format.h): a JPEG through TurboJPEG at the
  // smallest DCT scale that still covers the output, others through the
  // codec library (codec/decode.h: PIL's convert("RGB") conventions) at full
  // size. Errors are the probe's and the decoders'.

  // Decode + downscale so the longer side is at most options.max_side +
  // Encode, into `out`. Gray stays gray; CMYK becomes RGB; alpha is dropped.
  // Returns the stored image's info: {kJpeg, kHWC, h, w, 1 or 3}.
  absl::StatusOr<ImageInfo> Reencode(ByteSpan image, std::string_view name,
                                     const ReencodeOptions& options, const JpegProbeOptions& probe,
                                     std::vector<uint8_t>* out);

  // Decode + resize to exactly width x height RGB, written to `out` as HWC
  // pixels. Returns {kRaw, kHWC, height, width, 3}.
  absl::StatusOr<ImageInfo> DecodeToRaw(ByteSpan image, std::string_view name, uint32_t width,
                                        uint32_t height, const JpegProbeOptions& probe,
                                        std::vector<uint8_t>* out);

 private:
  Transcoder(void* decoder, void* encoder) : decoder_(decoder), encoder_(encoder) {}
  // The output size for a source of w x h (Reencode: fitted; raw: fixed).
  using SizeFor = absl::FunctionRef<void(uint32_t w, uint32_t h, uint32_t* out_w, uint32_t* out_h)>;
  // Decodes any format; *width x *height is size_for's answer for it.
  absl::StatusOr<PixelView> DecodeAny(ByteSpan image, std::string_view name,
                                      const JpegProbeOptions& probe, bool keep_gray,
                                      SizeFor size_for, uint32_t* width, uint32_t* height);
  absl::StatusOr<PixelView> DecodeProbed(ByteSpan jpeg, std::string_view name, const JpegInfo& info,
                                         uint32_t min_width, uint32_t min_height, bool keep_gray);

  void* decoder_;  // tjhandle
  void* encoder_;  // tjhandle
  codec::GrowableBuffer decoded_;
  codec::GrowableBuffer encoded_;
  codec::DecodeBuffers codec_buffers_;  // the formats beside JPEG
  std::vector<uint8_t> resized_;
  ResizeScratch scratch_;
};

}  // namespace shardpack::codec

#endif  // SHARDPACK_CODEC_TRANSCODE_H_
