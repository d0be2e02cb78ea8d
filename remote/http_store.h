// The ObjectStore of s3:// and http(s):// URLs, on libcurl: range GETs
// written straight into the caller's buffers, up to max_in_flight at once
// per store, on keep-alive connections kept across calls; s3:// requests
// signed with SigV4 by libcurl (CURLOPT_AWS_SIGV4) when credentials are
// found (remote/aws_config.h), unsigned otherwise (public buckets).
//
// Retries, with exponential backoff (FetchOptions::backoff_s, doubling,
// jittered, at most 5 s) within FetchOptions::deadline_s of a request's
// first attempt: failed connects, timeouts, a transfer that moves no byte
// for stall_timeout_s, resets, bodies cut short (3 short bodies in a row are
// DataLossError), HTTP 5xx, 408 and 429
// (S3's 503 SlowDown included). Not retried: 404 (NotFoundError), 401/403
// (PermissionDeniedError, with S3's <Code> and, when no credentials were
// found, where they were looked for), 416 (DataLossError), other 3xx/4xx
// (InvalidArgumentError: a bucket in another region, a malformed request),
// a certificate that does not verify (UnavailableError naming the CA
// bundle). Every message names the object's URL ("s3://bucket/p/x.shard
// bytes 0-1023: ..."), the HTTP status and S3's <Code> when there is one.
//
// Threads: Get and Fetch may be called from several threads at once. Each
// call drives its own curl multi handle, taken from a pool of the store's
// and given back when it returns, so connections stay open across calls
// (kept by the pooled handle that made them; libcurl 7.88 cannot share a
// connection cache between threads safely); DNS answers and TLS sessions
// are shared by all. Transfers in flight are at most max_in_flight across
// all calls: a call with none in flight waits for a slot. A store may be
// used on both sides of a fork: a child process opens connections of its
// own and leaves the parent's alone.
//
// The environment, read once when the store is opened:
//   SHARDPACK_REMOTE_DEADLINE_S, SHARDPACK_REMOTE_CONNECT_TIMEOUT_S,
//   SHARDPACK_REMOTE_STALL_TIMEOUT_S, SHARDPACK_REMOTE_BACKOFF_S (seconds),
//   SHARDPACK_REMOTE_IN_FLIGHT (1..1024): override the FetchOptions given;
//   SHARDPACK_CA_BUNDLE, else AWS_CA_BUNDLE, else CURL_CA_BUNDLE, else
//   SSL_CERT_FILE: the CA certificates (PEM) that verify https servers;
//   none set: libcurl's default;
//   for s3://, the variables and files of remote/aws_config.h.
#ifndef SHARDPACK_REMOTE_HTTP_STORE_H_
#define SHARDPACK_REMOTE_HTTP_STORE_H_

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "remote/aws_config.h"
#include "remote/object_store.h"

namespace shardpack::remote {

// `options` with the SHARDPACK_REMOTE_* variables applied, every field
// checked: InvalidArgumentError naming the variable (or the field) for a
// value that is not a number, not positive (backoff_s may be 0) or out of
// range ("SHARDPACK_REMOTE_IN_FLIGHT=0: expected an integer in 1..1024").
absl::StatusOr<FetchOptions> ApplyFetchEnvironment(const FetchOptions& options,
                                                   EnvLookup getenv);

// A store for `url` (remote/url.h's rules) configured from `getenv`'s
// environment. Errors: the URL's, the configuration's (aws_config.h),
// ApplyFetchEnvironment's. Opening sends no request.
absl::StatusOr<std::unique_ptr<ObjectStore>> OpenHttpStore(std::string_view url,
                                                           const FetchOptions& options,
                                                           EnvLookup getenv);

}  // namespace shardpack::remote

#endif  // SHARDPACK_REMOTE_HTTP_STORE_H_
