// Fields in batches (docs/reader.md, "Fields in batches"): each field type
// collated, optional fields absent, the field selection, image fields that
// follow the first one's crop, damaged rows replaced, mixtures of other
// fields refused. Datasets are written here with RecordFields::Build.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/dataset.h"
#include "shardpack/fields.h"
#include "shardpack/reader.h"
#include "tests/testing/jpeg_fixtures.h"
#include "tests/testing/shard_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

using ::testing::HasSubstr;
using testing::FieldOf;
using testing::StatusIs;

// A sample's values, owning what the views point at.
struct Sample {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<FieldValue> values;
  explicit Sample(size_t n) : bytes(n), values(n) {}
  // Field i present with `b` (and `image` for an image).
  void Set(size_t i, std::vector<uint8_t> b, ImageInfo image = {}) {
    bytes[i] = std::move(b);
    values[i].present = true;
    values[i].image = image;
    values[i].bytes = bytes[i];
  }
  void Set(size_t i, const std::string& s) { Set(i, std::vector<uint8_t>(s.begin(), s.end())); }
};

template <typename T>
std::vector<uint8_t> AsBytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Writes `n` records of `fields`, sample i from make(i, sample).
std::string WriteDataset(const testing::TempDir& dir, const std::string& name,
                         const std::vector<Field>& fields, int n,
                         const std::function<void(int, Sample&)>& make) {
  const std::string path = dir.Join(name);
  std::filesystem::create_directories(path);
  DatasetWriterOptions o;
  o.directory = path;
  o.shard.block_size = 16 << 10;
  absl::StatusOr<Schema> schema = MakeSchema(fields);
  EXPECT_TRUE(schema.ok()) << schema.status();
  o.schema = *schema;
  auto writer = DatasetWriter::Create(o);
  EXPECT_TRUE(writer.ok()) << writer.status();
  RecordFields build(o.schema);
  for (int i = 0; i < n; ++i) {
    Sample s(fields.size());
    make(i, s);
    const std::string key = absl::StrCat("k", i);
    absl::StatusOr<Record> r = build.Build(key, s.values);
    EXPECT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE((*writer)->Add(*r).ok());
  }
  EXPECT_TRUE((*writer)->Finish().ok());
  return path;
}

ReaderOptions Options(const std::string& path, int batch) {
  ReaderOptions o;
  o.path = path;
  o.batch_size = batch;
  o.threads = 2;
  o.rank = 0;
  o.world_size = 1;
  o.shuffle = false;
  return o;
}

// photo raw 4x4x3 (fixed), caption, boxes [n, 4] f32 (n = i % 3), tag
// (label of 3 classes), mask raw 1-channel of i+1 x 2 (optional, absent
// for odd i), meta JSON (optional, absent when i % 3 == 2), embedding [2]
// i32, blob bytes (optional, absent for even i).
std::vector<Field> EveryType() {
  std::vector<Field> f;
  f.push_back(FieldOf("photo", FieldType::kImage));
  f.back().image = {Encoding::kRaw, Layout::kHWC, 4, 4, 3};
  f.push_back(FieldOf("caption", FieldType::kString));
  f.push_back(FieldOf("boxes", FieldType::kArray));
  f.back().dtype = ArrayDType::kF32;
  f.back().shape = {0, 4};
  f.push_back(FieldOf("tag", FieldType::kLabel));
  f.back().classes = {"a", "b", "c"};
  f.push_back(FieldOf("mask", FieldType::kImage, true));
  f.back().image = {Encoding::kRaw, Layout::kHWC, 0, 0, 1};
  f.push_back(FieldOf("meta", FieldType::kJson, true));
  f.push_back(FieldOf("embedding", FieldType::kArray));
  f.back().dtype = ArrayDType::kI32;
  f.back().shape = {2};
  f.push_back(FieldOf("blob", FieldType::kBytes, true));
  return f;
}

std::string Caption(int i) { return absl::StrCat("caption ", std::string(size_t(i % 5), 'x'), i); }
std::vector<float> Boxes(int i) {
  std::vector<float> b;
  for (int r = 0; r < i % 3; ++r) b.insert(b.end(), {float(i), float(r), float(i + 10), float(r + 10)});
  return b;
}

void MakeEveryType(int i, Sample& s) {
  s.Set(0, std::vector<uint8_t>(48, uint8_t(i)), {Encoding::kRaw, Layout::kHWC, 4, 4, 3});
  s.Set(1, Caption(i));
  s.Set(2, AsBytes(Boxes(i)));
  s.values[3].present = true;
  s.values[3].label = i % 3;
  if (i % 2 == 0) {
    s.Set(4, std::vector<uint8_t>(size_t(i + 1) * 2, uint8_t(i + 1)),
          {Encoding::kRaw, Layout::kHWC, uint32_t(i + 1), 2, 1});
  }
  if (i % 3 != 2) s.Set(5, absl::StrCat("{\"i\": ", i, "}"));
  s.Set(6, AsBytes(std::vector<int32_t>{i, -i}));
  if (i % 2 == 1) s.Set(7, std::string(size_t(i), 'b'));
}

std::string Text(const BatchField& f, int i) {
  const auto* p = static_cast<const char*>(f.values);
  return std::string(p + f.offsets[i], size_t(f.offsets[i + 1] - f.offsets[i]));
}

class FieldBatchTest : public ::testing::Test {
 protected:
  testing::TempDir dir_;
};

TEST_F(FieldBatchTest, EachTypeIsCollatedAndAbsenceShows) {
  const std::string path = WriteDataset(dir_, "ds", EveryType(), 12, MakeEveryType);
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(Options(path, 6)));
  for (int b = 0; b < 2; ++b) {
    SP_ASSERT_OK_AND_ASSIGN(Batch batch, reader->Next());
    ASSERT_EQ(batch.num_fields(), 8);
    const int first = 6 * b;
    // photo: the transformed image, images() itself.
    const BatchField photo = batch.field(0);
    EXPECT_EQ(photo.name, "photo");
    EXPECT_TRUE(photo.transformed);
    EXPECT_EQ(photo.values, batch.images());
    EXPECT_EQ(batch.shape(), (std::array<int64_t, 4>{6, 4, 4, 3}));
    EXPECT_EQ(static_cast<const uint8_t*>(batch.images())[48 * 5], uint8_t(first + 5));
    const BatchField caption = batch.field(batch.field_index("caption"));
    ASSERT_TRUE(caption.variable);
    EXPECT_EQ(caption.offsets[0], 0);
    const BatchField boxes = batch.field(2);
    ASSERT_TRUE(boxes.variable);
    EXPECT_EQ(boxes.dtype, ArrayDType::kF32);
    ASSERT_EQ(boxes.rank, 2);
    EXPECT_EQ(boxes.shape[1], 4);
    const BatchField tag = batch.field(3);
    EXPECT_FALSE(tag.variable);
    EXPECT_EQ(tag.dtype, ArrayDType::kI64);
    const BatchField mask = batch.field(4);
    ASSERT_TRUE(mask.variable);
    ASSERT_NE(mask.image_shapes, nullptr);
    EXPECT_FALSE(mask.transformed);
    const BatchField meta = batch.field(5);
    const BatchField embedding = batch.field(6);
    EXPECT_FALSE(embedding.variable);
    EXPECT_EQ(embedding.shape[0], 6);
    EXPECT_EQ(embedding.shape[1], 2);
    const BatchField blob = batch.field(7);
    for (int i = 0; i < 6; ++i) {
      const int r = first + i;
      ASSERT_EQ(batch.record_index(i), uint64_t(r));
      EXPECT_EQ(Text(caption, i), Caption(r));
      EXPECT_EQ(caption.present[i], 1);
      const std::vector<float> want = Boxes(r);
      ASSERT_EQ(boxes.offsets[i + 1] - boxes.offsets[i], int64_t(want.size() / 4)) << r;
      // std::equal, not memcmp: a record without boxes has want.data() null,
      // which memcmp may not be given even for 0 bytes (UBSan says so).
      const float* got = static_cast<const float*>(boxes.values) + 4 * boxes.offsets[i];
      EXPECT_TRUE(std::equal(want.begin(), want.end(), got)) << r;
      EXPECT_EQ(static_cast<const int64_t*>(tag.values)[i], r % 3);
      EXPECT_EQ(batch.labels()[i], r % 3);  // labels stay where they were
      EXPECT_EQ(mask.present[i], r % 2 == 0 ? 1 : 0);
      EXPECT_EQ(mask.image_shapes[3 * i], r % 2 == 0 ? r + 1 : 0);
      EXPECT_EQ(mask.offsets[i + 1] - mask.offsets[i], r % 2 == 0 ? 2 * (r + 1) : 0);
      EXPECT_EQ(meta.present[i], r % 3 != 2 ? 1 : 0);
      EXPECT_EQ(Text(meta, i), r % 3 != 2 ? absl::StrCat("{\"i\": ", r, "}") : "");
      EXPECT_EQ(static_cast<const int32_t*>(embedding.values)[2 * i + 1], -r);
      EXPECT_EQ(blob.present[i], r % 2);
      EXPECT_EQ(Text(blob, i), std::string(size_t(r % 2 == 1 ? r : 0), 'b'));
    }
    EXPECT_EQ(mask.shape[0], mask.offsets[6]);
    // transform none: the window is the whole image, unflipped.
    EXPECT_EQ(batch.crops()[2], 4.f);
    EXPECT_EQ(batch.source_sizes()[1], 4);
    EXPECT_EQ(batch.flips()[0], 0);
  }
}

TEST_F(FieldBatchTest, AClassicDatasetIsReadAsAlwaysUnlessFieldsAreAsked) {
  std::vector<Field> classic = {FieldOf("image", FieldType::kImage), FieldOf("label", FieldType::kLabel)};
  classic[0].image = {Encoding::kRaw, Layout::kHWC, 2, 2, 3};
  const std::string path = WriteDataset(dir_, "classic", classic, 8, [](int i, Sample& s) {
    s.Set(0, std::vector<uint8_t>(12, uint8_t(i)), {Encoding::kRaw, Layout::kHWC, 2, 2, 3});
    s.values[1].present = true;
    s.values[1].label = i;
  });
  ReaderOptions o = Options(path, 4);
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  SP_ASSERT_OK_AND_ASSIGN(Batch batch, reader->Next());
  EXPECT_EQ(batch.num_fields(), 0);
  EXPECT_EQ(batch.field_index("label"), -1);
  o.fields = {"label"};
  SP_ASSERT_OK_AND_ASSIGN(auto fields, Reader::Open(o));
  SP_ASSERT_OK_AND_ASSIGN(Batch b, fields->Next());
  ASSERT_EQ(b.num_fields(), 1);
  EXPECT_EQ(b.field(0).name, "label");
  EXPECT_EQ(static_cast<const int64_t*>(b.field(0).values)[3], 3);
  EXPECT_EQ(b.shape(), (std::array<int64_t, 4>{4, 0, 0, 0}));  // the image was not selected
}

// The fields left out are not decoded: a photo that would fail to decode
// does not matter to a loop that reads captions.
TEST_F(FieldBatchTest, FieldsLeftOutAreNeitherDecodedNorDelivered) {
  std::vector<Field> fields = {FieldOf("photo", FieldType::kImage), FieldOf("caption", FieldType::kString),
                               FieldOf("tag", FieldType::kLabel)};
  fields[0].image.encoding = Encoding::kJpeg;
  const std::vector<uint8_t> jpeg =
      testing::EncodeJpeg(std::vector<uint8_t>(16 * 16 * 3, 90), 16, 16, TJPF_RGB, TJSAMP_444);
  const std::string path = WriteDataset(dir_, "ds", fields, 8, [&](int i, Sample& s) {
    std::vector<uint8_t> j = jpeg;
    if (i == 5) j.resize(j.size() / 3);  // cut short: damage, when decoded
    s.Set(0, j, {Encoding::kJpeg, Layout::kHWC, 16, 16, 3});
    s.Set(1, Caption(i));
    s.values[2].present = true;
    s.values[2].label = i;
  });
  ReaderOptions o = Options(path, 8);
  o.transform = Transform::RandomResizedCrop(8);
  SP_ASSERT_OK_AND_ASSIGN(auto all, Reader::Open(o));
  EXPECT_THAT(all->Next().status(), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("field 'photo'")));
  o.fields = {"tag", "caption"};  // any order: delivered in the schema's
  SP_ASSERT_OK_AND_ASSIGN(auto captions, Reader::Open(o));
  SP_ASSERT_OK_AND_ASSIGN(Batch batch, captions->Next());
  ASSERT_EQ(batch.num_fields(), 2);
  EXPECT_EQ(batch.field(0).name, "caption");
  EXPECT_EQ(batch.field(1).name, "tag");
  EXPECT_EQ(batch.field_index("photo"), -1);
  EXPECT_EQ(batch.image_bytes(), 0u);
  EXPECT_EQ(Text(batch.field(0), 5), Caption(5));
  // Transform none leaves a JPEG as stored: bytes, offsets and shapes.
  o.fields = {};
  o.transform = Transform::None();
  SP_ASSERT_OK_AND_ASSIGN(auto stored, Reader::Open(o));
  SP_ASSERT_OK_AND_ASSIGN(Batch raw, stored->Next());
  const BatchField photo = raw.field(0);
  ASSERT_TRUE(photo.variable);
  EXPECT_FALSE(photo.transformed);
  EXPECT_EQ(photo.offsets[1], int64_t(jpeg.size()));
  EXPECT_EQ(photo.image_shapes[1], 16);
}

TEST_F(FieldBatchTest, BadFieldOptionsAreRefusedNamingTheField) {
  const std::string path = WriteDataset(dir_, "ds", EveryType(), 4, MakeEveryType);
  auto refused = [&](std::vector<std::string> fields, std::vector<std::string> image_fields,
                     Transform t = Transform::None()) {
    ReaderOptions o = Options(path, 2);
    o.fields = std::move(fields);
    o.image_fields = std::move(image_fields);
    o.transform = t;
    return Reader::Open(o).status();
  };
  EXPECT_THAT(refused({"caption", "captions"}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("fields: the dataset has no field 'captions' (its fields: "
                                 "photo, caption, boxes, tag, mask, meta, embedding, blob)")));
  EXPECT_THAT(refused({"tag", "tag"}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'tag' is named twice")));
  EXPECT_THAT(refused({}, {"caption"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("image_fields: 'caption' is a string field, not an image")));
  EXPECT_THAT(refused({"caption"}, {"photo"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'photo' is not among `fields`")));
  EXPECT_THAT(refused({}, {"photo", "mask:cubic"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'mask:cubic': the interpolation is linear or nearest")));
  // A crop without a resize needs followers of the leader's size.
  EXPECT_THAT(refused({}, {"photo", "mask"}, Transform::CifarEval(2)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("image field 'mask' is 0x0, 'photo' 4x4")));
}

// Photo (raw RGB) and mask (raw 1-channel label map) of stripes: stripe r of
// the photo is pure color channel r, of the mask the value r. Whatever the
// crop and flip, a pixel where the photo is pure has the mask's value there.
std::vector<Field> Segmentation() {
  std::vector<Field> f = {FieldOf("photo", FieldType::kImage), FieldOf("mask", FieldType::kImage)};
  f[0].image = {Encoding::kRaw, Layout::kHWC, 0, 0, 3};
  f[1].image = {Encoding::kRaw, Layout::kHWC, 0, 0, 1};
  return f;
}

void MakeStripes(int i, Sample& s, uint32_t down) {
  const uint32_t w = 48 + 12 * uint32_t(i % 3), h = 36 + 4 * uint32_t(i % 2);
  std::vector<uint8_t> photo(size_t(w) * h * 3), mask(size_t(w / down) * (h / down));
  // Stripes of a third of the width, shifted with i so that flips show.
  auto stripe = [&](uint32_t x) { return ((x * 3) / w + uint32_t(i)) % 3; };
  for (uint32_t y = 0; y < h; ++y) {
    for (uint32_t x = 0; x < w; ++x) photo[(size_t(y) * w + x) * 3 + stripe(x)] = 255;
  }
  for (uint32_t y = 0; y < h / down; ++y) {
    for (uint32_t x = 0; x < w / down; ++x) mask[size_t(y) * (w / down) + x] = uint8_t(stripe(x * down));
  }
  s.Set(0, photo, {Encoding::kRaw, Layout::kHWC, h, w, 3});
  s.Set(1, mask, {Encoding::kRaw, Layout::kHWC, h / down, w / down, 1});
}

// Of the output pixels where the photo is one pure color, the fraction whose
// mask value names that color; and whether every mask value is a class.
struct Agreement {
  double agree = 0;
  int pure = 0;
  bool classes_only = true;
};

Agreement Agree(const Batch& b, const BatchField& mask, int side) {
  Agreement a;
  int agree = 0;
  const auto* px = static_cast<const uint8_t*>(b.images());
  const auto* m = static_cast<const uint8_t*>(mask.values);
  for (int i = 0; i < b.size(); ++i) {
    for (int p = 0; p < side * side; ++p) {
      const uint8_t* rgb = px + (size_t(i) * side * side + p) * 3;
      const uint8_t v = m[size_t(i) * side * side + p];
      a.classes_only = a.classes_only && v < 3;
      const int top = int(std::max_element(rgb, rgb + 3) - rgb);
      if (rgb[top] < 250 || rgb[(top + 1) % 3] > 5 || rgb[(top + 2) % 3] > 5) continue;
      ++a.pure;
      agree += top == v;
    }
  }
  a.agree = a.pure == 0 ? 0 : double(agree) / a.pure;
  return a;
}

TEST_F(FieldBatchTest, AMaskTakesItsPhotosCropAndFlip) {
  const std::string path = WriteDataset(dir_, "seg", Segmentation(), 24,
                                        [](int i, Sample& s) { MakeStripes(i, s, 1); });
  ReaderOptions o = Options(path, 24);
  o.transform = Transform::RandomResizedCrop(16);
  o.image_fields = {"photo", "mask"};  // a raw 1-channel follower: nearest
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  SP_ASSERT_OK_AND_ASSIGN(Batch b, reader->Next());
  const BatchField mask = b.field(1);
  EXPECT_TRUE(mask.transformed);
  EXPECT_FALSE(mask.variable);
  EXPECT_EQ(mask.dtype, ArrayDType::kU8);
  EXPECT_EQ(mask.shape[1], 16);
  EXPECT_EQ(mask.shape[3], 1);
  const Agreement a = Agree(b, mask, 16);
  EXPECT_GT(a.pure, 24 * 16 * 8);
  EXPECT_EQ(a.agree, 1.0);
  EXPECT_TRUE(a.classes_only);
  int flipped = 0;
  for (int i = 0; i < b.size(); ++i) {
    flipped += b.flips()[i];
    const float* c = b.crops() + 4 * i;  // y, x, h, w within the source
    EXPECT_GE(c[0], 0);
    EXPECT_GE(c[1], 0);
    EXPECT_LE(c[0] + c[2], float(b.source_sizes()[2 * i]));
    EXPECT_LE(c[1] + c[3], float(b.source_sizes()[2 * i + 1]));
    EXPECT_EQ(b.source_sizes()[2 * i + 1], 48 + 12 * int(b.record_index(i) % 3));
  }
  EXPECT_GT(flipped, 3);
  EXPECT_LT(flipped, 21);
  // Linear, the mask's stripes blur at their edges into values between.
  o.image_fields = {"photo", "mask:linear"};
  SP_ASSERT_OK_AND_ASSIGN(auto linear, Reader::Open(o));
  SP_ASSERT_OK_AND_ASSIGN(Batch l, linear->Next());
  EXPECT_EQ(std::memcmp(l.crops(), b.crops(), sizeof(float) * 4 * 24), 0);  // the same draws
}

TEST_F(FieldBatchTest, AMaskOfAnotherResolutionTakesTheWindowScaled) {
  const std::string path = WriteDataset(dir_, "seg2", Segmentation(), 24,
                                        [](int i, Sample& s) { MakeStripes(i, s, 2); });
  ReaderOptions o = Options(path, 24);
  o.transform = Transform::CenterCrop(16);
  o.image_fields = {"photo", "mask"};
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  SP_ASSERT_OK_AND_ASSIGN(Batch b, reader->Next());
  const Agreement a = Agree(b, b.field(1), 16);
  EXPECT_GT(a.pure, 24 * 16 * 8);
  EXPECT_GT(a.agree, 0.97);  // a pixel at a stripe's edge may fall either side at half size
  EXPECT_TRUE(a.classes_only);
}

// CIFAR's crop and flip take the same pixels of a photo and its mask:
// the mask's channel equals the photo's red channel exactly.
TEST_F(FieldBatchTest, CifarCropAndFlipTakeTheSamePixelsOfEachImageField) {
  std::vector<Field> f = {FieldOf("photo", FieldType::kImage), FieldOf("mask", FieldType::kImage)};
  f[0].image = {Encoding::kRaw, Layout::kHWC, 8, 8, 3};
  f[1].image = {Encoding::kRaw, Layout::kHWC, 8, 8, 1};
  const std::string path = WriteDataset(dir_, "cifar", f, 16, [](int i, Sample& s) {
    std::vector<uint8_t> photo(8 * 8 * 3), mask(8 * 8);
    for (size_t p = 0; p < 64; ++p) {
      mask[p] = uint8_t(p * 3 + size_t(i) + 1);
      photo[3 * p] = mask[p];
      photo[3 * p + 1] = uint8_t(i);
    }
    s.Set(0, photo, {Encoding::kRaw, Layout::kHWC, 8, 8, 3});
    s.Set(1, mask, {Encoding::kRaw, Layout::kHWC, 8, 8, 1});
  });
  ReaderOptions o = Options(path, 16);
  o.transform = Transform::CifarTrain(8, 2);
  o.image_fields = {"photo", "mask"};
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  SP_ASSERT_OK_AND_ASSIGN(Batch b, reader->Next());
  const auto* px = static_cast<const uint8_t*>(b.images());
  const auto* m = static_cast<const uint8_t*>(b.field(1).values);
  int flips = 0, shifted = 0;
  for (int i = 0; i < 16; ++i) {
    for (int p = 0; p < 64; ++p) ASSERT_EQ(m[i * 64 + p], px[(i * 64 + p) * 3]) << i << " " << p;
    flips += b.flips()[i];
    shifted += b.crops()[4 * i] != 0 || b.crops()[4 * i + 1] != 0;
    EXPECT_EQ(b.crops()[4 * i + 2], 8.f);
  }
  EXPECT_GT(flips, 0);
  EXPECT_GT(shifted, 0);
}

// With on_corrupt skip, a damaged sample's row is replaced by a good one's,
// every field included, and the offsets stay in order.
TEST_F(FieldBatchTest, ADamagedSampleIsReplacedWithAllItsFields) {
  std::vector<Field> fields = {FieldOf("photo", FieldType::kImage), FieldOf("caption", FieldType::kString),
                               FieldOf("boxes", FieldType::kArray)};
  fields[0].image.encoding = Encoding::kJpeg;
  fields[2].dtype = ArrayDType::kF32;
  fields[2].shape = {0, 4};
  const std::vector<uint8_t> jpeg =
      testing::EncodeJpeg(std::vector<uint8_t>(16 * 16 * 3, 90), 16, 16, TJPF_RGB, TJSAMP_444);
  const std::string path = WriteDataset(dir_, "ds", fields, 10, [&](int i, Sample& s) {
    std::vector<uint8_t> j = jpeg;
    if (i == 2 || i == 7) j.resize(40);
    s.Set(0, j, {Encoding::kJpeg, Layout::kHWC, 16, 16, 3});
    s.Set(1, Caption(i));
    s.Set(2, AsBytes(Boxes(i)));
  });
  ReaderOptions o = Options(path, 10);
  o.transform = Transform::RandomResizedCrop(8);
  o.on_corrupt = OnCorrupt::kSkip;
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  SP_ASSERT_OK_AND_ASSIGN(Batch b, reader->Next());
  EXPECT_EQ(b.skipped(), 2);
  const BatchField caption = b.field(1), boxes = b.field(2);
  std::set<uint64_t> seen;
  for (int i = 0; i < 10; ++i) {
    const int r = int(b.record_index(i));
    seen.insert(uint64_t(r));
    EXPECT_NE(r, 2);
    EXPECT_NE(r, 7);
    EXPECT_EQ(Text(caption, i), Caption(r)) << i;
    EXPECT_EQ(boxes.offsets[i + 1] - boxes.offsets[i], r % 3) << i;
    if (r % 3 != 0) {
      EXPECT_EQ(static_cast<const float*>(boxes.values)[4 * boxes.offsets[i]], float(r));
    }
    EXPECT_EQ(b.source_sizes()[2 * i], 16);
  }
  EXPECT_LE(seen.size(), 8u);
}

TEST_F(FieldBatchTest, AMixtureOfOtherFieldsIsRefusedNamingTheField) {
  std::vector<Field> a = EveryType(), b = EveryType();
  b[2].shape = {0, 5};
  const std::string pa = WriteDataset(dir_, "a", a, 4, MakeEveryType);
  const std::string pb = WriteDataset(dir_, "b", b, 4, [](int i, Sample& s) {
    MakeEveryType(i, s);
    std::vector<float> five(size_t(i % 3) * 5, 1.f);
    s.Set(2, AsBytes(five));
  });
  ReaderOptions o = Options("", 2);
  o.sources = {{pa, 1, 0, 0}, {pb, 1, 0, 0}};
  EXPECT_THAT(Reader::Open(o).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("has field 2 'boxes' (f32[n,5]), sources[0] ('" + pa +
                                 "') field 2 'boxes' (f32[n,4]): a mixture's sources have the "
                                 "same fields")));
  // The same fields mix, each source's values in its batches.
  o.sources = {{pa, 1, 0, 0}, {WriteDataset(dir_, "c", a, 4, MakeEveryType), 1, 0, 0}};
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  SP_ASSERT_OK_AND_ASSIGN(Batch batch, reader->Next());
  EXPECT_EQ(batch.num_fields(), 8);
}

}  // namespace
}  // namespace shardpack
