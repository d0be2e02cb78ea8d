// The manifest: serialize and parse round trip, deterministic bytes, versions,
// and a precise DataLossError naming the field for every malformed manifest.
#include "shardpack/manifest.h"

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/dataset.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::StatusIs;

Manifest Cifar100() {
  Manifest m;
  m.backend = Backend::kShard;
  m.schema.image = {Encoding::kRaw, Layout::kCHW, 32, 32, 3};
  m.schema.labels = {{"fine", {"apple", "aquarium_fish", "baby"}},
                     {"coarse", {"aquatic_mammals", "fish"}}};
  m.shards = {{"train-00000.shard", 25000, 77635584, 0x0000abcd},
              {"train-00001.shard", 25000, 77635584, 0xdeadbeef}};
  m.pack_json = R"({"source":"cifar-100-binary","block_size":4194304,"zstd":false})";
  return m;
}

Manifest ImageFolder() {
  Manifest m;
  m.backend = Backend::kLmdb;
  m.schema.image = {Encoding::kJpeg, Layout::kHWC, 0, 0, 0};
  m.schema.labels = {{"label", {"cat", "dog", "n01440764", "Zürich ünïcode"}}};
  m.shards = {{"lmdb/train-00000", 3, 1 << 20, 1}};
  return m;
}

// `text` with the first `from` replaced by `to`; fails the test when absent,
// so a change of the serialized layout cannot silently void a case.
std::string Edit(std::string text, std::string_view from, std::string_view to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "no '" << from << "' in\n" << text;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(ManifestTest, RoundTrip) {
  for (const Manifest& m : {Cifar100(), ImageFolder(), Manifest{}}) {
    std::string text = SerializeManifest(m);
    SP_ASSERT_OK_AND_ASSIGN(Manifest parsed, ParseManifest(text, "manifest.json"));
    EXPECT_EQ(parsed, m) << text;
    EXPECT_EQ(SerializeManifest(parsed), text);
  }
  Manifest hdf5 = Cifar100();
  hdf5.backend = Backend::kHdf5;
  SP_ASSERT_OK_AND_ASSIGN(Manifest parsed, ParseManifest(SerializeManifest(hdf5), "manifest.json"));
  EXPECT_EQ(parsed.backend, Backend::kHdf5);
  EXPECT_EQ(parsed.records(), 50000u);
}

TEST(ManifestTest, SerializationIsDeterministic) {
  std::string text = SerializeManifest(Cifar100());
  EXPECT_EQ(SerializeManifest(Cifar100()), text);
  // Key order is fixed, the text ends in a newline, CRCs are 8 hex digits.
  EXPECT_EQ(text.rfind("{\n  \"format\": \"shardpack\",\n  \"version\": \"1.1\",", 0), 0u) << text;
  EXPECT_EQ(text.back(), '\n');
  EXPECT_THAT(text, HasSubstr("\"crc32c\": \"0000abcd\""));
  EXPECT_THAT(text, HasSubstr("\"crc32c\": \"deadbeef\""));
  EXPECT_LT(text.find("\"backend\""), text.find("\"schema\""));
  EXPECT_LT(text.find("\"schema\""), text.find("\"shards\""));
  // The pack object keeps its own key order through a round trip.
  EXPECT_LT(text.find("\"source\""), text.find("\"block_size\""));
  // The same manifest built in another order of assignments serializes alike.
  Manifest other;
  other.pack_json = Cifar100().pack_json;
  other.shards = Cifar100().shards;
  other.schema = Cifar100().schema;
  EXPECT_EQ(SerializeManifest(other), text);
}

TEST(ManifestTest, UnknownMajorVersionNamesBothVersions) {
  std::string text = Edit(SerializeManifest(Cifar100()), "\"1.1\"", "\"2.0\"");
  EXPECT_THAT(ParseManifest(text, "data/manifest.json"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("data/manifest.json"), HasSubstr("2.0"), HasSubstr("1.x"))));
  text = Edit(SerializeManifest(Cifar100()), "\"1.1\"", "\"0.9\"");
  EXPECT_THAT(ParseManifest(text, "m"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("0.9")));
}

TEST(ManifestTest, NewerMinorVersionIsRead) {
  std::string text = Edit(SerializeManifest(Cifar100()), "\"1.1\"", "\"1.7\"");
  // Fields a newer minor version may add are ignored.
  text = Edit(text, "\"backend\"", "\"added_in_1_7\": [1, 2],\n  \"backend\"");
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ParseManifest(text, "m"));
  EXPECT_EQ(m.version_major, 1);
  EXPECT_EQ(m.version_minor, 7);
  EXPECT_EQ(m.shards, Cifar100().shards);
}

TEST(ManifestTest, NotAManifest) {
  EXPECT_THAT(ParseManifest("", "m.json"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("m.json:1:1: not valid JSON")));
  EXPECT_THAT(ParseManifest("{\"format\": \"shardpack\",", "m.json"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("m.json:1:24: not valid JSON")));
  // A number no double holds is no exception escaping the parser (found by
  // manifest_fuzzer).
  EXPECT_THAT(ParseManifest("{\"records\": 1e400}", "m.json"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("m.json: not valid JSON: number")));
  // The place of the error, line and column, on one line of text.
  EXPECT_THAT(ParseManifest("{\n  \"format\": \"shardpack\",\n  \"version\": 1.0.0\n}", "m.json"),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("m.json:3:17: not valid JSON: syntax error"),
                             Not(HasSubstr("\n")), Not(HasSubstr("json.exception")))));
  EXPECT_THAT(ParseManifest("\xff\xfe{}", "m.json"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("not valid JSON")));
  EXPECT_THAT(ParseManifest("[1, 2]", "m.json"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("m.json: not a JSON object")));
  EXPECT_THAT(ParseManifest("{}", "m.json"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("m.json.format: missing")));
}

struct Malformed {
  const char* what;
  const char* from;
  const char* to;
  const char* message;  // must appear in the error
};

class MalformedManifestTest : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedManifestTest, IsDataLossNamingTheField) {
  const Malformed& c = GetParam();
  std::string text = Edit(SerializeManifest(Cifar100()), c.from, c.to);
  EXPECT_THAT(ParseManifest(text, "d/manifest.json"),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("d/manifest.json"), HasSubstr(c.message))))
      << text;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedManifestTest,
    ::testing::Values(
        Malformed{"OtherFormat", "\"format\": \"shardpack\"", "\"format\": \"tfrecord\"",
                  "manifest.json.format: 'tfrecord' is not a shardpack manifest"},
        Malformed{"FormatMissing", "\"format\": \"shardpack\",", "", ".format: missing"},
        Malformed{"VersionNotMajorMinor", "\"1.1\"", "\"1\"", ".version: '1' is not MAJOR.MINOR"},
        Malformed{"VersionThreeParts", "\"1.1\"", "\"1.0.0\"", ".version:"},
        Malformed{"VersionSigned", "\"1.1\"", "\"+1.0\"", ".version: '+1.0'"},
        Malformed{"VersionNegativeMinor", "\"1.1\"", "\"1.-3\"", ".version: '1.-3'"},
        Malformed{"VersionSpaces", "\"1.1\"", "\" 1.0\"", ".version: ' 1.0'"},
        Malformed{"VersionNumber", "\"1.1\"", "1.0", ".version: expected string"},
        Malformed{"BackendMissing", "\"backend\": \"shard\",", "", ".backend: missing"},
        Malformed{"BackendUnknown", "\"shard\"", "\"leveldb\"", ".backend: unknown backend"},
        Malformed{"SchemaNotObject", "\"schema\": {", "\"schema\": [], \"x\": {",
                  ".schema: expected object, found array"},
        Malformed{"EncodingUnknown", "\"raw\"", "\"png\"",
                  ".schema.encoding: unknown encoding 'png'"},
        Malformed{"LayoutUnknown", "\"chw\"", "\"whc\"", ".schema.layout: unknown layout 'whc'"},
        Malformed{"HeightString", "\"height\": 32", "\"height\": \"32\"",
                  ".schema.height: expected"},
        Malformed{"HeightNegative", "\"height\": 32", "\"height\": -32",
                  ".schema.height: expected"},
        Malformed{"WidthFraction", "\"width\": 32", "\"width\": 32.5", ".schema.width: expected"},
        Malformed{"ChannelsTooMany", "\"channels\": 3", "\"channels\": 256",
                  ".schema.channels: 256 is out of range (at most 255)"},
        Malformed{"LabelsNotArray", "\"labels\": [", "\"labels\": {}, \"x\": [",
                  ".schema.labels: expected array, found object"},
        Malformed{"LabelFieldNotObject", "\"labels\": [", "\"labels\": [7, ",
                  ".schema.labels[0]: expected object"},
        Malformed{"LabelNameMissing", "\"name\": \"fine\",", "", ".schema.labels[0].name: missing"},
        Malformed{"ClassNotString", "\"apple\"", "17",
                  ".schema.labels[0].classes: expected strings"},
        Malformed{"ShardsNotArray", "\"shards\": [", "\"shards\": 3, \"x\": [",
                  ".shards: expected array"},
        Malformed{"ShardPathParent", "\"train-00001.shard\"", "\"../train-00001.shard\"",
                  ".shards[1].path: '../train-00001.shard' is not a path inside the dataset"},
        Malformed{"ShardPathInnerParent", "\"train-00001.shard\"", "\"a/../../x.shard\"",
                  ".shards[1].path"},
        Malformed{"ShardPathAbsolute", "\"train-00000.shard\"", "\"/etc/passwd\"",
                  ".shards[0].path"},
        Malformed{"ShardPathDot", "\"train-00000.shard\"", "\"./train-00000.shard\"",
                  ".shards[0].path"},
        Malformed{"ShardPathTwice", "\"train-00001.shard\"", "\"train-00000.shard\"",
                  ".shards[1].path: 'train-00000.shard' listed twice"},
        Malformed{"ShardPathEmpty", "\"train-00000.shard\"", "\"\"", ".shards[0].path"},
        Malformed{"ShardPathNul", "\"train-00000.shard\"", "\"x\\u0000.shard\"", ".shards[0].path"},
        Malformed{"ShardRecordsString", "\"records\": 25000,", "\"records\": \"25000\",",
                  ".shards[0].records: expected"},
        Malformed{"ShardBytesMissing", "\"bytes\": 77635584,", "", ".shards[0].bytes: missing"},
        Malformed{"CrcNotHex", "\"0000abcd\"", "\"0000abcg\"",
                  ".shards[0].crc32c: '0000abcg' is not 8 hex digits"},
        Malformed{"CrcTooLong", "\"0000abcd\"", "\"10000abcd\"", ".shards[0].crc32c"},
        Malformed{"CrcSigned", "\"0000abcd\"", "\"+000abcd\"", ".shards[0].crc32c"},
        Malformed{"CrcHexPrefix", "\"0000abcd\"", "\"0x00abcd\"", ".shards[0].crc32c"},
        Malformed{"CrcNumber", "\"0000abcd\"", "43981", ".shards[0].crc32c: expected string"},
        Malformed{"ShardNotObject", "\"shards\": [", "\"shards\": [null, ",
                  ".shards[0]: expected object"},
        Malformed{"RecordsMismatch", "\"records\": 50000", "\"records\": 50001",
                  "manifest.json.records: 50001 but the shards hold 50000"},
        Malformed{"RecordsMissing", "\"records\": 50000,", "", "manifest.json.records: missing"},
        Malformed{"PackNotObject", "\"pack\": {", "\"pack\": [], \"x\": {",
                  "manifest.json.pack: expected object"}),
    [](const auto& param_info) { return std::string(param_info.param.what); });

// SerializeManifest once threw nlohmann's type_error 316 for a string that
// is not UTF-8 (a class name taken from a Latin-1 directory name, say): an
// exception across the API, which ends a CLI with std::terminate.
TEST(ManifestTest, NonUtf8ClassNameDoesNotThrow) {
  Manifest m = ImageFolder();
  m.schema.labels[0].classes.push_back("caf\xe9");
  EXPECT_NO_THROW(SerializeManifest(m));
}

// CheckSchemaNames took overlong forms ("\xc0\xaf", a '/' spelled in two
// bytes), surrogates and code points past U+10FFFF for UTF-8, which JSON
// writers replace or refuse; and its refusal did not say which name.
TEST(ManifestTest, CheckSchemaNamesRefusesMalformedUtf8NamingIt) {
  for (std::string bad : {std::string("caf\xe9"), std::string("a\xc0\xaf" "b"),
                          std::string("\xed\xa0\x80"), std::string("\xf4\x90\x80\x80"),
                          std::string("cut\xe2\x82")}) {
    Schema schema = ImageFolder().schema;
    schema.labels[0].classes.push_back(bad);
    EXPECT_THAT(CheckSchemaNames(schema),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("of label 'label' ('" + bad + "') is not UTF-8")));
  }
  Schema good = ImageFolder().schema;
  good.labels[0].classes.push_back("caf\xc3\xa9 \xf0\x9f\x90\x88");
  EXPECT_TRUE(CheckSchemaNames(good).ok());
}

// ParseManifest once copied "pack" with dump(), which recurses once per
// nesting level: a 200 KB manifest whose pack holds arrays nested 100000
// deep overflowed the stack (SIGSEGV) instead of being a DataLossError.
TEST(ManifestTest, DeeplyNestedPackIsDataLossNotACrash) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::string text =
      Edit(SerializeManifest(Cifar100()), "\"pack\": {", "\"pack\": {\"x\": " + deep + ", ");
  EXPECT_THAT(ParseManifest(text, "m.json"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("m.json")));
}

// Tools size tables by the manifest's record counts before they open a
// shard: a count no shard's bytes could hold is damage when the manifest is
// opened, checked against the file's real size when it is there.
TEST(ManifestSizeTest, RecordCountsTheShardsCannotHoldAreRefused) {
  testing::TempDir dir;
  std::ofstream(dir.Join("train-00000.shard")) << std::string(4096, 'x');
  Manifest m = Cifar100();  // 25000 records in each of 77635584 bytes
  m.shards.pop_back();
  SP_ASSERT_OK(WriteManifest(dir.path(), m));
  EXPECT_THAT(ReadManifest(dir.path()),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("manifest.json.shards[0].records: 25000 records cannot fit in "
                                 "4096 bytes (train-00000.shard has 4096, the manifest says "
                                 "77635584)")));
  // 2^64 - 1 records of a shard that is not there: its recorded size bounds it.
  m.shards = {{"train-00001.shard", UINT64_MAX, 77635584, 0}};
  SP_ASSERT_OK(WriteManifest(dir.path(), m));
  EXPECT_THAT(ReadManifest(dir.path()),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr(".shards[0].records: 18446744073709551615 records cannot fit "
                                 "in 77635584 bytes (the manifest says 77635584)")));
  m.shards = {{"train-00000.shard", 100, 4096, 0}};
  SP_ASSERT_OK(WriteManifest(dir.path(), m));
  SP_EXPECT_OK(ReadManifest(dir.path()).status());
}

}  // namespace
}  // namespace shardpack

namespace shardpack {
namespace {

// A manifest of `shards` shards in compact JSON (~70 bytes a shard), with
// `pack` as its pack record.
std::string ManyShards(size_t shards, const std::string& pack = "{}") {
  std::string text = R"({"format":"shardpack","version":"1.1","backend":"shard","schema":)"
                     R"({"encoding":"raw","layout":"hwc","height":32,"width":32,"channels":3,)"
                     R"("labels":[]},"records":)" + std::to_string(shards) + R"(,"shards":[)";
  for (size_t i = 0; i < shards; ++i) {
    absl::StrAppend(&text, i ? "," : "", R"({"path":"s/)", i,
                    R"(.shard","records":1,"bytes":4096,"crc32c":"0000abcd"})");
  }
  return text + R"(],"pack":)" + pack + "}";
}

// Bounded JSON (docs/format.md, "Manifest limits"): 10^6 shards are
// parsed into their entries, never held as JSON.
TEST(ManifestLimitsTest, AMillionShardsAreRead) {
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ParseManifest(ManyShards(1000000), "m.json"));
  ASSERT_EQ(m.shards.size(), 1000000u);
  EXPECT_EQ(m.shards[999999].path, "s/999999.shard");
  EXPECT_EQ(m.records(), 1000000u);
}

TEST(ManifestLimitsTest, TextPastTheLimitsIsRefusedNamingTheLimit) {
  const auto refused = [](const std::string& text) {
    absl::StatusOr<Manifest> m = ParseManifest(text, "m.json");
    EXPECT_THAT(m, StatusIs(absl::StatusCode::kDataLoss, HasSubstr("m.json: ")));
    return m.ok() ? std::string() : std::string(m.status().message());
  };
  EXPECT_EQ(refused(std::string(kMaxManifestBytes + 1, ' ')),
            "m.json: 268435457 bytes, more than the 268435456 a manifest may have");
  // Values outside the shard list: one more than the bound, in the pack.
  std::string pack = R"({"x":[)";
  for (uint64_t i = 0; i < kMaxManifestValues; ++i) pack += i ? ",0" : "0";
  EXPECT_EQ(refused(ManyShards(1, pack + "]}")),
            "m.json: more than 1048576 JSON values, the most a manifest may hold");
  EXPECT_THAT(refused(ManyShards(1, R"({"x":")" + std::string(70000, 'a') + "\"}")),
              HasSubstr("m.json: a string of more than 65536 bytes ('aaaa"));
  EXPECT_EQ(refused(ManyShards(1, std::string(70, '[') + std::string(70, ']'))),
            "m.json: JSON nested more than 64 levels deep");
}

TEST(ManifestLimitsTest, AKeyTwiceIsRefusedNamingIt) {
  const std::string text = SerializeManifest(Cifar100());
  EXPECT_THAT(ParseManifest(Edit(text, "\"records\": 50000", "\"records\": 1, \"records\": 50000"),
                            "m.json"),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("m.json: key 'records' appears twice in one object")));
  EXPECT_THAT(ParseManifest(Edit(text, "\"crc32c\"", "\"bytes\": 1, \"crc32c\""), "m.json"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("key 'bytes' appears twice")));
}

TEST(ManifestLimitsTest, ShardErrorsNameTheShardAndQuoteBounded) {
  const std::string text = SerializeManifest(Cifar100());
  EXPECT_THAT(ParseManifest(Edit(text, "\"train-00001.shard\"",
                                 "\"" + std::string(1000, 'x') + "/../a\""),
                            "m.json"),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("m.json.shards[1].path: 'xxxx"),
                             HasSubstr("(1005 bytes)' is not a path inside the dataset"))));
}

}  // namespace
}  // namespace shardpack
