#include "codec/jpeg_decoder.h"

// jpeglib.h needs size_t and FILE declared first.
#include <setjmp.h>
#include <stdio.h>

#include <jpeglib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/color.h"
#include "codec/jpeg_entropy.h"
#include "codec/jpeg_error.h"
#include "codec/jpeg_restart.h"

namespace shardpack::internal {
namespace {

uint32_t CeilDiv8(uint64_t v) { return static_cast<uint32_t>((v + 7) / 8); }

}  // namespace

struct JpegDecoder::State {
  State(bool eager, bool eager_wide) : entropy(eager, eager_wide) {}
  jpeg_decompress_struct cinfo;
  JpegErrorManager err;
  bool started = false;             // a header was read and no decode finished
  ByteSpan jpeg;                    // the started JPEG
  std::vector<uint8_t> pixels;      // the decoded region, packed rows
  std::vector<JSAMPROW> row_ptrs;   // into `pixels`
  std::vector<uint8_t> window;      // a cut of `jpeg` (jpeg_restart.h)
  std::vector<uint32_t> window_ends;
  JpegEntropyDecoder entropy;       // takes over Huffman decoding (jpeg_entropy.h)
  // Tables of earlier images set aside for the one being decoded, which
  // does not define them (ForgetEarlierTables).
  JHUFF_TBL* set_aside_dc[NUM_HUFF_TBLS] = {};
  JHUFF_TBL* set_aside_ac[NUM_HUFF_TBLS] = {};
  JQUANT_TBL* set_aside_quant[NUM_QUANT_TBLS] = {};
};

namespace {

// Returns false when libjpeg failed (the message is in err.message). Kept
// free of C++ objects with destructors: a longjmp passes over this frame's
// callees only, and nothing here is read after it but `cinfo`.
bool ReadHeaderC(jpeg_decompress_struct* cinfo, JpegErrorManager* err, const uint8_t* data,
                 size_t size) {
  if (setjmp(err->jump)) {
    jpeg_abort_decompress(cinfo);
    return false;
  }
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(cinfo, TRUE);
  return true;
}

// The scaled rectangle to decode: [x0, x1) x [y0, y1) of the scaled image.
struct ScaledRect {
  JDIMENSION x0, x1, y0, y1;
};

// Starts the decompressor at the chosen scale, crops, skips, reads the rows
// of `r` and stops. `pixels`/`row_ptrs` are grown here (after the crop
// fixes the width). On success *x_offset is where the decoded columns
// start. Returns false when libjpeg failed.
bool DecodeC(jpeg_decompress_struct* cinfo, JpegErrorManager* err, std::vector<uint8_t>* pixels,
             std::vector<JSAMPROW>* row_ptrs, JpegEntropyDecoder* entropy, int scale_num,
             ScaledRect r, JDIMENSION* x_offset, JDIMENSION* out_width) {
  if (setjmp(err->jump)) {
    jpeg_abort_decompress(cinfo);
    return false;
  }
  const bool cmyk = cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK;
  cinfo->out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  cinfo->scale_num = static_cast<unsigned int>(scale_num);
  cinfo->scale_denom = 8;
  cinfo->do_fancy_upsampling = TRUE;
  jpeg_start_decompress(cinfo);
  r.x1 = std::min(r.x1, cinfo->output_width);
  r.y1 = std::min(r.y1, cinfo->output_height);
  JDIMENSION xoff = r.x0, width = r.x1 - r.x0;
  if (width < cinfo->output_width) jpeg_crop_scanline(cinfo, &xoff, &width);
  if (entropy != nullptr) entropy->Install(cinfo);
  const size_t stride = size_t{width} * static_cast<size_t>(cinfo->output_components);
  const JDIMENSION rows = r.y1 - r.y0;
  if (pixels->size() < stride * rows) pixels->resize(stride * rows);
  if (row_ptrs->size() < rows) row_ptrs->resize(rows);
  for (JDIMENSION i = 0; i < rows; ++i) (*row_ptrs)[i] = pixels->data() + i * stride;
  if (r.y0 > 0) jpeg_skip_scanlines(cinfo, r.y0);
  while (cinfo->output_scanline < r.y1) {
    const JDIMENSION done = cinfo->output_scanline - r.y0;
    jpeg_read_scanlines(cinfo, row_ptrs->data() + done, rows - done);
  }
  // The last row: read on to EOI so a truncated file is seen. Otherwise
  // stop here; the rest of the data is never looked at.
  if (r.y1 == cinfo->output_height) {
    jpeg_finish_decompress(cinfo);
  } else {
    jpeg_abort_decompress(cinfo);
  }
  *x_offset = xoff;
  *out_width = width;
  return true;
}

// The standard Huffman tables (JPEG K.3) that libjpeg gives tables 0 and 1
// of a file that defines none (Motion-JPEG frames), as a compressor's
// defaults hold them. Empty (all zero) if libjpeg failed to make them.
struct StandardHuffman {
  JHUFF_TBL dc[2] = {};
  JHUFF_TBL ac[2] = {};
};

bool MakeStandardHuffmanC(jpeg_compress_struct* c, JpegErrorManager* err, StandardHuffman* out) {
  if (setjmp(err->jump)) return false;
  jpeg_create_compress(c);
  c->in_color_space = JCS_RGB;
  jpeg_set_defaults(c);
  for (int i = 0; i < 2; ++i) {
    out->dc[i] = *c->dc_huff_tbl_ptrs[i];
    out->ac[i] = *c->ac_huff_tbl_ptrs[i];
  }
  return true;
}

const StandardHuffman& StandardHuffmanTables() {
  static const StandardHuffman tables = [] {
    StandardHuffman t;
    jpeg_compress_struct c;
    JpegErrorManager err;
    UseJpegErrorManager(&c, &err);
    if (!MakeStandardHuffmanC(&c, &err, &t)) t = StandardHuffman{};
    jpeg_destroy_compress(&c);
    return t;
  }();
  return tables;
}

// libjpeg keeps a file's Huffman and quantization tables for the next file
// on the same decompressor, so a file that leaves one out would decode with
// whatever the file before it (on this thread) defined. Before a header is
// read, every kept table is marked (a Huffman table's unused bits[0], a
// quantization table's first value: a file's DHT and DQT overwrite both);
// after it, a table still marked was not defined by this file and gets
// what a fresh decompressor has: the standard Huffman tables in slots 0
// and 1, nothing elsewhere (the table is set aside until the next file, so
// a file that uses it is an error, "... table 0xNN was not defined").
void MarkTables(jpeg_decompress_struct* c, JHUFF_TBL** aside_dc, JHUFF_TBL** aside_ac,
                JQUANT_TBL** aside_quant) {
  for (int i = 0; i < NUM_HUFF_TBLS; ++i) {
    if (c->dc_huff_tbl_ptrs[i] == nullptr) std::swap(c->dc_huff_tbl_ptrs[i], aside_dc[i]);
    if (c->ac_huff_tbl_ptrs[i] == nullptr) std::swap(c->ac_huff_tbl_ptrs[i], aside_ac[i]);
    if (c->dc_huff_tbl_ptrs[i] != nullptr) c->dc_huff_tbl_ptrs[i]->bits[0] = 1;
    if (c->ac_huff_tbl_ptrs[i] != nullptr) c->ac_huff_tbl_ptrs[i]->bits[0] = 1;
  }
  for (int i = 0; i < NUM_QUANT_TBLS; ++i) {
    if (c->quant_tbl_ptrs[i] == nullptr) std::swap(c->quant_tbl_ptrs[i], aside_quant[i]);
    if (c->quant_tbl_ptrs[i] != nullptr) c->quant_tbl_ptrs[i]->quantval[0] = 0;
  }
}

void ForgetEarlierTables(jpeg_decompress_struct* c, JHUFF_TBL** aside_dc, JHUFF_TBL** aside_ac,
                         JQUANT_TBL** aside_quant) {
  const StandardHuffman& standard = StandardHuffmanTables();
  auto forget = [](JHUFF_TBL*& slot, JHUFF_TBL*& aside, const JHUFF_TBL* replacement) {
    if (slot == nullptr || slot->bits[0] != 1) return;  // this file's own
    if (replacement != nullptr) {
      *slot = *replacement;
    } else {
      aside = slot;
      slot = nullptr;
    }
  };
  for (int i = 0; i < NUM_HUFF_TBLS; ++i) {
    forget(c->dc_huff_tbl_ptrs[i], aside_dc[i], i < 2 ? &standard.dc[i] : nullptr);
    forget(c->ac_huff_tbl_ptrs[i], aside_ac[i], i < 2 ? &standard.ac[i] : nullptr);
  }
  for (int i = 0; i < NUM_QUANT_TBLS; ++i) {
    if (c->quant_tbl_ptrs[i] != nullptr && c->quant_tbl_ptrs[i]->quantval[0] == 0) {
      aside_quant[i] = c->quant_tbl_ptrs[i];
      c->quant_tbl_ptrs[i] = nullptr;
    }
  }
}

}  // namespace

int ChooseDctScale(uint32_t width, uint32_t height, uint32_t min_width, uint32_t min_height) {
  for (int n = 1; n < 8; n *= 2) {
    if (CeilDiv8(uint64_t{width} * n) >= min_width && CeilDiv8(uint64_t{height} * n) >= min_height)
      return n;
  }
  return 8;
}

JpegDecoder::JpegDecoder(const JpegDecoderOptions& options)
    : s_(std::make_unique<State>(options.eager_huffman_lookups, options.eager_wide_lookups)),
      options_(options) {
  UseJpegErrorManager(&s_->cinfo, &s_->err);
  // jpeg_create_decompress reports only out-of-memory (through error_exit).
  if (setjmp(s_->err.jump)) {
    s_.reset();
    return;
  }
  jpeg_create_decompress(&s_->cinfo);
}

JpegDecoder::~JpegDecoder() {
  if (s_ != nullptr) jpeg_destroy_decompress(&s_->cinfo);
}

absl::StatusOr<JpegHeader> JpegDecoder::Start(ByteSpan jpeg) {
  if (s_ == nullptr) return absl::ResourceExhaustedError("no memory for a JPEG decoder");
  if (s_->started) jpeg_abort_decompress(&s_->cinfo);
  s_->started = false;
  if (jpeg.size() < 2 || jpeg[0] != 0xFF || jpeg[1] != 0xD8) {
    return absl::DataLossError("not a JPEG (no start-of-image marker)");
  }
  s_->err.pub.num_warnings = 0;
  MarkTables(&s_->cinfo, s_->set_aside_dc, s_->set_aside_ac, s_->set_aside_quant);
  const bool read = ReadHeaderC(&s_->cinfo, &s_->err, jpeg.data(), jpeg.size());
  ForgetEarlierTables(&s_->cinfo, s_->set_aside_dc, s_->set_aside_ac, s_->set_aside_quant);
  if (!read) return absl::DataLossError(absl::StrCat("corrupt JPEG data: ", s_->err.message));
  const jpeg_decompress_struct& c = s_->cinfo;
  if (uint64_t{c.image_width} * c.image_height > options_.max_pixels) {
    jpeg_abort_decompress(&s_->cinfo);
    return absl::DataLossError(absl::StrCat("JPEG of ", c.image_width, "x", c.image_height,
                                            " is over the limit of ", options_.max_pixels,
                                            " pixels"));
  }
  s_->started = true;
  s_->jpeg = jpeg;
  return JpegHeader{c.image_width, c.image_height, c.num_components,
                    jpeg_has_multiple_scans(&s_->cinfo) != 0};
}

absl::StatusOr<DecodedRegion> JpegDecoder::DecodeRegion(const JpegRect& rect, uint32_t min_width,
                                                        uint32_t min_height, uint32_t grow) {
  if (s_ == nullptr || !s_->started) {
    return absl::FailedPreconditionError("JpegDecoder::DecodeRegion without Start");
  }
  s_->started = false;
  jpeg_decompress_struct* cinfo = &s_->cinfo;
  const uint32_t w = cinfo->image_width, h = cinfo->image_height;
  const uint32_t x0 = std::min(rect.x, w - 1), y0 = std::min(rect.y, h - 1);
  const uint32_t x1 = std::max(std::min(rect.x + rect.width, w), x0 + 1);
  const uint32_t y1 = std::max(std::min(rect.y + rect.height, h), y0 + 1);
  const int n = ChooseDctScale(x1 - x0, y1 - y0, min_width, min_height);
  // The region at scale n/8, fractional, then whole pixels with a margin.
  const double sx0 = x0 * n / 8.0, sx1 = x1 * n / 8.0, sy0 = y0 * n / 8.0, sy1 = y1 * n / 8.0;
  const double m = kJpegRegionMargin + std::ceil(grow * n / 8.0);
  ScaledRect r;
  r.x0 = static_cast<JDIMENSION>(std::max(0.0, std::floor(sx0) - m));
  r.y0 = static_cast<JDIMENSION>(std::max(0.0, std::floor(sy0) - m));
  r.x1 = static_cast<JDIMENSION>(std::ceil(sx1) + m);
  r.y1 = static_cast<JDIMENSION>(std::ceil(sy1) + m);
  // Where the JPEG being decoded starts in the image, at scale n/8: 0, 0
  // unless it is a cut of the MCUs around r (StartCut).
  const Offset cut = StartCut(n, r.x0, r.x1, r.y0, r.y1);
  const ScaledRect rc{r.x0 - cut.x, r.x1 - cut.x, r.y0 - cut.y, r.y1 - cut.y};
  JDIMENSION xoff = 0, width = 0;
  JpegEntropyDecoder* entropy = options_.libjpeg_entropy ? nullptr : &s_->entropy;
  if (!DecodeC(cinfo, &s_->err, &s_->pixels, &s_->row_ptrs, entropy, n, rc, &xoff, &width)) {
    return absl::DataLossError(absl::StrCat("corrupt JPEG data: ", s_->err.message));
  }
  const uint32_t rows = std::min<uint32_t>(rc.y1, cinfo->output_height) - rc.y0;
  if (cinfo->out_color_space == JCS_CMYK) {
    CmykToRgbInPlace(s_->pixels.data(), size_t{width} * rows, cinfo->saw_Adobe_marker != 0);
  }
  xoff += cut.x;
  DecodedRegion out;
  out.pixels = PixelView{s_->pixels.data(), width, rows, 3};
  out.box = ResizeBox{sx0 - xoff, sy0 - r.y0, std::min<double>(sx1 - xoff, width),
                      std::min<double>(sy1 - r.y0, rows)};
  out.scale_num = n;
  out.cut = cut.cut;
  return out;
}

JpegDecoder::Offset JpegDecoder::StartCut(int n, uint32_t x0, uint32_t x1, uint32_t y0,
                                          uint32_t y1) {
  jpeg_decompress_struct* cinfo = &s_->cinfo;
  const std::optional<JpegSeekLayout> l = SeekLayoutOf(*cinfo, s_->jpeg);
  if (!l.has_value()) return {};
  // The full-size pixels to hold: the rectangle, widened by the reach of
  // chroma upsampling (a chroma sample each way: 2 * max_samp_factor pixels
  // of scale n/8), so that every pixel of it decodes as in the whole image.
  const auto s = static_cast<uint32_t>(n);
  const uint32_t reach_x = 2 * l->mcu_width / s, reach_y = 2 * l->mcu_height / s;
  const uint64_t fx0 = uint64_t{x0} * 8 / s, fx1 = uint64_t{x1} * 8 / s + reach_x;
  const uint64_t fy0 = uint64_t{y0} * 8 / s, fy1 = uint64_t{y1} * 8 / s + reach_y;
  McuRect want;
  want.col0 = static_cast<uint32_t>((fx0 > reach_x ? fx0 - reach_x : 0) / l->mcu_width);
  want.row0 = static_cast<uint32_t>((fy0 > reach_y ? fy0 - reach_y : 0) / l->mcu_height);
  want.col1 = static_cast<uint32_t>(
      std::min<uint64_t>((fx1 + l->mcu_width - 1) / l->mcu_width, l->mcus_per_row));
  want.row1 = static_cast<uint32_t>(
      std::min<uint64_t>((fy1 + l->mcu_height - 1) / l->mcu_height, l->mcu_rows));
  // Worth a cut when it leaves out an eighth of what a region decode of the
  // whole JPEG would entropy-decode (every MCU down to the region's last row).
  const uint64_t cut_mcus = uint64_t{want.col1 - want.col0} * (want.row1 - want.row0);
  if (cut_mcus * 8 > uint64_t{l->mcus_per_row} * want.row1 * 7) return {};
  const std::optional<McuRect> cut =
      CutJpegWindow(s_->jpeg, *l, want, &s_->window, &s_->window_ends);
  if (!cut.has_value()) return {};  // damaged: the whole JPEG's decode reports it
  jpeg_abort_decompress(cinfo);
  if (!ReadHeaderC(cinfo, &s_->err, s_->window.data(), s_->window.size())) {
    // Not expected (the cut's headers are the JPEG's): decode the JPEG.
    ReadHeaderC(cinfo, &s_->err, s_->jpeg.data(), s_->jpeg.size());
    return {};
  }
  return Offset{cut->col0 * l->mcu_width * s / 8, cut->row0 * l->mcu_height * s / 8, true};
}

absl::StatusOr<PixelView> JpegDecoder::Decode(ByteSpan jpeg) {
  absl::StatusOr<JpegHeader> header = Start(jpeg);
  if (!header.ok()) return header.status();
  absl::StatusOr<DecodedRegion> region =
      DecodeRegion({0, 0, header->width, header->height}, header->width, header->height);
  if (!region.ok()) return region.status();
  return region->pixels;
}

absl::Status JpegDecoder::Validate(ByteSpan jpeg) {
  absl::StatusOr<JpegHeader> header = Start(jpeg);
  if (!header.ok()) return header.status();
  return DecodeRegion({0, 0, header->width, header->height}, 1, 1).status();
}

}  // namespace shardpack::internal
