// Credentials, region and endpoint for s3:// URLs, found the way the AWS
// CLI finds them (environment variables first, then the shared files):
//
//   credentials  AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
//                else the profile AWS_PROFILE (default "default") in
//                AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/credentials,
//                section [NAME]), then in AWS_CONFIG_FILE (default
//                ~/.aws/config, section [profile NAME], [default]);
//                else none: requests go unsigned (public buckets).
//   region       AWS_REGION, AWS_DEFAULT_REGION, the profile's `region`,
//                else us-east-1.
//   endpoint     AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's
//                `endpoint_url`, else AWS's own (virtual-hosted:
//                https://BUCKET.s3.REGION.amazonaws.com/KEY). A custom
//                endpoint is addressed path style: ENDPOINT/BUCKET/KEY.
//
// The files are parsed defensively: lines of any length, lines without
// '=', unknown keys and nested (indented) settings are ignored; a missing
// file is no error, an unreadable one is (naming it).
#ifndef SHARDPACK_REMOTE_AWS_CONFIG_H_
#define SHARDPACK_REMOTE_AWS_CONFIG_H_

#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"

namespace shardpack::remote {

// getenv(3)'s shape: the variable's value, or nullptr when unset. Tests
// pass a lookup into a map of their own.
using EnvLookup = absl::FunctionRef<const char*(const char*)>;

struct AwsConfig {
  // Empty access_key_id: no credentials, requests go unsigned.
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // "" when none
  // Where the credentials came from ("AWS_ACCESS_KEY_ID",
  // "/home/u/.aws/credentials [profile ci]"); when none were found, where
  // they were looked for, for the message of a refused request.
  std::string credentials_source;
  std::string region;    // [a-z0-9-]+
  std::string endpoint;  // "" for AWS's own; else "http(s)://host[:port][/path]", no final '/'
  std::string endpoint_source;  // the variable or file it came from

  bool has_credentials() const { return !access_key_id.empty(); }
};

// The configuration as `getenv` shows the environment. InvalidArgumentError
// naming the variable, file or profile for: a key id without a secret (or
// the reverse), AWS_PROFILE naming a profile in neither file, a region that
// is not [a-z0-9-]+, an endpoint that is not an http(s) URL; the error of
// ReadSmallFile for a file that exists but cannot be read.
absl::StatusOr<AwsConfig> LoadAwsConfig(EnvLookup getenv);

}  // namespace shardpack::remote

#endif  // SHARDPACK_REMOTE_AWS_CONFIG_H_
