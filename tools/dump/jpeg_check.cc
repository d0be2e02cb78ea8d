#include "tools/dump/jpeg_check.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "codec/jpeg_decoder.h"

namespace shardpack::dump {
namespace {

using codec::JpegDecoder;

// Larger images are refused rather than decoded: a damaged header can claim
// 65535 x 65535.
constexpr uint64_t kMaxPixels = uint64_t{1} << 28;

}  // namespace

JpegChecker::JpegChecker()
    : decoder_(std::make_unique<JpegDecoder>(codec::JpegDecoderOptions{kMaxPixels})) {}

JpegChecker::~JpegChecker() = default;

absl::Status JpegChecker::Check(std::span<const uint8_t> jpeg, const ImageInfo& expected) {
  JpegDecoder* decoder = decoder_.get();
  if (jpeg.empty()) return absl::DataLossError("jpeg: empty payload");
  absl::StatusOr<codec::JpegHeader> header = decoder->Start(jpeg);
  if (!header.ok()) {
    return absl::DataLossError(absl::StrCat("jpeg header: ", header.status().message()));
  }
  // Gray is 1 channel, CMYK/YCCK 4, the rest 3: what the packer records.
  const int channels = header->components;
  if (header->width != expected.width || header->height != expected.height ||
      channels != expected.channels) {
    return absl::DataLossError(absl::StrCat("jpeg is ", header->width, "x", header->height, "x",
                                            channels, " but the record says ", expected.width,
                                            "x", expected.height, "x", int{expected.channels}));
  }
  // All of the entropy-coded data is decoded and checked (at 1/8 scale: the
  // IDCT and color work are what scaling saves, not the checking); damage
  // warnings such as "Premature end of JPEG file" count as failures.
  absl::Status s =
      decoder->DecodeRegion({0, 0, header->width, header->height}, 1, 1).status();
  if (!s.ok()) {
    absl::string_view why = s.message();
    constexpr absl::string_view kPrefix = "corrupt JPEG data: ";
    if (absl::StartsWith(why, kPrefix)) why.remove_prefix(kPrefix.size());
    return absl::DataLossError(absl::StrCat("jpeg damaged: ", why));
  }
  return absl::OkStatus();
}

}  // namespace shardpack::dump
