#include "tools/dump/record_pixels.h"

#include "absl/strings/str_cat.h"

namespace shardpack::dump {

std::span<const uint8_t> Interleaved(const Record& r, std::vector<uint8_t>* buffer) {
  if (r.image.layout == Layout::kHWC || r.image.channels <= 1) return r.payload;
  const size_t plane = size_t{r.image.height} * r.image.width;
  const size_t c = r.image.channels;
  buffer->resize(r.payload.size());
  for (size_t ch = 0; ch < c; ++ch) {
    const uint8_t* src = r.payload.data() + ch * plane;
    for (size_t i = 0; i < plane; ++i) (*buffer)[i * c + ch] = src[i];
  }
  return *buffer;
}

absl::StatusOr<codec::PixelView> RecordPixels(const Record& r, codec::JpegDecoder* decoder,
                                                 std::vector<uint8_t>* buffer) {
  if (r.image.encoding == Encoding::kJpeg) return decoder->Decode(r.payload);
  if (r.image.channels != 1 && r.image.channels != 3) {
    return absl::InvalidArgumentError(absl::StrCat("a raw image of ", r.image.channels,
                                                   " channels cannot be shown (1 or 3 can)"));
  }
  if (r.image.width == 0 || r.image.height == 0 || r.image.RawBytes() != r.payload.size()) {
    return absl::DataLossError(absl::StrCat("raw payload of ", r.payload.size(),
                                            " bytes does not match its shape ", r.image.height, "x",
                                            r.image.width, "x", int{r.image.channels}));
  }
  std::span<const uint8_t> pixels = Interleaved(r, buffer);
  return codec::PixelView{pixels.data(), r.image.width, r.image.height, r.image.channels};
}

}  // namespace shardpack::dump
