#include "tests/testing/shard_fixtures.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace shardpack::testing {

std::vector<uint8_t> PatternBytes(uint64_t seed, size_t n) {
  std::vector<uint8_t> out(n);
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (size_t i = 0; i < n; ++i) {
    if (i % 8 == 0) {
      x += 0x9e3779b97f4a7c15ULL;
      uint64_t z = x;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      x = z ^ (z >> 31);
    }
    out[i] = static_cast<uint8_t>(x >> (8 * (i % 8)));
  }
  return out;
}

OwnedRecord RawRecord(uint64_t i, uint32_t h, uint32_t w, uint8_t c, Layout layout) {
  OwnedRecord r;
  r.key = absl::StrCat("raw/", i);
  r.labels = {static_cast<int64_t>(i % 10)};
  r.image = {Encoding::kRaw, layout, h, w, c};
  r.payload = PatternBytes(i, size_t{h} * w * c);
  return r;
}

std::string Cifar10Bytes(int n) {
  std::string bytes;
  for (int i = 0; i < n; ++i) {
    bytes += static_cast<char>(i % 10);
    for (int j = 0; j < 3072; ++j) bytes += static_cast<char>((i * 7 + j * 13) & 255);
  }
  return bytes;
}

OwnedRecord JpegLikeRecord(uint64_t i, size_t n) {
  OwnedRecord r;
  r.key = absl::StrCat("class_", i % 3, "/img_", i, ".JPEG");
  r.labels = {static_cast<int64_t>(i % 3), -static_cast<int64_t>(i)};
  r.image = {Encoding::kJpeg, Layout::kHWC, 375, 500, 3};
  r.payload = PatternBytes(i + 1000, n);
  r.extra = PatternBytes(i + 7, i % 5);
  return r;
}

Field FieldOf(std::string name, FieldType type, bool optional) {
  Field f;
  f.name = std::move(name);
  f.type = type;
  f.optional = optional;
  return f;
}

absl::StatusOr<std::string> EncodeShard(const std::vector<OwnedRecord>& records,
                                        const ShardWriterOptions& options) {
  std::string out;
  auto file = NewStringWritableFile("mem.shard", &out);
  SP_ASSIGN_OR_RETURN(std::unique_ptr<ShardWriter> writer,
                      ShardWriter::Create(file.get(), options));
  for (const OwnedRecord& r : records) SP_RETURN_IF_ERROR(writer->Add(r.record()));
  SP_RETURN_IF_ERROR(writer->Finish());
  return out;
}

}  // namespace shardpack::testing
