// The reader over LMDB and HDF5 datasets: the same records give the same
// batches as from `.shard`, shuffled epochs cover every record once, a
// plain h5py file opens as a dataset, damage names the file.
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/reader.h"
#include "tests/backends/backend_fixtures.h"
#include "tests/testing/jpeg_fixtures.h"
#include "tests/testing/python_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr uint32_t kSide = 48;  // 6.9 KB images: the first shard spans two units
constexpr int kRecords = 1200;

std::vector<testing::OwnedRecord> RawRecords() {
  std::vector<testing::OwnedRecord> records;
  for (int i = 0; i < kRecords; ++i) {
    testing::OwnedRecord r = testing::RawRecord(i, kSide, kSide, 3);
    r.labels = {i % 10, i % 3};
    records.push_back(std::move(r));
  }
  return records;
}

std::vector<testing::OwnedRecord> JpegRecords() {
  std::vector<testing::OwnedRecord> records;
  for (int i = 0; i < 90; ++i) {
    const int w = 64 + (i * 13) % 40, h = 48 + (i * 7) % 30;
    testing::OwnedRecord r;
    r.key = absl::StrCat("img", i);
    r.labels = {i % 3, i % 2};
    r.image = {Encoding::kJpeg, Layout::kHWC, uint32_t(h), uint32_t(w), 3};
    r.payload = testing::EncodeJpeg(testing::Scene(w, h, i % 4, i), w, h, TJPF_RGB, TJSAMP_420, 85,
                                    i % 5 == 1 ? TJFLAG_PROGRESSIVE : 0);
    records.push_back(std::move(r));
  }
  return records;
}

struct Delivered {
  std::vector<uint8_t> images;
  std::vector<int64_t> labels;
  std::vector<uint64_t> records;
  std::vector<std::string> keys;
};

// Every batch of `epochs` epochs, concatenated.
Delivered ReadAll(ReaderOptions o, int epochs) {
  Delivered d;
  auto reader = Reader::Open(o);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return d;
  for (int e = 0; e < epochs; ++e) {
    for (;;) {
      absl::StatusOr<Batch> b = (*reader)->Next();
      if (absl::IsOutOfRange(b.status())) break;
      EXPECT_TRUE(b.ok()) << b.status();
      if (!b.ok()) return d;
      auto* p = static_cast<const uint8_t*>(b->images());
      d.images.insert(d.images.end(), p, p + b->image_bytes());
      d.labels.insert(d.labels.end(), b->labels(), b->labels() + b->size() * b->num_labels());
      for (int i = 0; i < b->size(); ++i) {
        d.records.push_back(b->record_index(i));
        if (o.keys) d.keys.emplace_back(b->key(i));
      }
    }
  }
  return d;
}

ReaderOptions Options(const std::string& path, bool shuffle) {
  ReaderOptions o;
  o.path = path;
  o.batch_size = 32;
  o.shuffle = shuffle;
  o.seed = 11;
  o.rank = 0;
  o.world_size = 1;
  o.remainder = Remainder::kPartial;
  o.threads = 2;
  return o;
}

// One epoch of `o` (over the reference dataset) and of the same options over
// `other` deliver the same `records` samples, byte for byte.
void ExpectSameStream(ReaderOptions o, const std::string& other, size_t records) {
  Delivered want = ReadAll(o, 1);
  o.path = other;
  Delivered got = ReadAll(o, 1);
  ASSERT_EQ(want.records.size(), records);
  EXPECT_EQ(got.records, want.records);
  EXPECT_EQ(got.labels, want.labels);
  EXPECT_EQ(got.keys, want.keys);
  EXPECT_TRUE(got.images == want.images) << "pixels differ";
}

class BackendReaderTest : public ::testing::TestWithParam<Backend> {
 protected:
  std::string Write(const std::string& name, Backend backend,
                    const std::vector<testing::OwnedRecord>& records, const Schema& schema,
                    uint64_t shard_records) {
    std::string path = dir_.Join(name);
    fs::create_directories(path);
    auto m = testing::WriteDataset(path, backend, records, schema, shard_records);
    EXPECT_TRUE(m.ok()) << m.status();
    return path;
  }
  // A raw dataset of `records` in one shard of GetParam()'s backend: its
  // path and its shard's ("" on failure).
  std::pair<std::string, std::string> WriteOneShard(
      const std::vector<testing::OwnedRecord>& records) {
    std::string path = Write("ds", GetParam(), records,
                             testing::RawSchema(kSide, kSide, 3, Layout::kHWC, 2), 0);
    auto m = ReadManifest(path);
    EXPECT_TRUE(m.ok()) << m.status();
    return {path, m.ok() ? (fs::path(path) / m->shards[0].path).string() : ""};
  }
  testing::TempDir dir_;
};

TEST_P(BackendReaderTest, StoredOrderGivesTheShardBatches) {
  const auto records = RawRecords();
  const Schema schema = testing::RawSchema(kSide, kSide, 3, Layout::kHWC, 2);
  std::string ref = Write("ref", Backend::kShard, records, schema, 1000);
  std::string other = Write("other", GetParam(), records, schema, 1000);
  ReaderOptions o = Options(ref, /*shuffle=*/false);
  o.keys = GetParam() != Backend::kHdf5;  // HDF5 units carry no keys (docs/reader.md)
  ExpectSameStream(o, other, kRecords);
}

TEST_P(BackendReaderTest, ShuffledEpochsCoverEveryRecordOnce) {
  const auto records = RawRecords();
  std::string path = Write("ds", GetParam(), records,
                           testing::RawSchema(kSide, kSide, 3, Layout::kHWC, 2), 1000);
  ReaderOptions o = Options(path, /*shuffle=*/true);
  Delivered d = ReadAll(o, 2);
  ASSERT_EQ(d.records.size(), size_t{2 * kRecords});
  const size_t row = size_t{kSide} * kSide * 3;
  for (int e = 0; e < 2; ++e) {
    std::vector<int> seen(kRecords, 0);
    bool in_order = true;
    for (size_t p = size_t(e) * kRecords; p < size_t(e + 1) * kRecords; ++p) {
      const uint64_t r = d.records[p];
      ASSERT_LT(r, uint64_t{kRecords});
      ++seen[r];
      in_order = in_order && r == p - size_t(e) * kRecords;
      ASSERT_TRUE(std::equal(records[r].payload.begin(), records[r].payload.end(),
                             d.images.begin() + p * row))
          << "record " << r;
      EXPECT_EQ(d.labels[2 * p], records[r].labels[0]);
      EXPECT_EQ(d.labels[2 * p + 1], records[r].labels[1]);
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), kRecords) << "epoch " << e;
    EXPECT_FALSE(in_order) << "epoch " << e << " was not shuffled";
  }
}

TEST_P(BackendReaderTest, JpegRecordsDecodeAsFromShard) {
  const auto records = JpegRecords();
  std::string ref = Write("ref", Backend::kShard, records, testing::JpegSchema(), 40);
  std::string other = Write("other", GetParam(), records, testing::JpegSchema(), 40);
  ReaderOptions o = Options(ref, /*shuffle=*/false);
  o.transform = Transform::RandomResizedCrop(32);
  ExpectSameStream(o, other, records.size());
}

TEST_P(BackendReaderTest, LoneShardFileOpens) {
  const auto records = RawRecords();
  std::string path = Write("ds", GetParam(), records,
                           testing::RawSchema(kSide, kSide, 3, Layout::kHWC, 2), 0);
  auto m = ReadManifest(path);
  SP_ASSERT_OK(m.status());
  ASSERT_EQ(m->shards.size(), 1u);
  ReaderOptions o = Options((fs::path(path) / m->shards[0].path).string(), false);
  Delivered d = ReadAll(o, 1);
  ASSERT_EQ(d.records.size(), size_t{kRecords});
  EXPECT_TRUE(std::equal(records[5].payload.begin(), records[5].payload.end(),
                         d.images.begin() + 5 * size_t{kSide} * kSide * 3));
}

TEST_P(BackendReaderTest, TruncatedShardIsNamed) {
  const auto records = RawRecords();
  const auto [path, shard] = WriteOneShard(records);
  ASSERT_FALSE(shard.empty());
  fs::resize_file(shard, fs::file_size(shard) / 2);
  // Shards are opened (and checked against the manifest) when first read,
  // so the error comes from Open or from the first batch.
  auto reader = Reader::Open(Options(path, true));
  absl::Status s = reader.status();
  if (reader.ok()) s = (*reader)->Next().status();
  EXPECT_THAT(s, testing::StatusIs(absl::StatusCode::kDataLoss,
                                   HasSubstr(shard + ": " + std::to_string(fs::file_size(shard)) +
                                             " bytes, the manifest says")));
}

// A shard truncated after it was checked and opened, while it is read:
// liblmdb maps the file (a lost page would be SIGBUS without the guard),
// libhdf5 preads it. Either way an error naming the shard, never a signal,
// and never a batch of zeros passing for data.
TEST_P(BackendReaderTest, ShardTruncatedWhileReadIsAnErrorNotASignal) {
  // 4,800 records in about eight units, read with no budget to load ahead:
  // most units are read after the truncation.
  std::vector<testing::OwnedRecord> records;
  for (int k = 0; k < 4; ++k) {
    for (testing::OwnedRecord& r : RawRecords()) records.push_back(std::move(r));
  }
  const auto [path, shard] = WriteOneShard(records);
  ASSERT_FALSE(shard.empty());
  ReaderOptions o = Options(path, false);
  o.shuffle_bytes = 1;
  o.read_ahead_bytes = 1;
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  SP_ASSERT_OK(reader->Next().status());
  fs::resize_file(shard, 4096);
  absl::Status s;
  for (uint64_t i = 1; i < reader->batches_per_epoch() && s.ok(); ++i) s = reader->Next().status();
  EXPECT_THAT(s, testing::StatusIs(absl::StatusCode::kDataLoss, HasSubstr(shard)));
}

// Each shard is checked against the manifest's CRC-32C before liblmdb or
// libhdf5 opens it: one flipped byte (here in the middle of the file, where
// neither library would notice) is an error naming the shard, not data.
TEST_P(BackendReaderTest, FlippedByteFailsTheCrcGate) {
  const auto records = RawRecords();
  const auto [path, shard] = WriteOneShard(records);
  ASSERT_FALSE(shard.empty());
  std::string bytes;
  {
    std::ifstream in(shard, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // The last byte of the raw pixels of the last record: plain data to both
  // libraries.
  const std::string last(records.back().payload.begin(), records.back().payload.end());
  size_t at = bytes.rfind(last);
  ASSERT_NE(at, std::string::npos);
  bytes[at + last.size() - 1] ^= 0x01;
  std::ofstream(shard, std::ios::binary | std::ios::trunc) << bytes;
  auto reader = Reader::Open(Options(path, false));
  absl::Status s = reader.status();
  // Bounded: without the gate the epochs would go on with the changed pixel.
  for (int batch = 0; s.ok() && batch < 2 * kRecords; ++batch) s = (*reader)->Next().status();
  EXPECT_THAT(s, testing::StatusIs(absl::StatusCode::kDataLoss, HasSubstr(shard + ": CRC-32C")));
}

INSTANTIATE_TEST_SUITE_P(LmdbAndHdf5, BackendReaderTest,
                         ::testing::Values(Backend::kLmdb, Backend::kHdf5),
                         [](const auto& p) { return std::string(BackendName(p.param)); });

// A file written by h5py alone (no manifest, no metadata of ours) is a
// dataset: images [N,H,W,3] uint8 and labels [N].
TEST(PlainHdf5Test, H5pyFileOpensInTheReader) {
  testing::TempDir dir;
  const std::string path = dir.Join("plain.h5");
  const std::string script = absl::StrCat(
      "import h5py, numpy as np\n"
      "n, h, w = 300, 12, 10\n"
      "i = np.arange(n * h * w * 3, dtype=np.int64)\n"
      "images = ((i * 7) % 251).astype(np.uint8).reshape(n, h, w, 3)\n"
      "with h5py.File('", path, "', 'w') as f:\n"
      "    f.create_dataset('images', data=images, chunks=(64, h, w, 3))\n"
      "    f.create_dataset('labels', data=np.arange(n) % 10)\n");
  SKIP_WITHOUT_PYTHON_MODULE("h5py, numpy");
  testing::RunResult made = testing::Python(script, {});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  ReaderOptions o = Options(path, /*shuffle=*/true);
  Delivered d = ReadAll(o, 1);
  ASSERT_EQ(d.records.size(), 300u);
  const size_t row = 12 * 10 * 3;
  std::vector<int> seen(300, 0);
  for (size_t p = 0; p < d.records.size(); ++p) {
    const uint64_t r = d.records[p];
    ++seen[r];
    EXPECT_EQ(d.labels[p], int64_t(r % 10));
    for (size_t k = 0; k < row; k += 37) {
      ASSERT_EQ(d.images[p * row + k], uint8_t(((r * row + k) * 7) % 251)) << "record " << r;
    }
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 300);
}

// Channels first ([N,3,H,W], as torchvision tensors are stored), beside a
// string `keys` of file names (h5py users keep them; the reader ignores
// them): the reader delivers HWC images.
TEST(PlainHdf5Test, ChannelsFirstFileWithStringKeysOpensInTheReader) {
  testing::TempDir dir;
  const std::string path = dir.Join("chw.h5");
  const std::string script = absl::StrCat(
      "import h5py, numpy as np\n"
      "n, h, w = 40, 6, 5\n"
      "i = np.arange(n * 3 * h * w, dtype=np.int64)\n"
      "with h5py.File('", path, "', 'w') as f:\n"
      "    f['images'] = ((i * 7) % 251).astype(np.uint8).reshape(n, 3, h, w)\n"
      "    f['labels'] = np.arange(n) % 10\n"
      "    keys = ['img_%d.png' % k for k in range(n)]\n"
      "    f['keys'] = np.array(keys, dtype=h5py.string_dtype())\n");
  SKIP_WITHOUT_PYTHON_MODULE("h5py, numpy");
  testing::RunResult made = testing::Python(script, {});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  Delivered d = ReadAll(Options(path, /*shuffle=*/false), 1);
  ASSERT_EQ(d.records.size(), 40u);
  const size_t plane = 6 * 5, row = 3 * plane;
  for (size_t p = 0; p < d.records.size(); ++p) {
    const uint64_t r = d.records[p];
    EXPECT_EQ(d.labels[p], int64_t(r % 10));
    for (size_t pixel = 0; pixel < plane; ++pixel) {
      for (size_t c = 0; c < 3; ++c) {
        const uint64_t in_file = r * row + c * plane + pixel;  // [r, c, y, x]
        ASSERT_EQ(d.images[p * row + pixel * 3 + c], uint8_t((in_file * 7) % 251))
            << "record " << r << " pixel " << pixel << " channel " << c;
      }
    }
  }
}

}  // namespace
}  // namespace shardpack
