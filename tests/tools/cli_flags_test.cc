// The flags of all three tools: a negative, fractional, octal-looking or
// overflowing whole number, a nan or infinite time, is a usage error (exit
// 2) that names the flag and the accepted range, never a wrapped value
// taken as given; flags that do not go together are usage errors too.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "reader/option_table.h"
#include "shardpack/dataset.h"
#include "tests/testing/cli_expect.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunResult;

// The longest run of decimal digits in `text`.
size_t LongestDigitRun(const std::string& text) {
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = (c >= '0' && c <= '9') ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

struct BadFlag {
  std::vector<std::string> argv;  // the whole command line
  std::string flag;               // the flag the message must name
  std::string value;              // the value as typed
  std::string range;              // the accepted range the message must give
};

// Parse errors come before any file is opened: the paths need not exist.
std::vector<BadFlag> BadWholeNumbers() {
  const std::string p = SHARDPACK_PATH, d = SHARDDUMP_PATH, b = SHARDBENCH_PATH;
  const std::string max = "2^64-1";
  std::vector<BadFlag> cases;
  auto pack = [&](std::string flag, std::string value, std::string range) {
    cases.push_back({{p, "cifar", "in.bin", "-o", "out", flag, value}, flag, value, range});
  };
  for (std::string v : {"-1", "-0x1", "1.5", "18446744073709551616"}) {
    pack("--seed", v, "0.." + max);
    pack("--shard-records", v, "1.." + max);
  }
  pack("--shard-records", "0", "1.." + max);
  pack("--threads", "-1", "0..1024");
  pack("--threads", "1000000", "0..1024");
  pack("--pad", "-1", "0..64");
  cases.push_back({{p, "images", "root", "-o", "out", "--max-side", "-1"}, "--max-side", "-1",
                   "0..65500"});
  cases.push_back({{p, "images", "root", "-o", "out", "--quality", "-1"}, "--quality", "-1",
                   "1..100"});
  for (std::string v : {"-1", "18446744073709551616"}) {
    cases.push_back({{d, "extract", "ds", "--index", v, "-o", "x"}, "--index", v, "0.." + max});
    cases.push_back({{d, "extract", "ds", "--index", "3," + v, "-o", "x"}, "--index", v,
                     "0.." + max});
    cases.push_back({{d, "ls", "ds", "--shard", v}, "--shard", v, "0.." + max});
    cases.push_back({{b, "ds", "--seed", v}, "--seed", v, "0.." + max});
  }
  cases.push_back({{d, "verify", "ds", "--threads", "-1"}, "--threads", "-1", "0..1024"});
  cases.push_back({{b, "ds", "--batch-size", "-1"}, "--batch-size", "-1", "1..1048576"});
  cases.push_back({{b, "ds", "--threads", "-1"}, "--threads", "-1", "0..1024"});
  cases.push_back({{b, "ds", "--epochs", "0"}, "--epochs", "0", "1..2147483647"});
  cases.push_back({{b, "ds", "--ring-slots", "-1"}, "--ring-slots", "-1", "2..1024"});
  for (std::string v : {"-1", "2147483648"}) {
    cases.push_back({{b, "ds", "--warmup", v}, "--warmup", v, "0..2147483647"});
  }
  cases.push_back({{b, "ds", "--ring-slots", "0"}, "--ring-slots", "0", "2..1024"});
  for (std::string v : {"-1", "65537"}) {
    cases.push_back({{b, "ds", "--device", v}, "--device", v, "0..65536"});
  }
  for (std::string v : {"1", "1025", "-3"}) {
    cases.push_back({{b, "ds", "--device", "0", "--device-buffers", v}, "--device-buffers", v,
                     "2..1024"});
  }
  cases.push_back(
      {{b, "ds", "--rank", "-1", "--world-size", "2"}, "--rank", "-1", "0..2147483646"});
  cases.push_back(
      {{b, "ds", "--rank", "0", "--world-size", "-2"}, "--world-size", "-2", "1..2147483647"});
  for (std::string v : {"nan", "inf", "-inf", "-1", "0", "1e400"}) {
    cases.push_back({{b, "ds", "--seconds", v}, "--seconds", v, "(0, 31536000]"});
  }
  return cases;
}

// Values of more than one number, sizes and names: a side, product, level or
// count past what the tools take is refused when the flag is parsed (it was
// a failure, exit 1, at open, or clamped in silence), naming the limit.
std::vector<BadFlag> BadCompositeValues() {
  const std::string p = SHARDPACK_PATH, b = SHARDBENCH_PATH;
  const std::string raw_limit = "W and H in 1..65500 and W x H at most 268435456 pixels";
  std::vector<BadFlag> cases;
  for (std::string v : {"70000x70000", "65501x1", "20000x20000", "0x8", "8x", "x8", "8x8x8",
                        "+8x8", "99999999999999999999x1"}) {
    cases.push_back({{p, "images", "root", "-o", "out", "--mode", "raw", "--size", v}, "--size",
                     v, raw_limit});
  }
  const std::string levels = "zstd[:LEVEL] with LEVEL in -131072..22";
  for (std::string v : {"zstd:23", "zstd:-131073", "zstd:99999999999999999999", "zstd:", "zstd:x",
                        "zstd:+3", "lz4"}) {
    cases.push_back({{p, "cifar", "in.bin", "-o", "out", "--compress", v}, "--compress", v,
                     levels});
    cases.push_back({{p, "convert", "in", "-o", "out", "--format", "shard", "--compress", v},
                     "--compress", v, levels});
  }
  for (std::string v : {"1/4294967296", "3/2", "0/2", "1/", "1/2/3"}) {
    cases.push_back({{p, "cifar", "in.bin", "-o", "out", "--part", v}, "--part", v,
                     "1 <= I <= N <= 4294967295"});
  }
  for (std::string v : {"2GiB", "0", "1.5XB"}) {
    cases.push_back({{p, "cifar", "in.bin", "-o", "out", "--block-size", v}, "--block-size", v,
                     "1 B..1.0 GiB"});
  }
  for (std::string v : {"99999999999999999999999", "0"}) {
    cases.push_back({{p, "cifar", "in.bin", "-o", "out", "--shard-size", v}, "--shard-size", v,
                     "1 B or more"});  // 2^64-1 bytes is no limit to print
  }
  for (std::string flag : {"--shuffle-bytes", "--read-ahead"}) {
    for (std::string v : {"2048TiB", "18446744073709551616"}) {
      cases.push_back({{b, "ds", flag, v}, flag, v, "0 B..1024.0 TiB"});
    }
  }
  for (std::string v : {"rrc:8193", "center:99999999999", "rrc:0", "rrc:-1"}) {
    cases.push_back({{b, "ds", "--transform", v}, "--transform", v, "at most 8192 for rrc"});
  }
  return cases;
}

TEST(CliFlagsTest, BadNumbersAreUsageErrorsNamingFlagAndRange) {
  std::vector<BadFlag> all = BadWholeNumbers();
  for (BadFlag& c : BadCompositeValues()) all.push_back(std::move(c));
  for (const BadFlag& c : all) {
    SCOPED_TRACE(c.argv[0] + " ... " + c.flag + " " + c.value);
    RunResult r = testing::Run(c.argv);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.flag + ": '" + c.value + "' is not a"));
    EXPECT_THAT(r.err, HasSubstr(c.range));
    // Neither a wrapped -1 nor DBL_MAX's 309 digits.
    EXPECT_THAT(r.err, Not(HasSubstr("18446744073709551615")));
    EXPECT_LT(LongestDigitRun(r.err), 25u) << r.err;
  }
}

// The whole message of an oversize raw --size: exit 2, the flag, the value
// and the limits, and CLI11's hint (it was "images: raw size too large",
// exit 1, once the folder had been opened).
TEST(CliFlagsTest, OversizeRawSizeIsAUsageErrorSayingTheLimits) {
  RunResult r = testing::Run({SHARDPACK_PATH, "images", "root", "-o", "out", "--mode", "raw",
                              "--size", "70000x70000"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "shardpack: --size: '70000x70000' is not a size WxH with W and H in 1..65500 and W x H "
            "at most 268435456 pixels\nRun with --help for more information.\n");
  EXPECT_EQ(r.out, "");
}

// A value typed with ESC[31m, a newline and a NUL-free but invalid byte is
// quoted escaped, on one line, by every tool's parse error.
TEST(CliFlagsTest, ValuesInUsageErrorsArePrintedEscaped) {
  const std::string value = "1\x1b[31m\n\xff";
  const std::string shown = "'1\\x1b[31m\\n\\xff'";
  const std::string hint = "\nRun with --help for more information.\n";
  RunResult pack = testing::Run({SHARDPACK_PATH, "cifar", "in.bin", "-o", "out", "--seed", value});
  EXPECT_EQ(pack.exit_code, 2);
  EXPECT_EQ(pack.err, "shardpack: --seed: " + shown + " is not a whole number in 0..2^64-1" + hint);
  RunResult dump = testing::Run({SHARDDUMP_PATH, "ls", "ds", "--shard", value});
  EXPECT_EQ(dump.exit_code, 2);
  EXPECT_EQ(dump.err,
            "sharddump: --shard: " + shown + " is not a whole number in 0..2^64-1" + hint);
  RunResult bench = testing::Run({SHARDBENCH_PATH, "ds", "--batch-size", value});
  EXPECT_EQ(bench.exit_code, 2);
  EXPECT_EQ(bench.err,
            "shardbench: --batch-size: " + shown + " is not a whole number in 1..1048576" + hint);
  // A usage error found after parsing, through cli::UsageError.
  RunResult root = testing::Run(
      {SHARDPACK_PATH, "images", "a\x1b[31m", "--root", "b\nc", "--list", "l", "-o", "out"});
  EXPECT_EQ(root.exit_code, 2);
  EXPECT_EQ(root.err,
            "shardpack: images: the list's root given twice (ROOT a\\x1b[31m and --root "
            "b\\nc): give it once" + hint);
}

// Flags whose values only go wrong together, or in a way the parser cannot
// see alone: usage errors, exit 2, with the tool's name.
TEST(CliFlagsTest, FlagCombinationsAreUsageErrors) {
  const std::string p = SHARDPACK_PATH, b = SHARDBENCH_PATH;
  const std::vector<std::vector<std::string>> cases = {
      {p, "cifar", "in.bin", "-o", "out", "--part", "3/2"},
      {p, "cifar", "in.bin", "-o", "out", "--part", "-1/2"},
      {p, "cifar", "in.bin", "-o", "out", "--compress", "zstd:x"},
      {p, "cifar", "in.bin", "-o", "out", "--format", "lmdb", "--compress", "zstd"},
      {p, "cifar", "in.bin", "-o", "out", "--shard-size", "-5"},
      {p, "cifar", "in.bin", "-o", "out", "--shard-size", "99999999999999999999999"},
      {p, "cifar", "in.bin", "-o", "out", "--block-size", "2GiB"},
      {p, "images", "root", "-o", "out", "--mode", "raw"},
      {p, "images", "root", "-o", "out", "--mode", "raw", "--size", "-8x8"},
      {p, "images", "root", "-o", "out", "--mode", "raw", "--size", "8x8", "--restart-markers"},
      {p, "images", "-o", "out"},
      {p, "images", "root", "-o", "out", "--non-jpeg", "keep"},
      {p, "images", "root", "-o", "out", "--mode", "reencode", "--non-jpeg", "skip"},
      {p, "images", "root", "-o", "out", "--quality", "0"},
      {p, "images", "root", "-o", "out", "--size", "8x8"},
      {p, "images", "root", "-o", "out", "--mode", "reencode", "--size", "8x8"},
      {p, "images", "root", "-o", "out", "--max-side", "64"},
      {p, "images", "root", "-o", "out", "--mode", "raw", "--size", "8x8", "--max-side", "64"},
      {p, "convert", "in", "-o", "out", "--format", "shard", "--compress", "lz4"},
      {b, "ds", "--rank", "3", "--world-size", "2"},
  };
  for (const auto& argv : cases) {
    RunResult r = testing::Run(argv);
    EXPECT_EQ(r.exit_code, 2) << argv[1] << " " << argv.back() << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("Run with --help"));
  }
}

// A usage error starts with the tool's name, as every other failure does;
// an option the command does not know is named (before what it left
// missing) with the nearest one it knows.
TEST(CliFlagsTest, UnknownOptionsAreNamedWithTheNearestKnownOne) {
  const std::string p = SHARDPACK_PATH, d = SHARDDUMP_PATH, b = SHARDBENCH_PATH;
  const std::string hint = "\nRun with --help for more information.\n";
  struct Case {
    std::vector<std::string> argv;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{p, "images", "root", "-o", "out", "--sise", "8x8"},
       "shardpack: unknown option --sise; did you mean --size?"},
      // -o is missing too: the typo is what to fix.
      {{p, "cifar", "in.bin", "--outptu", "out"},
       "shardpack: unknown option --outptu; did you mean --output?"},
      {{p, "cifar", "in.bin", "-o", "out", "--shard-size=1M", "--overwirte"},
       "shardpack: unknown option --overwirte; did you mean --overwrite?"},
      {{p, "cifar", "in.bin", "-o", "out", "--zzzzzz"}, "shardpack: unknown option --zzzzzz"},
      {{p, "cifr", "in.bin", "-o", "out"}, "shardpack: unknown command cifr; did you mean cifar?"},
      {{d, "ls", "ds", "--rnage=0:5"}, "sharddump: unknown option --rnage; did you mean --range?"},
      {{d, "extract", "ds", "--idnex", "3", "-o", "x"},
       "sharddump: unknown option --idnex; did you mean --index?"},
      {{b, "ds", "--batchsize", "3"},
       "shardbench: unknown option --batchsize; did you mean --batch-size?"},
      {{b, "ds", "--compare"}, "shardbench: unknown option --compare"},
      {{d, "info"}, "sharddump: PATH is required"},
  };
  for (const Case& c : cases) {
    RunResult r = testing::Run(c.argv);
    EXPECT_EQ(r.exit_code, 2) << c.err;
    EXPECT_EQ(r.err, c.err + hint);
    EXPECT_EQ(r.out, "");
  }
}

// Every tool says its version, on stdout, exit 0.
TEST(CliFlagsTest, EveryToolHasVersion) {
  for (const std::string tool : {"shardpack", "sharddump", "shardbench"}) {
    const std::string path = tool == "shardpack"   ? SHARDPACK_PATH
                             : tool == "sharddump" ? SHARDDUMP_PATH
                                                   : SHARDBENCH_PATH;
    RunResult r = testing::Run({path, "--version"});
    EXPECT_EQ(r.exit_code, 0) << tool << ": " << r.err;
    EXPECT_EQ(r.out, tool + " " SHARDPACK_VERSION "\n");
    EXPECT_EQ(r.err, "");
  }
}

// shardbench's --help lists the flag of every reader option that has one
// (reader/option_table.h), and its range flags refuse what the table does.
TEST(CliFlagsTest, ShardbenchHasEveryFlagOfTheOptionTable) {
  RunResult help = testing::Run({SHARDBENCH_PATH, "--help"});
  ASSERT_EQ(help.exit_code, 0) << help.err;
  for (const reader::OptionSpec& s : reader::kOptionTable) {
    if (s.flag.empty()) continue;
    EXPECT_THAT(help.out, HasSubstr(std::string(s.flag))) << s.field;
  }
  for (const char* option : {"batch_size", "threads", "ring_slots", "device_buffers"}) {
    const reader::OptionSpec& s = reader::FindOption(option);
    RunResult r = testing::Run({SHARDBENCH_PATH, "ds", std::string(s.flag),
                                std::to_string(s.hi + 1)});
    EXPECT_EQ(r.exit_code, 2) << option << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(std::to_string(s.hi))) << option;
  }
}

// A missing input reads the same in every command of every tool (it was
// "stat X: No such file or directory", "image folder X: ...", "open X:
// ...", "X: not a dataset (no manifest.json)" and "X: no such file or
// directory"): exit 1, nothing else said.
TEST(CliFlagsTest, AMissingInputIsWordedOneWayByEveryCommand) {
  testing::TempDir dir;
  const std::string p = SHARDPACK_PATH, d = SHARDDUMP_PATH, b = SHARDBENCH_PATH;
  const std::string missing = dir.Join("no/such");
  const std::string out = dir.Join("out");
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"shardpack", {p, "cifar", missing, "-o", out}},
      {"shardpack", {p, "images", missing, "-o", out}},
      {"shardpack", {p, "images", "--list", missing, "--root", dir.path().string(), "-o", out}},
      {"shardpack", {p, "merge", missing, "-o", out}},
      {"shardpack", {p, "merge", "--check", missing}},
      {"shardpack", {p, "convert", missing, "-o", out, "--format", "lmdb"}},
      {"shardpack", {p, "index", missing}},
      {"sharddump", {d, "info", missing}},
      {"sharddump", {d, "ls", missing}},
      {"sharddump", {d, "verify", missing}},
      {"sharddump", {d, "extract", missing, "--index", "0", "-o", out}},
      {"sharddump", {d, "show", missing, "-o", out + ".png"}},
      {"shardbench", {b, missing}},
      {"shardbench", {b, "--source", missing + ":weight=1", "--source", missing}},
  };
  for (const auto& [tool, argv] : cases) {
    RunResult r = testing::Run(argv);
    EXPECT_EQ(r.exit_code, 1) << argv[1] << ": " << r.err;
    EXPECT_EQ(r.err, tool + ": " + missing + ": no such file or directory\n") << argv[1];
    EXPECT_FALSE(fs::exists(out)) << argv[1];
  }
}

class CliPackTest : public ::testing::Test {
 protected:
  // A CIFAR-10 file of `n` records, label i % 10.
  std::string Cifar(int n) {
    std::string path = dir_.Join("data_batch_1.bin");
    std::string bytes;
    for (int i = 0; i < n; ++i) {
      bytes += static_cast<char>(i % 10);
      bytes.append(3072, static_cast<char>(i));
    }
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  testing::TempDir dir_;
};

// "010" is ten, as a user means it, not octal eight as strtoull reads it.
TEST_F(CliPackTest, LeadingZerosAreDecimal) {
  RunResult r = testing::Run({SHARDPACK_PATH, "cifar", Cifar(4), "-o", dir_.Join("ds"), "--seed",
                              "010", "--shard-records", "03", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto m = ReadManifest(dir_.Join("ds"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->pack_json, HasSubstr("\"seed\":10"));
  EXPECT_EQ(m->shards.size(), 2u);  // 3 + 1 records
}

// docs/cli.md lists -v / --verbose for every tool: before the command or in it.
TEST_F(CliPackTest, VerboseIsAccepted) {
  const std::string input = Cifar(4);
  RunResult before = testing::Run({SHARDPACK_PATH, "-v", "cifar", input, "-o", dir_.Join("a")});
  EXPECT_EQ(before.exit_code, 0) << before.err;
  EXPECT_THAT(before.err, HasSubstr("a.partial"));
  RunResult after =
      testing::Run({SHARDPACK_PATH, "cifar", input, "-o", dir_.Join("b"), "--verbose", "-q"});
  EXPECT_EQ(after.exit_code, 0) << after.err;
  for (std::string command : {"merge", "convert"}) {
    std::vector<std::string> argv = {SHARDPACK_PATH, command, dir_.Join("a"),
                                     "-o", dir_.Join(command), "-v"};
    if (command == "convert") argv.insert(argv.end(), {"--format", "lmdb"});
    RunResult r = testing::Run(argv);
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
  }
}

// The names in `dir`, sorted.
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A URL where a tool can only write or read locally is refused by name
// (exit 1, one line saying what is accepted) before anything is read or
// made: never a local folder "http:" or "s3:" in the working directory.
TEST_F(CliPackTest, UrlsWhereOnlyLocalPathsGoAreRefusedCreatingNothing) {
  const std::string p = SHARDPACK_PATH, d = SHARDDUMP_PATH, b = SHARDBENCH_PATH;
  const std::string input = Cifar(4);
  ASSERT_EQ(testing::Run({p, "cifar", input, "-o", dir_.Join("ds"), "-q"}).exit_code, 0);
  fs::create_directories(dir_.Join("imgs/cls"));
  const std::string ds = dir_.Join("ds");
  const std::string out = "output to a URL is not supported";
  const std::string in = "reads local files only";
  struct Case {
    std::vector<std::string> argv;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {{p, "cifar", input, "-o", "http://h/out"}, "-o http://h/out: " + out},
      {{p, "cifar", input, "-o", "s3://bucket/out", "--format", "lmdb"}, "-o s3://bucket/out: "},
      {{p, "cifar", input, "-o", "gs://bucket/out"}, "-o gs://bucket/out: " + out},
      {{p, "images", dir_.Join("imgs"), "-o", "https://h/out"}, "-o https://h/out: " + out},
      {{p, "convert", ds, "-o", "s3://bucket/out", "--format", "lmdb"}, "-o s3://bucket/out: "},
      {{p, "convert", ds, "-o", "http://h/out", "--format", "shard"}, out},
      {{p, "merge", ds, "-o", "http://h/out"}, "-o http://h/out: " + out},
      {{p, "merge", "--check", "http://h/part"}, "PART http://h/part: merge " + in},
      {{p, "merge", ds, "s3://bucket/part", "-o", "merged"}, "PART s3://bucket/part: merge " + in},
      {{p, "index", "http://h/ds"}, "DATASET http://h/ds: index " + in},
      {{p, "index", "s3://bucket/ds"}, "DATASET s3://bucket/ds: index " + in},
      {{p, "cifar", "http://h/data_batch_1.bin", "-o", "out"}, "INPUT http://h/data_batch_1.bin"},
      {{p, "images", "s3://bucket/imgs", "-o", "out"}, "ROOT s3://bucket/imgs: images " + in},
      {{p, "images", "--list", "http://h/list.txt", "--root", dir_.Join("imgs"), "-o", "out"},
       "--list http://h/list.txt: images " + in},
      {{d, "extract", ds, "--index", "0", "-o", "http://h/out"}, "-o http://h/out: " + out},
      {{d, "show", ds, "-o", "http://h/sheet.png"}, "-o http://h/sheet.png: " + out},
      {{b, ds, "--order-out", "http://h/order.txt", "-q"}, "--order-out http://h/order.txt"},
      {{b, ds, "--save-batch", "s3://bucket/b.png", "-q"}, "--save-batch s3://bucket/b.png"},
      {{b, ds, "--cache-dir", "s3://bucket/cache", "-q"}, "cache_dir s3://bucket/cache: "},
      {{p, "cifar", input, "-o", "HTTPS://user:SECRET@h/out?sig=SECRET"},
       "-o HTTPS://***@h/out?sig=***: " + out},
  };
  const std::vector<std::string> before = Names(dir_.path().string());
  for (const Case& c : cases) {
    const std::string tool = fs::path(c.argv[0]).filename().string();
    RunResult r = testing::Run(c.argv, [this] {
      if (chdir(dir_.path().c_str()) != 0) _exit(99);
    });
    SCOPED_TRACE(c.argv[1] + " " + c.argv[c.argv.size() - 1]);
    testing::ExpectOneLineFailure(r, tool, c.needle);
    EXPECT_THAT(r.err, Not(HasSubstr("SECRET")));
    EXPECT_EQ(Names(dir_.path().string()), before) << r.err;
  }
}

}  // namespace
}  // namespace shardpack
