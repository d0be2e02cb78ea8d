// A dataset's URL, parsed and checked: `s3://bucket/prefix/` or
// `http(s)://host[:port]/path/`. Everything a request URL is built from
// passes through here, so a hostile URL (userinfo, '..' segments, control
// characters, a query) is refused once, with an error naming it.
#ifndef SHARDPACK_REMOTE_URL_H_
#define SHARDPACK_REMOTE_URL_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace shardpack::remote {

enum class UrlScheme { kS3, kHttp, kHttps };

struct DatasetUrl {
  UrlScheme scheme = UrlScheme::kS3;
  // The URL as given, normalized: scheme and host in lower case, ending in
  // '/' ("s3://bucket/prefix/", "https://host:8443/data/"). It holds no
  // secret (userinfo, a query and a fragment are refused), so it is also
  // the URL every later message shows.
  std::string url;
  // s3:// only: the bucket and the key prefix ("" or ending in '/'), taken
  // literally (S3 keys are not percent-decoded).
  std::string bucket;
  std::string prefix;
  // http(s):// only: "scheme://host[:port]" (no trailing '/') and the path,
  // beginning and ending in '/', as it will be sent (already URL-encoded).
  std::string origin;
  std::string path;
};

// Parses `url` ("s3://bucket/prefix", "https://host/path", with or without
// the final '/'). InvalidArgumentError "<url>: <why>", the URL shown
// through common::RedactUrl (never a password or signature), for: another scheme,
// an empty or malformed bucket (S3's rules: 3 to 63 of [a-z0-9.-], starting
// and ending with a letter or digit), userinfo ('@'), a missing host, a port
// outside 1..65535, a '.' or '..' segment (also percent-encoded), control
// characters, a query ('?') or a fragment ('#'), a space in an http(s) URL
// (an S3 key prefix may hold spaces: it is taken literally).
absl::StatusOr<DatasetUrl> ParseDatasetUrl(std::string_view url);

// Parses an endpoint ("http://127.0.0.1:9000", "https://minio.lan/s3/"):
// the same rules as an http(s) dataset URL; returns it without the final
// '/'. `what` names where it came from in errors ("AWS_ENDPOINT_URL").
absl::StatusOr<std::string> ParseEndpoint(std::string_view endpoint, std::string_view what);

// OK when `name` can name an object under a dataset URL: not empty, no
// leading '/', no '.' or '..' segment (libcurl would fold them away and
// reach another object), no control character. InvalidArgumentError
// "<full_url>: <why>" otherwise.
absl::Status CheckObjectName(std::string_view name, std::string_view full_url);

// Appends `key` to `out` percent-encoded as S3 (SigV4's UriEncode) wants it
// in a path: the unreserved characters A-Z a-z 0-9 - . _ ~ and '/' as they
// are, every other byte as %XX (upper-case hex).
void AppendEncodedKey(std::string_view key, std::string* out);

}  // namespace shardpack::remote

#endif  // SHARDPACK_REMOTE_URL_H_
