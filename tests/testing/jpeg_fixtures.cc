#include "tests/testing/jpeg_fixtures.h"

#include <stdio.h>  // before jpeglib.h, which needs FILE and size_t
// clang-format off
#include <jpeglib.h>
// clang-format on

#include <cstdlib>
#include <cstring>

#include "datasets/demo.h"
#include "gtest/gtest.h"

namespace shardpack::testing {

std::vector<uint8_t> Scene(int w, int h, int cls, uint64_t seed) {
  std::vector<uint8_t> rgb(size_t(w) * h * 3);
  datasets::RenderDemoScene(w, h, cls, seed, rgb.data());
  return rgb;
}

std::vector<uint8_t> EncodeJpeg(const std::vector<uint8_t>& pixels, int w, int h, int pixel_format,
                                int subsamp, int quality, int flags) {
  tjhandle tj = tjInitCompress();
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const int rc =
      tjCompress2(tj, pixels.data(), w, 0, h, pixel_format, &out, &size, subsamp, quality, flags);
  std::vector<uint8_t> jpeg;
  if (rc == 0) {
    jpeg.assign(out, out + size);
  } else {
    ADD_FAILURE() << "tjCompress2 of a " << w << "x" << h << " fixture: " << tjGetErrorStr2(tj);
  }
  tjFree(out);
  tjDestroy(tj);
  return jpeg;
}

std::vector<uint8_t> TjSceneJpeg(int w, int h, int subsamp, int flags) {
  std::vector<uint8_t> rgb = Scene(w, h);
  if (subsamp == TJSAMP_GRAY) {
    std::vector<uint8_t> gray(size_t(w) * h);
    for (size_t i = 0; i < gray.size(); ++i) gray[i] = rgb[3 * i + 1];
    return EncodeJpeg(gray, w, h, TJPF_GRAY, subsamp, 90, flags);
  }
  return EncodeJpeg(rgb, w, h, TJPF_RGB, subsamp, 90, flags);
}

// libjpeg's own error handling (exit on error): the fixtures are valid.
std::vector<uint8_t> LibjpegSceneJpeg(int w, int h, const LibjpegOptions& o) {
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

std::vector<uint8_t> TjDecode(const std::vector<uint8_t>& jpeg, int w, int h, int pf) {
  tjhandle tj = tjInitDecompress();
  std::vector<uint8_t> out(size_t(w) * h * tjPixelSize[pf]);
  int rc = tjDecompress2(tj, jpeg.data(), jpeg.size(), out.data(), w, 0, h, pf, 0);
  tjDestroy(tj);
  if (rc != 0) out.clear();
  return out;
}

}  // namespace shardpack::testing
