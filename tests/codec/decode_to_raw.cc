// Test tool: decodes one image file with the codec library and writes
// "<width> <height> <channels>\n" and the pixels to stdout, so that the PIL
// comparison tests (tests/codec/*_pil_test.py) can set our decoders beside
// PIL's. On failure: the error on stderr, exit 1; usage: exit 2.
//
//   decode_to_raw [--keep-gray] [--max-pixels N] FILE
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "codec/decode.h"
#include "shardpack/file.h"

int main(int argc, char** argv) {
  shardpack::codec::DecodeSpec spec;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--keep-gray") {
      spec.keep_gray = true;
    } else if (arg == "--max-pixels" && i + 1 < argc) {
      spec.max_pixels = std::strtoull(argv[++i], nullptr, 10);
    } else if (path.empty()) {
      path = arg;
    } else {
      std::fprintf(stderr, "usage: decode_to_raw [--keep-gray] [--max-pixels N] FILE\n");
      return 2;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "usage: decode_to_raw [--keep-gray] [--max-pixels N] FILE\n");
    return 2;
  }
  absl::StatusOr<std::string> bytes = shardpack::ReadSmallFile(path);
  if (!bytes.ok()) {
    std::fprintf(stderr, "%s\n", std::string(bytes.status().message()).c_str());
    return 1;
  }
  const shardpack::ByteSpan data(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size());
  shardpack::codec::DecodeBuffers buffers;
  auto pixels = shardpack::codec::DecodeImage(shardpack::codec::SniffImageFormat(data), data, path,
                                              spec, &buffers);
  if (!pixels.ok()) {
    std::fprintf(stderr, "%s\n", pixels.status().ToString().c_str());
    return 1;
  }
  std::printf("%u %u %d\n", pixels->width, pixels->height, pixels->channels);
  std::fwrite(pixels->data, 1, pixels->bytes(), stdout);
  return 0;
}
