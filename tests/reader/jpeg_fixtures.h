// JPEG fixtures made at test time: natural-looking scenes (the demo
// generator's) compressed with TurboJPEG, or with libjpeg where TurboJPEG
// 2.1 has no knob (restart markers).
#ifndef SHARDPACK_TESTS_READER_JPEG_FIXTURES_H_
#define SHARDPACK_TESTS_READER_JPEG_FIXTURES_H_

#include <setjmp.h>
#include <stdio.h>

#include <jpeglib.h>
#include <turbojpeg.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "datasets/demo.h"

namespace shardpack::testing {

inline std::vector<uint8_t> Scene(int w, int h, int cls = 3, uint64_t seed = 7) {
  std::vector<uint8_t> rgb(size_t(w) * h * 3);
  datasets::RenderDemoScene(w, h, cls, seed, rgb.data());
  return rgb;
}

// `pixels` holds w x h x (gray ? 1 : 3) bytes.
inline std::vector<uint8_t> TjEncode(const std::vector<uint8_t>& pixels, int w, int h, int subsamp,
                                     int quality = 90, int flags = 0) {
  tjhandle tj = tjInitCompress();
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const int pf = subsamp == TJSAMP_GRAY ? TJPF_GRAY : TJPF_RGB;
  int rc = tjCompress2(tj, pixels.data(), w, 0, h, pf, &out, &size, subsamp, quality, flags);
  std::vector<uint8_t> jpeg;
  if (rc == 0) jpeg.assign(out, out + size);
  tjFree(out);
  tjDestroy(tj);
  return jpeg;
}

inline std::vector<uint8_t> TjSceneJpeg(int w, int h, int subsamp, int flags = 0) {
  std::vector<uint8_t> rgb = Scene(w, h);
  if (subsamp == TJSAMP_GRAY) {
    std::vector<uint8_t> gray(size_t(w) * h);
    for (size_t i = 0; i < gray.size(); ++i) gray[i] = rgb[3 * i + 1];
    return TjEncode(gray, w, h, subsamp, 90, flags);
  }
  return TjEncode(rgb, w, h, subsamp, 90, flags);
}

// What libjpeg can write that TurboJPEG 2.1 cannot.
struct LibjpegOptions {
  int restart_rows = 0;  // a restart marker every this many MCU rows
  bool arithmetic = false;
  int scans = 1;  // 3: one non-interleaved scan per component
  const char* comment = nullptr;  // a COM marker
};

// 4:2:0 RGB scene through libjpeg (the test's own error handling: fixtures
// are valid).
inline std::vector<uint8_t> LibjpegSceneJpeg(int w, int h, const LibjpegOptions& o) {
  std::vector<uint8_t> rgb = Scene(w, h);
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &out, &size);
  c.image_width = static_cast<JDIMENSION>(w);
  c.image_height = static_cast<JDIMENSION>(h);
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 90, TRUE);
  c.restart_in_rows = o.restart_rows;
  c.arith_code = o.arithmetic ? TRUE : FALSE;
  jpeg_scan_info scans[3];
  if (o.scans == 3) {
    for (int i = 0; i < 3; ++i) scans[i] = jpeg_scan_info{1, {i, 0, 0, 0}, 0, 63, 0, 0};
    c.scan_info = scans;
    c.num_scans = 3;
  }
  jpeg_start_compress(&c, TRUE);
  if (o.comment != nullptr) {
    jpeg_write_marker(&c, JPEG_COM, reinterpret_cast<const JOCTET*>(o.comment),
                      static_cast<unsigned int>(strlen(o.comment)));
  }
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = rgb.data() + size_t(c.next_scanline) * w * 3;
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  std::vector<uint8_t> jpeg(out, out + size);
  jpeg_destroy_compress(&c);
  free(out);
  return jpeg;
}

// 4:2:0 RGB scene with a restart marker every `restart_rows` MCU rows.
inline std::vector<uint8_t> RestartJpeg(int w, int h, int restart_rows) {
  return LibjpegSceneJpeg(w, h, {.restart_rows = restart_rows});
}

// TurboJPEG's decode of `jpeg` at (w, h) (a scaled size, or full), in
// pixel format `pf`.
inline std::vector<uint8_t> TjDecode(const std::vector<uint8_t>& jpeg, int w, int h, int pf) {
  tjhandle tj = tjInitDecompress();
  std::vector<uint8_t> out(size_t(w) * h * tjPixelSize[pf]);
  int rc = tjDecompress2(tj, jpeg.data(), jpeg.size(), out.data(), w, 0, h, pf, 0);
  tjDestroy(tj);
  if (rc != 0) out.clear();
  return out;
}

}  // namespace shardpack::testing

#endif  // SHARDPACK_TESTS_READER_JPEG_FIXTURES_H_
