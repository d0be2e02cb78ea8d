// One libcurl easy handle and the request it serves: how a request is set
// up, where its body goes (straight into the caller's buffer), and what its
// outcome means (done, retry, or a final error). Internal to HttpStore:
// a Transfer is used by one thread at a time, and reused request after
// request so that its buffers and its connection are kept.
#ifndef SHARDPACK_REMOTE_HTTP_TRANSFER_H_
#define SHARDPACK_REMOTE_HTTP_TRANSFER_H_

#include <curl/curl.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"

namespace shardpack::remote {

// What every transfer of one store shares (owned by the store, read-only
// while transfers run).
struct TransferConfig {
  std::string ca_bundle;       // "" for libcurl's default
  std::string sigv4;           // "aws:amz:REGION:s3", "" for unsigned
  std::string user, password;  // the access key id and secret
  curl_slist* headers = nullptr;
  CURLSH* share = nullptr;
  long connect_timeout_ms = 10000;
  long stall_timeout_s = 15;
  bool has_credentials = true;      // false: a 401/403 says where they were looked for
  std::string credentials_searched;
};

// One request: a range into `dst` (whole == nullptr) or a whole object
// into *whole (at most max_bytes).
struct TransferJob {
  std::string_view object;
  uint64_t offset = 0;
  std::span<uint8_t> dst;
  std::string* whole = nullptr;
  uint64_t max_bytes = 0;
};

// How an attempt ended.
struct Verdict {
  enum Kind { kDone, kRetry, kFinal } kind = kDone;
  absl::Status status;  // kFinal: the error (message without the URL prefix)
  std::string cause;    // kRetry: why, for the message when retries run out
  bool short_body = false;  // kRetry: the body was short (DataLoss when out of retries)

  static Verdict Final(absl::Status s) { return {kFinal, std::move(s), "", false}; }
  static Verdict Retry(std::string why, bool short_body = false) {
    return {kRetry, absl::OkStatus(), std::move(why), short_body};
  }
};

class Transfer {
 public:
  explicit Transfer(const TransferConfig& config);
  ~Transfer();
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  CURL* easy() const { return easy_; }

  // Sets the handle up for one attempt of `job` at `url` (copied by
  // libcurl), cut after timeout_ms in all.
  void Prepare(const TransferJob& job, const std::string& url, long timeout_ms);

  // What the attempt that ended with `code` means.
  Verdict Judge(CURLcode code) const;

  uint64_t body_bytes() const { return got_; }
  // The object's whole size, when the answer's Content-Range said it; -1
  // otherwise.
  int64_t object_size() const { return range_total_; }

  // The index of the request this transfer serves, for its owner.
  size_t request = 0;

 private:
  static size_t OnHeader(char* data, size_t size, size_t n, void* self);
  static size_t OnBody(char* data, size_t size, size_t n, void* self);
  size_t TakeBody(const char* data, size_t bytes);
  Verdict JudgeCurl(CURLcode code) const;
  Verdict JudgeHttp() const;
  Verdict JudgeBody() const;
  std::string HttpCause() const;

  const TransferConfig& config_;
  CURL* easy_;
  char error_[CURL_ERROR_SIZE];
  TransferJob job_;
  char range_[48];
  // What the answer said so far.
  long status_ = 0;
  int64_t content_length_ = -1;
  int64_t range_first_ = -1;  // Content-Range: bytes FIRST-LAST/TOTAL
  int64_t range_total_ = -1;
  uint64_t got_ = 0;
  bool overflow_ = false;       // more body than asked for
  bool ignored_range_ = false;  // a 200 answer (the whole object) to another range
  std::string error_body_;      // the start of a non-2xx body (S3's XML)
  std::string bucket_region_;   // x-amz-bucket-region of a redirect
};

}  // namespace shardpack::remote

#endif  // SHARDPACK_REMOTE_HTTP_TRANSFER_H_
