// The input of fields_fuzzer: one record of testing::EveryFieldType()'s
// schema as arbitrary bytes, and the seeds' way of writing a valid one.
//
//   byte 0      flags: 1 check the record CRC-32C, 2 recompute it first (so
//               mutations reach the checks behind it), 4 a JPEG payload
//               (else raw), 8 CHW
//   byte 1      label count (mod kMaxLabels + 1)
//   bytes 2..9  u16 height, u16 width, u8 channels, 3 bytes unused
//   bytes 10..  u32 extra length (cut to what is left), the labels (i64
//               each), the extra bytes (the field section), the payload
//               (the rest); the key is "k".
#ifndef SHARDPACK_TESTS_FUZZ_FIELDS_INPUT_H_
#define SHARDPACK_TESTS_FUZZ_FIELDS_INPUT_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/coding.h"
#include "shardpack/record.h"

namespace shardpack::fuzz {

inline constexpr uint8_t kCheckCrc = 1, kRefreshCrc = 2, kJpeg = 4, kChw = 8;
inline constexpr size_t kFieldsInputHead = 14;

struct FieldsInput {
  uint8_t flags = 0;
  Record record;  // views into the input (the extra bytes into `extra`)
  std::vector<uint8_t> extra;  // a copy, which kRefreshCrc may rewrite
};

// False when the input is shorter than its head.
inline bool ParseFieldsInput(const uint8_t* data, size_t size, FieldsInput* in) {
  if (size < kFieldsInputHead) return false;
  in->flags = data[0];
  const int labels = data[1] % (kMaxLabels + 1);
  in->record.image = {(in->flags & kJpeg) ? Encoding::kJpeg : Encoding::kRaw,
                      (in->flags & kChw) ? Layout::kCHW : Layout::kHWC,
                      common::LoadLE<uint16_t>(data + 2), common::LoadLE<uint16_t>(data + 4),
                      data[6]};
  size_t at = kFieldsInputHead;
  for (int l = 0; l < labels && at + 8 <= size; ++l, at += 8) {
    in->record.labels.push_back(common::LoadLE<int64_t>(data + at));
  }
  const size_t extra = std::min<size_t>(common::LoadLE<uint32_t>(data + 10), size - at);
  in->extra.assign(data + at, data + at + extra);
  in->record.key = "k";
  in->record.extra = in->extra;
  in->record.payload = {data + at + extra, size - at - extra};
  return true;
}

// The input holding `r` (extra bytes as they are), with `flags`.
inline std::string FieldsInputOf(const Record& r, uint8_t flags) {
  std::string out(kFieldsInputHead, '\0');
  out[0] = static_cast<char>(flags | (r.image.encoding == Encoding::kJpeg ? kJpeg : 0) |
                             (r.image.layout == Layout::kCHW ? kChw : 0));
  out[1] = static_cast<char>(r.labels.size());
  uint8_t* head = reinterpret_cast<uint8_t*>(out.data());
  common::StoreLE<uint16_t>(head + 2, static_cast<uint16_t>(r.image.height));
  common::StoreLE<uint16_t>(head + 4, static_cast<uint16_t>(r.image.width));
  head[6] = r.image.channels;
  common::StoreLE<uint32_t>(head + 10, static_cast<uint32_t>(r.extra.size()));
  for (int64_t l : r.labels) {
    uint8_t b[8];
    common::StoreLE<int64_t>(b, l);
    out.append(reinterpret_cast<const char*>(b), 8);
  }
  out.append(reinterpret_cast<const char*>(r.extra.data()), r.extra.size());
  out.append(reinterpret_cast<const char*>(r.payload.data()), r.payload.size());
  return out;
}

}  // namespace shardpack::fuzz

#endif  // SHARDPACK_TESTS_FUZZ_FIELDS_INPUT_H_
