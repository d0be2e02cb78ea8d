#include "codec/jpeg_decoder.h"

// jpeglib.h needs size_t and FILE declared first.
#include <setjmp.h>
#include <stdio.h>

#include <jpeglib.h>
// The module interfaces: the planar decode stands in for the
// post-processing step (jpeg_d_post_controller).
#include <jpegint.h>

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

namespace shardpack::codec {
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

// Where the row-group hook (KeepPlanesC) puts the YCbCr planes of a planar
// region decode, and what it needs to know. Filled by DecodeC.
struct PlaneSink {
  JDIMENSION first_group = 0;  // the output row group of the planes' row 0
  JDIMENSION groups = 0;       // row groups kept
  int group_rows = 0;          // output rows per row group (max_v_samp_factor)
  int rows[3] = {};            // a component's rows per row group
  int factor_x[3] = {}, factor_y[3] = {};  // region pixels per component sample
  JDIMENSION width[3] = {};    // a component's samples per row (after the crop)
  uint8_t* plane[3] = {};
};

// The sink of the planar decode running on this thread: libjpeg's hooks get
// nothing but the decompressor, whose client_data the entropy decoder holds.
thread_local PlaneSink* current_sink = nullptr;

// Stands in for libjpeg's post-processing (upsampling + color conversion,
// sep_upsample in jdsample.c) and keeps each row group's component rows
// instead. It moves the counters as sep_upsample does: up to group_rows
// output rows per row group, the group done when its last row is out. The
// output row it is at is output_scanline + *out_row_ctr, whose place in its
// row group is what sep_upsample's private next_row_out tracks (skips keep
// the two in step). Output rows are not written: nobody reads them.
void KeepPlanesC(j_decompress_ptr cinfo, JSAMPIMAGE input_buf, JDIMENSION* in_row_group_ctr,
                 JDIMENSION /*in_row_groups_avail*/, JSAMPARRAY /*output_buf*/,
                 JDIMENSION* out_row_ctr, JDIMENSION out_rows_avail) {
  const PlaneSink& s = *current_sink;
  const JDIMENSION y = cinfo->output_scanline + *out_row_ctr;
  const auto group_rows = static_cast<JDIMENSION>(s.group_rows);
  const JDIMENSION at = y % group_rows;
  const JDIMENSION n = std::min({group_rows - at, out_rows_avail - *out_row_ctr,
                                 cinfo->output_height - y});
  const JDIMENSION g = y / group_rows;
  if (at == 0 && g >= s.first_group && g - s.first_group < s.groups) {
    for (int c = 0; c < 3; ++c) {
      const auto rows = static_cast<JDIMENSION>(s.rows[c]);
      uint8_t* out = s.plane[c] + size_t{g - s.first_group} * rows * s.width[c];
      const JSAMPROW* in = input_buf[c] + size_t{*in_row_group_ctr} * rows;
      for (JDIMENSION i = 0; i < rows; ++i) std::memcpy(out + i * s.width[c], in[i], s.width[c]);
    }
  }
  *out_row_ctr += n;
  if (at + n >= group_rows) ++*in_row_group_ctr;
}

// Whether a started decompressor's components make planes PlaneSink can
// keep (see RegionPixels::kYccPlanesWhenPossible), and if so each one's
// samples per row group across (*in_x) and down (*in_y): a component
// sample spans max_samp_factor / in region pixels.
bool PlanarLayout(const jpeg_decompress_struct& c, int in_x[3], int in_y[3]) {
  if (c.num_components != 3 || c.jpeg_color_space != JCS_YCbCr ||
      c.out_color_space != JCS_RGB || c.quantize_colors) {
    return false;
  }
  for (int i = 0; i < 3; ++i) {
    const jpeg_component_info& comp = c.comp_info[i];
    in_x[i] = comp.h_samp_factor * comp.DCT_scaled_size / c.min_DCT_scaled_size;
    in_y[i] = comp.v_samp_factor * comp.DCT_scaled_size / c.min_DCT_scaled_size;
    if (in_x[i] <= 0 || in_y[i] <= 0) return false;
    const int fx = c.max_h_samp_factor / in_x[i], fy = c.max_v_samp_factor / in_y[i];
    if (fx * in_x[i] != c.max_h_samp_factor || fy * in_y[i] != c.max_v_samp_factor) return false;
    if (fx > 2 || fy > 2 || (i == 0 && (fx != 1 || fy != 1))) return false;
  }
  return true;
}

// Starts the decompressor at the chosen scale, crops, skips, reads the rows
// of `r` and stops. `pixels`/`row_ptrs` are grown here (after the crop
// fixes the width). On success *x_offset is where the decoded columns
// start. Returns false when libjpeg failed.
// With a `sink`, a region whose components allow it (PlanarLayout) is kept
// as planes in `pixels` instead, and *planar says so; their first row is
// output row sink->first_group * sink->group_rows, at or above r.y0.
bool DecodeC(jpeg_decompress_struct* cinfo, JpegErrorManager* err, std::vector<uint8_t>* pixels,
             std::vector<JSAMPROW>* row_ptrs, JpegEntropyDecoder* entropy, int scale_num,
             ScaledRect r, JDIMENSION* x_offset, JDIMENSION* out_width, PlaneSink* sink,
             bool* planar) {
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
  const JDIMENSION rows = r.y1 - r.y0;
  int in_x[3], in_y[3];
  *planar = sink != nullptr && PlanarLayout(*cinfo, in_x, in_y);
  if (*planar) {
    // Whole row groups from the one holding r.y0 to the one holding r.y1 - 1.
    sink->group_rows = cinfo->max_v_samp_factor;
    const auto group_rows = static_cast<JDIMENSION>(sink->group_rows);
    sink->first_group = r.y0 / group_rows;
    sink->groups = (r.y1 + group_rows - 1) / group_rows - sink->first_group;
    size_t bytes[3], total = 0;
    for (int c = 0; c < 3; ++c) {
      sink->rows[c] = in_y[c];
      sink->factor_x[c] = cinfo->max_h_samp_factor / in_x[c];
      sink->factor_y[c] = cinfo->max_v_samp_factor / in_y[c];
      // Not downsampled_width: jpeg_crop_scanline sets it without the
      // component's DCT scaling (libjpeg-turbo scales chroma less than luma
      // when that spares upsampling).
      sink->width[c] = static_cast<JDIMENSION>(
          (uint64_t{width} * in_x[c] + cinfo->max_h_samp_factor - 1) /
          cinfo->max_h_samp_factor);
      bytes[c] = size_t{sink->width[c]} * static_cast<size_t>(in_y[c]) * sink->groups;
      total += bytes[c];
    }
    if (pixels->size() < total) pixels->resize(total);
    sink->plane[0] = pixels->data();
    sink->plane[1] = sink->plane[0] + bytes[0];
    sink->plane[2] = sink->plane[1] + bytes[1];
    current_sink = sink;
    cinfo->post->post_process_data = KeepPlanesC;
  }
  // The planar hook writes no rows, but every row pointer stays a valid one.
  const size_t stride =
      *planar ? 0 : size_t{width} * static_cast<size_t>(cinfo->output_components);
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

void ResizeRegion(const DecodedRegion& region, const ResizeBox& box, uint32_t width,
                  uint32_t height, const ResizeOptions& options, uint8_t* dst,
                  ResizeScratch* scratch) {
  if (region.planar) {
    ResizeYccToRgb(region.planes, box, width, height, options, dst, scratch);
  } else {
    ResizeBoxAA(region.pixels, box, width, height, options, dst, scratch);
  }
}

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
                                                        uint32_t min_height, uint32_t grow,
                                                        RegionPixels want) {
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
  PlaneSink sink;
  bool planar = false;
  if (!DecodeC(cinfo, &s_->err, &s_->pixels, &s_->row_ptrs, entropy, n, rc, &xoff, &width,
               want == RegionPixels::kYccPlanesWhenPossible ? &sink : nullptr, &planar)) {
    return absl::DataLossError(absl::StrCat("corrupt JPEG data: ", s_->err.message));
  }
  const uint32_t last_row = std::min<uint32_t>(rc.y1, cinfo->output_height);
  // The region's first row, in the decoded JPEG's rows: planes start at a
  // row group's first row.
  const uint32_t first_row = planar ? sink.first_group * sink.group_rows : rc.y0;
  const uint32_t rows = last_row - first_row;
  if (cinfo->out_color_space == JCS_CMYK) {
    JpegCmykToRgbInPlace(s_->pixels.data(), size_t{width} * rows);
  }
  xoff += cut.x;
  const uint32_t top = first_row + cut.y;  // in the image at scale n/8
  DecodedRegion out;
  out.pixels = PixelView{s_->pixels.data(), width, rows, planar ? 1 : 3};
  out.planar = planar;
  if (planar) {
    for (int c = 0; c < 3; ++c) {
      SubsampledPlane& p = out.planes[c];
      p.factor_x = sink.factor_x[c];
      p.factor_y = sink.factor_y[c];
      const auto fy = static_cast<uint32_t>(p.factor_y);
      p.pixels = PixelView{sink.plane[c], sink.width[c], (rows + fy - 1) / fy, 1};
    }
  }
  out.box = ResizeBox{sx0 - xoff, sy0 - top, std::min<double>(sx1 - xoff, width),
                      std::min<double>(sy1 - top, rows)};
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

}  // namespace shardpack::codec
