#include "tests/testing/field_fixtures.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "tests/testing/shard_fixtures.h"

namespace shardpack::testing {
namespace {

ByteSpan Bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

template <typename T>
ByteSpan Bytes(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

}  // namespace

std::vector<Field> EveryFieldType() {
  std::vector<Field> f;
  f.push_back(FieldOf("photo", FieldType::kImage));
  f.back().image.encoding = Encoding::kJpeg;
  f.push_back(FieldOf("caption", FieldType::kString));
  f.push_back(FieldOf("boxes", FieldType::kArray));
  f.back().dtype = ArrayDType::kF32;
  f.back().shape = {0, 4};
  f.push_back(FieldOf("category", FieldType::kLabel));
  f.back().classes = {"cat", "dog", "bird"};
  f.push_back(FieldOf("mask", FieldType::kImage, true));
  f.back().image = {Encoding::kRaw, Layout::kHWC, 0, 0, 1};
  f.push_back(FieldOf("meta", FieldType::kJson, true));
  f.push_back(FieldOf("embedding", FieldType::kArray));
  f.back().dtype = ArrayDType::kF16;
  f.back().shape = {4};
  f.push_back(FieldOf("blob", FieldType::kBytes));
  f.push_back(FieldOf("tokens", FieldType::kArray, true));
  f.back().dtype = ArrayDType::kI32;
  f.back().shape = {0};
  return f;
}

std::string SampleCaption(uint64_t i) {
  return absl::StrCat("record ", i, ": a caf\xc3\xa9 scene");
}

FieldSample SampleOf(uint64_t i, std::vector<uint8_t> jpeg, ImageInfo jpeg_info) {
  FieldSample s;
  s.key = absl::StrCat("s/", i);
  s.photo_info = jpeg_info;
  s.photo = std::move(jpeg);
  s.caption = SampleCaption(i);
  for (uint64_t r = 0; r < i % 3; ++r) {
    for (int c = 0; c < 4; ++c) s.boxes.push_back(static_cast<float>(i) + 0.25f * (4 * r + c));
  }
  s.category = static_cast<int64_t>(i % 3);
  s.has_mask = i % 3 != 2;
  s.mask = {0, 1, 2, 3, 4, static_cast<uint8_t>(i)};
  s.has_meta = i % 2 == 0;
  s.meta = absl::StrCat(R"({"id": )", i, R"(, "tags": ["a", "b"]})");
  // 1, 2, 3, 4 in binary16.
  s.embedding = {0x3c00, 0x4000, 0x4200, 0x4400};
  s.blob = PatternBytes(i, i % 5);
  s.has_tokens = i % 4 != 3;
  for (uint64_t t = 0; t < i % 4; ++t) s.tokens.push_back(static_cast<int32_t>(100 * i + t));
  return s;
}

std::vector<FieldValue> FieldSample::Values() const {
  std::vector<FieldValue> v(kSampleFields);
  for (FieldValue& x : v) x.present = true;
  v[kPhoto].image = photo_info;
  v[kPhoto].bytes = photo;
  v[kCaption].bytes = Bytes(caption);
  v[kBoxes].bytes = Bytes(boxes);
  v[kCategory].label = category;
  v[kMask].present = has_mask;
  v[kMask].image = {Encoding::kRaw, Layout::kHWC, 2, 3, 1};
  v[kMask].bytes = mask;
  v[kMeta].present = has_meta;
  v[kMeta].bytes = Bytes(meta);
  v[kEmbedding].bytes = Bytes(embedding);
  v[kBlob].bytes = blob;
  v[kTokens].present = has_tokens;
  v[kTokens].bytes = Bytes(tokens);
  return v;
}

absl::StatusOr<Manifest> WriteFieldsDataset(DatasetWriterOptions options, uint64_t n,
                                            const std::vector<uint8_t>& jpeg,
                                            const ImageInfo& jpeg_info) {
  SP_ASSIGN_OR_RETURN(options.schema, MakeSchema(EveryFieldType()));
  SP_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> writer, DatasetWriter::Create(options));
  RecordFields fields(options.schema);
  for (uint64_t i = 0; i < n; ++i) {
    const FieldSample s = SampleOf(i, jpeg, jpeg_info);
    const std::vector<FieldValue> values = s.Values();
    SP_ASSIGN_OR_RETURN(Record r, fields.Build(s.key, values));
    SP_RETURN_IF_ERROR(writer->Add(r));
  }
  return writer->Finish();
}

}  // namespace shardpack::testing
