#include "codec/jpeg_probe.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "codec/bytes.h"
#include "codec/image_format.h"
#include "common/enum_names.h"
#include "common/errors.h"

namespace shardpack::codec {
namespace {

using common::AsAbsl;
using codec::Be16;
using common::DataLossAt;
using codec::StartsWith;

// Marker codes (ITU T.81, table B.1). A marker is 0xFF then the code.
constexpr uint8_t kSOI = 0xD8;
constexpr uint8_t kEOI = 0xD9;
constexpr uint8_t kSOS = 0xDA;
constexpr uint8_t kDHT = 0xC4;
constexpr uint8_t kJPG = 0xC8;
constexpr uint8_t kDAC = 0xCC;
constexpr uint8_t kRST0 = 0xD0;
constexpr uint8_t kRST7 = 0xD7;
constexpr uint8_t kTEM = 0x01;
constexpr uint8_t kAPP0 = 0xE0;
constexpr uint8_t kAPP14 = 0xEE;

// libjpeg reads APP0 as JFIF only with at least 14 bytes of data, and APP14
// as Adobe only with at least 12 (jdmarker.c, APP0_DATA_LEN, APP14_DATA_LEN).
constexpr size_t kJfifMinData = 14;
constexpr size_t kAdobeMinData = 12;

bool IsSof(uint8_t m) { return m >= 0xC0 && m <= 0xCF && m != kDHT && m != kJPG && m != kDAC; }

std::string_view SofName(uint8_t m) {
  switch (m) {
    case 0xC3:
    case 0xCB:
      return "lossless";
    case 0xC5:
    case 0xC6:
    case 0xC7:
    case 0xCD:
    case 0xCE:
    case 0xCF:
      return "hierarchical";
    default:
      return "unknown";
  }
}

// What the segments before the first scan told us.
struct HeaderState {
  JpegInfo info;
  bool have_frame = false;
  uint8_t component_ids[4] = {};
};

// Parses a frame header (SOFn) whose data (after the length) is `body`,
// found at `offset`.
absl::Status ParseFrame(ByteSpan body, uint8_t marker, uint64_t offset, std::string_view name,
                        const JpegProbeOptions& options, HeaderState* state) {
  if (state->have_frame) return DataLossAt(name, offset, "second frame header (SOF)");
  if (body.size() < 6) return DataLossAt(name, offset, "frame header (SOF) too short");
  const int precision = body[0];
  const uint32_t height = Be16(&body[1]);
  const uint32_t width = Be16(&body[3]);
  const int components = body[5];
  if (body.size() < 6 + 3 * size_t(components)) {
    return DataLossAt(name, offset, "frame header (SOF) shorter than its component list");
  }
  if (width == 0 || height == 0) {
    return DataLossAt(name, offset, absl::StrFormat("bad image size %ux%u", width, height));
  }
  const bool supported_process =
      marker == 0xC0 || marker == 0xC1 || marker == 0xC2 || marker == 0xC9 || marker == 0xCA;
  if (!supported_process) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: unsupported JPEG process: %s (SOF marker 0x%02X)", AsAbsl(name),
                        AsAbsl(SofName(marker)), marker));
  }
  if (precision != 8) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: unsupported %d-bit JPEG precision", AsAbsl(name), precision));
  }
  if (components != 1 && components != 3 && components != 4) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: unsupported JPEG with %d components", AsAbsl(name), components));
  }
  if (width > kMaxJpegSide || height > kMaxJpegSide ||
      uint64_t{width} * height > options.max_pixels) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: image too large: %ux%u (limits: %u per side, %u pixels)", AsAbsl(name),
                        width, height, kMaxJpegSide, options.max_pixels));
  }
  // components is 1, 3 or 4 (above); the bound says so to GCC's -O3 overflow check too.
  const int ids = std::min<int>(components, std::size(state->component_ids));
  for (int c = 0; c < ids; ++c) state->component_ids[c] = body[6 + 3 * c];
  JpegInfo& info = state->info;
  info.width = width;
  info.height = height;
  info.components = components;
  info.sof_marker = marker;
  info.progressive = marker == 0xC2 || marker == 0xCA;
  info.arithmetic = marker == 0xC9 || marker == 0xCA;
  state->have_frame = true;
  return absl::OkStatus();
}

void ParseApp(ByteSpan body, uint8_t marker, HeaderState* state) {
  if (marker == kAPP0 && body.size() >= kJfifMinData && StartsWith(body, {"JFIF\0", 5})) {
    state->info.jfif = true;
  } else if (marker == kAPP14 && body.size() >= kAdobeMinData && StartsWith(body, "Adobe")) {
    state->info.adobe = true;
    state->info.adobe_transform = body[11];
  }
}

// libjpeg-turbo's default_decompress_parms (jdapimin.c), which picks the
// color space TurboJPEG will report.
JpegColorSpace DecideColorSpace(const HeaderState& state) {
  const JpegInfo& info = state.info;
  if (info.components == 1) return JpegColorSpace::kGray;
  if (info.components == 4) {
    if (info.adobe && info.adobe_transform == 0) return JpegColorSpace::kCMYK;
    return info.adobe ? JpegColorSpace::kYCCK : JpegColorSpace::kCMYK;
  }
  if (info.jfif) return JpegColorSpace::kYCbCr;
  if (info.adobe) return info.adobe_transform == 0 ? JpegColorSpace::kRGB : JpegColorSpace::kYCbCr;
  const uint8_t* id = state.component_ids;
  if (id[0] == 'R' && id[1] == 'G' && id[2] == 'B') return JpegColorSpace::kRGB;
  return JpegColorSpace::kYCbCr;
}

// Walks the marker segments from just after SOI to the first SOS.
absl::Status WalkHeader(ByteSpan data, std::string_view name, const JpegProbeOptions& options,
                        HeaderState* state) {
  size_t pos = 2;
  for (;;) {
    const size_t marker_at = pos;
    if (pos >= data.size()) {
      return DataLossAt(name, pos, "truncated JPEG header: no start-of-scan (SOS) marker");
    }
    if (data[pos] != 0xFF) {
      return DataLossAt(
          name, pos,
          absl::StrFormat("bad JPEG header: expected a marker, found 0x%02X", data[pos]));
    }
    while (pos < data.size() && data[pos] == 0xFF) ++pos;  // fill bytes
    if (pos >= data.size()) return DataLossAt(name, pos, "truncated JPEG header in a marker");
    const uint8_t m = data[pos++];
    if (m == kTEM || (m >= kRST0 && m <= kRST7)) continue;  // no length field
    if (m == kSOI || m == kEOI || m == 0x00) {
      return DataLossAt(
          name, marker_at,
          absl::StrFormat("bad JPEG header: unexpected marker 0x%02X before the first scan", m));
    }
    if (pos + 2 > data.size())
      return DataLossAt(name, pos, "truncated JPEG header in a segment length");
    const size_t length = Be16(&data[pos]);
    if (length < 2) return DataLossAt(name, pos, absl::StrCat("bad JPEG segment length ", length));
    if (pos + length > data.size()) {
      return DataLossAt(
          name, marker_at,
          absl::StrFormat("truncated JPEG header: segment 0x%02X of %u bytes passes the "
                          "end of the file (%u bytes)",
                          m, length, data.size()));
    }
    const ByteSpan body = data.subspan(pos + 2, length - 2);
    pos += length;
    if (m == kSOS) {
      if (!state->have_frame) {
        return DataLossAt(name, marker_at, "no frame header (SOF) before the first scan");
      }
      state->info.sos_offset = marker_at;
      return absl::OkStatus();
    }
    if (IsSof(m)) {
      absl::Status s = ParseFrame(body, m, marker_at, name, options, state);
      if (!s.ok()) return s;
    } else {
      ParseApp(body, m, state);
    }
  }
}

// True if an end-of-image marker follows the scan header at `sos`. Walks
// what follows as a JPEG decoder does: in entropy-coded data 0xFF is followed
// by 0x00 (a stuffed byte), a restart marker or fill bytes; any other marker
// (DHT, SOS, DRI, ... between the scans of a progressive file) has a length
// and is stepped over whole, so bytes inside a segment never pass for EOI.
// Bytes after EOI are allowed: cameras append thumbnails, MPF images and
// padding there, and libjpeg, PIL and torchvision decode such files.
bool HasEoi(ByteSpan data, uint64_t sos) {
  size_t pos = sos;
  while (pos + 1 < data.size()) {
    const void* ff = std::memchr(data.data() + pos, 0xFF, data.size() - pos - 1);
    if (ff == nullptr) return false;
    pos = static_cast<size_t>(static_cast<const uint8_t*>(ff) - data.data());
    const uint8_t m = data[pos + 1];
    if (m == kEOI) return true;
    if (m == 0x00 || m == 0xFF || (m >= 0xD0 && m <= 0xD7)) {
      pos += m == 0xFF ? 1 : 2;  // stuffing, a restart marker, or fill
      continue;
    }
    if (pos + 4 > data.size()) return false;
    const size_t length = (size_t{data[pos + 2]} << 8) | data[pos + 3];
    if (length < 2) return false;
    pos += 2 + length;
  }
  return false;
}

}  // namespace

namespace {
constexpr common::EnumName<JpegColorSpace> kColorSpaces[] = {
    {JpegColorSpace::kGray, "gray"}, {JpegColorSpace::kYCbCr, "ycbcr"},
    {JpegColorSpace::kRGB, "rgb"},   {JpegColorSpace::kCMYK, "cmyk"},
    {JpegColorSpace::kYCCK, "ycck"}};
}  // namespace

std::string_view JpegColorSpaceName(JpegColorSpace c) {
  return common::NameIn(kColorSpaces, c);
}

absl::StatusOr<JpegInfo> ProbeJpeg(ByteSpan data, std::string_view name,
                                   const JpegProbeOptions& options) {
  const codec::ImageFormat format = codec::SniffImageFormat(data);
  if (format == codec::ImageFormat::kEmpty) return DataLossAt(name, 0, "empty file");
  if (format != codec::ImageFormat::kJpeg) {
    return absl::InvalidArgumentError(absl::StrCat(AsAbsl(name), ": not a JPEG: ",
                                                   AsAbsl(codec::ImageContentName(format))));
  }
  HeaderState state;
  absl::Status s = WalkHeader(data, name, options, &state);
  if (!s.ok()) return s;
  state.info.color_space = DecideColorSpace(state);
  if (options.require_eoi && !HasEoi(data, state.info.sos_offset)) {
    return DataLossAt(name, data.size(),
                      "truncated JPEG: no end-of-image marker (FFD9) after the scan data");
  }
  return state.info;
}

}  // namespace shardpack::codec
