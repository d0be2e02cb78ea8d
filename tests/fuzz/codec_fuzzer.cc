// libFuzzer target for the codec library: any bytes, sniffed and decoded as
// the packer decodes an image file (DecodeImage), once as RGB and once with
// keep_gray. Invariants: no crash, leak or sanitizer report; an error is
// DataLoss, InvalidArgument or ResourceExhausted and starts with the file's
// name; an image is within max_pixels, RGB (or gray only with keep_gray),
// and its gray decode is its RGB decode with the samples equal.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "codec/decode.h"
#include "codec/image_format.h"

namespace {

constexpr char kName[] = "fuzz.img";

void Expect(bool ok, std::string_view what, std::string_view detail = {}) {
  if (ok) return;
  std::fprintf(stderr, "codec_fuzzer: invariant broken: %.*s%s%.*s\n",
               static_cast<int>(what.size()), what.data(), detail.empty() ? "" : ": ",
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

// Checks an error; true when the decode succeeded.
bool CheckResult(const absl::StatusOr<shardpack::codec::PixelView>& r,
                 const shardpack::codec::DecodeSpec& spec) {
  if (!r.ok()) {
    const absl::Status& s = r.status();
    const std::string_view m(s.message().data(), s.message().size());
    Expect(s.code() == absl::StatusCode::kDataLoss ||
               s.code() == absl::StatusCode::kInvalidArgument ||
               s.code() == absl::StatusCode::kResourceExhausted,
           "error code", s.ToString());
    Expect(m.starts_with(kName), "error does not name the file", m);
    return false;
  }
  const shardpack::codec::PixelView& v = *r;
  Expect(v.width > 0 && v.height > 0, "empty image");
  Expect(uint64_t{v.width} * v.height <= spec.max_pixels, "image over max_pixels");
  Expect(v.channels == 3 || (spec.keep_gray && v.channels == 1), "channels");
  Expect(v.data != nullptr, "no pixels");
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardpack::codec;
  const shardpack::ByteSpan bytes(data, size);
  // Reused across inputs, as a packer thread reuses them.
  static DecodeBuffers buffers;
  static std::vector<uint8_t> rgb;
  DecodeSpec spec;
  spec.max_pixels = uint64_t{1} << 22;  // keeps a run's memory and time bounded
  const ImageFormat format = SniffImageFormat(bytes);

  auto color = DecodeImage(format, bytes, kName, spec, &buffers);
  const bool color_ok = CheckResult(color, spec);
  if (color_ok) rgb.assign(color->data, color->data + color->bytes());  // reads every sample

  spec.keep_gray = true;
  auto gray = DecodeImage(format, bytes, kName, spec, &buffers);
  const bool gray_ok = CheckResult(gray, spec);
  Expect(color_ok == gray_ok, "keep_gray changes whether the file decodes");
  if (!gray_ok) return 0;
  Expect(gray->width == color->width && gray->height == color->height,
         "keep_gray changes the size");
  if (gray->channels == 3) {
    Expect(std::equal(rgb.begin(), rgb.end(), gray->data), "keep_gray changes a color image");
    return 0;
  }
  for (size_t i = 0; i < size_t{gray->width} * gray->height; ++i) {
    const uint8_t g = gray->data[i];
    Expect(rgb[3 * i] == g && rgb[3 * i + 1] == g && rgb[3 * i + 2] == g,
           "the gray decode differs from the RGB one");
  }
  return 0;
}
