// Test tool: decodes one image file with the codec library and writes
// "<width> <height> <channels>\n" and the pixels to stdout, so that the PIL
// comparison tests (tests/codec/*_pil_test.py) can set our decoders beside
// PIL's. On failure: the error on stderr, exit 1; usage: exit 2.
//
//   decode_to_raw [--keep-gray] [--max-pixels N] [--jpeg packer|reader]
//                 [--restart-markers] [--region X,Y,W,H] FILE
//
// A JPEG goes through one of the two JPEG paths at full size: `packer`
// (the default) is the packer's, Transcoder::Decode (TurboJPEG); `reader`
// is the reader's, JpegDecoder. With --restart-markers the JPEG is first
// re-coded as `shardpack images --restart-markers` stores it. --region
// (reader only) decodes just that rectangle with DecodeRegion at full
// scale, as the reader's crops do (from a cut of the MCUs when the JPEG has
// restart markers), and writes the rectangle.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codec/decode.h"
#include "codec/jpeg_decoder.h"
#include "codec/jpeg_restart.h"
#include "codec/transcode.h"
#include "shardpack/file.h"

namespace {

using shardpack::ByteSpan;
using shardpack::codec::PixelView;

constexpr char kUsage[] =
    "usage: decode_to_raw [--keep-gray] [--max-pixels N] [--jpeg packer|reader] "
    "[--restart-markers] [--region X,Y,W,H] FILE\n";

struct Args {
  shardpack::codec::DecodeSpec spec;
  bool reader = false;
  bool restart_markers = false;
  bool region = false;
  shardpack::codec::JpegRect rect;
  std::string path;
};

bool Parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--keep-gray") {
      a->spec.keep_gray = true;
    } else if (arg == "--max-pixels" && has_value) {
      a->spec.max_pixels = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--jpeg" && has_value) {
      const std::string_view which = argv[++i];
      if (which != "packer" && which != "reader") return false;
      a->reader = which == "reader";
    } else if (arg == "--restart-markers") {
      a->restart_markers = true;
    } else if (arg == "--region" && has_value) {
      a->region = std::sscanf(argv[++i], "%u,%u,%u,%u", &a->rect.x, &a->rect.y, &a->rect.width,
                              &a->rect.height) == 4;
      if (!a->region) return false;
    } else if (a->path.empty() && !arg.empty() && arg[0] != '-') {
      a->path = arg;
    } else {
      return false;
    }
  }
  return !a->path.empty() && (!a->region || a->reader);
}

// The rectangle a region decode asked for, copied out of its margin.
absl::StatusOr<PixelView> CropRegion(shardpack::codec::JpegDecoder* decoder,
                                     const shardpack::codec::JpegRect& rect,
                                     std::vector<uint8_t>* out) {
  // Twice the rectangle's size, more than any scale below 8/8 keeps of it:
  // full scale.
  absl::StatusOr<shardpack::codec::DecodedRegion> region =
      decoder->DecodeRegion(rect, 2 * rect.width, 2 * rect.height);
  if (region.ok() && region->scale_num != 8) return absl::InternalError("not at full scale");
  if (!region.ok()) return region.status();
  const PixelView& px = region->pixels;
  const auto x0 = static_cast<uint32_t>(region->box.x0), y0 = static_cast<uint32_t>(region->box.y0);
  const auto w = static_cast<uint32_t>(region->box.x1) - x0;
  const auto h = static_cast<uint32_t>(region->box.y1) - y0;
  out->resize(size_t{w} * h * 3);
  for (uint32_t y = 0; y < h; ++y) {
    std::memcpy(out->data() + size_t{y} * w * 3, px.data + (y0 + y) * px.stride() + x0 * 3,
                size_t{w} * 3);
  }
  return PixelView{out->data(), w, h, 3};
}

// The reader's decode (which, as in the reader, does not know the file's
// name: the message gets it here).
absl::StatusOr<PixelView> ReaderDecode(const Args& a, ByteSpan jpeg,
                                       shardpack::codec::JpegDecoder* decoder,
                                       std::vector<uint8_t>* out) {
  absl::StatusOr<PixelView> pixels = decoder->Decode(jpeg);
  if (pixels.ok() && a.region) {
    absl::Status started = decoder->Start(jpeg).status();
    pixels = started.ok() ? CropRegion(decoder, a.rect, out) : started;
  }
  if (pixels.ok()) return pixels;
  return absl::Status(pixels.status().code(),
                      a.path + ": " + std::string(pixels.status().message()));
}

absl::StatusOr<PixelView> DecodeJpeg(const Args& a, ByteSpan jpeg, std::vector<uint8_t>* recoded,
                                     std::vector<uint8_t>* out) {
  if (a.restart_markers) {
    shardpack::codec::JpegRestartRecoder recoder;
    absl::StatusOr<bool> done = recoder.Recode(jpeg, recoded);
    if (!done.ok()) return done.status();
    if (*done) jpeg = ByteSpan(recoded->data(), recoded->size());
  }
  if (a.reader) {
    static shardpack::codec::JpegDecoder decoder;  // outlives the view it returns
    return ReaderDecode(a, jpeg, &decoder, out);
  }
  static absl::StatusOr<std::unique_ptr<shardpack::codec::Transcoder>> transcoder =
      shardpack::codec::Transcoder::Create();
  if (!transcoder.ok()) return transcoder.status();
  shardpack::codec::DecodeOptions options;
  options.keep_gray = a.spec.keep_gray;
  options.probe.max_pixels = a.spec.max_pixels;
  return (*transcoder)->Decode(jpeg, a.path, options);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!Parse(argc, argv, &a)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  absl::StatusOr<std::string> bytes = shardpack::ReadSmallFile(a.path);
  if (!bytes.ok()) {
    std::fprintf(stderr, "%s\n", std::string(bytes.status().message()).c_str());
    return 1;
  }
  const ByteSpan data(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size());
  shardpack::codec::DecodeBuffers buffers;
  std::vector<uint8_t> recoded, region;
  const shardpack::codec::ImageFormat format = shardpack::codec::SniffImageFormat(data);
  auto pixels = format == shardpack::codec::ImageFormat::kJpeg
                    ? DecodeJpeg(a, data, &recoded, &region)
                    : shardpack::codec::DecodeImage(format, data, a.path, a.spec, &buffers);
  if (!pixels.ok()) {
    std::fprintf(stderr, "%s\n", pixels.status().ToString().c_str());
    return 1;
  }
  std::printf("%u %u %d\n", pixels->width, pixels->height, pixels->channels);
  std::fwrite(pixels->data, 1, pixels->bytes(), stdout);
  return 0;
}
