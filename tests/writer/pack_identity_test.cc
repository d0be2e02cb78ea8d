// The pack identity (writer/pack_identity.h): what a manifest's "pack"
// object holds, round trip, comparison, and the damage a hostile manifest
// or staging marker may carry, each refused naming where and the key.
#include "writer/pack_identity.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/dataset.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack::writer {
namespace {

using ::testing::HasSubstr;
using testing::StatusIs;

// Every key shardpack writes, as pack then convert would.
PackIdentity Full() {
  PackIdentity p;
  p.tool = "shardpack 0.1.0";
  p.source = PackJson::parse(R"({"kind":"images","root":"/data/a","files":["x"]})");
  p.shuffle = true;
  p.seed = UINT64_MAX;
  p.part = PackPart{2, 3};
  p.input = PackInput{30, 92190, "crc32c:0123abcd"};
  p.order = PackOrder{512, 128};
  p.shard_max_bytes = 268435456;
  p.shard_max_records = 0;
  p.format = Backend::kShard;
  p.block_size = 4194304;
  p.compression = "zstd:3";
  p.on_error = OnError::kFail;
  p.extra = PackJson::parse(R"({"newer":{"a":1},"x\u0000y":2})");
  p.converted_from = {{"ds", Backend::kLmdb, PackJson::parse(R"({"seed":1})")}};
  p.converted_by = "shardpack 0.1.0";
  return p;
}

TEST(PackIdentityTest, RoundTripKeepsEveryFieldAndTheOrderOfKeys) {
  const PackIdentity p = Full();
  const std::string text = p.ToJson();
  EXPECT_EQ(text,
            R"({"tool":"shardpack 0.1.0",)"
            R"("source":{"kind":"images","root":"/data/a","files":["x"]},)"
            R"("shuffle":true,"seed":18446744073709551615,"part":{"index":2,"count":3},)"
            R"("input":{"items":30,"bytes":92190,"fingerprint":"crc32c:0123abcd"},)"
            R"("order":{"chunk_items":512,"window_chunks":128},"shard_max_bytes":268435456,)"
            R"("shard_max_records":0,"format":"shard","block_size":4194304,)"
            R"("compression":"zstd:3","on_error":"fail","newer":{"a":1},"x\u0000y":2,)"
            R"("converted_from":[{"path":"ds","backend":"lmdb","pack":{"seed":1}}],)"
            R"("converted_by":"shardpack 0.1.0"})");
  SP_ASSERT_OK_AND_ASSIGN(PackIdentity back, PackIdentity::FromJson(text, "m"));
  EXPECT_EQ(back, p);
  EXPECT_EQ(back.ToJson(), text);
  EXPECT_EQ(back.seed, UINT64_MAX);
  EXPECT_EQ(back.part, (PackPart{2, 3}));
  EXPECT_EQ(back.format, Backend::kShard);
  EXPECT_EQ(back.on_error, OnError::kFail);
  ASSERT_TRUE(back.converted_from.has_value());
  EXPECT_EQ(back.converted_from->at(0).backend, Backend::kLmdb);
}

TEST(PackIdentityTest, MergedRecordAndForeignPacksRoundTrip) {
  PackIdentity merged = Full().WithoutPart();
  merged.merged = MergeRecord{"shardpack 0.1.0", 2, {{1, "p1", 10, 1}, {2, "p\xff", 5, 1}}};
  SP_ASSERT_OK_AND_ASSIGN(PackIdentity back, PackIdentity::FromJson(merged.ToJson(), "m"));
  ASSERT_TRUE(back.merged.has_value());
  EXPECT_EQ(back.merged->parts[1].path, "p\xef\xbf\xbd");  // not UTF-8: U+FFFD
  EXPECT_FALSE(back.part.has_value());
  // What other writers put in "pack" (a library user, a plain HDF5 file,
  // an older shardpack's "part" text): kept as it is.
  for (const char* text : {"{}", R"({"test":true})", R"({"source":"plain HDF5 file"})",
                           R"({"tool":"shardpack 0.1.0","seed":0,"part":"1/1"})"}) {
    SP_ASSERT_OK_AND_ASSIGN(PackIdentity p, PackIdentity::FromJson(text, "m"));
    EXPECT_EQ(p.ToJson(), text);
  }
  SP_ASSERT_OK_AND_ASSIGN(PackIdentity old, PackIdentity::FromJson(R"({"part":"1/1"})", "m"));
  EXPECT_FALSE(old.part.has_value());
  EXPECT_EQ(old.legacy_part, "1/1");
}

// A part of an open count ({index} alone: a Writer's part that did not know
// N) round-trips; its index is held to 1..kMaxParts.
TEST(PackIdentityTest, APartOfAnOpenCountRoundTrips) {
  PackIdentity p = Full();
  p.part = PackPart{7, kOpenPartCount};
  const std::string text = p.ToJson();
  EXPECT_THAT(text, HasSubstr(R"("part":{"index":7})"));
  SP_ASSERT_OK_AND_ASSIGN(PackIdentity back, PackIdentity::FromJson(text, "m"));
  EXPECT_EQ(back, p);
  EXPECT_FALSE(back.part->has_count());
  for (const auto& [part, message] : std::vector<std::pair<std::string, std::string>>{
           {R"({"index":0})", "ds: pack.part.index 0 is not in 1..4294967295"},
           {R"({"index":4294967296})", "ds: pack.part.index 4294967296 is not in 1..4294967295"},
           {R"({"index":"7"})", "ds: pack.part.index \"7\" is not in 1..4294967295"},
           {R"({"count":3})", "ds: pack.part.index null is not in 1..3"},
           {R"({"index":7,"of":9})", "ds: pack.part.count null is not in 1..4294967295"},
       }) {
    EXPECT_THAT(PackIdentity::FromJson(R"({"part":)" + part + "}", "ds"),
                StatusIs(absl::StatusCode::kDataLoss, HasSubstr(message)))
        << part;
  }
}

// The spec's example (docs/format.md 12.2) is what this code reads and writes.
TEST(PackIdentityTest, TheFormatSpecsExamplePackRoundTrips) {
  std::ifstream in(std::filesystem::path(SHARDPACK_SOURCE_DIR) / "docs" / "format.md");
  const std::string doc{std::istreambuf_iterator<char>(in), {}};
  const size_t start = doc.find("```json manifest-example\n");
  ASSERT_NE(start, std::string::npos);
  const size_t body = doc.find('\n', start) + 1;
  const PackJson manifest = PackJson::parse(doc.substr(body, doc.find("```", body) - body));
  const std::string pack = manifest.at("pack").dump();
  SP_ASSERT_OK_AND_ASSIGN(PackIdentity p, PackIdentity::FromJson(pack, "format.md"));
  EXPECT_EQ(p.ToJson(), pack);
  EXPECT_TRUE(p.extra.empty()) << p.extra.dump();
  EXPECT_EQ(p.input->items, 10000u);
}

// Each damage, the message it gives: where, then the key and what is wrong.
TEST(PackIdentityTest, DamageIsRefusedNamingWhereAndTheKey) {
  const std::string good = Full().ToJson();
  const std::vector<std::pair<std::vector<std::pair<std::string, std::string>>, std::string>>
      cases = {
          {{{"\"seed\":18446744073709551615", "\"seed\":\"9\""}},
           "ds: pack.seed \"9\" is not an unsigned integer"},
          {{{"\"seed\":18446744073709551615", "\"seed\":-1"}},
           "ds: pack.seed -1 is not an unsigned integer"},
          {{{"\"seed\":18446744073709551615", "\"seed\":9.0"}},
           "ds: pack.seed 9.0 is not an unsigned integer"},
          // 2^64: a JSON parser reads it as a float.
          {{{"\"seed\":18446744073709551615", "\"seed\":18446744073709551616"}},
           "ds: pack.seed 1.8446744073709552e+19 is not an unsigned integer"},
          {{{"\"shuffle\":true", "\"shuffle\":1"}}, "ds: pack.shuffle 1 is not true or false"},
          {{{"\"tool\":\"shardpack 0.1.0\"", "\"tool\":null"}},
           "ds: pack.tool null is not a string"},
          {{{"\"format\":\"shard\"", "\"format\":\"zip\""}},
           "ds: pack.format \"zip\" is not \"shard\", \"lmdb\" or \"hdf5\""},
          {{{"\"on_error\":\"fail\"", "\"on_error\":\"maybe\""}},
           "ds: pack.on_error \"maybe\" is not \"skip\" or \"fail\""},
          {{{"\"index\":2", "\"index\":0"}}, "ds: pack.part.index 0 is not in 1..3"},
          {{{"\"index\":2", "\"index\":4"}}, "ds: pack.part.index 4 is not in 1..3"},
          {{{"\"count\":3", "\"count\":4294967296"}},
           "ds: pack.part.count 4294967296 is not in 1..4294967295"},
          {{{"\"part\":{\"index\":2,\"count\":3}", "\"part\":[2,3]"}},
           "ds: pack.part [2,3] is not an object {index, count}"},
          {{{"\"count\":3}", "\"count\":3,\"of\":1}"}},
           "ds: pack.part has a key \"of\" that shardpack does not write"},
          {{{"\"fingerprint\":", "\"print\":"}}, "ds: pack.input has no fingerprint"},
          {{{"\"items\":30", "\"items\":\"30\""}},
           "ds: pack.input.items \"30\" is not an unsigned integer"},
          {{{"\"window_chunks\":128", "\"window_chunks\":-128"}},
           "ds: pack.order.window_chunks -128 is not an unsigned integer"},
          {{{"\"chunk_items\":512,", ""}}, "ds: pack.order has no chunk_items"},
          {{{"\"backend\":\"lmdb\"", "\"backend\":7"}},
           "ds: pack.converted_from[0].backend 7 is not \"shard\", \"lmdb\" or \"hdf5\""},
          {{{"\"pack\":{\"seed\":1}", "\"pack\":[1]"}},
           "ds: pack.converted_from[0].pack [1] is not an object"},
          {{{"\"converted_by\":\"shardpack 0.1.0\"", "\"converted_by\":{}"}},
           "ds: pack.converted_by {} is not a string"},
      };
  for (const auto& [edits, message] : cases) {
    std::string text = good;
    for (const auto& [from, to] : edits) {
      ASSERT_NE(text.find(from), std::string::npos) << from;
      text = absl::StrReplaceAll(text, {{from, to}});
    }
    EXPECT_THAT(PackIdentity::FromJson(text, "ds"),
                StatusIs(absl::StatusCode::kDataLoss, HasSubstr(message)))
        << text;
  }
}

TEST(PackIdentityTest, TextThatIsNoObjectOrNestedTooDeepIsRefused) {
  for (const char* text : {"[]", "3"}) {
    EXPECT_THAT(PackIdentity::FromJson(text, "ds/.shardpack-staging"),
                StatusIs(absl::StatusCode::kDataLoss,
                         HasSubstr("ds/.shardpack-staging: pack is not a JSON object")))
        << text;
  }
  for (const char* text : {"", "nul", "{\"seed\":1"}) {
    EXPECT_THAT(PackIdentity::FromJson(text, "ds/.shardpack-staging"),
                StatusIs(absl::StatusCode::kDataLoss,
                         HasSubstr("ds/.shardpack-staging: pack:1:")))
        << text;
  }
  // A marker is not held to a manifest's depth by ParseManifest.
  const std::string deep =
      "{\"x\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_THAT(PackIdentity::FromJson(deep, "m"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("m: pack: JSON nested more than 64")));
  const std::string merged_parts = R"({"merged":{"tool":"t","count":1,"parts":[{"index":1}]}})";
  EXPECT_THAT(PackIdentity::FromJson(merged_parts, "m"),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("m: pack.merged.parts[0] has no path")));
}

TEST(PackIdentityTest, ComparisonNamesTheFirstFieldThatDiffers) {
  const PackIdentity a = Full();
  EXPECT_EQ(FirstDifference(a, a), std::nullopt);
  PackIdentity b = a;
  b.seed = 9;
  auto d = FirstDifference(b, a);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->field, "seed");
  EXPECT_EQ(d->first, "9");
  EXPECT_EQ(d->second, "18446744073709551615");
  EXPECT_FALSE(a == b);
  b = a;
  b.order->window_chunks = 64;
  EXPECT_EQ(FirstDifference(b, a)->field, "order.window_chunks");
  // A key only one side has: the other side shows null.
  b = a;
  b.order.reset();
  d = FirstDifference(a, b);
  EXPECT_EQ(d->field, "order");
  EXPECT_EQ(d->second, "null");
  b = a;
  b.extra.erase("newer");
  EXPECT_EQ(FirstDifference(a, b)->field, "newer");
  // A key holding NUL is one key, not cut at the NUL.
  b = a;
  b.extra[std::string("x\0y", 3)] = 3;
  d = FirstDifference(b, a);
  EXPECT_EQ(d->field, std::string("x\0y", 3));
  EXPECT_EQ(d->first, "3");
}

// What a Writer adds: its job (compared as parts are) and its user's
// metadata, an object kept as it is.
TEST(PackIdentityTest, AWritersJobAndMetadataRoundTripAndCompare) {
  const std::string text =
      R"({"tool":"shardpack 0.1.0","part":{"index":1,"count":2},"format":"shard",)"
      R"("on_error":"fail","job":"run-1","metadata":{"license":"cc-by","n":[1,2]}})";
  SP_ASSERT_OK_AND_ASSIGN(PackIdentity p, PackIdentity::FromJson(text, "ds"));
  EXPECT_EQ(p.job, "run-1");
  EXPECT_EQ(p.metadata, PackJson::parse(R"({"license":"cc-by","n":[1,2]})"));
  EXPECT_TRUE(p.extra.empty());
  EXPECT_EQ(p.ToJson(), text);
  PackIdentity q = p;
  q.part = PackPart{2, 2};
  EXPECT_EQ(FirstDifference(q, p, PackComparison::kAsParts), std::nullopt);
  q.job = "run-2";
  EXPECT_EQ(FirstDifference(q, p, PackComparison::kAsParts)->field, "job");
  EXPECT_THAT(PackIdentity::FromJson(R"({"metadata":[1]})", "ds"),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("ds: pack.metadata [1] is not an object")));
  EXPECT_THAT(PackIdentity::FromJson(R"({"job":7})", "ds"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("ds: pack.job 7 is not a string")));
}

// Parts of one pack: equal but for "part", what convert added and where
// the source was mounted; anything else still differs.
TEST(PackIdentityTest, PartsCompareWithoutPartConversionAndSourcePaths) {
  const PackIdentity a = Full();
  PackIdentity b = a;
  b.part = PackPart{3, 3};
  b.converted_from.reset();
  b.converted_by.reset();
  (*b.source)["root"] = "/mnt/elsewhere";
  EXPECT_EQ(FirstDifference(b, a, PackComparison::kAsParts), std::nullopt);
  EXPECT_EQ(FirstDifference(b, a)->field, "source.root");
  b.part.reset();
  b.legacy_part = "3/3";
  EXPECT_EQ(FirstDifference(b, a, PackComparison::kAsParts), std::nullopt);
  (*b.source)["files"] = PackJson::array({"y"});
  EXPECT_EQ(FirstDifference(b, a, PackComparison::kAsParts)->field, "source.files");
  const PackIdentity whole = a.WithoutPart();
  EXPECT_FALSE(whole.part || whole.legacy_part || whole.converted_from || whole.converted_by);
  EXPECT_EQ(whole.seed, a.seed);
}

}  // namespace
}  // namespace shardpack::writer
