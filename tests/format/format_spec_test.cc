// Keeps docs/format.md true. The spec's worked example is an annotated hex
// dump of a tiny shard; this test writes the same shard with ShardWriter and
// compares it with the dump byte for byte, so a layout change that does not
// also change the spec fails here. The spec's manifest examples are checked
// against ParseManifest and SerializeManifest the same way.
//
// Grammar of the dump, the body of the fenced block opened by
// "```hex worked-example":
//   OFFSET: HH HH ...    the bytes at file offset OFFSET (hex)
//   FIRST-LAST: zero     bytes FIRST..LAST (hex, inclusive) are all zero
//   # ...                a comment, alone or after either form
// The lines must cover the whole file in order, from offset 0 to its last
// byte, with no gap and no overlap.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "format/record_codec.h"
#include "shardpack/crc32c.h"
#include "shardpack/fields.h"
#include "shardpack/file.h"
#include "shardpack/manifest.h"
#include "shardpack/record.h"
#include "shardpack/shard.h"
#include "tests/testing/shard_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/write_shard.h"

namespace shardpack {
namespace {

using ::testing::HasSubstr;
using testing::OwnedRecord;

// The spec, found from this file's own path (tests/format/ -> docs/).
std::filesystem::path SpecPath() {
  return std::filesystem::path(SHARDPACK_SOURCE_DIR) / "docs" / "format.md";
}

std::optional<std::string> ReadSpec() {
  std::ifstream in(SpecPath(), std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// One line of a fenced block, with its line number in docs/format.md.
struct SpecLine {
  int number = 0;
  std::string text;
};

// The body of the fenced block opened by the line "```<info>", or nullopt.
std::optional<std::vector<SpecLine>> FencedBlock(const std::string& doc, std::string_view info) {
  std::istringstream in(doc);
  std::string line;
  int number = 0;
  bool inside = false;
  std::vector<SpecLine> body;
  const std::string opening = "```" + std::string(info);
  while (std::getline(in, line)) {
    ++number;
    std::string_view t = Trim(line);
    if (!inside) {
      inside = t == opening;
      continue;
    }
    if (t.starts_with("```")) return body;
    body.push_back({number, line});
  }
  return std::nullopt;  // not found, or never closed
}

std::string JoinLines(const std::vector<SpecLine>& lines) {
  std::string out;
  for (const SpecLine& l : lines) out += l.text + "\n";
  return out;
}

bool ParseHex(std::string_view s, uint64_t* value) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *value, 16);
  return ec == std::errc() && end == s.data() + s.size();
}

// One line of the dump: explicit bytes, or a run of zeros.
struct DumpLine {
  int number = 0;  // line in docs/format.md
  uint64_t offset = 0;
  uint64_t size = 0;
  bool zero = false;
  std::vector<uint8_t> bytes;  // when !zero
};

absl::Status DumpError(int number, const std::string& what) {
  return absl::InvalidArgumentError("docs/format.md:" + std::to_string(number) + ": " + what);
}

absl::StatusOr<DumpLine> ParseDumpLine(const SpecLine& line) {
  std::string_view t = line.text;
  t = Trim(t.substr(0, t.find('#')));
  DumpLine out;
  out.number = line.number;
  size_t colon = t.find(':');
  if (colon == std::string_view::npos) return DumpError(line.number, "expected 'OFFSET: ...'");
  std::string_view where = Trim(t.substr(0, colon));
  std::string_view what = Trim(t.substr(colon + 1));
  size_t dash = where.find('-');
  if (dash != std::string_view::npos) {
    uint64_t last = 0;
    if (!ParseHex(where.substr(0, dash), &out.offset) || !ParseHex(where.substr(dash + 1), &last) ||
        last < out.offset || what != "zero") {
      return DumpError(line.number, "expected 'FIRST-LAST: zero'");
    }
    out.zero = true;
    out.size = last - out.offset + 1;
    return out;
  }
  if (!ParseHex(where, &out.offset)) return DumpError(line.number, "bad offset");
  std::istringstream in{std::string(what)};
  std::string token;
  while (in >> token) {
    uint64_t byte = 0;
    if (token.size() != 2 || !ParseHex(token, &byte)) {
      return DumpError(line.number, "'" + token + "' is not a hex byte");
    }
    out.bytes.push_back(static_cast<uint8_t>(byte));
  }
  if (out.bytes.empty()) return DumpError(line.number, "no bytes");
  out.size = out.bytes.size();
  return out;
}

absl::StatusOr<std::vector<DumpLine>> ParseDump(const std::vector<SpecLine>& block) {
  std::vector<DumpLine> dump;
  for (const SpecLine& line : block) {
    std::string_view t = Trim(line.text);
    if (t.empty() || t.front() == '#') continue;
    absl::StatusOr<DumpLine> parsed = ParseDumpLine(line);
    if (!parsed.ok()) return parsed.status();
    dump.push_back(*std::move(parsed));
  }
  return dump;
}

std::string Hex8(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%08llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string Hex2(uint8_t v) {
  char buf[4];
  std::snprintf(buf, sizeof(buf), "%02x", v);
  return buf;
}

// The file in the dump's grammar, 16 bytes a line, runs of 16 or more zero
// bytes folded: printed when the spec and the writer disagree, as a start
// for updating the spec.
std::string RenderDump(const std::string& file) {
  std::string out;
  size_t i = 0;
  while (i < file.size()) {
    size_t zeros = i;
    while (zeros < file.size() && file[zeros] == 0) ++zeros;
    if (zeros - i >= 16) {
      out += Hex8(i) + "-" + Hex8(zeros - 1) + ": zero\n";
      i = zeros;
      continue;
    }
    size_t end = std::min(file.size(), i + 16);
    out += Hex8(i) + ":";
    for (size_t j = i; j < end; ++j) {
      out += " " + Hex2(static_cast<uint8_t>(file[j]));
    }
    out += "\n";
    i = end;
  }
  return out;
}

// "" when `dump` covers `file` exactly, in order, with the same bytes;
// otherwise the first difference, naming the line of docs/format.md.
std::string CompareWithDump(const std::vector<DumpLine>& dump, const std::string& file) {
  uint64_t next = 0;
  for (const DumpLine& line : dump) {
    const std::string at = "docs/format.md:" + std::to_string(line.number) + ": ";
    if (line.offset != next) {
      return at + "starts at " + Hex8(line.offset) + ", but the previous line ends at " +
             Hex8(next) + " (the dump must cover the file in order, no gap or overlap)";
    }
    if (line.offset + line.size > file.size()) {
      return at + "passes the end of the " + std::to_string(file.size()) + "-byte shard";
    }
    for (uint64_t i = 0; i < line.size; ++i) {
      uint8_t want = line.zero ? 0 : line.bytes[i];
      uint8_t got = static_cast<uint8_t>(file[line.offset + i]);
      if (want != got) {
        return at + "byte " + Hex8(line.offset + i) + " is " + Hex2(want) + " in the spec, " +
               Hex2(got) + " from the writer";
      }
    }
    next = line.offset + line.size;
  }
  if (next != file.size()) {
    return "the dump ends at " + Hex8(next) + ", the shard at " + Hex8(file.size());
  }
  return "";
}

// The worked example of docs/format.md: two records, no compression, the
// default block size.
std::vector<OwnedRecord> WorkedExampleRecords() {
  OwnedRecord a;
  a.key = "a";
  a.labels = {7};
  a.image = {Encoding::kRaw, Layout::kHWC, 2, 2, 3};
  a.payload = {0xff, 0x00, 0x00, 0x00, 0xff, 0x00,   // red, green
               0x00, 0x00, 0xff, 0xff, 0xff, 0xff};  // blue, white
  OwnedRecord b;
  b.key = "b/c.jpg";
  b.labels = {1, 2};
  b.image = {Encoding::kJpeg, Layout::kHWC, 1, 1, 3};
  b.payload = {0xff, 0xd8, 0xff, 0xd9};  // SOI, EOI: stands in for a JPEG file
  b.extra = {0xe5, 0x7a};
  return {a, b};
}

std::string WorkedExampleShard() {
  return testing::WriteShard(WorkedExampleRecords(), ShardWriterOptions{});
}

class FormatSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::optional<std::string> spec = ReadSpec();
    ASSERT_TRUE(spec.has_value()) << "cannot read " << SpecPath();
    spec_ = *std::move(spec);
  }

  std::vector<SpecLine> Block(std::string_view info) {
    std::optional<std::vector<SpecLine>> block = FencedBlock(spec_, info);
    EXPECT_TRUE(block.has_value()) << SpecPath() << " has no block \"```" << info << "\"";
    return block.value_or(std::vector<SpecLine>{});
  }

  std::string spec_;
};

TEST_F(FormatSpecTest, WorkedExampleDumpIsWhatTheWriterWrites) {
  const std::string file = WorkedExampleShard();
  std::vector<SpecLine> block = Block("hex worked-example");
  ASSERT_FALSE(block.empty());
  SP_ASSERT_OK_AND_ASSIGN(std::vector<DumpLine> dump, ParseDump(block));
  std::string difference = CompareWithDump(dump, file);
  EXPECT_EQ(difference, "") << "\nthe writer's bytes, to update docs/format.md from:\n"
                            << RenderDump(file);
}

// The comparison itself: a changed byte, a gap, an overlap and a dump that
// stops short are each caught.
TEST(FormatSpecDumpTest, ComparisonCatchesEveryDifference) {
  const std::string file("\x01\x02\0\0\0\x03", 6);
  auto dump_of = [](std::vector<std::string> lines) {
    std::vector<SpecLine> block;
    for (std::string& l : lines) block.push_back({0, std::move(l)});
    return ParseDump(block);
  };
  SP_ASSERT_OK_AND_ASSIGN(auto same, dump_of({"0: 01 02  # two", "2-4: zero", "5: 03"}));
  EXPECT_EQ(CompareWithDump(same, file), "");
  SP_ASSERT_OK_AND_ASSIGN(auto changed, dump_of({"0: 01 02", "2-4: zero", "5: 04"}));
  EXPECT_THAT(CompareWithDump(changed, file), HasSubstr("byte 00000005 is 04"));
  SP_ASSERT_OK_AND_ASSIGN(auto not_zero, dump_of({"0: 01 02", "2-5: zero"}));
  EXPECT_THAT(CompareWithDump(not_zero, file), HasSubstr("byte 00000005 is 00"));
  SP_ASSERT_OK_AND_ASSIGN(auto gap, dump_of({"0: 01 02", "3-4: zero", "5: 03"}));
  EXPECT_THAT(CompareWithDump(gap, file), HasSubstr("starts at 00000003"));
  SP_ASSERT_OK_AND_ASSIGN(auto overlap, dump_of({"0: 01 02", "1-4: zero", "5: 03"}));
  EXPECT_THAT(CompareWithDump(overlap, file), HasSubstr("starts at 00000001"));
  SP_ASSERT_OK_AND_ASSIGN(auto short_dump, dump_of({"0: 01 02", "2-4: zero"}));
  EXPECT_THAT(CompareWithDump(short_dump, file), HasSubstr("ends at 00000005"));
  SP_ASSERT_OK_AND_ASSIGN(auto long_dump, dump_of({"0: 01 02", "2-4: zero", "5: 03 00"}));
  EXPECT_THAT(CompareWithDump(long_dump, file), HasSubstr("passes the end"));
  EXPECT_FALSE(dump_of({"0: 1 02"}).ok());
  EXPECT_FALSE(dump_of({"4-2: zero"}).ok());
  EXPECT_FALSE(dump_of({"0 01"}).ok());
}

TEST_F(FormatSpecTest, WorkedExampleReadsBackAndVerifies) {
  const std::string file = WorkedExampleShard();
  const std::vector<OwnedRecord> records = WorkedExampleRecords();
  auto mem = NewMemoryFile("example.shard", Bytes(file));
  SP_ASSERT_OK_AND_ASSIGN(auto reader, ShardReader::Open(mem.get()));
  ASSERT_EQ(reader->index().num_records(), records.size());
  ASSERT_EQ(reader->index().num_blocks(), 1u);
  for (size_t i = 0; i < records.size(); ++i) {
    SP_ASSERT_OK_AND_ASSIGN(Record got, reader->ReadRecord(i));
    EXPECT_TRUE(SameContents(got, records[i].record())) << "record " << i;
  }
  ShardVerifyResult v = VerifyShard(*mem);
  EXPECT_TRUE(v.ok()) << (v.problems.empty() ? "" : v.problems[0].message());
  EXPECT_EQ(v.file_crc32c, Crc32c(Bytes(file)));
}

// The manifest entry the spec gives for the worked example carries the
// shard's real size and whole-file CRC-32C.
TEST_F(FormatSpecTest, WorkedExampleManifestEntryIsTrue) {
  const std::string file = WorkedExampleShard();
  std::vector<SpecLine> block = Block("json worked-example-entry");
  ASSERT_FALSE(block.empty());
  const std::string manifest =
      R"({"format": "shardpack", "version": "1.0", "backend": "shard", "records": 2,
          "schema": {"encoding": "jpeg", "layout": "hwc", "height": 0, "width": 0,
                     "channels": 0, "labels": []},
          "shards": [)" +
      JoinLines(block) + "]}";
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ParseManifest(manifest, "worked-example-entry"));
  ASSERT_EQ(m.shards.size(), 1u);
  EXPECT_EQ(m.shards[0].records, 2u);
  EXPECT_EQ(m.shards[0].bytes, file.size());
  EXPECT_EQ(m.shards[0].crc32c, Crc32c(Bytes(file)))
      << "the shard's CRC-32C is " << Hex8(Crc32c(Bytes(file)));
}

// The spec's example manifest is exactly what SerializeManifest writes for it
// (every field, in order, formatted the same way).
TEST_F(FormatSpecTest, ExampleManifestParsesAndSerializesUnchanged) {
  std::vector<SpecLine> block = Block("json manifest-example");
  ASSERT_FALSE(block.empty());
  const std::string text = JoinLines(block);
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ParseManifest(text, "manifest-example"));
  EXPECT_EQ(SerializeManifest(m), text);
}

// The fields example of docs/format.md section 17: its manifest schema
// (block "json fields-example") and the bytes of one record of it (block
// "hex fields-record", offsets within the record).
TEST_F(FormatSpecTest, FieldsExampleManifestParsesAndSerializesUnchanged) {
  std::vector<SpecLine> block = Block("json fields-example");
  ASSERT_FALSE(block.empty());
  const std::string text = JoinLines(block);
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ParseManifest(text, "fields-example"));
  EXPECT_EQ(SerializeManifest(m), text);
  ASSERT_EQ(m.schema.fields.size(), 5u);
}

TEST_F(FormatSpecTest, FieldsRecordDumpIsWhatTheWriterWrites) {
  std::vector<SpecLine> manifest = Block("json fields-example");
  ASSERT_FALSE(manifest.empty());
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, ParseManifest(JoinLines(manifest), "fields-example"));
  RecordFields fields(m.schema);
  const uint8_t pixel[] = {0xff, 0x00, 0x00};
  const std::string caption = "hi";
  const float box[] = {0.0f, 0.0f, 1.0f, 1.0f};
  std::vector<FieldValue> values(5);
  values[0].present = true;
  values[0].image = {Encoding::kRaw, Layout::kHWC, 1, 1, 3};
  values[0].bytes = pixel;
  values[1].present = true;
  values[1].bytes = Bytes(caption);
  values[2].present = true;
  values[2].bytes = {reinterpret_cast<const uint8_t*>(box), sizeof(box)};
  values[3].present = true;
  values[3].label = 1;
  SP_ASSERT_OK_AND_ASSIGN(Record record, fields.Build("r", values));
  SP_ASSERT_OK_AND_ASSIGN(uint64_t size, format::EncodedRecordSize(record));
  std::string bytes(size, '\0');
  format::EncodeRecord(record, reinterpret_cast<uint8_t*>(bytes.data()), size);
  std::vector<SpecLine> block = Block("hex fields-record");
  ASSERT_FALSE(block.empty());
  SP_ASSERT_OK_AND_ASSIGN(std::vector<DumpLine> dump, ParseDump(block));
  std::string difference = CompareWithDump(dump, bytes);
  EXPECT_EQ(difference, "") << "\nthe writer's bytes, to update docs/format.md from:\n"
                            << RenderDump(bytes);
}

// Section 17.4's field types as text: each parses, and renders back as
// written.
TEST_F(FormatSpecTest, FieldTypeTextsParseAndRenderUnchanged) {
  std::vector<SpecLine> block = Block("text field-types");
  ASSERT_FALSE(block.empty());
  for (const SpecLine& line : block) {
    SP_ASSERT_OK_AND_ASSIGN(Field f, ParseFieldTypeText(line.text));
    EXPECT_EQ(FieldTypeText(f), line.text) << "docs/format.md line " << line.number;
  }
}

TEST(FormatSpecCrcTest, CheckValueIsTheOneTheSpecGives) {
  const std::string check = "123456789";
  EXPECT_EQ(Crc32c(Bytes(check)), 0xE3069283u);
}

}  // namespace
}  // namespace shardpack
