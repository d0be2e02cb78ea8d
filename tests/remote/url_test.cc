#include "remote/url.h"

#include <string>

#include "gmock/gmock.h"
#include "common/redact.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace shardpack::remote {
namespace {

using ::shardpack::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(DatasetUrl, S3IsNormalizedWithAFinalSlash) {
  SP_ASSERT_OK_AND_ASSIGN(DatasetUrl u, ParseDatasetUrl("s3://my-bucket/train/cifar"));
  EXPECT_EQ(u.scheme, UrlScheme::kS3);
  EXPECT_EQ(u.bucket, "my-bucket");
  EXPECT_EQ(u.prefix, "train/cifar/");
  EXPECT_EQ(u.url, "s3://my-bucket/train/cifar/");
  SP_ASSERT_OK_AND_ASSIGN(DatasetUrl again, ParseDatasetUrl("s3://my-bucket/train/cifar/"));
  EXPECT_EQ(again.url, u.url);
  SP_ASSERT_OK_AND_ASSIGN(DatasetUrl bare, ParseDatasetUrl("S3://my.bucket"));
  EXPECT_EQ(bare.prefix, "");
  EXPECT_EQ(bare.url, "s3://my.bucket/");
  SP_ASSERT_OK_AND_ASSIGN(DatasetUrl spaced, ParseDatasetUrl("s3://bucket/my data+x"));
  EXPECT_EQ(spaced.prefix, "my data+x/");
}

TEST(DatasetUrl, HttpKeepsOriginAndPath) {
  SP_ASSERT_OK_AND_ASSIGN(DatasetUrl u, ParseDatasetUrl("HTTPS://Data.Example.com:8443/a/b%20c"));
  EXPECT_EQ(u.scheme, UrlScheme::kHttps);
  EXPECT_EQ(u.origin, "https://data.example.com:8443");
  EXPECT_EQ(u.path, "/a/b%20c/");
  EXPECT_EQ(u.url, "https://data.example.com:8443/a/b%20c/");
  SP_ASSERT_OK_AND_ASSIGN(DatasetUrl root, ParseDatasetUrl("http://127.0.0.1:9000"));
  EXPECT_EQ(root.url, "http://127.0.0.1:9000/");
  SP_ASSERT_OK_AND_ASSIGN(DatasetUrl v6, ParseDatasetUrl("http://[::1]:8080/d"));
  EXPECT_EQ(v6.origin, "http://[::1]:8080");
}

TEST(DatasetUrl, HostileUrlsAreRefusedNamingThem) {
  const char* bad[][2] = {
      {"s3:///prefix", "no bucket name"},
      {"s3://ab/x", "3 to 63"},
      {"s3://My_Bucket/x", "a-z, 0-9"},
      {"s3://-bucket/x", "starts and ends"},
      {"s3://bucket/a/../b", "'..'"},
      {"s3://bucket/a/./b", "'..'"},
      {"s3://bucket/a\tb", "control character"},
      {"s3://bucket/a?b", "query or fragment"},
      {"https://user:pw@host/x", "credentials in the URL"},
      {"https://host/a/%2e%2E/b", "'..'"},
      {"https://host/a\n/b", "control character"},
      {"https://host/a b", "space"},
      {"https://host/a?x=1", "query or fragment"},
      {"https://host/a#frag", "query or fragment"},
      {"https:///path", "no host"},
      {"https://host:0/x", "port outside"},
      {"https://host:65536/x", "port outside"},
      {"https://host:80a/x", "port outside"},
      {"https://ho_st/x", "in the host"},
      {"https://host/%zz", "two hex digits"},
      {"https://host/\xc3\xa9", "percent-encode"},
      {"ftp://host/x", "not a URL of"},
      {"", "not a URL of"},
  };
  for (const auto& [url, why] : bad) {
    EXPECT_THAT(ParseDatasetUrl(url),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         ::testing::AllOf(HasSubstr(why),
                                          HasSubstr(std::string(url).substr(0, 8)))))
        << url;
  }
}

TEST(DatasetUrl, EndpointsDropTheFinalSlashAndNameTheirSource) {
  SP_ASSERT_OK_AND_ASSIGN(std::string e, ParseEndpoint("http://127.0.0.1:9000/", "X"));
  EXPECT_EQ(e, "http://127.0.0.1:9000");
  EXPECT_THAT(ParseEndpoint("s3://bucket", "AWS_ENDPOINT_URL"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("AWS_ENDPOINT_URL: s3://")));
  EXPECT_THAT(ParseEndpoint("http://h:99999", "AWS_ENDPOINT_URL_S3"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("AWS_ENDPOINT_URL_S3")));
}

TEST(RedactUrl, KeepsSchemeHostPortAndPathHidesTheRest) {
  const char* cases[][2] = {
      {"https://user:SECRET@host:8443/d/x", "https://***@host:8443/d/x"},
      {"https://user@host/d/", "https://***@host/d/"},
      {"https://u:p@ss@host/d/", "https://***@host/d/"},
      {"http://127.0.0.1:9/d/?X-Amz-Signature=SECRET&X-Amz-Credential=AKIA%2F",
       "http://127.0.0.1:9/d/?X-Amz-Signature=***&X-Amz-Credential=***"},
      {"https://host/d?SECRET", "https://host/d?***"},
      {"https://host/d#SECRET", "https://host/d#***"},
      {"https://host/d?a=1#SECRET", "https://host/d?a=***#***"},
      {"s3://bucket/p/?X-Amz-Security-Token=SECRET", "s3://bucket/p/?X-Amz-Security-Token=***"},
      {"HTTPS://user:SECRET@Host/x", "HTTPS://***@Host/x"},
      {"https://user:SE/CRET@host/x", "https://***@host/x"},
      {"https://user:SECRET?@host/x", "https://user:***?***"},
      {"http://[::1]:8080/d/", "http://[::1]:8080/d/"},
      {"http://u:SECRET@[::1]:8080/d/", "http://***@[::1]:8080/d/"},
      {"https://host/a@b/", "https://host/a@b/"},
      {"s3://bucket/prefix/", "s3://bucket/prefix/"},
      {"/data/a?b#c@d", "/data/a?b#c@d"},
      {"relative/dir", "relative/dir"},
      {"", ""},
  };
  for (const auto& [url, shown] : cases) EXPECT_EQ(common::RedactUrl(url), shown) << url;
}

TEST(RedactUrl, UrlsInsideAMessageAreRedactedWhereverTheyAre) {
  EXPECT_EQ(common::RedactUrls("open https://u:SECRET@h/x/manifest.json: not found (https://h/y)"),
            "open https://***@h/x/manifest.json: not found (https://h/y)");
  EXPECT_EQ(common::RedactUrls("a: https://h/x?sig=SECRET: 404; b 's3://b/c#SECRET'"),
            "a: https://h/x?sig=***: 404; b 's3://b/c#***'");
  EXPECT_EQ(common::RedactUrls("no url here: a://, ://x, x @1048576"),
            "no url here: a://, ://x, x @1048576");
  EXPECT_EQ(common::RedactUrls("x.shard @5: crc"), "x.shard @5: crc");
}

TEST(RedactUrl, LooksLikeUrlIsAnySchemeAnyCase) {
  for (const char* url : {"s3://b", "HTTP://x", "gs://b/x", "hdfs+x://h", "a://"}) {
    EXPECT_TRUE(common::LooksLikeUrl(url)) << url;
  }
  for (const char* path : {"", "/abs/s3://x", "s3:/x", "3s://x", "./http://x", "s3", "c:\\x"}) {
    EXPECT_FALSE(common::LooksLikeUrl(path)) << path;
  }
}

// A URL's password, signature or token is what these errors refuse, and
// they must not show it: a message lands in terminals, logs and tickets.
TEST(DatasetUrl, RefusedUrlsNeverShowTheirSecret) {
  for (const char* url :
       {"https://user:SECRET@host/x", "https://SECRET@host/x", "https://user:SE/CRET@host/x",
        "http://127.0.0.1:9/x?X-Amz-Signature=SECRET", "https://host/x#SECRET",
        "s3://bucket/a?X-Amz-Credential=SECRET", "https://user:SECRET@ho_st:99999/x",
        "https://user:SECRET@host/a b", "https://user:SECRET@host/a/../b"}) {
    const absl::StatusOr<DatasetUrl> parsed = ParseDatasetUrl(url);
    ASSERT_FALSE(parsed.ok()) << url;
    EXPECT_THAT(parsed.status().message(), Not(HasSubstr("SECRET"))) << url;
    EXPECT_THAT(parsed.status().message(), Not(HasSubstr("CRET"))) << url;
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("://")) << url;
  }
  const absl::StatusOr<std::string> endpoint =
      ParseEndpoint("http://minio:SECRET@127.0.0.1:9000", "AWS_ENDPOINT_URL");
  EXPECT_THAT(endpoint, StatusIs(absl::StatusCode::kInvalidArgument,
                                 ::testing::AllOf(HasSubstr("AWS_ENDPOINT_URL: http://***@127.0.0.1:9000"),
                                                  Not(HasSubstr("SECRET")))));
}

TEST(DatasetUrl, AnAcceptedUrlIsItsOwnDisplayForm) {
  for (const char* url : {"s3://bucket/p", "https://Host:8443/a/b%20c", "http://[::1]:9/d@v2"}) {
    SP_ASSERT_OK_AND_ASSIGN(DatasetUrl u, ParseDatasetUrl(url));
    EXPECT_EQ(common::RedactUrl(u.url), u.url);
  }
}

TEST(DatasetUrl, ObjectNamesThatWouldReachAnotherObjectAreRefused) {
  SP_EXPECT_OK(CheckObjectName("shard-00000.shard", "s3://b/p/shard-00000.shard"));
  SP_EXPECT_OK(CheckObjectName("sub/dir/x..y", "u"));
  for (const char* name : {"", "/etc/passwd", "../other/x", "a/./b", "a/%2e%2e/b", "a\nb"}) {
    EXPECT_THAT(CheckObjectName(name, std::string("s3://b/p/") + name),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("s3://b/p/")))
        << name;
  }
}

TEST(DatasetUrl, KeysArePercentEncodedAsS3Wants) {
  std::string out = "x/";
  AppendEncodedKey("a b/c+d~e_f.g-h%/\xff", &out);
  EXPECT_EQ(out, "x/a%20b/c%2Bd~e_f.g-h%25/%FF");
}

}  // namespace
}  // namespace shardpack::remote
