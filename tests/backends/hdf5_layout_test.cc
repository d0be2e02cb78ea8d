// An HDF5 file's layout is told by what it holds, never by a name alone:
// plain h5py files with `images`/`labels` open whatever else they hold,
// datasets named like ours included (a string `keys` of file names, numeric
// arrays of other shapes, groups, links), and say what they ignored; files
// holding neither layout are refused with what was found and what is
// accepted. Fixtures are written by h5py (tests/testing/python_fixtures.h).
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/backends/backend_fixtures.h"
#include "tests/testing/python_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

using ::shardpack::testing::Python;
using ::shardpack::testing::RunResult;
using ::shardpack::testing::StatusIs;
using ::shardpack::testing::TempDir;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Every name our layouts use besides images and the labels.
const std::vector<std::string> kOurNames = {"data",  "keys",          "offsets",   "extra",
                                            "key_offsets", "extra_offsets", "image_info"};

// What an h5py user might keep under those names.
const std::vector<std::string> kKinds = {"names", "floats", "ints", "bytes",
                                         "group", "softlink", "scalar"};

// In argv[1]: <name>-<kind>.h5 for every name and kind, each a plain file
// (6 images 5x4x3, pixel j = j % 251, labels i % 7) plus that one dataset;
// all.h5 with every name at once, each of another kind.
constexpr char kWritePlainFiles[] = R"(
import h5py, numpy as np, os, sys
out, names, kinds = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
n = 6
def plain(path):
    f = h5py.File(os.path.join(out, path), "w")
    f["images"] = (np.arange(n * 5 * 4 * 3) % 251).astype(np.uint8).reshape(n, 5, 4, 3)
    f["labels"] = (np.arange(n) % 7).astype(np.int32)
    return f
make = {
    "names": lambda f, k: f.create_dataset(
        k, data=np.array(["class_%d/img_%d.JPEG" % (i % 3, i) for i in range(n)],
                         dtype=h5py.string_dtype())),
    "floats": lambda f, k: f.create_dataset(k, data=np.ones((n, 3), np.float32)),
    "ints": lambda f, k: f.create_dataset(k, data=np.arange(n + 5, dtype=np.int64)),
    "bytes": lambda f, k: f.create_dataset(k, data=np.zeros(100, np.uint8)),
    "group": lambda f, k: f.create_group(k).create_dataset("x", data=np.zeros(3)),
    "softlink": lambda f, k: f.__setitem__(k, h5py.SoftLink("/images")),
    "scalar": lambda f, k: f.create_dataset(k, data=3.5),
}
for name in names:
    for kind in kinds:
        with plain("%s-%s.h5" % (name, kind)) as f:
            make[kind](f, name)
with plain("all.h5") as f:
    for name, kind in zip(names, kinds):
        make[kind](f, name)
)";

class Hdf5Layout : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_PYTHON_MODULE("h5py");
  }
  // Runs `script` with the directory as argv[1] and `args` after it.
  void Write(const char* script, std::vector<std::string> args = {}) {
    args.insert(args.begin(), dir_.path().string());
    RunResult r = Python(script, args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  TempDir dir_;
};

// The plain file of kWritePlainFiles opened as its images and labels alone.
void ExpectPlainImagesAndLabels(const std::string& path) {
  SP_ASSERT_OK_AND_ASSIGN(auto reader, backends::Hdf5ShardReader::Open(path));
  EXPECT_FALSE(reader->ours());
  EXPECT_TRUE(reader->fixed_shape());
  EXPECT_EQ(reader->size(), 6u);
  EXPECT_EQ(reader->image_info(), (ImageInfo{Encoding::kRaw, Layout::kHWC, 5, 4, 3}));
  EXPECT_EQ(reader->num_labels(), 1);
  EXPECT_FALSE(reader->has_keys());
  EXPECT_FALSE(reader->has_extra());
  SP_ASSERT_OK_AND_ASSIGN(auto scanner, backends::ShardScanner::Open(path, Backend::kHdf5));
  uint64_t seen = 0;
  SP_ASSERT_OK(scanner->Scan(0, 6, [&](uint64_t i, const Record& r) {
    EXPECT_EQ(r.payload.size(), 60u);
    for (size_t j = 0; j < r.payload.size(); ++j) EXPECT_EQ(r.payload[j], (i * 60 + j) % 251);
    EXPECT_EQ(r.labels[0], static_cast<int64_t>(i % 7));
    EXPECT_TRUE(r.key.empty());
    EXPECT_TRUE(r.extra.empty());
    ++seen;
    return absl::OkStatus();
  }));
  EXPECT_EQ(seen, 6u);
}

TEST_F(Hdf5Layout, PlainFileOpensWhicheverOfOurNamesItAlsoHolds) {
  Write(kWritePlainFiles, {absl::StrJoin(kOurNames, ","), absl::StrJoin(kKinds, ",")});
  for (const std::string& name : kOurNames) {
    for (const std::string& kind : kKinds) {
      const std::string path = dir_.Join(absl::StrCat(name, "-", kind, ".h5"));
      SCOPED_TRACE(path);
      ExpectPlainImagesAndLabels(path);
      SP_ASSERT_OK_AND_ASSIGN(auto reader, backends::Hdf5ShardReader::Open(path));
      EXPECT_EQ(reader->LayoutText(), "fixed images/labels (plain file); ignored: " + name);
    }
  }
  const std::string all = dir_.Join("all.h5");
  ExpectPlainImagesAndLabels(all);
  SP_ASSERT_OK_AND_ASSIGN(auto reader, backends::Hdf5ShardReader::Open(all));
  EXPECT_EQ(reader->LayoutText(),
            "fixed images/labels (plain file); ignored: data, extra, extra_offsets, image_info, "
            "key_offsets, keys, offsets");
}

// coarse_labels is a second label field when it is one integer per row;
// anything else under that name is ignored like any other dataset.
constexpr char kWriteCoarse[] = R"(
import h5py, numpy as np, os, sys
n = 6
for name, coarse in [("int16", np.arange(n, dtype=np.int16) * 3),
                     ("names", np.array(["a"] * n, dtype=h5py.string_dtype())),
                     ("rows", np.arange(n + 1)),
                     ("floats", np.ones(n, np.float32))]:
    with h5py.File(os.path.join(sys.argv[1], "coarse-%s.h5" % name), "w") as f:
        f["images"] = np.zeros((n, 2, 2, 3), np.uint8)
        f["labels"] = np.arange(n)
        f["coarse_labels"] = coarse
)";

TEST_F(Hdf5Layout, CoarseLabelsAreASecondFieldOnlyWhenOneIntegerPerRow) {
  Write(kWriteCoarse);
  SP_ASSERT_OK_AND_ASSIGN(auto used,
                          backends::Hdf5ShardReader::Open(dir_.Join("coarse-int16.h5")));
  EXPECT_EQ(used->num_labels(), 2);
  EXPECT_EQ(used->LayoutText(), "fixed images/labels/coarse_labels (plain file)");
  std::vector<int64_t> fine(6), coarse(6);
  int64_t* labels[] = {fine.data(), coarse.data()};
  SP_ASSERT_OK(used->ReadRows(0, 6, nullptr, labels));
  EXPECT_THAT(coarse, ::testing::ElementsAre(0, 3, 6, 9, 12, 15));
  for (const char* kind : {"names", "rows", "floats"}) {
    SCOPED_TRACE(kind);
    SP_ASSERT_OK_AND_ASSIGN(auto reader, backends::Hdf5ShardReader::Open(
                                             dir_.Join(absl::StrCat("coarse-", kind, ".h5"))));
    EXPECT_EQ(reader->num_labels(), 1);
    EXPECT_EQ(reader->LayoutText(), "fixed images/labels (plain file); ignored: coarse_labels");
  }
}

// `images` is [N,H,W,C] unless its shape says channels first: the last
// side is not 1, 3 or 4 and the first is ([N,3,32,32], as torchvision
// tensors are stored; before, 3 rows of 32 pixels of 32 channels).
constexpr char kWriteShapes[] = R"(
import h5py, numpy as np, os, sys
for name, shape in [("chw", (2, 3, 8, 6)), ("chw-wide", (2, 1, 4, 300)),
                    ("hwc", (2, 8, 6, 3)), ("both-ends", (2, 4, 5, 3)),
                    ("gray", (2, 8, 6)), ("many-channels", (2, 8, 6, 10))]:
    with h5py.File(os.path.join(sys.argv[1], name + ".h5"), "w") as f:
        f["images"] = (np.arange(np.prod(shape)) % 256).astype(np.uint8).reshape(shape)
        f["labels"] = np.arange(shape[0])
)";

TEST_F(Hdf5Layout, ChannelsFirstImagesAreToldByTheirShape) {
  Write(kWriteShapes);
  const std::vector<std::pair<std::string, ImageInfo>> want = {
      {"chw", {Encoding::kRaw, Layout::kCHW, 8, 6, 3}},
      {"chw-wide", {Encoding::kRaw, Layout::kCHW, 4, 300, 1}},
      {"hwc", {Encoding::kRaw, Layout::kHWC, 8, 6, 3}},
      {"both-ends", {Encoding::kRaw, Layout::kHWC, 4, 5, 3}},
      {"gray", {Encoding::kRaw, Layout::kHWC, 8, 6, 1}},
      {"many-channels", {Encoding::kRaw, Layout::kHWC, 8, 6, 10}}};
  for (const auto& [name, image] : want) {
    SCOPED_TRACE(name);
    SP_ASSERT_OK_AND_ASSIGN(auto reader, backends::Hdf5ShardReader::Open(dir_.Join(name + ".h5")));
    EXPECT_EQ(reader->image_info(), image);
    // Rows are the file's bytes, in the file's order.
    std::vector<uint8_t> row(image.RawBytes());
    SP_ASSERT_OK(reader->ReadRows(1, 2, row.data(), nullptr));
    for (size_t j = 0; j < row.size(); ++j) ASSERT_EQ(row[j], (row.size() + j) % 256) << j;
  }
  SP_ASSERT_OK_AND_ASSIGN(auto chw, backends::Hdf5ShardReader::Open(dir_.Join("chw.h5")));
  EXPECT_EQ(chw->LayoutText(), "fixed images/labels (plain file), images channels first");
}

// Files of neither layout: the message names the file, what it holds and
// what is accepted, on one line.
constexpr char kWriteNeither[] = R"(
import h5py, numpy as np, os, sys
d = sys.argv[1]
with h5py.File(os.path.join(d, "no-images.h5"), "w") as f:
    f["data"] = np.zeros(10)
    f["keys"] = np.array(["a\nb", "c"], dtype=h5py.string_dtype())
    f.create_group("meta")
    f["link"] = h5py.SoftLink("/data")
with h5py.File(os.path.join(d, "float-images.h5"), "w") as f:
    f["images"] = np.zeros((2, 4, 4, 3), np.float32)
    f["labels"] = np.arange(2)
with h5py.File(os.path.join(d, "one-hot.h5"), "w") as f:
    f["images"] = np.zeros((2, 4, 4, 3), np.uint8)
    f["labels"] = np.eye(2, dtype=np.float32)
with h5py.File(os.path.join(d, "group-images.h5"), "w") as f:
    f.create_group("images")
    f["labels"] = np.arange(2)
with h5py.File(os.path.join(d, "scalar-labels.h5"), "w") as f:
    f["images"] = np.zeros((2, 4, 4, 3), np.uint8)
    f["labels"] = 5
with h5py.File(os.path.join(d, "many.h5"), "w") as f:
    for i in range(20):
        f["d%02d" % i] = np.zeros(i + 1, np.int8)
)";

TEST_F(Hdf5Layout, FilesOfNeitherLayoutSayWhatTheyHold) {
  Write(kWriteNeither);
  auto refused = [&](const std::string& name, const std::string& what) {
    const std::string path = dir_.Join(name);
    EXPECT_THAT(backends::Hdf5ShardReader::Open(path),
                StatusIs(absl::StatusCode::kDataLoss,
                         AllOf(HasSubstr(path + ": "), HasSubstr(what),
                               ::testing::Not(HasSubstr("\n")))));
  };
  refused("no-images.h5",
          "not a layout shardpack reads (no attribute 'shardpack_manifest', no dataset "
          "'images'); found 'data' float64 [10], 'keys' string [2], 'link' (soft link), 'meta' "
          "(group); accepted: a shardpack shard, or a plain file with 'images' uint8 [N,H,W,C], "
          "[N,C,H,W] or [N,H,W] and integer 'labels' [N]");
  refused("float-images.h5", "dataset 'images' holds float32, not bytes (uint8)");
  refused("one-hot.h5", "dataset 'labels' has 2 dimensions, not the one it must have");
  refused("group-images.h5", "dataset 'images' is a group, not a dataset");
  refused("scalar-labels.h5", "dataset 'labels' has 0 dimensions, not the one it must have");
  refused("many.h5", "found 'd00' int8 [1], 'd01' int8 [2], 'd02' int8 [3], 'd03' int8 [4], "
                     "'d04' int8 [5], 'd05' int8 [6], 'd06' int8 [7], 'd07' int8 [8] and 12 "
                     "more; accepted");
}

// Our shard with datasets a user added: the metadata says which layout, and
// the rest is ignored, `images` in a flat shard included.
constexpr char kAddToOurs[] = R"(
import h5py, numpy as np, sys
with h5py.File(sys.argv[2], "a") as f:
    f["images"] = np.zeros((3, 2, 2, 3), np.uint8)
    f["notes"] = np.array(["hello"], dtype=h5py.string_dtype())
)";

TEST_F(Hdf5Layout, OurShardIgnoresWhatWasAddedToIt) {
  std::vector<testing::OwnedRecord> records;
  for (int i = 0; i < 5; ++i) records.push_back(testing::JpegLikeRecord(i, 40 + i));
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, testing::WriteDataset(dir_.path().string(), Backend::kHdf5,
                                                            records, testing::JpegSchema()));
  const std::string shard = dir_.Join(m.shards[0].path);
  {
    SP_ASSERT_OK_AND_ASSIGN(auto before, backends::Hdf5ShardReader::Open(shard));
    EXPECT_EQ(before->LayoutText(), "flat data/offsets (shardpack)");
  }  // closed: h5py's write locks the file
  Write(kAddToOurs, {shard});
  SP_ASSERT_OK_AND_ASSIGN(auto reader, backends::Hdf5ShardReader::Open(shard));
  EXPECT_TRUE(reader->ours());
  EXPECT_FALSE(reader->fixed_shape());
  EXPECT_EQ(reader->LayoutText(), "flat data/offsets (shardpack); ignored: images, notes");
  SP_ASSERT_OK_AND_ASSIGN(auto back, testing::ReadDataset(dir_.path().string()));
  ASSERT_EQ(back.size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) EXPECT_EQ(back[i].payload, records[i].payload);
}

// What a user sees: `sharddump info` says what was recognized and what was
// ignored; convert and the reader's tools take the file.
TEST_F(Hdf5Layout, SharddumpInfoSaysWhatWasRecognized) {
  Write(kWritePlainFiles, {"keys,extra", "names,floats"});
  const std::string all = dir_.Join("all.h5");
  RunResult info = testing::RunTool(SHARDDUMP_PATH, {"info", "-q", all});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_THAT(info.out, HasSubstr("\nlayout         fixed images/labels (plain file); "
                                  "ignored: extra, keys\n"));
  RunResult json = testing::RunTool(SHARDDUMP_PATH, {"info", "-q", "--json", all});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["shards"][0]["layout"],
            "fixed images/labels (plain file); ignored: extra, keys");
  // Converted, it is ours: its layout, nothing ignored.
  const std::string out = dir_.Join("converted");
  RunResult convert =
      testing::RunTool(SHARDPACK_PATH, {"convert", all, "--format", "hdf5", "-q", "-o", out});
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  RunResult verify = testing::RunTool(SHARDDUMP_PATH, {"verify", out});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  RunResult ours = testing::RunTool(SHARDDUMP_PATH, {"info", "-q", out});
  EXPECT_THAT(ours.out, HasSubstr("\nlayout         fixed images (shardpack)\n"));
}

}  // namespace
}  // namespace shardpack
