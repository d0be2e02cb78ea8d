// sharddump on a dataset with fields (tests/testing/field_fixtures.h): info
// lists the fields, ls shows each one, extract writes each as a file, show
// draws the first image field, verify checks every record's CRC-32C and
// content; a flipped byte is damage that each names.
#include <turbojpeg.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "shardpack/backends.h"
#include "shardpack/dataset.h"
#include "shardpack/file.h"
#include "tests/fuzz/refresh_checksums.h"
#include "tests/testing/cli_expect.h"
#include "tests/testing/field_fixtures.h"
#include "tests/testing/jpeg_fixtures.h"
#include "tests/testing/python_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

namespace fs = std::filesystem;
using ::shardpack::testing::Lines;
using ::shardpack::testing::RunResult;
using ::shardpack::testing::RunTool;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using Json = nlohmann::json;

constexpr int kRecords = 12;

// A file's bytes, "" when it cannot be read (the test's expectations then
// say what is missing).
std::string ReadFile(const std::string& path) { return ReadSmallFile(path).value_or(""); }

const std::vector<uint8_t>& Jpeg() {
  static const std::vector<uint8_t> jpeg = testing::TjSceneJpeg(40, 24, TJSAMP_420);
  return jpeg;
}

// testing::EveryFieldType()'s records 0..11 in shards of 6.
void WriteFields(const std::string& dir, Backend backend = Backend::kShard) {
  fs::create_directories(dir);
  DatasetWriterOptions o;
  o.directory = dir;
  o.shard_max_records = 6;
  UseBackend(&o, backend);
  SP_ASSERT_OK(testing::WriteFieldsDataset(o, kRecords, Jpeg(),
                                           {Encoding::kJpeg, Layout::kHWC, 24, 40, 3})
                   .status());
}

// Flips the bit 0x20 of a byte inside record i's caption in `file`.
void FlipCaption(const std::string& file, uint64_t i, bool refresh_checksums = false) {
  std::string bytes = ReadFile(file);
  const size_t at = bytes.find(testing::SampleCaption(i));
  ASSERT_NE(at, std::string::npos);
  bytes[at + 2] ^= 0x20;
  if (refresh_checksums) {
    testing::RefreshChecksums({reinterpret_cast<uint8_t*>(bytes.data()), bytes.size()});
  }
  SP_ASSERT_OK(WriteFileAtomically(file, bytes));
}

class SharddumpFieldsTest : public ::testing::Test {
 protected:
  void SetUp() override { WriteFields(Dataset()); }
  std::string Dataset() const { return tmp_.Join("ds"); }
  std::string Shard(int k) const { return tmp_.Join(absl::StrCat("ds/shard-0000", k, ".shard")); }
  testing::TempDir tmp_;
};

TEST_F(SharddumpFieldsTest, InfoListsTheFields) {
  RunResult r = RunTool(SHARDDUMP_PATH, {"info", Dataset()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\nfields\n"));
  std::vector<std::string> lines = Lines(r.out);
  auto line_of = [&](const std::string& name) {
    for (const std::string& l : lines) {
      if (l.starts_with(absl::StrCat("  ", name, " "))) return l;
    }
    return std::string();
  };
  EXPECT_THAT(line_of("photo"), AllOf(HasSubstr(" jpeg "), HasSubstr(" no ")));
  EXPECT_THAT(line_of("boxes"), HasSubstr(" f32[n,4] "));
  EXPECT_THAT(line_of("category"), AllOf(HasSubstr(" label "), HasSubstr(" 3")));
  EXPECT_THAT(line_of("mask"), AllOf(HasSubstr(" raw:gray "), HasSubstr(" yes ")));
  EXPECT_THAT(line_of("tokens"), AllOf(HasSubstr(" i32[n] "), HasSubstr(" yes ")));

  RunResult j = RunTool(SHARDDUMP_PATH, {"info", "--json", Dataset()});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const Json doc = Json::parse(j.out);
  ASSERT_EQ(doc["fields"].size(), size_t{testing::kSampleFields});
  EXPECT_EQ(doc["fields"][5], Json({{"name", "meta"}, {"type", "json"}, {"optional", true}}));
  EXPECT_EQ(doc["fields"][3]["classes"], 3);
  EXPECT_EQ(doc["labels"][0]["name"], "category");
}

TEST_F(SharddumpFieldsTest, LsShowsEveryFieldButTheImages) {
  RunResult r = RunTool(SHARDDUMP_PATH, {"ls", Dataset(), "--range", "3:5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], StartsWith("3\ts/3\t0\tjpeg\t40x24x3\t"));
  EXPECT_THAT(lines[0], HasSubstr("\tcaption=record 3: a caf\xc3\xa9 scene\tboxes=f32[0,4]\t"
                                  "category=0 (cat)\tmeta=-\tembedding=f16[4]\tblob=3 bytes\t"
                                  "tokens=-"));
  EXPECT_THAT(lines[0], Not(HasSubstr("photo=")));
  EXPECT_THAT(lines[1], HasSubstr("\tboxes=f32[1,4]\tcategory=1 (dog)\tmeta={\"id\": 4, \"tags\": "
                                  "[\"a\", \"b\"]}\t"));
  EXPECT_THAT(lines[1], HasSubstr("\ttokens=i32[0]"));

  RunResult j = RunTool(SHARDDUMP_PATH, {"ls", "--json", Dataset(), "--range", "4:5"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const Json f = Json::parse(j.out)["fields"];
  EXPECT_EQ(f["caption"], testing::SampleCaption(4));
  EXPECT_EQ(f["category"], Json({{"label", 1}, {"class", "dog"}}));
  EXPECT_EQ(f["boxes"], Json({{"dtype", "f32"}, {"shape", {1, 4}}}));
  EXPECT_EQ(f["blob"], Json({{"bytes", 4}}));
  EXPECT_EQ(f["photo"]["width"], 40);
  EXPECT_EQ(f["mask"]["bytes"], 6);
  EXPECT_EQ(j.out.find("\"meta\":null"), std::string::npos);
}

// A view that relabels: the records are checked as stored (their CRC covers
// the stored labels), then shown with the view's labels and class names.
TEST_F(SharddumpFieldsTest, LsOfARelabellingViewChecksTheStoredRecords) {
  const std::string view = tmp_.Join("v.view.json");
  SP_ASSERT_OK(WriteFileAtomically(view, R"({"shardpack_view": 1, "datasets": ["ds"],
      "classes": {"field": "category", "names": ["bird", "cat"]}})"));
  RunResult r = RunTool(SHARDDUMP_PATH, {"ls", view});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 8u);  // categories 0 and 2 of 12
  EXPECT_THAT(lines[0], AllOf(StartsWith("0	s/0	1	"), HasSubstr("	category=1 (cat)	")));
  EXPECT_THAT(lines[1], AllOf(StartsWith("1	s/2	0	"), HasSubstr("	category=0 (bird)	")));
}

// The .npy file of an array value, checked byte by byte for its header.
void ExpectNpy(const std::string& path, const std::string& descr, const std::string& shape,
               size_t data_bytes) {
  const std::string npy = ReadFile(path);
  ASSERT_GE(npy.size(), 10u) << path;
  EXPECT_EQ(npy.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t header = static_cast<uint8_t>(npy[8]) | static_cast<uint8_t>(npy[9]) << 8;
  EXPECT_EQ((10 + header) % 64, 0u);
  EXPECT_EQ(npy.substr(10, header).find(absl::StrCat("{'descr': '", descr,
                                                     "', 'fortran_order': False, 'shape': (",
                                                     shape, "), }")),
            0u);
  EXPECT_EQ(npy[10 + header - 1], '\n');
  EXPECT_EQ(npy.size(), 10 + header + data_bytes);
}

TEST_F(SharddumpFieldsTest, ExtractWritesEveryFieldAsAFile) {
  const std::string out = tmp_.Join("out");
  RunResult r = RunTool(SHARDDUMP_PATH, {"extract", Dataset(), "--index", "4,3", "-o", out, "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string p = out + "/04_s_4.";
  EXPECT_EQ(ReadFile(p + "photo.jpg"), std::string(Jpeg().begin(), Jpeg().end()));
  EXPECT_EQ(ReadFile(p + "caption.txt"), testing::SampleCaption(4));
  EXPECT_EQ(ReadFile(p + "category.cls"), "1");
  EXPECT_EQ(ReadFile(p + "mask.pgm"), std::string("P5\n3 2\n255\n\0\1\2\3\4\4", 17));
  EXPECT_EQ(ReadFile(p + "meta.json"), R"({"id": 4, "tags": ["a", "b"]})");
  EXPECT_EQ(ReadFile(p + "blob.bin").size(), 4u);
  ExpectNpy(p + "boxes.npy", "<f4", "1, 4", 16);
  ExpectNpy(p + "embedding.npy", "<f2", "4,", 8);
  ExpectNpy(p + "tokens.npy", "<i4", "0,", 0);
  // Absent fields have no file: record 3 has no meta and no tokens.
  EXPECT_FALSE(fs::exists(out + "/03_s_3.meta.json"));
  EXPECT_FALSE(fs::exists(out + "/03_s_3.tokens.npy"));
  EXPECT_TRUE(fs::exists(out + "/03_s_3.caption.txt"));
  const std::vector<std::string> tsv = Lines(ReadFile(out + "/labels.tsv"));
  ASSERT_EQ(tsv.size(), 3u);
  EXPECT_THAT(tsv[1], StartsWith("04_s_4.photo.jpg\t4\ts/4\t1\tdog\t40x24x3"));
  // numpy reads the arrays back, when this python has it.
  if (testing::Run({testing::kPython, "-c", "import numpy"}).exit_code != 0) return;
  RunResult np = testing::Python(
      "import numpy, sys; b = numpy.load(sys.argv[1]); e = numpy.load(sys.argv[2]);"
      "print(b.dtype, b.shape, b.tolist(), e.dtype, e.tolist())",
      {p + "boxes.npy", p + "embedding.npy"});
  EXPECT_EQ(np.out, "float32 (1, 4) [[4.0, 4.25, 4.5, 4.75]] float16 [1.0, 2.0, 3.0, 4.0]\n")
      << np.err;
}

TEST_F(SharddumpFieldsTest, ShowDrawsTheFirstImageField) {
  const std::string png = tmp_.Join("sheet.png");
  RunResult r = RunTool(SHARDDUMP_PATH, {"show", Dataset(), "--range", "0:4", "-o", png, "-q"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(png));
}

TEST_F(SharddumpFieldsTest, VerifyPassesAnIntactDataset) {
  RunResult r = RunTool(SHARDDUMP_PATH, {"verify", Dataset()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, StartsWith("ok: 2 shards, 12 records"));
}

// A caption byte flipped, every checksum of the file then recomputed (as a
// writer that damaged the record before it framed it would leave it): the
// record's own CRC-32C is the one check left, and it finds it.
TEST_F(SharddumpFieldsTest, AFlippedCaptionBehindFreshBlockChecksumsIsARecordCrcMismatch) {
  FlipCaption(Shard(0), 3, /*refresh_checksums=*/true);
  RunResult v = RunTool(SHARDDUMP_PATH, {"verify", Dataset()});
  EXPECT_EQ(v.exit_code, 1);
  std::vector<std::string> lines = Lines(v.out);
  ASSERT_EQ(lines.size(), 2u) << v.out;
  EXPECT_THAT(lines[0], StartsWith("shard 0, record 3 (index 3), offset "));
  EXPECT_THAT(lines[0], AllOf(HasSubstr(Shard(0) + " @"),
                              HasSubstr(": record 3: record CRC-32C mismatch")));

  RunResult x = RunTool(SHARDDUMP_PATH, {"extract", Dataset(), "--range", "0:6", "-o",
                                         tmp_.Join("out")});
  testing::ExpectOneLineFailure(x, "sharddump", "record 3: record CRC-32C mismatch");
  EXPECT_FALSE(fs::exists(tmp_.Join("out")));
  RunResult ls = RunTool(SHARDDUMP_PATH, {"ls", Dataset()});
  testing::ExpectOneLineFailure(ls, "sharddump", "record CRC-32C mismatch");
  // Another shard's records are unharmed.
  EXPECT_EQ(RunTool(SHARDDUMP_PATH, {"extract", Dataset(), "--index", "7", "-o",
                                     tmp_.Join("out7"), "-q"})
                .exit_code,
            0);
}

// A plain flip inside an uncompressed block: verify and extract read whole
// blocks, whose CRC-32C finds it first.
TEST_F(SharddumpFieldsTest, AFlippedCaptionByteIsFoundByTheBlockCrc) {
  FlipCaption(Shard(1), 8);
  RunResult v = RunTool(SHARDDUMP_PATH, {"verify", Dataset()});
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_THAT(v.out, HasSubstr("checksum mismatch in block"));
  RunResult x = RunTool(SHARDDUMP_PATH, {"extract", Dataset(), "--index", "8", "-o",
                                         tmp_.Join("out")});
  testing::ExpectOneLineFailure(x, "sharddump", "checksum mismatch");
}

// A lone LMDB shard has no manifest entry to check the file's CRC-32C
// against: the record CRC finds a flipped caption byte.
TEST(SharddumpFieldsLmdbTest, AFlippedCaptionInALoneLmdbShardIsFoundByTheRecordCrc) {
  testing::TempDir tmp;
  WriteFields(tmp.Join("ds"), Backend::kLmdb);
  // Alone: a shard file beside its manifest is checked against its entry.
  const std::string shard = tmp.Join("alone.lmdb");
  fs::copy_file(tmp.Join("ds/shard-00000.lmdb"), shard);
  FlipCaption(shard, 2);
  FlipCaption(tmp.Join("ds/shard-00000.lmdb"), 2);
  RunResult v = RunTool(SHARDDUMP_PATH, {"verify", shard});
  EXPECT_EQ(v.exit_code, 1) << v.out << v.err;
  EXPECT_THAT(v.out, HasSubstr("record 2: record CRC-32C mismatch"));
  RunResult x = RunTool(SHARDDUMP_PATH, {"extract", shard, "--index", "2", "-o", tmp.Join("out")});
  testing::ExpectOneLineFailure(x, "sharddump", "record 2: record CRC-32C mismatch");
  // Through its dataset, the manifest's CRC-32C of the file finds it first.
  RunResult whole = RunTool(SHARDDUMP_PATH, {"verify", tmp.Join("ds")});
  EXPECT_EQ(whole.exit_code, 1);
}

}  // namespace
}  // namespace shardpack
