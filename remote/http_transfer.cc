#include "remote/http_transfer.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/errors.h"

namespace shardpack::remote {
namespace {

// The most of an error body kept: S3's XML errors are a few hundred bytes.
constexpr size_t kErrorBodyBytes = 4096;

// libcurl's receive buffer: large ranges arrive in fewer callbacks.
constexpr long kReceiveBuffer = 256 * 1024;

// The text between <tag> and </tag> in an S3 error body, "" when absent.
std::string XmlField(std::string_view body, std::string_view tag) {
  const std::string open = absl::StrCat("<", common::AsAbsl(tag), ">");
  const std::string close = absl::StrCat("</", common::AsAbsl(tag), ">");
  const size_t a = body.find(open);
  if (a == std::string_view::npos) return "";
  const size_t b = body.find(close, a + open.size());
  if (b == std::string_view::npos) return "";
  return common::Excerpt(body.substr(a + open.size(), b - a - open.size()), 200);
}

bool StartsWithNoCase(std::string_view line, std::string_view prefix) {
  return line.size() >= prefix.size() &&
         absl::EqualsIgnoreCase(common::AsAbsl(line.substr(0, prefix.size())),
                                common::AsAbsl(prefix));
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int64_t ParseInt(std::string_view s) {
  int64_t v = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() ? v : -1;
}

}  // namespace

Transfer::Transfer(const TransferConfig& config) : config_(config), easy_(curl_easy_init()) {
  error_[0] = '\0';
  error_body_.reserve(kErrorBodyBytes);
  curl_easy_setopt(easy_, CURLOPT_PRIVATE, this);
  curl_easy_setopt(easy_, CURLOPT_ERRORBUFFER, error_);
  curl_easy_setopt(easy_, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy_, CURLOPT_PROTOCOLS_STR, "http,https");  // and no redirects
  curl_easy_setopt(easy_, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(easy_, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(easy_, CURLOPT_BUFFERSIZE, kReceiveBuffer);
  curl_easy_setopt(easy_, CURLOPT_HEADERFUNCTION, &Transfer::OnHeader);
  curl_easy_setopt(easy_, CURLOPT_HEADERDATA, this);
  curl_easy_setopt(easy_, CURLOPT_WRITEFUNCTION, &Transfer::OnBody);
  curl_easy_setopt(easy_, CURLOPT_WRITEDATA, this);
  curl_easy_setopt(easy_, CURLOPT_CONNECTTIMEOUT_MS, config.connect_timeout_ms);
  // A transfer moving under 1 byte/s for stall_timeout_s is cut.
  curl_easy_setopt(easy_, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(easy_, CURLOPT_LOW_SPEED_TIME, config.stall_timeout_s);
  if (config.share != nullptr) curl_easy_setopt(easy_, CURLOPT_SHARE, config.share);
  if (!config.ca_bundle.empty()) curl_easy_setopt(easy_, CURLOPT_CAINFO, config.ca_bundle.c_str());
  if (config.headers != nullptr) curl_easy_setopt(easy_, CURLOPT_HTTPHEADER, config.headers);
  if (!config.sigv4.empty()) {
    curl_easy_setopt(easy_, CURLOPT_AWS_SIGV4, config.sigv4.c_str());
    curl_easy_setopt(easy_, CURLOPT_USERNAME, config.user.c_str());
    curl_easy_setopt(easy_, CURLOPT_PASSWORD, config.password.c_str());
  }
}

Transfer::~Transfer() { curl_easy_cleanup(easy_); }

void Transfer::Prepare(const TransferJob& job, const std::string& url, long timeout_ms) {
  job_ = job;
  status_ = 0;
  content_length_ = range_first_ = range_total_ = -1;
  got_ = 0;
  overflow_ = ignored_range_ = false;
  error_body_.clear();
  bucket_region_.clear();
  error_[0] = '\0';
  curl_easy_setopt(easy_, CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy_, CURLOPT_TIMEOUT_MS, std::max(timeout_ms, 1L));
  if (job.whole != nullptr) {
    job.whole->clear();
    curl_easy_setopt(easy_, CURLOPT_RANGE, nullptr);
    return;
  }
  std::snprintf(range_, sizeof range_, "%llu-%llu", static_cast<unsigned long long>(job.offset),
                static_cast<unsigned long long>(job.offset + job.dst.size() - 1));
  curl_easy_setopt(easy_, CURLOPT_RANGE, range_);
}

size_t Transfer::OnHeader(char* data, size_t size, size_t n, void* self) {
  auto* t = static_cast<Transfer*>(self);
  std::string_view line(data, size * n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.starts_with("HTTP/")) {  // a new answer (after a 100 Continue, a fresh one)
    const size_t sp = line.find(' ');
    t->status_ = sp == std::string_view::npos ? 0 : ParseInt(line.substr(sp + 1, 3));
  } else if (StartsWithNoCase(line, "content-length:")) {
    t->content_length_ = ParseInt(Trim(line.substr(15)));
  } else if (StartsWithNoCase(line, "content-range: bytes ")) {
    std::string_view v = line.substr(21);
    const size_t slash = v.find('/');
    if (slash != std::string_view::npos) t->range_total_ = ParseInt(v.substr(slash + 1));
    t->range_first_ = ParseInt(v.substr(0, v.find('-')));
  } else if (StartsWithNoCase(line, "x-amz-bucket-region:")) {
    t->bucket_region_ = std::string(Trim(line.substr(20)));
  }
  return size * n;
}

size_t Transfer::OnBody(char* data, size_t size, size_t n, void* self) {
  return static_cast<Transfer*>(self)->TakeBody(data, size * n);
}

// Returning less than `bytes` makes libcurl end the transfer
// (CURLE_WRITE_ERROR), which Judge then explains.
size_t Transfer::TakeBody(const char* data, size_t bytes) {
  if (status_ < 200 || status_ > 299) {
    const size_t keep = std::min(bytes, kErrorBodyBytes - error_body_.size());
    error_body_.append(data, keep);
    return bytes;
  }
  if (job_.whole != nullptr) {
    // A length past the bound is refused before its bytes come.
    if (got_ + bytes > job_.max_bytes || content_length_ > int64_t(job_.max_bytes)) {
      return overflow_ = true, 0;
    }
    if (got_ == 0 && content_length_ > 0) {
      job_.whole->reserve(std::min<uint64_t>(content_length_, job_.max_bytes));
    }
    job_.whole->append(data, bytes);
  } else {
    // A 200 is the whole object: usable only when that is the range asked for.
    if (status_ == 200 && (job_.offset != 0 || content_length_ != int64_t(job_.dst.size()))) {
      return ignored_range_ = true, 0;
    }
    if (got_ + bytes > job_.dst.size()) return overflow_ = true, 0;
    std::memcpy(job_.dst.data() + got_, data, bytes);
  }
  got_ += bytes;
  return bytes;
}

Verdict Transfer::Judge(CURLcode code) const {
  if (code != CURLE_OK) return JudgeCurl(code);
  if (status_ >= 200 && status_ <= 299) return JudgeBody();
  return JudgeHttp();
}

Verdict Transfer::JudgeCurl(CURLcode code) const {
  const std::string what =
      absl::StrCat(curl_easy_strerror(code), error_[0] != '\0' ? ": " : "", error_);
  if (code == CURLE_WRITE_ERROR && ignored_range_) {
    return Verdict::Final(absl::FailedPreconditionError(absl::StrCat(
                                 "the server ignored the Range header (HTTP 200): it does not "
                                 "serve byte ranges")));
  }
  if (code == CURLE_WRITE_ERROR && overflow_ && job_.whole != nullptr) {
    const std::string size = content_length_ >= 0
                                 ? absl::StrCat(content_length_, " bytes")
                                 : absl::StrCat("more than ", job_.max_bytes, " bytes");
    return Verdict::Final(absl::InvalidArgumentError(absl::StrCat("the object has ", size,
                                                    ", more than the limit of ",
                                                    job_.max_bytes, " bytes")));
  }
  if (code == CURLE_WRITE_ERROR && overflow_) {
    return Verdict::Final(absl::DataLossError(absl::StrCat(
                                 "the server sent more than the ", job_.dst.size(),
                                 " bytes asked for (HTTP ", status_, ")")));
  }
  if (code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CACERT_BADFILE ||
      code == CURLE_SSL_CERTPROBLEM) {
    return Verdict::Final(absl::UnavailableError(absl::StrCat(
                what, " (CA bundle: ",
                config_.ca_bundle.empty() ? "libcurl's default" : config_.ca_bundle,
                "; set SHARDPACK_CA_BUNDLE to a PEM file of the server's CA)")));
  }
  if (code == CURLE_UNSUPPORTED_PROTOCOL || code == CURLE_URL_MALFORMAT) {
    return Verdict::Final(absl::InvalidArgumentError(what));
  }
  return Verdict::Retry(what);
}

// "HTTP 403 ExpiredToken: The provided token has expired."
std::string Transfer::HttpCause() const {
  const std::string code = XmlField(error_body_, "Code");
  const std::string message = XmlField(error_body_, "Message");
  return absl::StrCat("HTTP ", status_, code.empty() ? "" : " ", code,
                      message.empty() ? "" : ": ", message);
}

Verdict Transfer::JudgeHttp() const {
  const std::string cause = HttpCause();
  if (status_ == 404) {
    return Verdict::Final(absl::NotFoundError(absl::StrCat("not found (", cause, ")")));
  }
  if (status_ == 401 || status_ == 403) {
    std::string text = absl::StrCat("access denied (", cause, ")");
    if (cause.find("RequestTimeTooSkewed") != std::string::npos) {
      absl::StrAppend(&text, ": this machine's clock is off");
    }
    if (!config_.has_credentials) {
      absl::StrAppend(&text, "; no AWS credentials were found (looked in ",
                      config_.credentials_searched, "), so the request went unsigned");
    }
    return Verdict::Final(absl::PermissionDeniedError(text));
  }
  if (status_ == 416) {
    return Verdict::Final(absl::DataLossError(absl::StrCat(
                "the range is past the end of the object",
                range_total_ >= 0 ? absl::StrCat(" (", range_total_, " bytes)") : "", " (",
                cause, ")")));
  }
  if (status_ == 408 || status_ == 429 || status_ >= 500) return Verdict::Retry(cause);
  std::string text = absl::StrCat("refused (", cause, ")");
  if (!bucket_region_.empty()) {
    absl::StrAppend(&text, ": the bucket is in region ", bucket_region_, " (set AWS_REGION)");
  }
  return Verdict::Final(absl::InvalidArgumentError(text));
}

Verdict Transfer::JudgeBody() const {
  if (job_.whole != nullptr) return {};
  if (status_ == 206 && range_first_ >= 0 && static_cast<uint64_t>(range_first_) != job_.offset) {
    return Verdict::Final(absl::DataLossError(absl::StrCat(
                                 "the server answered a range starting at ", range_first_)));
  }
  if (got_ == job_.dst.size()) return {};
  const std::string got = absl::StrCat("got ", got_, " of ", job_.dst.size(), " bytes");
  if (range_total_ >= 0 && job_.offset + job_.dst.size() > static_cast<uint64_t>(range_total_)) {
    return Verdict::Final(absl::DataLossError(absl::StrCat(
                                 "the object has only ", range_total_, " bytes (", got, ")")));
  }
  return Verdict::Retry(absl::StrCat("short body: ", got), true);
}

}  // namespace shardpack::remote
