// An object store seen as a dataset: the objects under one URL prefix
// (`s3://bucket/prefix/` or `https://host/path/`), fetched whole (the
// manifest) or by byte ranges (shard blocks), several in flight on
// keep-alive connections, retried with backoff within a deadline.
//
// Everything above this interface (the verified block cache, the remote
// files the format code reads through) sees only ObjectStore, so the tests
// of those layers hand it a store in memory with faults of their choosing.
#ifndef SHARDPACK_REMOTE_OBJECT_STORE_H_
#define SHARDPACK_REMOTE_OBJECT_STORE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shardpack::remote {

// Whether `path` is a URL this layer serves: it begins with "s3://",
// "https://" or "http://" (the last for servers on loopback and behind
// proxies). Any other path is a local path.
bool IsUrl(std::string_view path);

// How requests are made. Every field can be set from the environment
// (remote/http_store.h says which variables).
struct FetchOptions {
  // A request, its retries included, gives up after this long.
  double deadline_s = 120;
  // Connecting gives up after this long (then retried within the deadline).
  double connect_timeout_s = 10;
  // A transfer that moves no byte for this long is cut (then retried).
  double stall_timeout_s = 15;
  // Requests in flight at once, per store.
  int max_in_flight = 16;
  // The first retry waits about this long; each later one doubles it (with
  // jitter), up to 5 s.
  double backoff_s = 0.05;
};

// One byte range of one object. Fetch fills dst and sets status.
struct RangeRequest {
  std::string_view object;  // relative to the store's URL, e.g. "shard-00000.shard"
  uint64_t offset = 0;
  std::span<uint8_t> dst;   // exactly dst.size() bytes are wanted
  absl::Status status;      // set by Fetch
  // Set by Fetch when the answer says it (an HTTP 206's Content-Range
  // total): the object's whole size. -1 otherwise.
  int64_t object_size = -1;
};

// What a store did, for stats and benchmarks.
struct StoreStats {
  uint64_t requests = 0;  // HTTP requests sent, retries included
  uint64_t bytes = 0;     // body bytes received
  uint64_t retries = 0;   // requests that were retries
};

// Told once of each request of a call (each read of a batch) as soon as
// it is final, with its index: a caller uses the first while the others
// are still in flight.
struct EachDone {
  void (*fn)(void* context, size_t index) = nullptr;
  void* context = nullptr;
  void operator()(size_t index) const {
    if (fn != nullptr) fn(context, index);
  }
};

// The errors, each naming the object's full URL:
//  - NotFoundError: no such object (HTTP 404, S3 NoSuchKey / NoSuchBucket);
//  - PermissionDeniedError: refused (401, 403): missing, expired or wrong
//    credentials, with the S3 error code when the body has one;
//  - DataLossError: the object is shorter than the range asked for (416, or
//    a body that stays short after its retries);
//  - UnavailableError: timeouts, resets, 5xx and throttling (429, 503
//    SlowDown) that outlasted the deadline, with the attempts and the last
//    cause;
//  - InvalidArgumentError: a URL or configuration that cannot be used.
//
// Thread-safe: Get and Fetch may be called from several threads at once.
class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // The store's URL, ending in '/': objects are named relative to it. It
  // holds no secret (remote/url.h refuses userinfo, a query and a
  // fragment), so messages quote it and UrlOf as they are; the credentials
  // never leave the request.
  virtual const std::string& url() const = 0;
  std::string UrlOf(std::string_view object) const { return url() + std::string(object); }

  // A whole object of at most `max_bytes` bytes (a larger one is an
  // InvalidArgumentError naming the URL and both sizes).
  virtual absl::StatusOr<std::string> Get(std::string_view object, uint64_t max_bytes) = 0;

  // Every request's range, up to FetchOptions::max_in_flight at once;
  // returns when all are done, each with its own status, having told
  // `done` of each as it became final.
  virtual void Fetch(std::span<RangeRequest> requests, EachDone done) = 0;
  void Fetch(std::span<RangeRequest> requests) { Fetch(requests, {}); }

  virtual StoreStats stats() const = 0;
};

// A store for `url` ("s3://bucket/prefix" or "http(s)://host/path", with or
// without the final '/'), configured from the environment (credentials,
// region, endpoint, CA bundle: remote/http_store.h).
absl::StatusOr<std::unique_ptr<ObjectStore>> OpenObjectStore(std::string_view url,
                                                             const FetchOptions& options);

}  // namespace shardpack::remote

#endif  // SHARDPACK_REMOTE_OBJECT_STORE_H_
