// Writes the dataset of tests/python/fields_test.py's boxes: photos in
// which a box marks a red rectangle, so that a test can see where the box
// went after a crop. Written with RecordFields::Build and DatasetWriter.
//
//   make_box_dataset DIR [--records N]
//
// Record i: photo, raw RGB of W x H (W = 64 + 7i mod 32, H = 48 + 5i mod
// 24), gray with a red rectangle and, for i mod 3 == 0, a green one;
// caption, a string naming the red box; boxes, [n, 4] f32 (x0, y0, x1, y1
// in photo pixels, x1 and y1 past the last pixel): the red rectangle, then
// the green; tag, a label (0 "small", 1 "large": the red box's area under
// or over 300 pixels); mask, raw 1-channel of the photo's size, 1 inside the
// red rectangle (optional: absent for i mod 4 == 3); meta, JSON {"i": i,
// "colors": [...]} (optional: absent for i mod 3 == 2); tokens, [n] i32
// (n = i mod 5: i, i + 1, ...).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "shardpack/dataset.h"
#include "shardpack/fields.h"
#include "tests/testing/shard_fixtures.h"

namespace shardpack {
namespace {

struct Box {
  uint32_t x0, y0, x1, y1;
};

std::vector<Field> Fields() {
  std::vector<Field> f = {testing::FieldOf("photo", FieldType::kImage),
                          testing::FieldOf("caption", FieldType::kString),
                          testing::FieldOf("boxes", FieldType::kArray),
                          testing::FieldOf("tag", FieldType::kLabel),
                          testing::FieldOf("mask", FieldType::kImage, true),
                          testing::FieldOf("meta", FieldType::kJson, true),
                          testing::FieldOf("tokens", FieldType::kArray)};
  f[0].image = {Encoding::kRaw, Layout::kHWC, 0, 0, 3};
  f[2].dtype = ArrayDType::kF32;
  f[2].shape = {0, 4};
  f[3].classes = {"small", "large"};
  f[4].image = {Encoding::kRaw, Layout::kHWC, 0, 0, 1};
  f[6].dtype = ArrayDType::kI32;
  f[6].shape = {0};
  return f;
}

// One record's values, owning their bytes.
struct Sample {
  std::vector<uint8_t> photo, mask;
  std::string caption, meta;
  std::vector<float> boxes;
  std::vector<int32_t> tokens;
  std::vector<FieldValue> values = std::vector<FieldValue>(7);
};

void Paint(std::vector<uint8_t>& photo, uint32_t w, const Box& b, const uint8_t rgb[3]) {
  for (uint32_t y = b.y0; y < b.y1; ++y) {
    for (uint32_t x = b.x0; x < b.x1; ++x) std::memcpy(&photo[(size_t(y) * w + x) * 3], rgb, 3);
  }
}

template <typename T>
ByteSpan Span(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

void MakeSample(uint32_t i, Sample& s) {
  const uint32_t w = 64 + (7 * i) % 32, h = 48 + (5 * i) % 24;
  const Box red{8 + i % 9, 6 + i % 7, 8 + i % 9 + 16 + i % 11, 6 + i % 7 + 12 + i % 5};
  const Box green{w - 20, h - 14, w - 6, h - 4};
  s.photo.assign(size_t(w) * h * 3, 128);
  static constexpr uint8_t kRed[3] = {255, 0, 0}, kGreen[3] = {0, 255, 0};
  Paint(s.photo, w, red, kRed);
  s.boxes = {float(red.x0), float(red.y0), float(red.x1), float(red.y1)};
  if (i % 3 == 0) {
    Paint(s.photo, w, green, kGreen);
    s.boxes.insert(s.boxes.end(), {float(green.x0), float(green.y0), float(green.x1), float(green.y1)});
  }
  s.mask.assign(size_t(w) * h, 0);
  for (uint32_t y = red.y0; y < red.y1; ++y) std::memset(&s.mask[size_t(y) * w + red.x0], 1, red.x1 - red.x0);
  s.caption = absl::StrCat("photo ", i, ": a red box at ", red.x0, ",", red.y0);
  s.meta = absl::StrCat("{\"i\": ", i, ", \"colors\": [\"red\"", i % 3 == 0 ? ", \"green\"" : "", "]}");
  s.tokens.clear();
  for (uint32_t t = 0; t < i % 5; ++t) s.tokens.push_back(int32_t(i + t));
  for (FieldValue& v : s.values) v = FieldValue{};
  std::vector<FieldValue>& v = s.values;
  v[0] = {true, {Encoding::kRaw, Layout::kHWC, h, w, 3}, 0, s.photo};
  v[1] = {true, {}, 0, {reinterpret_cast<const uint8_t*>(s.caption.data()), s.caption.size()}};
  v[2] = {true, {}, 0, Span(s.boxes)};
  const uint32_t area = (red.x1 - red.x0) * (red.y1 - red.y0);
  v[3] = {true, {}, area > 300 ? 1 : 0, {}};
  if (i % 4 != 3) v[4] = {true, {Encoding::kRaw, Layout::kHWC, h, w, 1}, 0, s.mask};
  if (i % 3 != 2) v[5] = {true, {}, 0, {reinterpret_cast<const uint8_t*>(s.meta.data()), s.meta.size()}};
  v[6] = {true, {}, 0, Span(s.tokens)};
}

absl::Status Write(const std::string& dir, uint32_t records) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat(dir, ": cannot create: ", ec.message()));
  DatasetWriterOptions options;
  options.directory = dir;
  options.shard.block_size = 64 << 10;
  SP_ASSIGN_OR_RETURN(options.schema, MakeSchema(Fields()));
  SP_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> writer, DatasetWriter::Create(options));
  RecordFields build(options.schema);
  Sample s;
  for (uint32_t i = 0; i < records; ++i) {
    MakeSample(i, s);
    const std::string key = absl::StrCat("r", i);
    SP_ASSIGN_OR_RETURN(Record r, build.Build(key, s.values));
    SP_RETURN_IF_ERROR(writer->Add(r));
  }
  return writer->Finish().status();
}

}  // namespace
}  // namespace shardpack

int main(int argc, char** argv) {
  if (argc != 2 && !(argc == 4 && std::string(argv[2]) == "--records")) {
    std::fprintf(stderr, "usage: make_box_dataset DIR [--records N]\n");
    return 2;
  }
  const uint32_t records = argc == 4 ? static_cast<uint32_t>(std::stoul(argv[3])) : 64;
  absl::Status s = shardpack::Write(argv[1], records);
  if (!s.ok()) {
    std::fprintf(stderr, "make_box_dataset: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
