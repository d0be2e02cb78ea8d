#include "format/record_codec.h"

#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/errors.h"
#include "format/shard_layout.h"

static_assert(shardpack::format::kMaxRecordHeadBytes ==
              shardpack::format::kRecordHeaderSize + 8 * shardpack::kMaxLabels);

namespace shardpack::format {

absl::StatusOr<uint64_t> EncodedRecordSize(const Record& r) {
  if (r.labels.size() > kMaxLabels) {
    return absl::InvalidArgumentError(
        absl::StrCat("record '", common::AsAbsl(r.key), "': ", r.labels.size(),
                     " labels (at most ", kMaxLabels, ")"));
  }
  if (r.key.size() > std::numeric_limits<uint16_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "record key of ", r.key.size(), " bytes (at most 65535)"));
  }
  constexpr uint64_t kU32Max = std::numeric_limits<uint32_t>::max();
  if (r.payload.size() > kU32Max || r.extra.size() > kU32Max) {
    return absl::InvalidArgumentError(
        absl::StrCat("record '", common::AsAbsl(r.key), "': payload or extra over 4 GiB"));
  }
  if (r.image.encoding != Encoding::kRaw && r.image.encoding != Encoding::kJpeg) {
    return absl::InvalidArgumentError(
        absl::StrCat("record '", common::AsAbsl(r.key), "': unknown encoding"));
  }
  if (r.image.encoding == Encoding::kRaw &&
      r.image.RawBytes() != r.payload.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "record '", common::AsAbsl(r.key), "': raw payload of ", r.payload.size(),
        " bytes does not match ", r.image.height, "x", r.image.width, "x",
        int{r.image.channels}));
  }
  uint64_t size = kRecordHeaderSize + 8 * uint64_t(r.labels.size()) +
                  r.key.size() + r.extra.size() + r.payload.size();
  return common::AlignUp(size, kRecordAlignment);
}

size_t EncodeRecordHead(const Record& r, uint8_t* dst) {
  common::StoreLE<uint32_t>(dst + 0, static_cast<uint32_t>(r.payload.size()));
  common::StoreLE<uint32_t>(dst + 4, static_cast<uint32_t>(r.extra.size()));
  common::StoreLE<uint32_t>(dst + 8, r.image.height);
  common::StoreLE<uint32_t>(dst + 12, r.image.width);
  common::StoreLE<uint16_t>(dst + 16, static_cast<uint16_t>(r.key.size()));
  dst[18] = static_cast<uint8_t>(r.image.encoding);
  dst[19] = static_cast<uint8_t>(r.image.layout);
  dst[20] = r.image.channels;
  dst[21] = static_cast<uint8_t>(r.labels.size());
  common::StoreLE<uint16_t>(dst + 22, 0);
  uint8_t* p = dst + kRecordHeaderSize;
  for (int64_t label : r.labels) {
    common::StoreLE<int64_t>(p, label);
    p += 8;
  }
  return static_cast<size_t>(p - dst);
}

void EncodeRecord(const Record& r, uint8_t* dst, uint64_t size) {
  uint8_t* p = dst + EncodeRecordHead(r, dst);
  // memcpy with a null source is undefined even for zero bytes.
  auto put = [&p](const void* src, size_t n) {
    if (n != 0) std::memcpy(p, src, n);
    p += n;
  };
  put(r.key.data(), r.key.size());
  put(r.extra.data(), r.extra.size());
  put(r.payload.data(), r.payload.size());
  std::memset(p, 0, dst + size - p);
}

absl::StatusOr<Record> DecodeRecord(std::span<const uint8_t> bytes,
                                    absl::FunctionRef<std::string()> where) {
  auto damaged = [&where](std::string_view what) {
    return absl::DataLossError(absl::StrCat(where(), ": ", common::AsAbsl(what)));
  };
  if (bytes.size() < kRecordHeaderSize) return damaged("record header cut short");
  const uint8_t* h = bytes.data();
  uint32_t payload_len = common::LoadLE<uint32_t>(h + 0);
  uint32_t extra_len = common::LoadLE<uint32_t>(h + 4);
  Record r;
  r.image.height = common::LoadLE<uint32_t>(h + 8);
  r.image.width = common::LoadLE<uint32_t>(h + 12);
  uint16_t key_len = common::LoadLE<uint16_t>(h + 16);
  uint8_t encoding = h[18], layout = h[19], label_count = h[21];
  r.image.channels = h[20];
  if (encoding > static_cast<uint8_t>(Encoding::kJpeg)) {
    return damaged(absl::StrCat("unknown encoding ", int{encoding}));
  }
  if (layout > static_cast<uint8_t>(Layout::kCHW)) {
    return damaged(absl::StrCat("unknown layout ", int{layout}));
  }
  if (label_count > kMaxLabels) {
    return damaged(absl::StrCat(int{label_count}, " labels (at most ", kMaxLabels, ")"));
  }
  if (common::LoadLE<uint16_t>(h + 22) != 0) return damaged("reserved record bytes not zero");
  r.image.encoding = static_cast<Encoding>(encoding);
  r.image.layout = static_cast<Layout>(layout);
  uint64_t used = kRecordHeaderSize + 8 * uint64_t{label_count} + key_len +
                  uint64_t{extra_len} + payload_len;
  if (common::AlignUp(used, kRecordAlignment) != bytes.size()) {
    return damaged(absl::StrCat("record lengths add up to ", used,
                                " bytes but the record spans ", bytes.size()));
  }
  if (r.image.encoding == Encoding::kRaw && r.image.RawBytes() != payload_len) {
    return damaged(absl::StrCat("raw payload of ", payload_len, " bytes for a ",
                                r.image.height, "x", r.image.width, "x",
                                int{r.image.channels}, " image"));
  }
  for (size_t i = used; i < bytes.size(); ++i) {
    if (bytes[i] != 0) return damaged("record padding is not zero");
  }
  const uint8_t* p = h + kRecordHeaderSize;
  for (int i = 0; i < label_count; ++i, p += 8) r.labels.push_back(common::LoadLE<int64_t>(p));
  r.key = std::string_view(reinterpret_cast<const char*>(p), key_len);
  p += key_len;
  r.extra = std::span<const uint8_t>(p, extra_len);
  p += extra_len;
  r.payload = std::span<const uint8_t>(p, payload_len);
  return r;
}

}  // namespace shardpack::format
