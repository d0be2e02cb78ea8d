// JPEG fixtures made at test time: the one place tests encode JPEGs.
// TurboJPEG compresses (EncodeJpeg), libjpeg where TurboJPEG 2.1 has no knob
// (restart markers, arithmetic coding, non-interleaved scans, comments);
// the pixels are the demo generator's natural-looking scenes, or the test's.
// A failure to encode is a test failure, so a fixture is never silently empty.
#ifndef SHARDPACK_TESTS_TESTING_JPEG_FIXTURES_H_
#define SHARDPACK_TESTS_TESTING_JPEG_FIXTURES_H_

#include <turbojpeg.h>
// jpeglib.h needs size_t and FILE declared first.
#include <stddef.h>
#include <stdio.h>

#include <jpeglib.h>

#include <cstdint>
#include <vector>

namespace shardpack::testing {

// A libjpeg decompressor with `jpeg`'s header read (jpeg must outlive it),
// for tests that use libjpeg's API directly: `d` is ready for
// jpeg_start_decompress or jpeg_read_coefficients. libjpeg's default error
// handler exits on an error: for valid fixtures only.
struct LibjpegDecompressor {
  explicit LibjpegDecompressor(const std::vector<uint8_t>& jpeg) {
    d.err = jpeg_std_error(&err);
    jpeg_create_decompress(&d);
    jpeg_mem_src(&d, jpeg.data(), static_cast<unsigned long>(jpeg.size()));
    header = jpeg_read_header(&d, TRUE);
  }
  ~LibjpegDecompressor() { jpeg_destroy_decompress(&d); }
  LibjpegDecompressor(const LibjpegDecompressor&) = delete;
  LibjpegDecompressor& operator=(const LibjpegDecompressor&) = delete;

  jpeg_decompress_struct d;
  jpeg_error_mgr err;
  int header = 0;  // jpeg_read_header's result
};

// A w x h RGB demo scene (datasets::RenderDemoScene) of class `cls`.
std::vector<uint8_t> Scene(int w, int h, int cls = 3, uint64_t seed = 7);

// `pixels` (w x h in TurboJPEG pixel format `pixel_format`: TJPF_RGB,
// TJPF_GRAY, TJPF_CMYK, ...) compressed by TurboJPEG with chroma
// subsampling `subsamp`, `quality` and TJFLAG_* `flags`.
std::vector<uint8_t> EncodeJpeg(const std::vector<uint8_t>& pixels, int w, int h, int pixel_format,
                                int subsamp, int quality = 90, int flags = 0);

// A w x h scene as JPEG: gray (the green channel) for TJSAMP_GRAY, else RGB.
std::vector<uint8_t> TjSceneJpeg(int w, int h, int subsamp, int flags = 0);

// What libjpeg can write that TurboJPEG 2.1 cannot.
struct LibjpegOptions {
  int restart_rows = 0;  // a restart marker every this many MCU rows
  bool arithmetic = false;
  int scans = 1;                  // 3: one non-interleaved scan per component
  const char* comment = nullptr;  // a COM marker
};

// 4:2:0 RGB scene through libjpeg.
std::vector<uint8_t> LibjpegSceneJpeg(int w, int h, const LibjpegOptions& o);

// 4:2:0 RGB scene with a restart marker every `restart_rows` MCU rows.
inline std::vector<uint8_t> RestartJpeg(int w, int h, int restart_rows) {
  return LibjpegSceneJpeg(w, h, {.restart_rows = restart_rows});
}

// TurboJPEG's decode of `jpeg` at (w, h) (a scaled size, or full), in
// pixel format `pf`; empty if TurboJPEG fails.
std::vector<uint8_t> TjDecode(const std::vector<uint8_t>& jpeg, int w, int h, int pf);

}  // namespace shardpack::testing

#endif  // SHARDPACK_TESTS_TESTING_JPEG_FIXTURES_H_
