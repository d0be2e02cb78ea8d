// WebP through libwebp (and libwebpdemux for an animation's first frame),
// decoded straight into buffers->pixels as RGB: alpha is dropped with the
// colors under it kept, as PIL's convert("RGB") of its RGBA decode does.
// keep_gray does not apply: WebP has no grayscale mode.
#include <webp/decode.h>
#include <webp/demux.h>

#include <cstring>
#include <memory>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "codec/decode.h"
#include "common/errors.h"
#include "common/status_macros.h"

namespace shardpack::codec {
namespace {

using common::AsAbsl;

constexpr int kChannels = 3;

absl::Status WebpError(std::string_view name, size_t size, VP8StatusCode status,
                       std::string_view where) {
  switch (status) {
    case VP8_STATUS_NOT_ENOUGH_DATA:
      return common::DataLossAt(
          name, size, absl::StrCat("truncated WebP data: the file ends in the ", AsAbsl(where)));
    case VP8_STATUS_UNSUPPORTED_FEATURE:
      return absl::InvalidArgumentError(absl::StrCat(AsAbsl(name), ": unsupported WebP: the ",
                                                     AsAbsl(where),
                                                     " uses a feature libwebp does not decode"));
    case VP8_STATUS_OUT_OF_MEMORY:
      return absl::ResourceExhaustedError(
          absl::StrCat(AsAbsl(name), ": no memory to decode the WebP ", AsAbsl(where)));
    default:
      return absl::DataLossError(absl::StrCat(AsAbsl(name), ": corrupt WebP data: bad ",
                                              AsAbsl(where), " (libwebp status ",
                                              static_cast<int>(status), ")"));
  }
}

// Decodes the still image (or frame bitstream) `bytes` of width x height
// into `out`, rows `stride` bytes apart. libwebp checks the bitstream's own
// size against the buffer's, so nothing is written outside it.
VP8StatusCode DecodeRgbInto(const uint8_t* bytes, size_t size, uint32_t width, uint32_t height,
                            uint8_t* out, size_t stride) {
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) return VP8_STATUS_INVALID_PARAM;
  config.output.colorspace = MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = out;
  config.output.u.RGBA.stride = static_cast<int>(stride);
  config.output.u.RGBA.size = stride * (height - 1) + size_t{width} * kChannels;
  return WebPDecode(bytes, size, &config);
}

struct DemuxDeleter {
  void operator()(WebPDemuxer* d) const { WebPDemuxDelete(d); }
};

struct IteratorReleaser {
  void operator()(WebPIterator* it) const { WebPDemuxReleaseIterator(it); }
};

// The first frame of an animation, as WebPAnimDecoder (PIL's path) gives
// it: decoded unblended (it is a key frame) into a canvas of transparent
// black, whose RGB is black. The canvas size was checked by the caller.
absl::Status DecodeFirstFrame(ByteSpan data, std::string_view name, uint32_t width, uint32_t height,
                              uint8_t* out) {
  const WebPData webp = {data.data(), data.size()};
  WebPDemuxState state = WEBP_DEMUX_PARSE_ERROR;
  std::unique_ptr<WebPDemuxer, DemuxDeleter> demux(WebPDemuxPartial(&webp, &state));
  if (demux == nullptr || state != WEBP_DEMUX_DONE) {
    return WebpError(
        name, data.size(),
        state == WEBP_DEMUX_PARSE_ERROR ? VP8_STATUS_BITSTREAM_ERROR : VP8_STATUS_NOT_ENOUGH_DATA,
        "animation's chunks");
  }
  if (WebPDemuxGetI(demux.get(), WEBP_FF_CANVAS_WIDTH) != width ||
      WebPDemuxGetI(demux.get(), WEBP_FF_CANVAS_HEIGHT) != height) {
    return WebpError(name, data.size(), VP8_STATUS_BITSTREAM_ERROR, "animation's canvas size");
  }
  WebPIterator iter;
  if (!WebPDemuxGetFrame(demux.get(), 1, &iter)) {
    return absl::DataLossError(
        absl::StrCat(AsAbsl(name), ": corrupt WebP data: an animation without frames"));
  }
  std::unique_ptr<WebPIterator, IteratorReleaser> release(&iter);
  // libwebp bounds the frame by the output buffer it is given; ours starts
  // at the frame's offset, so the frame must also fit the canvas from there.
  WebPBitstreamFeatures frame;
  const VP8StatusCode header = WebPGetFeatures(iter.fragment.bytes, iter.fragment.size, &frame);
  if (header != VP8_STATUS_OK) return WebpError(name, data.size(), header, "first frame's header");
  if (frame.width != iter.width || frame.height != iter.height || iter.x_offset < 0 ||
      iter.y_offset < 0 || uint64_t{width} < uint64_t(iter.x_offset) + uint64_t(iter.width) ||
      uint64_t{height} < uint64_t(iter.y_offset) + uint64_t(iter.height)) {
    return WebpError(name, data.size(), VP8_STATUS_BITSTREAM_ERROR,
                     "first frame's place (outside the canvas)");
  }
  const size_t stride = size_t{width} * kChannels;
  std::memset(out, 0, stride * height);
  uint8_t* at = out + size_t(iter.y_offset) * stride + size_t(iter.x_offset) * kChannels;
  const VP8StatusCode status =
      DecodeRgbInto(iter.fragment.bytes, iter.fragment.size, static_cast<uint32_t>(iter.width),
                    static_cast<uint32_t>(iter.height), at, stride);
  if (status != VP8_STATUS_OK) return WebpError(name, data.size(), status, "first frame");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PixelView> DecodeWebp(ByteSpan data, std::string_view name, const DecodeSpec& spec,
                                     DecodeBuffers* buffers) {
  WebPBitstreamFeatures features;
  // libwebp takes a null pointer (an empty span's) for a bad parameter.
  static constexpr uint8_t kNothing[1] = {0};
  const uint8_t* bytes = data.empty() ? kNothing : data.data();
  const VP8StatusCode header = WebPGetFeatures(bytes, data.size(), &features);
  if (header != VP8_STATUS_OK) return WebpError(name, data.size(), header, "header");
  const auto width = static_cast<uint32_t>(features.width);
  const auto height = static_cast<uint32_t>(features.height);
  SP_RETURN_IF_ERROR(CheckImageSize(name, ImageFormat::kWebp, width, height, spec));
  SP_ASSIGN_OR_RETURN(uint8_t * out, PixelMemory(name, width, height, kChannels, buffers));
  if (features.has_animation) {
    SP_RETURN_IF_ERROR(DecodeFirstFrame(data, name, width, height, out));
  } else {
    const VP8StatusCode status =
        DecodeRgbInto(bytes, data.size(), width, height, out, size_t{width} * kChannels);
    if (status != VP8_STATUS_OK) return WebpError(name, data.size(), status, "image data");
  }
  return PixelView{out, width, height, kChannels};
}

}  // namespace shardpack::codec
