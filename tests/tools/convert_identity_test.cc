// convert and the pack identity (writer/pack_identity.h): what a conversion
// records of its input's "pack" object, and an input whose object is
// damaged, refused before anything is written.
#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/dataset.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tools/pack/pack.h"
#include "writer/pack_identity.h"

namespace shardpack::pack {
namespace {

using ::testing::HasSubstr;
using testing::StatusIs;
using writer::PackIdentity;
using writer::PackJson;

// A dataset of no records whose "pack" is `pack_json`, at `dir`.
void WriteEmptyDataset(const std::string& dir, const std::string& pack_json) {
  std::filesystem::create_directories(dir);
  DatasetWriterOptions o;
  o.directory = dir;
  o.schema.image = {Encoding::kRaw, Layout::kHWC, 2, 2, 1};
  o.pack_json = pack_json;
  auto writer = DatasetWriter::Create(o);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Finish().ok());
}

// convert carries its input's identity, foreign keys included, and refuses
// an input whose identity is damaged before it writes anything.
TEST(PackIdentityTest, ConvertKeepsForeignKeysAndRefusesADamagedPack) {
  testing::TempDir dir;
  WriteEmptyDataset(dir.Join("mine"), R"({"test":true,"seed":3})");
  ConvertOptions o;
  o.output = dir.Join("out");
  o.quiet = true;
  SP_ASSERT_OK_AND_ASSIGN(Manifest m, Convert({dir.Join("mine")}, o));
  SP_ASSERT_OK_AND_ASSIGN(PackIdentity p, PackIdentity::FromJson(m.pack_json, "out"));
  EXPECT_EQ(p.seed, 3u);
  EXPECT_EQ(p.extra, PackJson::parse(R"({"test":true})"));
  ASSERT_TRUE(p.converted_from.has_value());
  EXPECT_EQ(p.converted_from->at(0).pack, PackJson::parse(R"({"seed":3,"test":true})"));
  WriteEmptyDataset(dir.Join("bad"), R"({"seed":"seven"})");
  o.output = dir.Join("out2");
  EXPECT_THAT(Convert({dir.Join("bad")}, o),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr(dir.Join("bad") + ": pack.seed \"seven\" is not an unsigned")));
  EXPECT_FALSE(std::filesystem::exists(dir.Join("out2")));
  EXPECT_FALSE(std::filesystem::exists(dir.Join("out2.partial")));
}

}  // namespace
}  // namespace shardpack::pack
