#include "remote/aws_config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack::remote {
namespace {

using ::shardpack::testing::StatusIs;
using ::testing::HasSubstr;

// An environment of the test's own, HOME pointing into a temp dir.
class AwsConfigTest : public ::testing::Test {
 protected:
  AwsConfigTest() { env_["HOME"] = dir_.path().string(); }

  void Write(const std::string& rel, const std::string& text) {
    std::filesystem::create_directories((dir_.path() / rel).parent_path());
    std::ofstream(dir_.path() / rel) << text;
  }
  absl::StatusOr<AwsConfig> Load() {
    return LoadAwsConfig([this](const char* name) -> const char* {
      auto it = env_.find(name);
      return it == env_.end() ? nullptr : it->second.c_str();
    });
  }

  testing::TempDir dir_;
  std::map<std::string, std::string> env_;
};

TEST_F(AwsConfigTest, NothingAnywhereMeansUnsignedInUsEast1) {
  SP_ASSERT_OK_AND_ASSIGN(AwsConfig c, Load());
  EXPECT_FALSE(c.has_credentials());
  EXPECT_EQ(c.region, "us-east-1");
  EXPECT_EQ(c.endpoint, "");
  EXPECT_THAT(c.credentials_source, HasSubstr("AWS_ACCESS_KEY_ID"));
  EXPECT_THAT(c.credentials_source, HasSubstr(".aws/credentials [default]"));
}

TEST_F(AwsConfigTest, EnvironmentWinsOverFiles) {
  Write(".aws/credentials", "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = S\n");
  Write(".aws/config", "[default]\nregion = eu-west-1\nendpoint_url = http://file:1\n");
  env_["AWS_ACCESS_KEY_ID"] = "ENVKEY";
  env_["AWS_SECRET_ACCESS_KEY"] = "ENVSECRET";
  env_["AWS_SESSION_TOKEN"] = "TOKEN";
  env_["AWS_DEFAULT_REGION"] = "ap-south-1";
  env_["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9000/";
  SP_ASSERT_OK_AND_ASSIGN(AwsConfig c, Load());
  EXPECT_EQ(c.access_key_id, "ENVKEY");
  EXPECT_EQ(c.secret_access_key, "ENVSECRET");
  EXPECT_EQ(c.session_token, "TOKEN");
  EXPECT_EQ(c.region, "ap-south-1");
  EXPECT_EQ(c.endpoint, "http://127.0.0.1:9000");
  env_["AWS_REGION"] = "us-west-2";
  env_["AWS_ENDPOINT_URL_S3"] = "https://s3.lan";
  SP_ASSERT_OK_AND_ASSIGN(c, Load());
  EXPECT_EQ(c.region, "us-west-2");
  EXPECT_EQ(c.endpoint, "https://s3.lan");
  EXPECT_EQ(c.endpoint_source, "AWS_ENDPOINT_URL_S3");
}

TEST_F(AwsConfigTest, ProfileFromBothFiles) {
  Write(".aws/credentials",
        "[default]\naws_access_key_id=D\naws_secret_access_key=DS\n"
        "[ci]\n# a comment\n; another\naws_access_key_id = CIKEY \n"
        "AWS_SECRET_ACCESS_KEY=CISECRET\nunknown_key = 1\nno equals sign here\n");
  Write(".aws/config",
        "[profile ci]\nregion = eu-central-1\ns3 =\n  endpoint_url = http://nested:1\n"
        "endpoint_url = http://minio.lan:9000\n[default]\nregion = us-west-1\n");
  env_["AWS_PROFILE"] = "ci";
  SP_ASSERT_OK_AND_ASSIGN(AwsConfig c, Load());
  EXPECT_EQ(c.access_key_id, "CIKEY");
  EXPECT_EQ(c.secret_access_key, "CISECRET");
  EXPECT_EQ(c.region, "eu-central-1");
  EXPECT_EQ(c.endpoint, "http://minio.lan:9000");
  EXPECT_THAT(c.credentials_source, HasSubstr(".aws/credentials [ci]"));
}

TEST_F(AwsConfigTest, TheDefaultProfileMayBeSpelledAsAnyOther) {
  Write(".aws/config", "[profile default]\nregion = sa-east-1\n");
  SP_ASSERT_OK_AND_ASSIGN(AwsConfig c, Load());
  EXPECT_EQ(c.region, "sa-east-1");
}

TEST_F(AwsConfigTest, CredentialsInTheConfigFileAndCustomPaths) {
  Write("elsewhere/conf", "[profile p]\naws_access_key_id=K\naws_secret_access_key=S\n"
                          "aws_session_token=T\n");
  env_["AWS_CONFIG_FILE"] = dir_.Join("elsewhere/conf");
  env_["AWS_SHARED_CREDENTIALS_FILE"] = dir_.Join("missing");
  env_["AWS_PROFILE"] = "p";
  SP_ASSERT_OK_AND_ASSIGN(AwsConfig c, Load());
  EXPECT_EQ(c.access_key_id, "K");
  EXPECT_EQ(c.session_token, "T");
  EXPECT_THAT(c.credentials_source, HasSubstr("elsewhere/conf [profile p]"));
}

TEST_F(AwsConfigTest, HugeLinesAndBinaryJunkAreHarmless) {
  Write(".aws/credentials", std::string(1 << 20, 'x') + "\n[default]\n" +
                                std::string("\0\x01=\xff\n", 5) +
                                "aws_access_key_id=K\naws_secret_access_key=" +
                                std::string(100000, 's') + "\n[");
  SP_ASSERT_OK_AND_ASSIGN(AwsConfig c, Load());
  EXPECT_EQ(c.access_key_id, "K");
  EXPECT_EQ(c.secret_access_key.size(), 100000u);
}

TEST_F(AwsConfigTest, BadSettingsAreErrorsNamingWhere) {
  env_["AWS_ACCESS_KEY_ID"] = "K";
  EXPECT_THAT(Load(), StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("AWS_SECRET_ACCESS_KEY is not")));
  env_.erase("AWS_ACCESS_KEY_ID");
  Write(".aws/credentials", "[default]\naws_access_key_id=K\n");
  EXPECT_THAT(Load(), StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr(".aws/credentials [default]: has aws_access_key_id "
                                         "without aws_secret_access_key")));
  Write(".aws/credentials", "");
  env_["AWS_PROFILE"] = "nope";
  EXPECT_THAT(Load(), StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("AWS_PROFILE: no profile \"nope\"")));
  env_.erase("AWS_PROFILE");
  env_["AWS_REGION"] = "us-east-1:evil";
  EXPECT_THAT(Load(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("AWS_REGION")));
  env_.erase("AWS_REGION");
  env_["AWS_ENDPOINT_URL"] = "http://u@host";
  EXPECT_THAT(Load(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("AWS_ENDPOINT_URL")));
}

// An endpoint with a password or a signed query is refused, and the
// message names where it came from without the secret; the keys and the
// token themselves are never in a message.
TEST_F(AwsConfigTest, AnEndpointsSecretIsNeverInTheError) {
  env_["AWS_ACCESS_KEY_ID"] = "AKIDKEY";
  env_["AWS_SECRET_ACCESS_KEY"] = "SECRETKEY";
  env_["AWS_SESSION_TOKEN"] = "SECRETTOKEN";
  env_["AWS_ENDPOINT_URL"] = "http://minio:SECRETPW@127.0.0.1:9000/?sig=SECRETSIG";
  absl::StatusOr<AwsConfig> c = Load();
  EXPECT_THAT(c, StatusIs(absl::StatusCode::kInvalidArgument,
                          HasSubstr("AWS_ENDPOINT_URL: http://***@127.0.0.1:9000/")));
  EXPECT_THAT(c.status().message(), ::testing::Not(HasSubstr("SECRET")));
  env_.erase("AWS_ENDPOINT_URL");
  Write("elsewhere/conf", "[default]\nendpoint_url = https://minio:SECRETPW@minio.lan/s3#SECRET\n");
  env_["AWS_CONFIG_FILE"] = dir_.Join("elsewhere/conf");
  c = Load();
  EXPECT_THAT(c, StatusIs(absl::StatusCode::kInvalidArgument,
                          HasSubstr("elsewhere/conf [default]: https://***@minio.lan/s3")));
  EXPECT_THAT(c.status().message(), ::testing::Not(HasSubstr("SECRET")));
}

TEST_F(AwsConfigTest, AnUnreadableFileIsAnErrorNamingIt) {
  if (geteuid() == 0) {
    // root reads a mode-000 file: use a directory in its place instead.
    std::filesystem::create_directories(dir_.path() / ".aws/credentials");
  } else {
    Write(".aws/credentials", "[default]\n");
    chmod(dir_.Join(".aws/credentials").c_str(), 0);
  }
  const absl::Status status = Load().status();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr(".aws/credentials"));
}

}  // namespace
}  // namespace shardpack::remote
