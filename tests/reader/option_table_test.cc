// Keeps the reader's option table (reader/option_table.h) and what is said
// of the options elsewhere one: the option tables of docs/reader.md and
// docs/python.md name every option with the table's default and range, and
// no option the table lacks; docs/cli.md's shardbench table names every
// flag; Reader::Open's messages say the table's ranges. (tests/tools/cli_flags_test.cc checks shardbench's --help, and
// tests/python/arguments_test.py the Python keywords, against it.)
#include "reader/option_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "reader/options.h"

namespace shardpack::reader {
namespace {

using ::testing::HasSubstr;

std::string ReadDoc(const std::string& name) {
  std::ifstream in(std::string(SHARDPACK_SOURCE_DIR) + "/docs/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The rows of the Markdown table whose header line is `header`: each row's
// names (the backquoted words of its first cell) to its cells.
std::map<std::string, std::vector<std::string>> TableRows(const std::string& doc,
                                                          const std::string& header) {
  std::map<std::string, std::vector<std::string>> rows;
  const size_t at = doc.find(header + "\n");
  EXPECT_NE(at, std::string::npos) << header;
  if (at == std::string::npos) return rows;
  std::istringstream lines(doc.substr(at));
  std::string line;
  std::getline(lines, line);  // the header
  std::getline(lines, line);  // | --- |
  while (std::getline(lines, line) && absl::StartsWith(line, "|")) {
    std::vector<std::string> cells = absl::StrSplit(line, " | ");
    for (std::string& c : cells) c = std::string(absl::StripAsciiWhitespace(c));
    cells[0] = std::string(absl::StripPrefix(cells[0], "| "));
    for (absl::string_view name : absl::StrSplit(cells[0], ", ")) {
      rows[std::string(absl::StripSuffix(absl::StripPrefix(name, "`"), "`"))] = cells;
    }
  }
  return rows;
}

// A bound as the docs write it: 2^20, 2^20-1, 2^31-1 for the large powers.
std::string DocNumber(int64_t v) {
  if (v >= 65536 && std::has_single_bit(uint64_t(v))) {
    return absl::StrCat("2^", std::countr_zero(uint64_t(v)));
  }
  if (v >= 65535 && std::has_single_bit(uint64_t(v) + 1)) {
    return absl::StrCat("2^", std::countr_zero(uint64_t(v) + 1), "-1");
  }
  return absl::StrCat(v);
}

TEST(OptionTableTest, ReaderDocsTableHasEveryOptionWithItsDefaultAndRange) {
  const auto rows = TableRows(ReadDoc("reader.md"), "| option | default | meaning |");
  for (const OptionSpec& s : kOptionTable) {
    if (s.field.empty() || s.doc_default.empty()) continue;
    const auto row = rows.find(std::string(s.field));
    ASSERT_NE(row, rows.end()) << "docs/reader.md has no row for " << s.field;
    EXPECT_EQ(row->second[1], s.doc_default) << s.field;
    if (s.type == OptionType::kInt) {
      EXPECT_THAT(row->second[2], HasSubstr(DocNumber(s.lo) + " to " + DocNumber(s.hi)))
          << s.field;
    }
  }
  for (const auto& [name, cells] : rows) {
    EXPECT_EQ(FindOption(name).field, name) << "docs/reader.md documents " << name
                                            << ", which the option table lacks";
  }
}

TEST(OptionTableTest, PythonDocsTableHasEveryKeywordWithItsDefault) {
  const auto rows = TableRows(ReadDoc("python.md"), "| keyword | default | meaning |");
  for (const OptionSpec& s : kOptionTable) {
    if (s.python.empty() || s.python == "path") continue;
    const auto row = rows.find(std::string(s.python));
    ASSERT_NE(row, rows.end()) << "docs/python.md has no row for " << s.python;
    EXPECT_EQ(row->second[1], s.python_default) << s.python;
  }
  for (const auto& [name, cells] : rows) {
    EXPECT_EQ(FindOption(name).python, name) << "docs/python.md documents " << name
                                             << ", which the option table lacks";
  }
}

TEST(OptionTableTest, CliDocsTableHasEveryShardbenchFlagWithItsRange) {
  const std::string doc = ReadDoc("cli.md");
  const size_t source = doc.find("| `--source SOURCE` |");
  ASSERT_NE(source, std::string::npos);
  const size_t start = doc.rfind("| flag | default | meaning |", source);
  ASSERT_NE(start, std::string::npos);
  const std::string table = doc.substr(start, doc.find("\n\n", start) - start);
  for (const OptionSpec& s : kOptionTable) {
    if (!s.flag.starts_with("--")) continue;
    const std::string flag(s.flag);
    const size_t at = table.find("`" + flag);
    ASSERT_NE(at == std::string::npos ? table.find(" " + flag + " ") : at, std::string::npos)
        << "docs/cli.md's shardbench table lacks " << flag;
  }
  // The flags whose range is the reader's.
  for (const char* option : {"batch_size", "threads", "ring_slots", "device_buffers"}) {
    const OptionSpec& s = FindOption(option);
    const size_t at = table.find("| `" + std::string(s.flag) + " ");
    ASSERT_NE(at, std::string::npos) << s.flag;
    EXPECT_THAT(table.substr(at, table.find('\n', at) - at),
                HasSubstr(absl::StrCat(s.lo, "..", s.hi)))
        << s.flag;
  }
}

TEST(OptionTableTest, MessagesSayTheTablesRanges) {
  const std::map<std::string, std::string> accepted = {
      {"batch_size", "1 to 1048576"},
      {"ring_slots", "2 to 1024, or 0 (chosen)"},
      {"threads", "0 (one per core) to 1024"},
      {"device_buffers", "2 to 1024, or 0 (chosen)"},
      {"device", "-1 (host memory) or a CUDA device from 0"},
      {"rank", "-1 (from RANK) or 0 to world_size-1 (at most 1048575)"},
      {"world_size", "-1 (from WORLD_SIZE) or 1 to 1048576"},
      {"transform size", "1 to 8192"},
      {"transform pad", "0 to 8192"},
  };
  for (const OptionSpec& s : kOptionTable) {
    if (s.type != OptionType::kInt) continue;
    ASSERT_TRUE(accepted.contains(std::string(s.field))) << s.field;
    EXPECT_EQ(Accepted(s), accepted.at(std::string(s.field)));
    EXPECT_EQ(OptionOutOfRange(s.field, "7777777").message(),
              absl::StrCat(std::string(s.field), " 7777777 is out of range: ", Accepted(s)));
  }
}

TEST(OptionTableTest, EachNameIsOneRow) {
  for (const OptionSpec& a : kOptionTable) {
    int fields = 0, keywords = 0, flags = 0;
    for (const OptionSpec& b : kOptionTable) {
      fields += !a.field.empty() && a.field == b.field;
      keywords += !a.python.empty() && a.python == b.python;
      flags += !a.flag.empty() && a.flag == b.flag;
    }
    EXPECT_LE(fields, 1) << a.field;
    EXPECT_LE(keywords, 1) << a.python;
    EXPECT_LE(flags, 1) << a.flag;
    EXPECT_FALSE(a.help.empty()) << a.field << a.python;
  }
}

}  // namespace
}  // namespace shardpack::reader
