// A dataset of records with fields, for tests, fuzz seeds and benchmarks: one
// schema holding every field type, deterministic values for record i, and a
// writer of such datasets through DatasetWriter (any backend the options
// name). No GoogleTest here (shardpack_test_fixtures).
#ifndef SHARDPACK_TESTS_TESTING_FIELD_FIXTURES_H_
#define SHARDPACK_TESTS_TESTING_FIELD_FIXTURES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "shardpack/dataset.h"
#include "shardpack/fields.h"
#include "shardpack/manifest.h"

namespace shardpack::testing {

// Field indexes of EveryFieldType().
enum SampleField : int {
  kPhoto,      // jpeg
  kCaption,    // string
  kBoxes,      // f32[n,4]: i % 3 rows
  kCategory,   // label of classes cat, dog, bird: i % 3
  kMask,       // raw:gray?, a 2x3 gray image; absent when i % 3 == 2
  kMeta,       // json?: {"id": i, "tags": [...]}; absent when i is odd
  kEmbedding,  // f16[4]
  kBlob,       // bytes: i % 5 pattern bytes
  kTokens,     // i32[n]?: i % 4 tokens; absent when i % 4 == 3
  kSampleFields
};

// photo, caption, boxes, category, mask, meta, embedding, blob, tokens.
std::vector<Field> EveryFieldType();

// The values of record i of EveryFieldType(), owning their bytes. The
// photo's bytes are `jpeg` (a real JPEG for tests that decode, any bytes
// for those that do not) with the shape given.
struct FieldSample {
  std::string key;
  ImageInfo photo_info;
  std::vector<uint8_t> photo;
  std::string caption;
  std::vector<float> boxes;
  int64_t category = 0;
  std::vector<uint8_t> mask;
  std::string meta;
  std::vector<uint16_t> embedding;
  std::vector<uint8_t> blob;
  std::vector<int32_t> tokens;
  bool has_mask = true, has_meta = true, has_tokens = true;

  // Views of the fields above, valid while this sample lives unchanged.
  std::vector<FieldValue> Values() const;
};

FieldSample SampleOf(uint64_t i, std::vector<uint8_t> jpeg, ImageInfo jpeg_info);

// The caption of record i: "record <i>: a café scene" (UTF-8, not ASCII).
std::string SampleCaption(uint64_t i);

// Writes records 0..n-1 (SampleOf with `jpeg`) into options.directory with
// options.schema set to EveryFieldType()'s.
absl::StatusOr<Manifest> WriteFieldsDataset(DatasetWriterOptions options, uint64_t n,
                                            const std::vector<uint8_t>& jpeg,
                                            const ImageInfo& jpeg_info);

}  // namespace shardpack::testing

#endif  // SHARDPACK_TESTS_TESTING_FIELD_FIXTURES_H_
