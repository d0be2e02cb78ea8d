// Hostile HDF5 files, made with the HDF5 C API: datasets whose bytes live
// outside the file (external storage, virtual datasets, links), filters that
// need a plugin, and sizes the file cannot back. Each is refused when the
// shard is opened, with one line naming the file, the dataset and the
// feature, before anything is read or allocated.
#include <hdf5.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backends/hdf5_store.h"
#include "backends/hdf5_util.h"
#include "backends/shard_gate.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/dataset.h"
#include "shardpack/reader.h"
#include "tests/backends/backend_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

using ::shardpack::testing::StatusIs;
using ::shardpack::testing::TempDir;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

constexpr char kSecret[] = "root:x:0:0:root:/root:/bin/bash\n";

// Owns one HDF5 id; closes it at scope end.
class Id {
 public:
  Id(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) { EXPECT_GE(id, 0); }
  ~Id() {
    if (id_ >= 0) close_(id_);
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  operator hid_t() const { return id_; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

Id Space(std::vector<hsize_t> dims) {
  return Id(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
}

Id CreatePlist(hid_t cls) { return Id(H5Pcreate(cls), H5Pclose); }

// A dataset `name` of `type` and shape `dims`, created with `dcpl`, filled
// with `fill` (one value per element) unless `fill` is null.
void AddDataset(hid_t file, const char* name, hid_t type, std::vector<hsize_t> dims,
                hid_t dcpl = H5P_DEFAULT, const void* fill = nullptr) {
  Id space = Space(dims);
  Id d(H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
  if (fill != nullptr) {
    ASSERT_GE(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, fill), 0);
  }
}

// A plain images/labels file of `n` 4x4x3 images; `images` is made by
// `make_images` (given the file), the labels are written.
template <typename MakeImages>
std::string PlainFile(const TempDir& dir, const std::string& name, hsize_t n,
                      MakeImages make_images) {
  std::string path = dir.Join(name);
  Id file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  make_images(static_cast<hid_t>(file));
  std::vector<int64_t> labels(n, 1);
  AddDataset(file, "labels", H5T_NATIVE_INT64, {n}, H5P_DEFAULT, labels.data());
  return path;
}

void WriteImages(hid_t file, hsize_t n, hid_t dcpl = H5P_DEFAULT) {
  std::vector<uint8_t> pixels(n * 48, 7);
  AddDataset(file, "images", H5T_NATIVE_UINT8, {n, 4, 4, 3}, dcpl, pixels.data());
}

// The file's bytes must not reach the caller: opening is refused, naming
// the file and `what`.
void ExpectRefused(const std::string& path, const std::string& what) {
  auto reader = backends::Hdf5ShardReader::Open(path);
  EXPECT_THAT(reader, StatusIs(absl::StatusCode::kDataLoss,
                               AllOf(HasSubstr(path), HasSubstr(what), Not(HasSubstr("\n")))));
}

// A file holding kSecret, beside the hostile file (a fake /etc/passwd).
std::string SecretFile(const TempDir& dir) {
  std::string path = dir.Join("passwd");
  std::ofstream(path) << kSecret << std::string(48 * 4 - sizeof(kSecret) + 1, 'x');
  return path;
}

TEST(Hdf5Hostile, ExternalStorageIsRefused) {
  TempDir dir;
  std::string secret = SecretFile(dir);
  std::string path = PlainFile(dir, "external.h5", 4, [&](hid_t file) {
    Id dcpl = CreatePlist(H5P_DATASET_CREATE);
    ASSERT_GE(H5Pset_external(dcpl, secret.c_str(), 0, 48 * 4), 0);
    AddDataset(file, "images", H5T_NATIVE_UINT8, {4, 4, 4, 3}, dcpl);
  });
  ExpectRefused(path, "dataset 'images' uses external storage");
}

TEST(Hdf5Hostile, VirtualDatasetIsRefused) {
  TempDir dir;
  std::string source = PlainFile(dir, "source.h5", 4, [](hid_t file) { WriteImages(file, 4); });
  std::string path = PlainFile(dir, "virtual.h5", 4, [&](hid_t file) {
    Id dcpl = CreatePlist(H5P_DATASET_CREATE);
    Id space = Space({4, 4, 4, 3});
    ASSERT_GE(H5Pset_virtual(dcpl, space, source.c_str(), "images", space), 0);
    AddDataset(file, "images", H5T_NATIVE_UINT8, {4, 4, 4, 3}, dcpl);
  });
  ExpectRefused(path, "dataset 'images' is a virtual dataset");
}

TEST(Hdf5Hostile, ExternalLinkIsRefused) {
  TempDir dir;
  std::string other = PlainFile(dir, "other.h5", 4, [](hid_t file) { WriteImages(file, 4); });
  std::string path = PlainFile(dir, "elink.h5", 4, [&](hid_t file) {
    ASSERT_GE(
        H5Lcreate_external(other.c_str(), "/images", file, "images", H5P_DEFAULT, H5P_DEFAULT), 0);
  });
  ExpectRefused(path, "dataset 'images' is an external link");
}

TEST(Hdf5Hostile, SoftLinkIsRefused) {
  TempDir dir;
  std::string path = PlainFile(dir, "soft.h5", 4, [](hid_t file) {
    WriteImages(file, 4);
    ASSERT_GE(H5Lmove(file, "images", file, "hidden", H5P_DEFAULT, H5P_DEFAULT), 0);
    ASSERT_GE(H5Lcreate_soft("/hidden", file, "images", H5P_DEFAULT, H5P_DEFAULT), 0);
  });
  ExpectRefused(path, "dataset 'images' is a soft link");
}

// A user-defined link class that could resolve to anything; this one
// resolves to nothing.
hid_t TraverseNowhere(const char*, hid_t, const void*, size_t, hid_t, hid_t) { return -1; }

TEST(Hdf5Hostile, UserDefinedLinkIsRefused) {
  TempDir dir;
  const H5L_class_t ud = {H5L_LINK_CLASS_T_VERS,
                          static_cast<H5L_type_t>(H5L_TYPE_UD_MIN + 7),
                          "shardpack_test_link",
                          nullptr,
                          nullptr,
                          nullptr,
                          TraverseNowhere,
                          nullptr,
                          nullptr};
  ASSERT_GE(H5Lregister(&ud), 0);
  std::string path = PlainFile(dir, "ud.h5", 4, [&](hid_t file) {
    ASSERT_GE(H5Lcreate_ud(file, "images", ud.id, "x", 1, H5P_DEFAULT, H5P_DEFAULT), 0);
  });
  ASSERT_GE(H5Lunregister(ud.id), 0);
  ExpectRefused(path, "dataset 'images' is a user-defined link");
}

// An identity filter under an id HDF5 does not build in: what a plugin
// would provide.
size_t IdentityFilter(unsigned, size_t, const unsigned[], size_t nbytes, size_t*, void**) {
  return nbytes;
}

// A plain file whose `images` went through filter `id`, which is then
// unregistered, as in a process that never had the plugin.
std::string PlainFileWithPluginFilter(const TempDir& dir, const std::string& name,
                                      H5Z_filter_t id, const char* filter_name) {
  const H5Z_class2_t filter = {H5Z_CLASS_T_VERS, id,      1,       1,
                               filter_name,      nullptr, nullptr, IdentityFilter};
  EXPECT_GE(H5Zregister(&filter), 0);
  std::string path = PlainFile(dir, name, 4, [id](hid_t file) {
    Id dcpl = CreatePlist(H5P_DATASET_CREATE);
    hsize_t chunk[] = {2, 4, 4, 3};
    ASSERT_GE(H5Pset_chunk(dcpl, 4, chunk), 0);
    ASSERT_GE(H5Pset_filter(dcpl, id, H5Z_FLAG_MANDATORY, 0, nullptr), 0);
    WriteImages(file, 4, dcpl);
  });
  EXPECT_GE(H5Zunregister(id), 0);
  return path;
}

TEST(Hdf5Hostile, FilterThatNeedsAPluginIsRefusedByName) {
  TempDir dir;
  std::string path = PlainFileWithPluginFilter(dir, "plugin.h5", 40000, "evil_plugin_filter");
  ExpectRefused(path, "dataset 'images' needs HDF5 filter 40000 ('evil_plugin_filter')");
}

TEST(Hdf5Hostile, BuiltInFiltersStillRead) {
  TempDir dir;
  std::string path = PlainFile(dir, "deflate.h5", 4, [](hid_t file) {
    Id dcpl = CreatePlist(H5P_DATASET_CREATE);
    hsize_t chunk[] = {2, 4, 4, 3};
    ASSERT_GE(H5Pset_chunk(dcpl, 4, chunk), 0);
    ASSERT_GE(H5Pset_shuffle(dcpl), 0);
    ASSERT_GE(H5Pset_deflate(dcpl, 6), 0);
    ASSERT_GE(H5Pset_fletcher32(dcpl), 0);
    WriteImages(file, 4, dcpl);
  });
  SP_ASSERT_OK_AND_ASSIGN(auto reader, backends::Hdf5ShardReader::Open(path));
  std::vector<uint8_t> images(4 * 48);
  SP_ASSERT_OK(reader->ReadRows(0, 4, images.data(), nullptr));
  EXPECT_EQ(images, std::vector<uint8_t>(4 * 48, 7));
}

TEST(Hdf5Hostile, PluginLoadingIsOff) {
  TempDir dir;
  std::string path = PlainFile(dir, "any.h5", 2, [](hid_t file) { WriteImages(file, 2); });
  SP_ASSERT_OK(backends::Hdf5ShardReader::Open(path).status());
  unsigned state = 1;
  ASSERT_GE(H5PLget_loading_state(&state), 0);
  EXPECT_EQ(state, 0u);
}

TEST(Hdf5Hostile, HugeImageShapeInAFewKilobytesIsRefused) {
  TempDir dir;
  std::string path = PlainFile(dir, "huge.h5", 2, [](hid_t file) {
    Id dcpl = CreatePlist(H5P_DATASET_CREATE);
    hsize_t chunk[] = {1, 64, 64, 3};
    ASSERT_GE(H5Pset_chunk(dcpl, 4, chunk), 0);
    AddDataset(file, "images", H5T_NATIVE_UINT8, {2, 65535, 65535, 3}, dcpl);
  });
  ASSERT_LT(fs::file_size(path), 20000u);
  ExpectRefused(path, "dataset 'images'");
}

TEST(Hdf5Hostile, BillionRowsOfFillValuesAreRefused) {
  TempDir dir;
  constexpr hsize_t kRows = 1000000000;
  std::string path = dir.Join("fill.h5");
  {
    Id file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    Id dcpl = CreatePlist(H5P_DATASET_CREATE);
    hsize_t chunk[] = {1024, 4, 4, 3};
    ASSERT_GE(H5Pset_chunk(dcpl, 4, chunk), 0);
    AddDataset(file, "images", H5T_NATIVE_UINT8, {kRows, 4, 4, 3}, dcpl);
    Id label_dcpl = CreatePlist(H5P_DATASET_CREATE);
    hsize_t label_chunk[] = {1024};
    ASSERT_GE(H5Pset_chunk(label_dcpl, 1, label_chunk), 0);
    AddDataset(file, "labels", H5T_NATIVE_INT64, {kRows}, label_dcpl);
  }
  ExpectRefused(path, "fill values");
}

// Chunks written directly: a few bytes of deflate stream each, declaring
// chunks far larger. HDF5 would inflate them on read; the ratio gives them
// away first.
TEST(Hdf5Hostile, FilteredChunksClaimingFarMoreThanStoredAreRefused) {
  TempDir dir;
  constexpr hsize_t kRows = 1 << 20;
  std::string path = PlainFile(dir, "bomb.h5", kRows, [](hid_t file) {
    Id dcpl = CreatePlist(H5P_DATASET_CREATE);
    hsize_t chunk[] = {kRows / 4, 4, 4, 3};
    ASSERT_GE(H5Pset_chunk(dcpl, 4, chunk), 0);
    ASSERT_GE(H5Pset_deflate(dcpl, 9), 0);
    Id space = Space({kRows, 4, 4, 3});
    Id d(H5Dcreate2(file, "images", H5T_NATIVE_UINT8, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
         H5Dclose);
    const uint8_t stream[] = {0x78, 0xda, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01};
    for (hsize_t c = 0; c < 4; ++c) {
      hsize_t offset[] = {c * kRows / 4, 0, 0, 0};
      ASSERT_GE(H5Dwrite_chunk(d, H5P_DEFAULT, 0, offset, sizeof(stream), stream), 0);
    }
  });
  ExpectRefused(path, "more than 2048 to 1 after its filters");
}

// Rows of 4 GB (within what a record holds), backed by 2 MB of filtered
// chunk bytes (never read): batches of them cannot be allocated, and the
// reader says so instead of writing into the null pointer malloc returned.
TEST(Hdf5Hostile, BatchMemoryThatCannotBeHadIsAnError) {
  TempDir dir;
  constexpr hsize_t kSide = 37000;  // 37000 x 37000 x 3 = 4107000000 bytes a row
  std::string path = PlainFile(dir, "big-rows.h5", 1, [](hid_t file) {
    Id dcpl = CreatePlist(H5P_DATASET_CREATE);
    hsize_t chunk[] = {1, kSide, kSide, 3};
    ASSERT_GE(H5Pset_chunk(dcpl, 4, chunk), 0);
    ASSERT_GE(H5Pset_deflate(dcpl, 1), 0);
    Id space = Space({1, kSide, kSide, 3});
    Id d(H5Dcreate2(file, "images", H5T_NATIVE_UINT8, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
         H5Dclose);
    std::vector<uint8_t> stored(size_t{2} << 20, 0x5a);
    hsize_t offset[] = {0, 0, 0, 0};
    ASSERT_GE(H5Dwrite_chunk(d, H5P_DEFAULT, 0, offset, stored.size(), stored.data()), 0);
  });
  SP_ASSERT_OK(backends::Hdf5ShardReader::Open(path).status());
  // A manifest beside it, so that the CRC gate admits it without reading its
  // rows (vetting would read them, and its one chunk does not inflate).
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, backends::SynthesizeHdf5Manifest(path));
  SP_ASSERT_OK_AND_ASSIGN(backends::FileDigest digest, backends::DigestFile(path));
  m.shards[0].bytes = digest.bytes;
  m.shards[0].crc32c = digest.crc32c;
  SP_ASSERT_OK(WriteManifest(dir.path().string(), m));
  ReaderOptions o;
  o.path = dir.path().string();
  o.batch_size = 1 << 14;  // 67 TB a slot: beyond any address space, times 4 slots
  o.remainder = Remainder::kPartial;
  o.threads = 1;
  EXPECT_THAT(Reader::Open(o),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr(dir.path().string()), HasSubstr("out of memory"))));
}

TEST(Hdf5Hostile, LabelsOfTheWrongRankAreRefused) {
  TempDir dir;
  std::string path = dir.Join("rank.h5");
  {
    Id file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    WriteImages(file, 4);
    std::vector<int64_t> labels(4 * 64, 3);  // 64 values a row: reading them would overrun
    AddDataset(file, "labels", H5T_NATIVE_INT64, {4, 64}, H5P_DEFAULT, labels.data());
  }
  ExpectRefused(path, "dataset 'labels' has 2 dimensions");
}

// Our own shard, edited: its flat datasets claim more than the file holds.
class Hdf5ShardEdited : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<testing::OwnedRecord> records;
    for (int i = 0; i < 20; ++i) records.push_back(testing::JpegLikeRecord(i, 50 + i));
    for (int i = 0; i < 20; ++i) records[i].extra = testing::PatternBytes(i, 5);
    auto m = testing::WriteDataset(dir_.path(), Backend::kHdf5, records, testing::JpegSchema());
    ASSERT_TRUE(m.ok()) << m.status();
    path_ = dir_.Join(m->shards[0].path);
  }
  // Grows `name` (extendible, chunked) to `rows` without writing them.
  void Grow(const char* name, hsize_t rows) {
    Id file(H5Fopen(path_.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
    Id d(H5Dopen2(file, name, H5P_DEFAULT), H5Dclose);
    ASSERT_GE(H5Dset_extent(d, &rows), 0);
  }
  TempDir dir_;
  std::string path_;
};

TEST_F(Hdf5ShardEdited, ByteDatasetsClaimingMoreThanTheFileAreRefused) {
  for (const char* name : {"data", "keys", "extra"}) {
    SetUp();
    Grow(name, hsize_t{1} << 40);
    ExpectRefused(path_, absl::StrCat("dataset '", name, "' claims 1099511627776 bytes"));
  }
}

TEST_F(Hdf5ShardEdited, OffsetPastTheDataIsRefusedBeforeAnyAllocation) {
  {
    Id file(H5Fopen(path_.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
    Id d(H5Dopen2(file, "offsets", H5P_DEFAULT), H5Dclose);
    Id space(H5Dget_space(d), H5Sclose);
    hsize_t at[] = {20};
    ASSERT_GE(H5Sselect_elements(space, H5S_SELECT_SET, 1, at), 0);
    Id one = Space({1});
    const int64_t huge = int64_t{1} << 50;
    ASSERT_GE(H5Dwrite(d, H5T_NATIVE_INT64, one, space, H5P_DEFAULT, &huge), 0);
  }
  SP_ASSERT_OK_AND_ASSIGN(auto reader, backends::Hdf5ShardReader::Open(path_));
  std::vector<int64_t> offsets(21);
  EXPECT_THAT(reader->ReadOffsets(0, 20, offsets.data()),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(path_), HasSubstr("record 20: 'offsets' value "
                                                         "1125899906842624"))));
  // The manifest's checksum made to match the edit, so that the reader's own
  // check is what refuses it (the CRC gate would, first, otherwise).
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ReadManifest(dir_.path().string()));
  SP_ASSERT_OK_AND_ASSIGN(backends::FileDigest digest, backends::DigestFile(path_));
  m.shards[0].bytes = digest.bytes;
  m.shards[0].crc32c = digest.crc32c;
  SP_ASSERT_OK(WriteManifest(dir_.path().string(), m));
  ReaderOptions o;
  o.path = dir_.path().string();
  o.batch_size = 4;
  o.transform.kind = Transform::Kind::kCenterCrop;
  o.transform.size = 8;
  // Shards are opened when first read: the error comes from Open or from the
  // first batch.
  auto opened = Reader::Open(o);
  absl::Status s = opened.status();
  if (opened.ok()) s = (*opened)->Next().status();
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kDataLoss, HasSubstr("'offsets'")));
}

TEST(Hdf5Hostile, MetadataAttributeOfManyStringsIsRefused) {
  TempDir dir;
  std::string path = PlainFile(dir, "attr.h5", 2, [](hid_t file) {
    WriteImages(file, 2);
    Id type(H5Tcopy(H5T_C_S1), H5Tclose);
    ASSERT_GE(H5Tset_size(type, H5T_VARIABLE), 0);
    ASSERT_GE(H5Tset_cset(type, H5T_CSET_UTF8), 0);  // as the reader reads it
    Id space = Space({64});
    Id attr(H5Acreate2(file, backends::kHdf5MetaAttribute, type, space, H5P_DEFAULT, H5P_DEFAULT),
            H5Aclose);
    std::vector<const char*> texts(64, "{}");
    ASSERT_GE(H5Awrite(attr, type, texts.data()), 0);
  });
  ExpectRefused(path, "is not one variable-length string");
}

// HDF5's stack for a filter it cannot load ends in the plugin loader, which
// names plugin folders; the message says which filter is missing instead.
TEST(Hdf5Errors, OneLineWithoutPluginFolders) {
  TempDir dir;
  std::string path = PlainFileWithPluginFilter(dir, "gone.h5", 40001, "gone_filter");
  auto lock = backends::LockHdf5();
  Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  Id d(H5Dopen2(file, "images", H5P_DEFAULT), H5Dclose);
  std::vector<uint8_t> out(4 * 48);
  ASSERT_LT(H5Dread(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), 0);
  absl::Status s = backends::Hdf5Error(path, "reading 'images'");
  EXPECT_THAT(std::string(s.message()),
              AllOf(HasSubstr(path),
                    HasSubstr("reading 'images': required filter 'gone_filter' "
                              "is not registered"),
                    Not(HasSubstr("plugin")), Not(HasSubstr("unknown"))));
  H5Eclear2(H5E_DEFAULT);
  EXPECT_EQ(backends::Hdf5Error(path, "closing").message(), path + ": closing failed");
}

// The whole path a user takes: convert the file, extract its records. The
// secret's bytes must not come out anywhere.
TEST(Hdf5Hostile, ConvertAndExtractCannotReachOtherFiles) {
  TempDir dir;
  std::string secret = SecretFile(dir);
  std::string path = PlainFile(dir, "external.h5", 4, [&](hid_t file) {
    Id dcpl = CreatePlist(H5P_DATASET_CREATE);
    ASSERT_GE(H5Pset_external(dcpl, secret.c_str(), 0, 48 * 4), 0);
    AddDataset(file, "images", H5T_NATIVE_UINT8, {4, 4, 4, 3}, dcpl);
  });
  testing::RunResult convert = testing::Run(
      {SHARDPACK_PATH, "convert", path, "-o", dir.Join("out"), "--format", "shard", "-q"});
  EXPECT_EQ(convert.exit_code, 1);
  EXPECT_THAT(convert.err, HasSubstr("uses external storage"));
  testing::RunResult extract =
      testing::Run({SHARDDUMP_PATH, "extract", "--range", "0:4", "-o", dir.Join("x"), path});
  EXPECT_EQ(extract.exit_code, 1);
  EXPECT_THAT(extract.err, HasSubstr("uses external storage"));
  for (const auto& e : fs::recursive_directory_iterator(dir.path())) {
    if (!e.is_regular_file() || e.path() == secret) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_THAT(bytes, Not(HasSubstr("root:x:0:0"))) << e.path();
  }
  ReaderOptions o;
  o.path = path;
  o.batch_size = 2;
  EXPECT_THAT(Reader::Open(o),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("uses external storage")));
}

}  // namespace
}  // namespace shardpack
