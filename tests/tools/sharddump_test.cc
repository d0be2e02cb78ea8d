// sharddump, run as a subprocess on datasets made here: what it prints on
// stdout and stderr and the exit status it returns.
#include <fcntl.h>
#include <pty.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "shardpack/dataset.h"
#include "shardpack/file.h"
#include "tests/testing/cli_expect.h"
#include "tests/testing/jpeg_fixtures.h"
#include "tests/testing/shard_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

namespace fs = std::filesystem;
using ::shardpack::testing::OwnedRecord;
using ::shardpack::testing::TempDir;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;
using Json = nlohmann::json;

// ---------------------------------------------------------------------------
// Running the tool

using ::shardpack::testing::Lines;
using ::shardpack::testing::RunResult;
using ::shardpack::testing::RunTool;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, std::string_view contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
}

// Runs sharddump with stderr on a pseudo-terminal and returns what it drew
// there (stdout goes to /dev/null).
std::string RunWithTerminalStderr(const std::vector<std::string>& args) {
  int master = -1, slave = -1;
  if (openpty(&master, &slave, nullptr, nullptr, nullptr) != 0) return "openpty failed";
  std::vector<std::string> argv = {SHARDDUMP_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c_argv;
  for (std::string& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(slave, STDERR_FILENO);
    close(master);
    execv(c_argv[0], c_argv.data());
    _exit(127);
  }
  close(slave);
  std::string drawn;
  char buffer[4096];
  ssize_t n;
  // read() fails with EIO once the child has exited and the slave is closed.
  while ((n = read(master, buffer, sizeof(buffer))) > 0) drawn.append(buffer, n);
  close(master);
  int status = 0;
  waitpid(pid, &status, 0);
  return drawn;
}

// Expects the failure contract (exit 1, one line on stderr "sharddump: ..."
// containing `needle`) and nothing on stdout.
void ExpectOneLineFailure(const RunResult& r, const std::string& needle) {
  EXPECT_THAT(r.out, IsEmpty());
  testing::ExpectOneLineFailure(r, "sharddump", needle);
}

// ---------------------------------------------------------------------------
// Fixtures

// A real JPEG of `w` x `h` with 1 or 3 components.
std::vector<uint8_t> MakeJpeg(int w, int h, int channels, uint64_t seed) {
  std::vector<uint8_t> pixels(size_t(w) * h * channels);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7 + seed * 13);
  return testing::EncodeJpeg(pixels, w, h, channels == 1 ? TJPF_GRAY : TJPF_RGB,
                             channels == 1 ? TJSAMP_GRAY : TJSAMP_420);
}

OwnedRecord JpegRecord(uint64_t i, int w, int h, int channels) {
  OwnedRecord r;
  r.key = absl::StrCat("class_", i % 2, "/img_", i, ".JPEG");
  r.labels = {static_cast<int64_t>(i % 2)};
  r.image = {Encoding::kJpeg, Layout::kHWC, static_cast<uint32_t>(h), static_cast<uint32_t>(w),
             static_cast<uint8_t>(channels)};
  r.payload = MakeJpeg(w, h, channels, i);
  return r;
}

Schema RawSchema(uint32_t h, uint32_t w, uint8_t c, int classes, Layout layout = Layout::kHWC) {
  Schema schema;
  schema.image = {Encoding::kRaw, layout, h, w, c};
  LabelField field{"label", {}};
  for (int i = 0; i < classes; ++i) field.classes.push_back(absl::StrCat("c", i));
  schema.labels.push_back(field);
  return schema;
}

// Writes `records` as a dataset in `dir` (created), `per_shard` records a
// shard.
void WriteDataset(const std::string& dir, const std::vector<OwnedRecord>& records,
                  const Schema& schema, uint64_t per_shard,
                  Compression compression = Compression::kNone) {
  fs::create_directories(dir);
  DatasetWriterOptions options;
  options.directory = dir;
  options.schema = schema;
  options.shard_max_records = per_shard;
  options.shard.compression = compression;
  options.pack_json = R"({"source":"test","seed":7})";
  auto writer = DatasetWriter::Create(options);
  ASSERT_THAT(writer, testing::IsOk());
  for (const OwnedRecord& r : records) SP_ASSERT_OK((*writer)->Add(r.record()));
  SP_ASSERT_OK((*writer)->Finish().status());
}

// 25 raw 6x4x3 records ("raw/<i>", label i % 10) in shards of 10, 10, 5.
std::vector<OwnedRecord> RawRecords(int n = 25) {
  std::vector<OwnedRecord> records;
  for (int i = 0; i < n; ++i) records.push_back(testing::RawRecord(i, 4, 6, 3));
  return records;
}

class SharddumpTest : public ::testing::Test {
 protected:
  void SetUp() override { WriteDataset(Dataset(), RawRecords(), RawSchema(4, 6, 3, 10), 10); }
  std::string Dataset() const { return tmp_.Join("ds"); }
  std::string Shard(int k) const { return tmp_.Join(absl::StrCat("ds/shard-0000", k, ".shard")); }
  Json ReadManifestJson() const { return Json::parse(ReadFile(tmp_.Join("ds/manifest.json"))); }
  void WriteManifestJson(const Json& j) const {
    WriteFile(tmp_.Join("ds/manifest.json"), j.dump(2));
  }

  TempDir tmp_;
};

// ---------------------------------------------------------------------------
// info

TEST_F(SharddumpTest, InfoJsonHasCountsShardsClassesAndHistogram) {
  RunResult r = RunTool(SHARDDUMP_PATH, {"info", "--json", Dataset()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, IsEmpty());
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["backend"], "shard");
  EXPECT_EQ(j["version"], "1.1");
  EXPECT_EQ(j["records"], 25);
  ASSERT_EQ(j["shards"].size(), 3u);
  uint64_t total = 0;
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(j["shards"][k]["path"], absl::StrCat("shard-0000", k, ".shard"));
    EXPECT_EQ(j["shards"][k]["records"], k < 2 ? 10 : 5);
    EXPECT_EQ(j["shards"][k]["bytes"], fs::file_size(Shard(k)));
    total += fs::file_size(Shard(k));
  }
  EXPECT_EQ(j["bytes"], total);
  EXPECT_EQ(j["classes"].size(), 10u);
  EXPECT_EQ(j["classes"][3], "c3");
  const Json& histogram = j["labels"][0]["histogram"];
  ASSERT_EQ(histogram.size(), 10u);
  EXPECT_EQ(histogram[0], Json({{"label", 0}, {"name", "c0"}, {"count", 3}}));
  EXPECT_EQ(histogram[9], Json({{"label", 9}, {"name", "c9"}, {"count", 2}}));
  EXPECT_EQ(j["image"]["width"], Json({{"min", 6}, {"median", 6}, {"max", 6}}));
  EXPECT_EQ(j["image"]["height"]["median"], 4);
  EXPECT_EQ(j["image"]["bytes"]["max"], 72);
  EXPECT_EQ(j["compression_ratio"], 1.0);
  EXPECT_EQ(j["schema"]["encoding"], "raw");
  EXPECT_EQ(j["pack"]["source"], "test");
}

TEST_F(SharddumpTest, InfoTextNamesTheNumbers) {
  RunResult r = RunTool(SHARDDUMP_PATH, {"info", Dataset()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("records        25\n"));
  EXPECT_THAT(r.out, HasSubstr("shards         3\n"));
  EXPECT_THAT(r.out, HasSubstr("backend        shard\n"));
  EXPECT_THAT(r.out, HasSubstr("width          min 6  median 6  max 6\n"));
  EXPECT_THAT(r.out, HasSubstr("label field 0: label (10 classes, 10 values seen)"));
  EXPECT_THAT(r.out, HasSubstr("         3          3  c3\n"));
  EXPECT_THAT(r.out, HasSubstr("\"source\":\"test\""));
}

TEST_F(SharddumpTest, InfoOnALoneShardAndOnTheManifestFile) {
  RunResult r = RunTool(SHARDDUMP_PATH, {"info", "--json", Shard(1)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["backend"], "shard");
  EXPECT_EQ(j["version"], "1.0");
  EXPECT_EQ(j["records"], 10);
  EXPECT_TRUE(j["schema"].is_null());
  EXPECT_EQ(j["shards"][0]["bytes"], fs::file_size(Shard(1)));

  RunResult m = RunTool(SHARDDUMP_PATH, {"info", "--json", tmp_.Join("ds/manifest.json")});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_EQ(Json::parse(m.out)["records"], 25);
}

TEST(SharddumpCompressionTest, InfoReportsTheRatioAndLsTheBlockOffsets) {
  TempDir tmp;
  std::vector<OwnedRecord> records;
  for (int i = 0; i < 8; ++i) {
    OwnedRecord r = testing::RawRecord(i, 32, 32, 3);
    std::fill(r.payload.begin(), r.payload.end(), uint8_t{7});  // compresses well
    records.push_back(r);
  }
  WriteDataset(tmp.Join("z"), records, RawSchema(32, 32, 3, 10), 0, Compression::kZstd);
  RunResult info = RunTool(SHARDDUMP_PATH, {"info", "--json", tmp.Join("z")});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  Json j = Json::parse(info.out);
  EXPECT_GT(j["compression_ratio"].get<double>(), 5.0);
  EXPECT_LT(j["stored_bytes"].get<uint64_t>(), j["raw_bytes"].get<uint64_t>());

  RunResult ls = RunTool(SHARDDUMP_PATH, {"ls", tmp.Join("z")});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  std::vector<std::string> lines = Lines(ls.out);
  ASSERT_EQ(lines.size(), 8u);
  // Record 0 is at the start of the block's decompressed payload.
  EXPECT_EQ(lines[0], "0\traw/0\t0\traw/hwc\t32x32x3\t3072\t0\t4096:0");
  RunResult json = RunTool(SHARDDUMP_PATH, {"ls", "--json", "--range", "1:2", tmp.Join("z")});
  Json line = Json::parse(json.out);
  EXPECT_EQ(line["compressed"], true);
  EXPECT_EQ(line["offset"], 4096);
  EXPECT_EQ(line["block_offset"], 4096);
  EXPECT_GT(line["in_block"].get<uint64_t>(), 3072u);
}

// ---------------------------------------------------------------------------
// ls

TEST_F(SharddumpTest, LsPrintsOneLinePerRecord) {
  RunResult r = RunTool(SHARDDUMP_PATH, {"ls", Dataset()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 25u);
  // Record header of record 0 at 4096 (first block) + 32 (block header); each
  // record takes 24 + 8 (label) + key + 72 bytes, padded to 8: 112.
  EXPECT_EQ(lines[0], "0\traw/0\t0\traw/hwc\t6x4x3\t72\t0\t4128");
  EXPECT_EQ(lines[1], "1\traw/1\t1\traw/hwc\t6x4x3\t72\t0\t4240");
  EXPECT_EQ(lines[13], "13\traw/13\t3\traw/hwc\t6x4x3\t72\t1\t4464");
  EXPECT_EQ(lines[24], "24\traw/24\t4\traw/hwc\t6x4x3\t72\t2\t4576");
}

TEST_F(SharddumpTest, LsOffsetsPointAtTheRecordHeaders) {
  RunResult r = RunTool(SHARDDUMP_PATH, {"ls", "--json", "--range", "12:14", Dataset()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string shard = ReadFile(Shard(1));
  for (const std::string& line : Lines(r.out)) {
    Json j = Json::parse(line);
    uint64_t offset = j["offset"];
    // The record header's first u32 is the payload length.
    uint32_t payload_len;
    std::memcpy(&payload_len, shard.data() + offset, 4);
    EXPECT_EQ(payload_len, 72u);
    std::string key = j["key"];
    EXPECT_EQ(shard.substr(offset + 24 + 8, key.size()), key);
  }
}

TEST_F(SharddumpTest, LsRangeAndShardSelect) {
  auto indexes = [](const RunResult& r) {
    std::vector<std::string> out;
    for (const std::string& line : Lines(r.out)) out.push_back(line.substr(0, line.find('\t')));
    return out;
  };
  EXPECT_THAT(indexes(RunTool(SHARDDUMP_PATH, {"ls", "--range", "8:12", Dataset()})),
              ElementsAre("8", "9", "10", "11"));
  RunResult shard = RunTool(SHARDDUMP_PATH, {"ls", "--shard", "2", Dataset()});
  EXPECT_THAT(indexes(shard), ElementsAre("20", "21", "22", "23", "24"));
  EXPECT_THAT(indexes(RunTool(SHARDDUMP_PATH, {"ls", "--shard", "1", "--range", "18:", Dataset()})),
              ElementsAre("18", "19"));
  EXPECT_THAT(indexes(RunTool(SHARDDUMP_PATH, {"ls", "--range", ":2", Dataset()})),
              ElementsAre("0", "1"));
  EXPECT_THAT(RunTool(SHARDDUMP_PATH, {"ls", "--range", "5:5", Dataset()}).out, IsEmpty());

  ExpectOneLineFailure(RunTool(SHARDDUMP_PATH, {"ls", "--range", "20:30", Dataset()}),
                       "25 records");
  ExpectOneLineFailure(RunTool(SHARDDUMP_PATH, {"ls", "--shard", "3", Dataset()}), "has 3 shards");
}

TEST_F(SharddumpTest, LsJsonLinesHaveTheDocumentedFields) {
  RunResult r = RunTool(SHARDDUMP_PATH, {"ls", "--json", Dataset()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 25u);
  Json j = Json::parse(lines[11]);
  EXPECT_EQ(j["index"], 11);
  EXPECT_EQ(j["key"], "raw/11");
  EXPECT_EQ(j["labels"], Json::array({1}));
  EXPECT_EQ(j["encoding"], "raw");
  EXPECT_EQ(j["layout"], "hwc");
  EXPECT_EQ(j["width"], 6);
  EXPECT_EQ(j["height"], 4);
  EXPECT_EQ(j["channels"], 3);
  EXPECT_EQ(j["bytes"], 72);
  EXPECT_EQ(j["shard"], 1);
  EXPECT_EQ(j["offset"], 4240);
  EXPECT_EQ(j["compressed"], false);
  EXPECT_FALSE(j.contains("key_hex"));
}

TEST(SharddumpKeysTest, LsEscapesKeysInTextAndJson) {
  TempDir tmp;
  std::vector<OwnedRecord> records;
  for (std::string key :
       {std::string("tab\there"), std::string("new\nline"), std::string("nul\0x", 5),
        std::string("bad\xff\xfe"), std::string("back\\slash"), std::string("caf\xc3\xa9"),
        std::string("esc\x1b[31m"), std::string("evil\xe2\x80\xaegpj.exe"),
        std::string("zw\xe2\x80\x8bsp\xe2\x81\xa6")}) {
    OwnedRecord r = testing::RawRecord(records.size(), 1, 1, 1);
    r.key = key;
    records.push_back(r);
  }
  WriteDataset(tmp.Join("ds"), records, RawSchema(1, 1, 1, 10), 0);
  RunResult text = RunTool(SHARDDUMP_PATH, {"ls", tmp.Join("ds")});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  std::vector<std::string> keys;
  for (const std::string& line : Lines(text.out)) {
    std::vector<std::string> fields = absl::StrSplit(line, '\t');
    ASSERT_EQ(fields.size(), 8u) << line;
    keys.push_back(fields[1]);
  }
  EXPECT_THAT(keys, ElementsAre("tab\\there", "new\\nline", "nul\\x00x", "bad\\xff\\xfe",
                                "back\\\\slash", "caf\xc3\xa9", "esc\\x1b[31m",
                                "evil\\u{202e}gpj.exe", "zw\\u{200b}sp\\u{2066}"));

  RunResult json = RunTool(SHARDDUMP_PATH, {"ls", "--json", tmp.Join("ds")});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  std::vector<std::string> lines = Lines(json.out);
  ASSERT_EQ(lines.size(), records.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    Json j = Json::parse(lines[i]);  // throws on invalid UTF-8
    if (i == 3) {
      EXPECT_EQ(j["key_hex"], "626164fffe");
      EXPECT_EQ(j["key"], "bad\xef\xbf\xbd\xef\xbf\xbd");
    } else {
      EXPECT_EQ(j["key"], records[i].key);
      EXPECT_FALSE(j.contains("key_hex"));
    }
  }
}

// ---------------------------------------------------------------------------
// verify

TEST_F(SharddumpTest, VerifyCleanDatasetExitsZero) {
  RunResult r = RunTool(SHARDDUMP_PATH, {"verify", Dataset()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, StartsWith("ok: 3 shards, 25 records, "));
  EXPECT_THAT(r.err, IsEmpty());  // no progress line when stderr is not a terminal

  RunResult j = RunTool(SHARDDUMP_PATH, {"verify", "--json", "--threads", "2", Dataset()});
  EXPECT_EQ(j.exit_code, 0) << j.err;
  Json doc = Json::parse(j.out);
  EXPECT_EQ(doc["ok"], true);
  EXPECT_EQ(doc["problems"], Json::array());
  EXPECT_EQ(doc["records"], 25);
  EXPECT_EQ(doc["shards"].size(), 3u);
  EXPECT_EQ(doc["shards"][1]["ok"], true);

  RunResult lone = RunTool(SHARDDUMP_PATH, {"verify", "-q", Shard(0)});
  EXPECT_EQ(lone.exit_code, 0) << lone.out << lone.err;
  EXPECT_THAT(lone.out, IsEmpty());
}

// A record that disagrees with the schema is damage: verify names it. The
// manifest is edited so that the schema and the records disagree (one field
// at a time), as a hostile or careless hand would.
TEST_F(SharddumpTest, VerifyChecksEveryRecordAgainstTheSchema) {
  const Json original = ReadManifestJson();
  struct Case {
    const char* what;
    std::function<void(Json&)> edit;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {"shape", [](Json& j) { j["schema"]["height"] = 32; },
       "image raw 4x6x3 hwc, the schema says raw 32x6x3 hwc"},
      {"layout", [](Json& j) { j["schema"]["layout"] = "chw"; }, "the schema says"},
      {"encoding", [](Json& j) { j["schema"]["encoding"] = "jpeg"; },
       "a raw image in a dataset of jpeg images"},
      {"label count",
       [](Json& j) { j["schema"]["labels"].push_back({{"name", "coarse"}, {"classes", Json::array()}}); },
       "1 labels, the schema has 2"},
      {"label range",
       [](Json& j) { j["schema"]["labels"][0]["classes"] = Json::array({"a", "b", "c"}); },
       "label 'label' is 3, outside its 3 classes (0..2)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Json edited = original;
    c.edit(edited);
    WriteManifestJson(edited);
    RunResult r = RunTool(SHARDDUMP_PATH, {"verify", "--json", Dataset()});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    Json doc = Json::parse(r.out);
    ASSERT_FALSE(doc["problems"].empty()) << r.out;
    EXPECT_THAT(doc["problems"][0]["message"].get<std::string>(), HasSubstr(c.needle));
    EXPECT_FALSE(doc["problems"][0]["record"].is_null());
  }
  WriteManifestJson(original);
  EXPECT_EQ(RunTool(SHARDDUMP_PATH, {"verify", Dataset()}).exit_code, 0);
}

TEST_F(SharddumpTest, ProgressLineOnlyOnATerminal) {
  std::string drawn = RunWithTerminalStderr({"verify", "--threads", "1", Dataset()});
  EXPECT_THAT(drawn, HasSubstr("\rverify  1/3 shards"));
  EXPECT_THAT(drawn, ::testing::EndsWith("\r\033[K"));  // erased before exit
  EXPECT_THAT(RunWithTerminalStderr({"verify", "-q", Dataset()}), IsEmpty());
  EXPECT_THAT(RunWithTerminalStderr({"info", Dataset()}), HasSubstr("\rinfo  "));
}

void FlipByte(const std::string& path, uint64_t offset) {
  std::string bytes = ReadFile(path);
  ASSERT_LT(offset, bytes.size());
  bytes[offset] = static_cast<char>(bytes[offset] ^ 0x40);
  WriteFile(path, bytes);
}

TEST_F(SharddumpTest, VerifyFlippedPayloadByteNamesShardRecordAndOffset) {
  FlipByte(Shard(1), 4096 + 32 + 112 * 3 + 40);  // in record 13's payload
  RunResult r = RunTool(SHARDDUMP_PATH, {"verify", Dataset()});
  EXPECT_EQ(r.exit_code, 1);
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  // The block's CRC covers all its records; the problem is at the payload.
  EXPECT_THAT(lines[0], StartsWith("shard 1, record 0 (index 10), offset 4128: "));
  EXPECT_THAT(lines[0], HasSubstr(Shard(1) + " @4128: checksum mismatch in block 0"));
  EXPECT_THAT(lines[1], StartsWith("FAILED: 1 problem"));
  EXPECT_EQ(r.err, "sharddump: " + Dataset() + ": 1 problem found\n");

  RunResult j = RunTool(SHARDDUMP_PATH, {"verify", "--json", Dataset()});
  EXPECT_EQ(j.exit_code, 1);
  Json doc = Json::parse(j.out);
  EXPECT_EQ(doc["ok"], false);
  ASSERT_EQ(doc["problems"].size(), 1u);
  const Json& p = doc["problems"][0];
  EXPECT_EQ(p["shard"], 1);
  EXPECT_EQ(p["record"], 0);
  EXPECT_EQ(p["index"], 10);
  EXPECT_EQ(p["offset"], 4128);
  EXPECT_EQ(p["path"], Shard(1));
  EXPECT_THAT(p["message"].get<std::string>(), HasSubstr("checksum mismatch"));
  EXPECT_EQ(doc["shards"][1]["ok"], false);
  EXPECT_EQ(doc["shards"][0]["ok"], true);
}

TEST_F(SharddumpTest, VerifyFindsAFlipInEveryRegionOfTheFile) {
  const uint64_t size = fs::file_size(Shard(0));
  // Header, header padding, block header, payload, block padding, footer,
  // trailer.
  for (uint64_t offset : {uint64_t{9}, uint64_t{100}, uint64_t{4096 + 10}, uint64_t{4200},
                          uint64_t{4096 + 2000}, uint64_t{8192 + 20}, size - 10}) {
    SCOPED_TRACE(offset);
    WriteDataset(tmp_.Join("fresh"), RawRecords(), RawSchema(4, 6, 3, 10), 10);
    const std::string shard = tmp_.Join("fresh/shard-00000.shard");
    FlipByte(shard, offset);
    RunResult r = RunTool(SHARDDUMP_PATH, {"verify", "--json", tmp_.Join("fresh")});
    EXPECT_EQ(r.exit_code, 1);
    Json doc = Json::parse(r.out);
    ASSERT_FALSE(doc["problems"].empty());
    EXPECT_EQ(doc["problems"][0]["shard"], 0);
    EXPECT_THAT(doc["problems"][0]["message"].get<std::string>(), HasSubstr(shard));
    fs::remove_all(tmp_.Join("fresh"));
  }
}

TEST_F(SharddumpTest, VerifyReportsTheSameProblemsWhateverTheThreads) {
  FlipByte(Shard(0), 4200);
  FlipByte(Shard(2), 4300);
  fs::remove(Shard(1));
  RunResult one = RunTool(SHARDDUMP_PATH, {"verify", "-q", "--threads", "1", Dataset()});
  RunResult many = RunTool(SHARDDUMP_PATH, {"verify", "-q", "--threads", "3", Dataset()});
  EXPECT_EQ(one.exit_code, 1);
  EXPECT_EQ(many.exit_code, 1);
  EXPECT_EQ(one.out, many.out);
  std::vector<std::string> lines = Lines(one.out);
  ASSERT_EQ(lines.size(), 3u) << one.out;
  EXPECT_THAT(lines[0], StartsWith("shard 0, "));
  EXPECT_THAT(lines[1],
              AllOf(StartsWith("shard 1, offset 0: "), HasSubstr(Shard(1)), HasSubstr("missing")));
  EXPECT_THAT(lines[2], StartsWith("shard 2, "));
}

TEST_F(SharddumpTest, VerifyComparesTheManifestChecksum) {
  Json m = ReadManifestJson();
  m["shards"][2]["crc32c"] = "00000000";
  WriteManifestJson(m);
  RunResult r = RunTool(SHARDDUMP_PATH, {"verify", "--json", Dataset()});
  EXPECT_EQ(r.exit_code, 1);
  Json doc = Json::parse(r.out);
  ASSERT_EQ(doc["problems"].size(), 1u) << r.out;
  EXPECT_EQ(doc["problems"][0]["shard"], 2);
  EXPECT_THAT(
      doc["problems"][0]["message"].get<std::string>(),
      AllOf(HasSubstr(Shard(2)), HasSubstr("CRC-32C"), HasSubstr("manifest says 00000000")));
}

TEST_F(SharddumpTest, VerifyComparesTheManifestCountsAndSizes) {
  Json m = ReadManifestJson();
  m["shards"][0]["records"] = 11;
  m["records"] = 26;
  m["shards"][1]["bytes"] = m["shards"][1]["bytes"].get<uint64_t>() + 4096;
  WriteManifestJson(m);
  RunResult r = RunTool(SHARDDUMP_PATH, {"verify", "--json", Dataset()});
  EXPECT_EQ(r.exit_code, 1);
  Json doc = Json::parse(r.out);
  ASSERT_EQ(doc["problems"].size(), 2u) << r.out;
  EXPECT_EQ(doc["problems"][0]["shard"], 0);
  EXPECT_THAT(doc["problems"][0]["message"].get<std::string>(),
              HasSubstr("the index lists 10 records, the manifest says 11"));
  EXPECT_EQ(doc["problems"][1]["shard"], 1);
  EXPECT_THAT(doc["problems"][1]["message"].get<std::string>(), HasSubstr("the manifest says"));
  // Commands that need dataset indexes refuse a shard of the wrong size.
  ExpectOneLineFailure(RunTool(SHARDDUMP_PATH, {"ls", Dataset()}),
                       "holds 10 records, the manifest says 11");
}

TEST_F(SharddumpTest, VerifyReportsAShardFileTheManifestDoesNotList) {
  fs::copy_file(Shard(0), tmp_.Join("ds/shard-00009.shard"));
  RunResult r = RunTool(SHARDDUMP_PATH, {"verify", Dataset()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("shard-00009.shard: a .shard file the manifest does not list"));
}

TEST_F(SharddumpTest, VerifyTruncatedShards) {
  std::string bytes = ReadFile(Shard(1));
  WriteFile(Shard(1), bytes.substr(0, 5000));
  RunResult r = RunTool(SHARDDUMP_PATH, {"verify", "--json", Dataset()});
  EXPECT_EQ(r.exit_code, 1);
  Json doc = Json::parse(r.out);
  ASSERT_GE(doc["problems"].size(), 2u);
  EXPECT_EQ(doc["problems"][0]["shard"], 1);
  EXPECT_THAT(doc["problems"][0]["message"].get<std::string>(), HasSubstr("never finished"));
  EXPECT_THAT(doc["problems"][1]["message"].get<std::string>(),
              HasSubstr("5000 bytes, the manifest says"));

  RunResult lone = RunTool(SHARDDUMP_PATH, {"verify", Shard(1)});
  EXPECT_EQ(lone.exit_code, 1);
  EXPECT_THAT(lone.out, HasSubstr(Shard(1) + " @4968: no trailer"));
  ExpectOneLineFailure(RunTool(SHARDDUMP_PATH, {"info", Shard(1)}), Shard(1));
  WriteFile(Shard(2), bytes.substr(0, 20));
  ExpectOneLineFailure(RunTool(SHARDDUMP_PATH, {"info", Shard(2)}), Shard(2));
}

// Six real JPEGs (one gray), one cut short and one that is not a JPEG.
class SharddumpJpegTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 6; ++i)
      records_.push_back(JpegRecord(i, 16 + 8 * i, 8 + 4 * i, i == 4 ? 1 : 3));
    Schema schema;
    schema.image = {Encoding::kJpeg, Layout::kHWC, 0, 0, 0};
    schema.labels.push_back({"label", {"cats", "dogs"}});
    WriteDataset(tmp_.Join("good"), records_, schema, 4);
    std::vector<OwnedRecord> bad = records_;
    bad[1].payload.resize(bad[1].payload.size() / 4);  // cut inside the header
    bad[2] = JpegRecord(2, 128, 96, 3);                // cut inside the scan
    bad[2].payload.resize(bad[2].payload.size() * 7 / 10);
    bad[5].payload = testing::PatternBytes(5, 300);
    WriteDataset(tmp_.Join("bad"), bad, schema, 4);
  }
  TempDir tmp_;
  std::vector<OwnedRecord> records_;
};

TEST_F(SharddumpJpegTest, VerifyDecodeFindsBrokenJpegs) {
  RunResult clean = RunTool(SHARDDUMP_PATH, {"verify", "--decode", tmp_.Join("good")});
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  EXPECT_THAT(clean.out, HasSubstr(", 6 JPEGs decoded"));

  // Without --decode the damaged JPEGs are intact records.
  EXPECT_EQ(RunTool(SHARDDUMP_PATH, {"verify", tmp_.Join("bad")}).exit_code, 0);

  for (const char* threads : {"1", "2"}) {
    RunResult r = RunTool(SHARDDUMP_PATH,
                          {"verify", "--decode", "--json", "--threads", threads, tmp_.Join("bad")});
    EXPECT_EQ(r.exit_code, 1);
    Json doc = Json::parse(r.out);
    EXPECT_EQ(doc["decoded"], 6);
    ASSERT_EQ(doc["problems"].size(), 3u) << r.out;
    EXPECT_EQ(doc["problems"][0]["shard"], 0);
    EXPECT_EQ(doc["problems"][0]["record"], 1);
    EXPECT_THAT(doc["problems"][0]["message"].get<std::string>(),
                AllOf(HasSubstr("record 1 'class_1/img_1.JPEG'"), HasSubstr("jpeg header")));
    EXPECT_EQ(doc["problems"][1]["record"], 2);
    EXPECT_THAT(doc["problems"][1]["message"].get<std::string>(),
                AllOf(HasSubstr("record 2 'class_0/img_2.JPEG'"),
                      HasSubstr("jpeg damaged: Premature end of JPEG file")));
    EXPECT_EQ(doc["problems"][2]["shard"], 1);
    EXPECT_EQ(doc["problems"][2]["record"], 1);
    EXPECT_EQ(doc["problems"][2]["index"], 5);
    EXPECT_THAT(doc["problems"][2]["message"].get<std::string>(), HasSubstr("jpeg header"));
    // The record after a failed one decodes: the decoder recovers.
    for (const Json& p : doc["problems"]) EXPECT_NE(p["record"], 3);
  }
}

TEST_F(SharddumpJpegTest, ExtractWritesJpegBytesUnchanged) {
  RunResult r = RunTool(SHARDDUMP_PATH,
                        {"extract", tmp_.Join("good"), "--index", "4,1", "-o", tmp_.Join("out")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string jpeg = ReadFile(tmp_.Join("out/4_class_0_img_4.jpg"));
  EXPECT_EQ(jpeg, std::string(records_[4].payload.begin(), records_[4].payload.end()));
  EXPECT_EQ(ReadFile(tmp_.Join("out/labels.tsv")),
            "file\tindex\tkey\tlabels\tclasses\tshape\n"
            "4_class_0_img_4.jpg\t4\tclass_0/img_4.JPEG\t0\tcats\t48x24x1\n"
            "1_class_1_img_1.jpg\t1\tclass_1/img_1.JPEG\t1\tdogs\t24x12x3\n");
}

// ---------------------------------------------------------------------------
// extract

TEST_F(SharddumpTest, ExtractRawAsPpmWithLabels) {
  RunResult r =
      RunTool(SHARDDUMP_PATH, {"extract", Dataset(), "--range", "9:11", "-o", tmp_.Join("out")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, IsEmpty());
  EXPECT_EQ(r.err, "extracted 2 records to " + tmp_.Join("out") + "\n");
  std::vector<OwnedRecord> records = RawRecords();
  std::string ppm = ReadFile(tmp_.Join("out/09_raw_9.ppm"));
  EXPECT_EQ(ppm,
            "P6\n6 4\n255\n" + std::string(records[9].payload.begin(), records[9].payload.end()));
  EXPECT_TRUE(fs::exists(tmp_.Join("out/10_raw_10.ppm")));
  EXPECT_EQ(ReadFile(tmp_.Join("out/labels.tsv")),
            "file\tindex\tkey\tlabels\tclasses\tshape\n"
            "09_raw_9.ppm\t9\traw/9\t9\tc9\t6x4x3\n"
            "10_raw_10.ppm\t10\traw/10\t0\tc0\t6x4x3\n");
}

TEST_F(SharddumpTest, ExtractByKeyAndBadSelections) {
  RunResult r =
      RunTool(SHARDDUMP_PATH, {"extract", Dataset(), "--key", "raw/17", "-o", tmp_.Join("k")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(tmp_.Join("k/17_raw_17.ppm")));
  ExpectOneLineFailure(
      RunTool(SHARDDUMP_PATH, {"extract", Dataset(), "--key", "nope\n", "-o", tmp_.Join("k")}),
      "no record has the key 'nope\\n'");
  ExpectOneLineFailure(
      RunTool(SHARDDUMP_PATH, {"extract", Dataset(), "--index", "3,25", "-o", tmp_.Join("k")}),
      "--index 25");
  ExpectOneLineFailure(
      RunTool(SHARDDUMP_PATH, {"extract", Dataset(), "--range", "24:26", "-o", tmp_.Join("k")}),
      "25 records");
}

TEST(SharddumpExtractTest, ConvertsChwGrayAndOtherChannelCounts) {
  TempDir tmp;
  std::vector<OwnedRecord> records = {testing::RawRecord(0, 2, 3, 3, Layout::kCHW),
                                      testing::RawRecord(1, 2, 3, 1),
                                      testing::RawRecord(2, 2, 3, 4)};
  // One dataset per shape (a dataset's records share its schema's), each
  // extracted into the same folder under its record's index (labels.tsv,
  // which each writes, replaced with --overwrite).
  for (int i = 0; i < 3; ++i) {
    const OwnedRecord& rec = records[i];
    const std::string ds = tmp.Join(absl::StrCat("ds", i));
    std::vector<OwnedRecord> padded;
    for (int j = 0; j <= i; ++j) padded.push_back(testing::RawRecord(j, 2, 3, rec.image.channels,
                                                                     rec.image.layout));
    WriteDataset(ds, padded, RawSchema(2, 3, rec.image.channels, 10, rec.image.layout), 0);
    RunResult r = RunTool(SHARDDUMP_PATH, {"extract", "-q", ds, "--range",
                                           absl::StrCat(i, ":", i + 1), "-o", tmp.Join("out"),
                                           "--overwrite"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, IsEmpty());
  }
  const std::vector<uint8_t>& chw = records[0].payload;
  std::string hwc;
  for (int i = 0; i < 6; ++i) {
    for (int c = 0; c < 3; ++c) hwc.push_back(static_cast<char>(chw[c * 6 + i]));
  }
  EXPECT_EQ(ReadFile(tmp.Join("out/0_raw_0.ppm")), "P6\n3 2\n255\n" + hwc);
  EXPECT_EQ(ReadFile(tmp.Join("out/1_raw_1.pgm")),
            "P5\n3 2\n255\n" + std::string(records[1].payload.begin(), records[1].payload.end()));
  EXPECT_EQ(ReadFile(tmp.Join("out/2_raw_2.raw")),
            std::string(records[2].payload.begin(), records[2].payload.end()));
  EXPECT_THAT(ReadFile(tmp.Join("out/labels.tsv")),
              HasSubstr("2_raw_2.raw\t2\traw/2\t2\tc2\t3x2x4\n"));
}

// "<dir>NN[_K].pgm" where NN is two digits and K is 1 to 100 bytes of
// [A-Za-z0-9._-].
bool IsSafeExtractName(const std::string& path, const std::string& dir) {
  if (path.rfind(dir, 0) != 0) return false;
  std::string name = path.substr(dir.size());
  if (name.size() < 6 || !isdigit(name[0]) || !isdigit(name[1])) return false;
  if (name.substr(name.size() - 4) != ".pgm") return false;
  std::string key = name.substr(2, name.size() - 6);
  if (key.empty()) return true;
  if (key[0] != '_' || key.size() < 2 || key.size() > 101) return false;
  return std::all_of(key.begin() + 1, key.end(), [](char c) {
    return isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

TEST(SharddumpExtractTest, HostileKeysNeverLeaveTheOutputDirectory) {
  TempDir tmp;
  const std::vector<std::string> keys = {"../../evil.jpg",
                                         "/etc/passwd",
                                         std::string("nul\0../x", 8),
                                         "line\nbreak",
                                         std::string(300, 'x') + "/../../y",
                                         "..",
                                         ".",
                                         ".hidden",
                                         "",
                                         "dir/sub/name.JPEG",
                                         "\xff\xfe/..",
                                         "-rf"};
  std::vector<OwnedRecord> records;
  for (const std::string& key : keys) {
    OwnedRecord r = testing::RawRecord(records.size(), 2, 2, 1);
    r.key = key;
    records.push_back(r);
  }
  const std::string work = tmp.Join("a/b/c");  // room for ../.. to land in
  WriteDataset(work + "/ds", records, RawSchema(2, 2, 1, 10), 0);
  RunResult r =
      RunTool(SHARDDUMP_PATH, {"extract", work + "/ds", "--range", ":", "-o", work + "/out"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(tmp.path())) {
    std::string rel = fs::relative(e.path(), tmp.path()).string();
    if (rel.rfind("a/b/c/ds", 0) == 0) continue;
    names.push_back(rel);
  }
  std::sort(names.begin(), names.end());
  // Only a, a/b, a/b/c, a/b/c/ds, a/b/c/out and the files in out.
  ASSERT_EQ(names.size(), 4 + keys.size() + 1) << absl::StrJoin(names, " ");
  for (const std::string& name : names) {
    if (name == "a" || name == "a/b" || name == "a/b/c" || name == "a/b/c/out" ||
        name == "a/b/c/out/labels.tsv") {
      continue;
    }
    EXPECT_TRUE(IsSafeExtractName(name, "a/b/c/out/")) << name;
  }
  EXPECT_TRUE(fs::exists(work + "/out/00_.._.._evil.pgm"));
  EXPECT_TRUE(fs::exists(work + "/out/01__etc_passwd.pgm"));
  EXPECT_TRUE(fs::exists(work + "/out/02_nul_.._x.pgm"));
  EXPECT_TRUE(fs::exists(work + "/out/05_...pgm"));
  EXPECT_TRUE(fs::exists(work + "/out/08.pgm"));
  EXPECT_TRUE(fs::exists(work + "/out/09_dir_sub_name.pgm"));
  EXPECT_TRUE(fs::exists(work + "/out/04_" + std::string(100, 'x') + ".pgm"));
  std::vector<std::string> tsv = Lines(ReadFile(work + "/out/labels.tsv"));
  ASSERT_EQ(tsv.size(), keys.size() + 1);
  EXPECT_EQ(tsv[4], "03_line_break.pgm\t3\tline\\nbreak\t3\tc3\t2x2x1");
  EXPECT_EQ(tsv[11], "10____...pgm\t10\t\\xff\\xfe/..\t0\tc0\t2x2x1");
}

// A name in use is kept without --overwrite (and the extract leaves nothing
// of its own); with it, the link is replaced, never written through.
TEST_F(SharddumpTest, ExtractRefusesANameInUseAndReplacesALinkOnlyWithOverwrite) {
  const std::string outside = tmp_.Join("outside.txt");
  WriteFile(outside, "keep");
  fs::create_directories(tmp_.Join("out"));
  fs::create_symlink(outside, tmp_.Join("out/03_raw_3.ppm"));
  fs::create_hard_link(outside, tmp_.Join("out/labels.tsv"));
  const std::vector<std::string> args = {"extract", "-q", Dataset(), "--index", "2,3",
                                         "-o", tmp_.Join("out")};
  RunResult refused = RunTool(SHARDDUMP_PATH, args);
  testing::ExpectOneLineFailure(refused, "sharddump",
                                "out/03_raw_3.ppm already exists; use --overwrite to replace it");
  EXPECT_FALSE(fs::exists(tmp_.Join("out/02_raw_2.ppm")));  // written first, then removed
  EXPECT_TRUE(fs::is_symlink(tmp_.Join("out/03_raw_3.ppm")));
  EXPECT_EQ(ReadFile(outside), "keep");

  std::vector<std::string> overwrite = args;
  overwrite.push_back("--overwrite");
  RunResult r = RunTool(SHARDDUMP_PATH, overwrite);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFile(outside), "keep");
  EXPECT_FALSE(fs::is_symlink(tmp_.Join("out/03_raw_3.ppm")));
  EXPECT_THAT(ReadFile(tmp_.Join("out/03_raw_3.ppm")), StartsWith("P6\n6 4\n255\n"));
}

// The old writer opened FILE.partial with O_TRUNC and followed a link there.
TEST_F(SharddumpTest, ShowAndExtractNeverWriteThroughAPlantedLink) {
  const std::string outside = tmp_.Join("outside.txt");
  WriteFile(outside, "keep");
  const std::string sheet = tmp_.Join("sheet.png");
  fs::create_symlink(outside, sheet + ".partial");
  RunResult r = RunTool(SHARDDUMP_PATH, {"show", "-q", Dataset(), "-o", sheet});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFile(outside), "keep");
  EXPECT_THAT(ReadFile(sheet), StartsWith("\x89PNG"));
  // A name in use (here a link to the user's file) is kept without --overwrite.
  fs::remove(sheet);
  fs::create_symlink(outside, sheet);
  testing::ExpectOneLineFailure(RunTool(SHARDDUMP_PATH, {"show", "-q", Dataset(), "-o", sheet}),
                                "sharddump", "sheet.png already exists; use --overwrite");
  EXPECT_TRUE(fs::is_symlink(sheet));
  r = RunTool(SHARDDUMP_PATH, {"show", "-q", Dataset(), "-o", sheet, "--overwrite"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::is_symlink(sheet));
  EXPECT_EQ(ReadFile(outside), "keep");
}

// ---------------------------------------------------------------------------
// names from files and manifests, printed escaped (cli::EscapeText)

// A dataset folder named with ESC[31m and a newline, a label field and a
// class named likewise, a stray shard file too: info printed them raw (the
// terminal turned red, the path line split in two), as did verify -v, the
// verify report and the error line.
TEST(SharddumpEscapingTest, PathsAndNamesWithEscapesAndNewlinesArePrintedEscaped) {
  TempDir tmp;
  const std::string dir = tmp.Join("ds\x1b[31mred\nline");
  const std::string shown = tmp.Join("ds\\x1b[31mred\\nline");
  Schema schema = RawSchema(4, 6, 3, 2);
  schema.labels[0].name = "lab\nel";
  schema.labels[0].classes[1] = "c\x1b[0m\r1";
  WriteDataset(dir, RawRecords(2), schema, 0);
  const uint64_t bytes = fs::file_size(dir + "/shard-00000.shard");

  RunResult info = RunTool(SHARDDUMP_PATH, {"info", "-q", dir});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_THAT(info.out, Not(HasSubstr("\x1b")));
  EXPECT_THAT(info.out, Not(HasSubstr("\r")));
  const std::vector<std::string> lines = Lines(info.out);
  EXPECT_EQ(lines[0], "path           " + shown);
  EXPECT_THAT(lines, ::testing::Contains(
                         "schema         raw/hwc 6x4x3; labels: lab\\nel (2 classes)"));
  EXPECT_THAT(lines, ::testing::Contains("label field 0: lab\\nel (2 classes, 2 values seen)"));
  EXPECT_THAT(lines, ::testing::Contains("           1          1  c\\x1b[0m\\r1"));

  RunResult verify = RunTool(SHARDDUMP_PATH, {"verify", "-v", "-q", dir});
  EXPECT_EQ(verify.exit_code, 0) << verify.err;
  EXPECT_EQ(verify.err, absl::StrCat("shard 0 ", shown, "/shard-00000.shard: ok, 2 records, ",
                                     bytes, " bytes\n"));

  WriteFile(dir + "/stray\x1b[0m\n.shard", "x");
  RunResult stray = RunTool(SHARDDUMP_PATH, {"verify", "-q", dir});
  EXPECT_EQ(stray.exit_code, 1);
  EXPECT_EQ(stray.out,
            shown + "/stray\\x1b[0m\\n.shard: a .shard file the manifest does not list\n");
  EXPECT_EQ(stray.err, "sharddump: " + shown + ": 1 problem found\n");

  RunResult missing = RunTool(SHARDDUMP_PATH, {"info", dir + "/no\nsuch"});
  ExpectOneLineFailure(missing, "sharddump: " + shown + "/no\\nsuch: ");
}

// A key holding NUL (and ESC) from a record: verify --decode's report and
// show's error went through c_str() or printed the bytes raw; every byte of
// the key is now shown, escaped.
TEST(SharddumpEscapingTest, KeyWithNulIsPrintedWholeInMessages) {
  TempDir tmp;
  OwnedRecord r = JpegRecord(0, 16, 8, 3);
  r.key = std::string("bad\0key\x1b[31m", 12);
  r.payload.resize(r.payload.size() / 4);  // cut inside the header
  Schema schema;
  schema.image = {Encoding::kJpeg, Layout::kHWC, 0, 0, 0};
  schema.labels.push_back({"label", {"cats", "dogs"}});
  WriteDataset(tmp.Join("ds"), {r}, schema, 0);
  const std::string shown_key = "bad\\x00key\\x1b[31m";

  RunResult verify = RunTool(SHARDDUMP_PATH, {"verify", "--decode", "-q", tmp.Join("ds")});
  EXPECT_EQ(verify.exit_code, 1);
  const std::vector<std::string> lines = Lines(verify.out);
  ASSERT_EQ(lines.size(), 1u) << verify.out;
  EXPECT_THAT(lines[0], StartsWith("shard 0, record 0 (index 0), offset "));
  EXPECT_THAT(lines[0], HasSubstr(tmp.Join("ds/shard-00000.shard") + " @"));
  EXPECT_THAT(lines[0], HasSubstr(" record 0 '" + shown_key + "': jpeg header"));

  RunResult json = RunTool(SHARDDUMP_PATH, {"verify", "--decode", "--json", tmp.Join("ds")});
  EXPECT_EQ(json.exit_code, 1);
  EXPECT_THAT(Json::parse(json.out)["problems"][0]["message"].get<std::string>(),
              HasSubstr(" record 0 '" + shown_key + "': jpeg header"));

  RunResult show =
      RunTool(SHARDDUMP_PATH, {"show", tmp.Join("ds"), "-o", tmp.Join("sheet.png"), "-q"});
  ExpectOneLineFailure(show, "sharddump: " + tmp.Join("ds") + ": record 0 (key '" + shown_key +
                                 "'): ");
}

// ---------------------------------------------------------------------------
// bad input and usage

TEST_F(SharddumpTest, BadInputsGetOneLineNamingThePath) {
  const std::string empty = tmp_.Join("empty.shard");
  WriteFile(empty, "");
  const std::string text = tmp_.Join("notes.txt");
  WriteFile(text, "hello, not a shard\n");
  const std::string bare = tmp_.Join("bare");
  fs::create_directories(bare);
  const std::string hdf5 = tmp_.Join("data.h5");
  WriteFile(hdf5, std::string("\x89HDF\r\n\x1a\n", 8) + std::string(100, '\0'));
  const std::string junk = tmp_.Join("junk");
  fs::create_directories(junk);
  WriteFile(junk + "/manifest.json", "{ not json");
  const std::string future = tmp_.Join("future");
  fs::copy(Dataset(), future);
  Json m = Json::parse(ReadFile(future + "/manifest.json"));
  m["version"] = "2.0";
  WriteFile(future + "/manifest.json", m.dump());
  const std::string missing = tmp_.Join("no/such/path");

  struct Case {
    std::string path;
    std::string needle;
  };
  for (const Case& c : std::vector<Case>{{empty, "empty file"},
                                         {text, "not a dataset or shard"},
                                         {bare, "not a dataset (no manifest.json)"},
                                         {hdf5, "HDF5"},
                                         {junk, "not valid JSON"},
                                         {future, "version 2.0 is not supported"},
                                         {missing, "no such file or directory"}}) {
    for (const char* command : {"info", "ls", "verify"}) {
      SCOPED_TRACE(std::string(command) + " " + c.path);
      RunResult r = RunTool(SHARDDUMP_PATH, {command, c.path});
      ExpectOneLineFailure(r, c.path);
      EXPECT_THAT(r.err, HasSubstr(c.needle));
    }
    RunResult x =
        RunTool(SHARDDUMP_PATH, {"extract", c.path, "--index", "0", "-o", tmp_.Join("x")});
    ExpectOneLineFailure(x, c.needle);
  }
}

// `sharddump ls PATH | head`: once the reader has gone, the tool stops and
// ends quietly with 0, as `ls | head` does, whether SIGPIPE comes ignored
// from its parent or not (it printed "write to stdout: Broken pipe" and
// exited 1, or died by the signal). A stdout that fails otherwise (a full
// disk) is still an error naming stdout.
TEST_F(SharddumpTest, AClosedStdoutEndsQuietlyWithZero) {
  for (const bool ignored : {false, true}) {
    for (const std::vector<std::string>& args :
         std::vector<std::vector<std::string>>{{"ls", Dataset()},
                                               {"ls", Dataset(), "--json"},
                                               {"info", Dataset()},
                                               {"verify", Dataset(), "--json"},
                                               {"--help"}}) {
      SCOPED_TRACE(absl::StrCat(args[0], ignored ? ", SIGPIPE ignored" : ""));
      RunResult r =
          RunTool(SHARDDUMP_PATH, args, [ignored] { testing::StdoutToClosedPipe(ignored); });
      EXPECT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(r.err, "");
    }
  }
  RunResult full = RunTool(SHARDDUMP_PATH, {"ls", Dataset()}, [] {
    const int fd = open("/dev/full", O_WRONLY);
    if (fd >= 0) dup2(fd, STDOUT_FILENO);
  });
  EXPECT_EQ(full.exit_code, 1);
  EXPECT_EQ(full.err, "sharddump: write to stdout: No space left on device\n");
}

// --help says every kind of PATH the commands take.
TEST(SharddumpHelpTest, HelpNamesEveryKindOfPath) {
  RunResult r = RunTool(SHARDDUMP_PATH, {"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* kind :
       {"manifest.json", ".shard", "LMDB", "HDF5", "view", "s3://", "https://"}) {
    EXPECT_THAT(r.out, HasSubstr(kind));
  }
  RunResult ls = RunTool(SHARDDUMP_PATH, {"ls", "--help"});
  EXPECT_THAT(ls.out,
              HasSubstr("shard (.shard, LMDB, HDF5), view file or URL (s3://, https://)"));
}

TEST_F(SharddumpTest, ManifestPointingAtAMissingShard) {
  fs::remove(Shard(2));
  for (const char* command : {"info", "ls"}) {
    SCOPED_TRACE(command);
    ExpectOneLineFailure(RunTool(SHARDDUMP_PATH, {command, Dataset()}), Shard(2) + ": missing");
  }
  RunResult v = RunTool(SHARDDUMP_PATH, {"verify", Dataset()});
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_THAT(v.out, HasSubstr("shard 2, offset 0: " + Shard(2) + ": missing"));
}

TEST_F(SharddumpTest, UsageErrorsExitTwo) {
  EXPECT_EQ(RunTool(SHARDDUMP_PATH, {}).exit_code, 2);
  EXPECT_EQ(RunTool(SHARDDUMP_PATH, {"info"}).exit_code, 2);
  EXPECT_EQ(RunTool(SHARDDUMP_PATH, {"frobnicate", Dataset()}).exit_code, 2);
  EXPECT_EQ(RunTool(SHARDDUMP_PATH, {"ls", "--range", "abc", Dataset()}).exit_code, 2);
  EXPECT_EQ(RunTool(SHARDDUMP_PATH, {"ls", "--range", "5:2", Dataset()}).exit_code, 2);
  EXPECT_EQ(RunTool(SHARDDUMP_PATH, {"extract", Dataset(), "-o", tmp_.Join("o")}).exit_code, 2);
  EXPECT_EQ(
      RunTool(SHARDDUMP_PATH, {"extract", Dataset(), "--index", "1", "--range", "0:2", "-o", "o"})
          .exit_code,
      2);
  EXPECT_EQ(RunTool(SHARDDUMP_PATH, {"extract", Dataset(), "--index", "1"}).exit_code, 2);
  EXPECT_EQ(RunTool(SHARDDUMP_PATH, {"verify", "--threads", "-1", Dataset()}).exit_code, 2);
  RunResult help = RunTool(SHARDDUMP_PATH, {"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, AllOf(HasSubstr("info"), HasSubstr("verify"), HasSubstr("extract")));
}

// A FIFO in place of a shard or the manifest: every command says so at once
// (no open blocks waiting for a writer).
TEST_F(SharddumpTest, FifoInPlaceOfAShardOrManifestIsAnErrorNotAHang) {
  for (const char* name : {"shard-00001.shard", "manifest.json"}) {
    SCOPED_TRACE(name);
    const std::string file = tmp_.Join(std::string("ds/") + name);
    const std::string saved = ReadFile(file);
    ASSERT_TRUE(fs::remove(file));
    ASSERT_EQ(mkfifo(file.c_str(), 0600), 0);
    for (std::vector<std::string> args :
         {std::vector<std::string>{"verify", Dataset()}, {"info", Dataset()}, {"ls", Dataset()},
          {"extract", Dataset(), "--range", "12:13", "-o", tmp_.Join("x")}}) {
      SCOPED_TRACE(args[0]);
      RunResult r = RunTool(SHARDDUMP_PATH, args);
      EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
      EXPECT_THAT(r.out + r.err, HasSubstr("a FIFO"));
    }
    ASSERT_TRUE(fs::remove(file));
    WriteFile(file, saved);
  }
  // Named directly, too.
  const std::string fifo = tmp_.Join("lone.shard");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ExpectOneLineFailure(RunTool(SHARDDUMP_PATH, {"info", fifo}), "a FIFO");
}

}  // namespace
}  // namespace shardpack
