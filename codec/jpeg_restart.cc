#include "codec/jpeg_restart.h"

// jpeglib.h needs size_t and FILE declared first.
#include <stdio.h>

#include <jpeglib.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "codec/bytes.h"
#include "codec/jpeg_error.h"

namespace shardpack::codec {
namespace {

// A libjpeg destination that writes into a std::vector, doubling it when
// full; the vector's capacity is kept between images.
// Exceptions must not pass through libjpeg: a failed growth returns FALSE
// (which libjpeg, not expecting a suspending destination, turns into an
// error) and is remembered in `out_of_memory`.
struct VectorDestination {
  jpeg_destination_mgr pub;  // first: libjpeg sees a jpeg_destination_mgr
  std::vector<uint8_t>* out = nullptr;  // sized by Recode before libjpeg starts
  bool out_of_memory = false;
};

VectorDestination* DestOf(j_compress_ptr c) { return reinterpret_cast<VectorDestination*>(c->dest); }

void InitDestination(j_compress_ptr c) {
  std::vector<uint8_t>* out = DestOf(c)->out;
  c->dest->next_output_byte = out->data();
  c->dest->free_in_buffer = out->size();
}

boolean EmptyOutputBuffer(j_compress_ptr c) {
  std::vector<uint8_t>* out = DestOf(c)->out;
  const size_t used = out->size();
  try {
    out->resize(used * 2);
  } catch (const std::bad_alloc&) {
    DestOf(c)->out_of_memory = true;
    return FALSE;
  }
  c->dest->next_output_byte = out->data() + used;
  c->dest->free_in_buffer = out->size() - used;
  return TRUE;
}

void TermDestination(j_compress_ptr c) {
  std::vector<uint8_t>* out = DestOf(c)->out;
  out->resize(out->size() - c->dest->free_in_buffer);
}

}  // namespace

struct JpegRestartRecoder::State {
  jpeg_decompress_struct in;
  jpeg_compress_struct out;
  JpegErrorManager err;  // shared: one of the two runs at a time
  VectorDestination dest;
  bool created = false;
};

namespace {

enum class RecodeResult { kRecoded, kProgressive, kFailed };

// The libjpeg part of Recode, free of C++ objects with destructors (see
// jpeg_error.h).
RecodeResult RecodeC(jpeg_decompress_struct* in, jpeg_compress_struct* out, JpegErrorManager* err,
                     const uint8_t* data, size_t size) {
  if (setjmp(err->jump)) {
    jpeg_abort_compress(out);
    jpeg_abort_decompress(in);
    return RecodeResult::kFailed;
  }
  err->pub.num_warnings = 0;
  jpeg_mem_src(in, data, static_cast<unsigned long>(size));
  for (int m = 0; m < 16; ++m) jpeg_save_markers(in, JPEG_APP0 + m, 0xFFFF);
  jpeg_save_markers(in, JPEG_COM, 0xFFFF);
  jpeg_read_header(in, TRUE);
  if (in->progressive_mode) {
    jpeg_abort_decompress(in);
    return RecodeResult::kProgressive;
  }
  jvirt_barray_ptr* coefficients = jpeg_read_coefficients(in);
  jpeg_copy_critical_parameters(in, out);
  // The original's own APP0/APP14 (copied below) say how to read its
  // colors; libjpeg's defaults would add markers the original may not have.
  out->write_JFIF_header = FALSE;
  out->write_Adobe_marker = FALSE;
  out->optimize_coding = TRUE;
  out->restart_in_rows = 0;
  out->restart_interval = 1;
  jpeg_write_coefficients(out, coefficients);
  for (jpeg_saved_marker_ptr m = in->marker_list; m != nullptr; m = m->next) {
    jpeg_write_marker(out, m->marker, m->data, m->data_length);
  }
  jpeg_finish_compress(out);
  jpeg_finish_decompress(in);
  return RecodeResult::kRecoded;
}

}  // namespace

JpegRestartRecoder::JpegRestartRecoder() : s_(std::make_unique<State>()) {
  UseJpegErrorManager(&s_->in, &s_->err);
  s_->out.err = s_->in.err;
  // The create calls report only out-of-memory (through error_exit).
  if (setjmp(s_->err.jump)) return;
  jpeg_create_decompress(&s_->in);
  jpeg_create_compress(&s_->out);
  s_->dest.pub.init_destination = InitDestination;
  s_->dest.pub.empty_output_buffer = EmptyOutputBuffer;
  s_->dest.pub.term_destination = TermDestination;
  s_->out.dest = &s_->dest.pub;
  s_->created = true;
}

JpegRestartRecoder::~JpegRestartRecoder() {
  if (!s_->created) return;
  jpeg_destroy_compress(&s_->out);
  jpeg_destroy_decompress(&s_->in);
}

absl::StatusOr<bool> JpegRestartRecoder::Recode(ByteSpan jpeg, std::vector<uint8_t>* out) {
  if (!s_->created) return absl::ResourceExhaustedError("no memory for a JPEG re-coder");
  try {
    out->resize(std::max<size_t>({out->capacity(), jpeg.size() + 1024, size_t{64} << 10}));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("no memory to re-code a JPEG");
  }
  s_->dest.out = out;
  s_->dest.out_of_memory = false;
  switch (RecodeC(&s_->in, &s_->out, &s_->err, jpeg.data(), jpeg.size())) {
    case RecodeResult::kRecoded:
      return true;
    case RecodeResult::kProgressive:
      return false;
    case RecodeResult::kFailed:
      break;
  }
  if (s_->dest.out_of_memory) return absl::ResourceExhaustedError("no memory to re-code a JPEG");
  return absl::DataLossError(absl::StrCat("corrupt JPEG data: ", s_->err.message));
}

std::optional<JpegSeekLayout> SeekLayoutOf(const jpeg_decompress_struct& cinfo, ByteSpan jpeg) {
  if (cinfo.progressive_mode || cinfo.arith_code || cinfo.restart_interval == 0 ||
      cinfo.comps_in_scan != cinfo.num_components || cinfo.src == nullptr) {
    return std::nullopt;
  }
  const uint8_t* data = jpeg.data();
  if (cinfo.src->next_input_byte < data || cinfo.src->next_input_byte > data + jpeg.size()) {
    return std::nullopt;  // not read from `jpeg`
  }
  JpegSeekLayout l;
  l.entropy_start = static_cast<size_t>(cinfo.src->next_input_byte - data);
  // Find the frame header among the markers before the scan (libjpeg has
  // read them all, so they are well formed); only SOF0 and SOF1 (baseline
  // and extended sequential Huffman) are cut.
  size_t p = 2;
  bool sos = false;
  while (!sos && p + 4 <= l.entropy_start) {
    if (data[p] != 0xFF) return std::nullopt;
    const uint8_t marker = data[p + 1];
    if (marker == 0xFF) {  // fill byte
      ++p;
      continue;
    }
    const size_t end = p + 2 + Be16(data + p + 2);
    const bool sof = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 &&
                     marker != 0xCC;
    if (sof) {
      if ((marker != 0xC0 && marker != 0xC1) || l.sof_size_at != 0) return std::nullopt;
      l.sof_size_at = p + 5;  // marker (2), length (2), precision (1)
    }
    sos = marker == 0xDA;
    if (sos && end != l.entropy_start) return std::nullopt;
    p = end;
  }
  if (!sos || l.sof_size_at == 0) return std::nullopt;
  l.width = cinfo.image_width;
  l.height = cinfo.image_height;
  // One component: its blocks in raster order; several: interleaved MCUs.
  const uint32_t h = cinfo.comps_in_scan == 1 ? 1 : static_cast<uint32_t>(cinfo.max_h_samp_factor);
  const uint32_t v = cinfo.comps_in_scan == 1 ? 1 : static_cast<uint32_t>(cinfo.max_v_samp_factor);
  l.mcu_width = 8 * h;
  l.mcu_height = 8 * v;
  l.mcus_per_row = (l.width + l.mcu_width - 1) / l.mcu_width;
  l.mcu_rows = (l.height + l.mcu_height - 1) / l.mcu_height;
  l.interval = cinfo.restart_interval;
  if (l.mcus_per_row % l.interval != 0) return std::nullopt;
  return l;
}

std::optional<McuRect> CutJpegWindow(ByteSpan jpeg, const JpegSeekLayout& l, McuRect rect,
                                     std::vector<uint8_t>* out, std::vector<uint32_t>* ends) {
  const uint32_t per_row = l.mcus_per_row / l.interval;  // intervals in a row of MCUs
  const uint64_t total = uint64_t{per_row} * l.mcu_rows;
  rect.col1 = std::min(rect.col1, l.mcus_per_row);
  rect.row1 = std::min(rect.row1, l.mcu_rows);
  if (rect.col0 >= rect.col1 || rect.row0 >= rect.row1) return std::nullopt;
  const uint32_t i0 = rect.col0 / l.interval;
  const uint32_t i1 = (rect.col1 + l.interval - 1) / l.interval;
  rect.col0 = i0 * l.interval;
  rect.col1 = i1 * l.interval;
  // Interval k's bytes are [(*ends)[2k], (*ends)[2k+1]): from after the
  // marker before it (or the scan's start) to its own marker (or EOI).
  const uint64_t last = uint64_t{rect.row1 - 1} * per_row + i1 - 1;
  if (2 * (last + 1) > ends->max_size() || l.entropy_start > UINT32_MAX ||
      jpeg.size() > UINT32_MAX) {
    return std::nullopt;
  }
  ends->resize(2 * (last + 1));
  const uint8_t* const data = jpeg.data();
  const uint8_t* const end = data + jpeg.size();
  const uint8_t* p = data + l.entropy_start;
  (*ends)[0] = static_cast<uint32_t>(l.entropy_start);
  for (uint64_t k = 0; k <= last;) {
    const auto* ff = static_cast<const uint8_t*>(std::memchr(p, 0xFF, static_cast<size_t>(end - p)));
    if (ff == nullptr) return std::nullopt;  // truncated
    const uint8_t* q = ff + 1;
    while (q < end && *q == 0xFF) ++q;  // fill bytes before a marker
    if (q == end) return std::nullopt;
    p = q + 1;
    if (*q == 0x00) continue;  // a stuffed 0xFF data byte
    const bool rst = *q >= 0xD0 && *q <= 0xD7;
    if (rst ? (k + 1 == total || (*q & 7) != (k & 7)) : (*q != 0xD9 || k + 1 != total)) {
      return std::nullopt;  // a marker out of place: damage
    }
    (*ends)[2 * k + 1] = static_cast<uint32_t>(ff - data);
    if (k < last) (*ends)[2 * k + 2] = static_cast<uint32_t>(p - data);
    ++k;
  }
  // The window: headers, then row by row the intervals [i0, i1), each after
  // the first behind an RSTn numbered from 0 again, then EOI.
  size_t bytes = l.entropy_start + 2;
  for (uint32_t row = rect.row0; row < rect.row1; ++row) {
    const uint64_t k0 = uint64_t{row} * per_row + i0, k1 = uint64_t{row} * per_row + i1;
    for (uint64_t k = k0; k < k1; ++k) bytes += (*ends)[2 * k + 1] - (*ends)[2 * k] + 2;
  }
  bytes -= 2;  // no marker before the first interval
  out->resize(bytes);
  uint8_t* w = out->data();
  std::memcpy(w, data, l.entropy_start);
  const uint32_t x0 = rect.col0 * l.mcu_width, y0 = rect.row0 * l.mcu_height;
  const uint32_t width = std::min(rect.col1 * l.mcu_width, l.width) - x0;
  const uint32_t height = std::min(rect.row1 * l.mcu_height, l.height) - y0;
  w[l.sof_size_at] = static_cast<uint8_t>(height >> 8);
  w[l.sof_size_at + 1] = static_cast<uint8_t>(height);
  w[l.sof_size_at + 2] = static_cast<uint8_t>(width >> 8);
  w[l.sof_size_at + 3] = static_cast<uint8_t>(width);
  w += l.entropy_start;
  uint32_t n = 0;  // intervals written
  for (uint32_t row = rect.row0; row < rect.row1; ++row) {
    const uint64_t k0 = uint64_t{row} * per_row + i0, k1 = uint64_t{row} * per_row + i1;
    for (uint64_t k = k0; k < k1; ++k, ++n) {
      if (n > 0) {
        *w++ = 0xFF;
        *w++ = static_cast<uint8_t>(0xD0 + ((n - 1) & 7));
      }
      const uint32_t from = (*ends)[2 * k], size = (*ends)[2 * k + 1] - from;
      std::memcpy(w, data + from, size);
      w += size;
    }
  }
  *w++ = 0xFF;
  *w++ = 0xD9;
  return rect;
}

}  // namespace shardpack::codec
