// The ecosystem's own tools on our files, and ours on theirs: /usr/bin/python3
// with h5py and lmdb (python_fixtures.h).
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backends/store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/backends/backend_fixtures.h"
#include "tests/testing/python_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

using ::shardpack::testing::OwnedRecord;
using ::shardpack::testing::Python;
using ::shardpack::testing::RunResult;
using ::shardpack::testing::TempDir;

std::string Hex(std::span<const uint8_t> bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

std::vector<OwnedRecord> RawRecords(int n) {
  std::vector<OwnedRecord> out;
  for (int i = 0; i < n; ++i) {
    OwnedRecord r = testing::RawRecord(i, 8, 6, 3);
    r.labels.push_back(1000 + i);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<OwnedRecord> JpegRecords(int n) {
  std::vector<OwnedRecord> out;
  for (int i = 0; i < n; ++i) out.push_back(testing::JpegLikeRecord(i, 50 + 13 * i));
  return out;
}

// h5py, given our shard, prints its images' shape, then per row the image
// bytes in hex and both labels.
constexpr char kH5pyImages[] = R"(
import h5py, sys
f = h5py.File(sys.argv[1], "r")
images, fine, coarse = f["images"], f["labels"], f["coarse_labels"]
print(images.shape, images.dtype, fine.dtype, fine.attrs["name"], list(fine.attrs["classes"]),
      coarse.attrs["name"])
for i in range(images.shape[0]):
    print(images[i].tobytes().hex(), int(fine[i]), int(coarse[i]))
)";

TEST(Interop, H5pyReadsOurImagesAndLabels) {
  SKIP_WITHOUT_PYTHON_MODULE("h5py");
  TempDir dir;
  auto records = RawRecords(50);
  SP_ASSERT_OK_AND_ASSIGN(
      Manifest m, testing::WriteDataset(dir.path(), Backend::kHdf5, records,
                                        testing::RawSchema(8, 6, 3, Layout::kHWC, 2), 30));
  size_t next = 0;
  for (const ShardEntry& shard : m.shards) {
    RunResult r = Python(kH5pyImages, {dir.Join(shard.path)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
    ASSERT_EQ(lines.size(), shard.records + 1);
    EXPECT_EQ(lines[0], absl::StrCat("(", shard.records,
                                     ", 8, 6, 3) uint8 int64 fine ['c0', 'c1', 'c2', 'c3', 'c4', ",
                                     "'c5', 'c6', 'c7', 'c8', 'c9'] coarse"));
    for (size_t i = 1; i < lines.size(); ++i, ++next) {
      const OwnedRecord& want = records[next];
      EXPECT_EQ(lines[i], absl::StrCat(Hex(want.payload), " ", want.labels[0], " ",
                                       want.labels[1]))
          << "record " << next;
    }
  }
  EXPECT_EQ(next, records.size());
}

// h5py on the flat layout: payload i is data[offsets[i]:offsets[i+1]], key
// i likewise from keys/key_offsets.
constexpr char kH5pyFlat[] = R"(
import h5py, sys
f = h5py.File(sys.argv[1], "r")
o, ko, info = f["offsets"][:], f["key_offsets"][:], f["image_info"][:]
for i in range(len(o) - 1):
    print(f["keys"][ko[i]:ko[i + 1]].tobytes().decode(), f["data"][o[i]:o[i + 1]].tobytes().hex(),
          int(f["labels"][i]), list(info[i]))
)";

TEST(Interop, H5pyReadsOurEncodedImagesAndKeys) {
  SKIP_WITHOUT_PYTHON_MODULE("h5py");
  TempDir dir;
  auto records = JpegRecords(20);
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, testing::WriteDataset(dir.path(), Backend::kHdf5, records,
                                                            testing::JpegSchema()));
  RunResult r = Python(kH5pyFlat, {dir.Join(m.shards[0].path)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), records.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const OwnedRecord& w = records[i];
    EXPECT_EQ(lines[i], absl::StrCat(w.key, " ", Hex(w.payload), " ", w.labels[0], " [1, 0, ",
                                     w.image.height, ", ", w.image.width, ", 3]"));
  }
}

// Python's lmdb reads our values; decoding them as docs/format.md says (the
// record encoding of section 5) gives the records back.
constexpr char kLmdbDecode[] = R"(
import json, lmdb, struct, sys
env = lmdb.open(sys.argv[1], subdir=False, readonly=True, lock=False)
with env.begin() as txn:
    meta = json.loads(txn.get(b"shardpack.meta"))
    for i in range(meta["shards"][0]["records"]):
        v = txn.get(struct.pack(">Q", i))
        p, e, h, w, k, enc, lay, c, nl = struct.unpack_from("<IIIIHBBBB", v, 0)
        labels = struct.unpack_from("<%dq" % nl, v, 24)
        at = 24 + 8 * nl
        print("\t".join([v[at:at + k].decode(), ",".join(map(str, labels)), str(enc), str(lay),
                         "%dx%dx%d" % (h, w, c), v[at + k:at + k + e].hex(),
                         v[at + k + e:at + k + e + p].hex()]))
    print(meta["backend"], txn.stat()["entries"])
)";

TEST(Interop, PythonLmdbDecodesOurValues) {
  SKIP_WITHOUT_PYTHON_MODULE("lmdb");
  TempDir dir;
  auto records = JpegRecords(25);
  records[4].key.clear();
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, testing::WriteDataset(dir.path(), Backend::kLmdb, records,
                                                            testing::JpegSchema()));
  RunResult r = Python(kLmdbDecode, {dir.Join(m.shards[0].path)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), records.size() + 1);
  for (size_t i = 0; i < records.size(); ++i) {
    const OwnedRecord& w = records[i];
    EXPECT_EQ(lines[i], absl::StrCat(w.key, "\t", absl::StrJoin(w.labels, ","), "\t1\t0\t",
                                     w.image.height, "x", w.image.width, "x", 3, "\t",
                                     Hex(w.extra), "\t", Hex(w.payload)));
  }
  EXPECT_EQ(lines.back(), absl::StrCat("lmdb ", records.size() + 1));
  // No lock file: shards are written and read with MDB_NOLOCK.
  EXPECT_FALSE(std::filesystem::exists(dir.Join(m.shards[0].path + "-lock")));
}

// A plain file as h5py users write it: images [N,H,W,C] uint8 and int32
// labels, no attributes of ours. Pixel j of the file is j % 251.
constexpr char kH5pyWrite[] = R"(
import h5py, numpy as np, sys
n, h, w, c = 37, 5, 4, 3
with h5py.File(sys.argv[1], "w") as f:
    f["images"] = (np.arange(n * h * w * c) % 251).astype(np.uint8).reshape(n, h, w, c)
    f["labels"] = (np.arange(n) % 7).astype(np.int32)
)";

TEST(Interop, PlainH5pyFileOpensAsADataset) {
  SKIP_WITHOUT_PYTHON_MODULE("h5py");
  TempDir dir;
  std::string path = dir.Join("plain.h5");
  RunResult w = Python(kH5pyWrite, {path});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  SP_ASSERT_OK_AND_ASSIGN(auto reader, backends::Hdf5ShardReader::Open(path));
  EXPECT_FALSE(reader->ours());
  EXPECT_TRUE(reader->fixed_shape());
  EXPECT_EQ(reader->size(), 37u);
  EXPECT_EQ(reader->image_info(), (ImageInfo{Encoding::kRaw, Layout::kHWC, 5, 4, 3}));
  EXPECT_EQ(reader->num_labels(), 1);
  std::vector<uint8_t> images(37 * 60);
  std::vector<int64_t> labels(37);
  int64_t* label_ptrs[] = {labels.data()};
  SP_ASSERT_OK(reader->ReadRows(0, 37, images.data(), label_ptrs));
  for (size_t j = 0; j < images.size(); ++j) ASSERT_EQ(images[j], j % 251) << j;
  for (int i = 0; i < 37; ++i) EXPECT_EQ(labels[i], i % 7);

  SP_ASSERT_OK_AND_ASSIGN(Manifest m, backends::SynthesizeHdf5Manifest(path));
  EXPECT_EQ(m.backend, Backend::kHdf5);
  ASSERT_EQ(m.shards.size(), 1u);
  EXPECT_EQ(m.shards[0].path, "plain.h5");
  EXPECT_EQ(m.shards[0].records, 37u);
  EXPECT_EQ(m.shards[0].bytes, std::filesystem::file_size(path));
  ASSERT_EQ(m.schema.labels.size(), 1u);
  // Records through the scanner: no keys or extra bytes in a plain file.
  SP_ASSERT_OK_AND_ASSIGN(auto scanner, backends::ShardScanner::Open(path, Backend::kHdf5));
  uint64_t seen = 0;
  SP_ASSERT_OK(scanner->Scan(10, 20, [&](uint64_t i, const Record& r) {
    EXPECT_EQ(r.payload[0], (i * 60) % 251);
    EXPECT_EQ(r.labels[0], static_cast<int64_t>(i % 7));
    EXPECT_TRUE(r.key.empty());
    ++seen;
    return absl::OkStatus();
  }));
  EXPECT_EQ(seen, 10u);
}

constexpr char kH5pyNoLabels[] = R"(
import h5py, numpy as np, sys
with h5py.File(sys.argv[1], "w") as f:
    f["images"] = np.zeros((3, 2, 2, 3), np.uint8)
)";

TEST(Interop, PlainFileWithoutLabelsNamesWhatIsMissing) {
  SKIP_WITHOUT_PYTHON_MODULE("h5py");
  TempDir dir;
  std::string path = dir.Join("nolabels.h5");
  ASSERT_EQ(Python(kH5pyNoLabels, {path}).exit_code, 0);
  auto reader = backends::Hdf5ShardReader::Open(path);
  EXPECT_THAT(reader,
              testing::StatusIs(absl::StatusCode::kDataLoss,
                                ::testing::AllOf(::testing::HasSubstr(path + ": not a layout "),
                                                 ::testing::HasSubstr("no dataset 'labels'"),
                                                 ::testing::HasSubstr("found 'images' uint8 "
                                                                      "[3,2,2,3]; accepted: "))));
}

// Files of the right kind that are not ours: an LMDB environment without our
// metadata key, an HDF5 file with neither our metadata nor `images`.
constexpr char kForeignLmdb[] = R"(
import lmdb, sys
env = lmdb.open(sys.argv[1], subdir=False, lock=False)
with env.begin(write=True) as txn:
    txn.put(b"hello", b"world")
env.close()
)";

constexpr char kForeignHdf5[] = R"(
import h5py, numpy as np, sys
with h5py.File(sys.argv[1], "w") as f:
    f["temperatures"] = np.zeros(10)
)";

TEST(Interop, ForeignLmdbAndHdf5FilesAreNamedAsNotOurs) {
  SKIP_WITHOUT_PYTHON_MODULE("lmdb");
  SKIP_WITHOUT_PYTHON_MODULE("h5py");
  TempDir dir;
  std::string lmdb = dir.Join("foreign.lmdb"), hdf5 = dir.Join("foreign.h5");
  ASSERT_EQ(Python(kForeignLmdb, {lmdb}).exit_code, 0);
  ASSERT_EQ(Python(kForeignHdf5, {hdf5}).exit_code, 0);
  EXPECT_THAT(backends::LmdbShardReader::Open(lmdb),
              testing::StatusIs(absl::StatusCode::kDataLoss,
                                ::testing::HasSubstr(lmdb + ": an LMDB environment but not a "
                                                            "shardpack shard")));
  EXPECT_THAT(backends::Hdf5ShardReader::Open(hdf5),
              testing::StatusIs(absl::StatusCode::kDataLoss,
                                ::testing::AllOf(::testing::HasSubstr(hdf5 + ": not a layout "),
                                                 ::testing::HasSubstr("no dataset 'images'"),
                                                 ::testing::HasSubstr("found 'temperatures' "
                                                                      "float64 [10]; "))));
}

}  // namespace
}  // namespace shardpack
