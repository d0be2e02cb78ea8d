#include "tools/dump/jpeg_check.h"

#include <turbojpeg.h>

#include "absl/strings/str_cat.h"

namespace shardpack::dump {
namespace {

// Larger decodes are refused rather than allocated: a damaged header can
// claim 65535 x 65535 x 4.
constexpr uint64_t kMaxDecodedBytes = uint64_t{1} << 30;

}  // namespace

JpegChecker::JpegChecker() : handle_(tjInitDecompress()) {}

JpegChecker::~JpegChecker() {
  if (handle_ != nullptr) tjDestroy(static_cast<tjhandle>(handle_));
}

absl::Status JpegChecker::Check(std::span<const uint8_t> jpeg, const ImageInfo& expected) {
  absl::Status s = Decode(jpeg, expected);
  if (!s.ok() && handle_ != nullptr) {
    // TurboJPEG 2.1 leaves a handle whose header read failed half-way in a
    // state that misreads the next image (as 0x0); start afresh.
    tjDestroy(static_cast<tjhandle>(handle_));
    handle_ = tjInitDecompress();
  }
  return s;
}

absl::Status JpegChecker::Decode(std::span<const uint8_t> jpeg, const ImageInfo& expected) {
  tjhandle h = static_cast<tjhandle>(handle_);
  if (h == nullptr) return absl::InternalError("cannot create a TurboJPEG decompressor");
  if (jpeg.empty()) return absl::DataLossError("jpeg: empty payload");
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(h, jpeg.data(), jpeg.size(), &width, &height, &subsamp, &colorspace) !=
      0) {
    return absl::DataLossError(absl::StrCat("jpeg header: ", tjGetErrorStr2(h)));
  }
  if (width <= 0 || height <= 0) {
    return absl::DataLossError(absl::StrCat("jpeg header: size ", width, "x", height));
  }
  int format = TJPF_RGB, channels = 3;
  if (colorspace == TJCS_GRAY) {
    format = TJPF_GRAY;
    channels = 1;
  } else if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) {
    format = TJPF_CMYK;
    channels = 4;
  }
  if (static_cast<uint32_t>(width) != expected.width ||
      static_cast<uint32_t>(height) != expected.height || channels != expected.channels) {
    return absl::DataLossError(absl::StrCat("jpeg is ", width, "x", height, "x", channels,
                                            " but the record says ", expected.width, "x",
                                            expected.height, "x", int{expected.channels}));
  }
  const uint64_t bytes = uint64_t(width) * uint64_t(height) * uint64_t(channels);
  if (bytes > kMaxDecodedBytes) {
    return absl::DataLossError(
        absl::StrCat("jpeg of ", width, "x", height, " is too large to decode"));
  }
  if (pixels_.size() < bytes) pixels_.resize(bytes);
  if (tjDecompress2(h, jpeg.data(), jpeg.size(), pixels_.data(), width, 0, height, format, 0) !=
      0) {
    bool warning = tjGetErrorCode(h) == TJERR_WARNING;
    return absl::DataLossError(
        absl::StrCat("jpeg ", warning ? "damaged: " : "decode failed: ", tjGetErrorStr2(h)));
  }
  return absl::OkStatus();
}

}  // namespace shardpack::dump
