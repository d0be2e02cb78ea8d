#include "remote/http_store.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <random>
#include <semaphore>
#include <thread>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/check.h"
#include "common/errors.h"
#include "common/os.h"
#include "common/posix_open.h"
#include "common/redact.h"
#include "common/status_macros.h"
#include "remote/http_transfer.h"
#include "remote/url.h"

namespace shardpack::remote {
namespace {

using Clock = std::chrono::steady_clock;

// The longest wait between two attempts (FetchOptions::backoff_s).
constexpr double kMaxBackoffS = 5;
constexpr int kMaxInFlight = 1024;
// Short bodies in a row after which a range is damage (DataLossError), not
// a transport fault: the object may really be shorter than its listing.
constexpr int kMaxShortBodies = 3;

// SHA-256 of the empty body: S3 wants x-amz-content-sha256 on signed
// requests, and libcurl 7.88 signs the hash of the (empty) body of a GET,
// so the header must carry that same hash.
constexpr char kEmptyBodySha256[] =
    "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

std::once_flag curl_initialized;

absl::Status CheckSeconds(const char* name, double value, bool zero_ok) {
  if (std::isfinite(value) && (value > 0 || (zero_ok && value == 0)) && value <= 1e6) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(name, "=", value, ": expected ",
                                                 zero_ok ? "0 or more" : "more than 0",
                                                 " seconds (at most 1e6)"));
}

// *value from the variable `name` when it is set.
absl::Status SecondsFromEnv(EnvLookup getenv, const char* name, bool zero_ok, double* value) {
  const char* text = getenv(name);
  if (text == nullptr) return absl::OkStatus();
  if (!absl::SimpleAtod(text, value)) {
    return absl::InvalidArgumentError(absl::StrCat(name, "=", common::Excerpt(text),
                                                   ": expected a number of seconds"));
  }
  return CheckSeconds(name, *value, zero_ok);
}

// The file of the first CA bundle variable that is set ("" when none is),
// checked to be a regular file now rather than at the first request.
absl::StatusOr<std::string> CaBundle(EnvLookup getenv) {
  for (const char* name :
       {"SHARDPACK_CA_BUNDLE", "AWS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"}) {
    const char* value = getenv(name);
    if (value == nullptr || *value == '\0') continue;
    if (absl::Status s = common::CheckRegularFile(value); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": ", s.message()));
    }
    return std::string(value);
  }
  return std::string();
}

}  // namespace

absl::StatusOr<FetchOptions> ApplyFetchEnvironment(const FetchOptions& options,
                                                   EnvLookup getenv) {
  FetchOptions out = options;
  SP_RETURN_IF_ERROR(CheckSeconds("FetchOptions.deadline_s", out.deadline_s, false));
  SP_RETURN_IF_ERROR(CheckSeconds("FetchOptions.connect_timeout_s", out.connect_timeout_s, false));
  SP_RETURN_IF_ERROR(CheckSeconds("FetchOptions.stall_timeout_s", out.stall_timeout_s, false));
  SP_RETURN_IF_ERROR(CheckSeconds("FetchOptions.backoff_s", out.backoff_s, true));
  SP_RETURN_IF_ERROR(SecondsFromEnv(getenv, "SHARDPACK_REMOTE_DEADLINE_S", false, &out.deadline_s));
  SP_RETURN_IF_ERROR(
      SecondsFromEnv(getenv, "SHARDPACK_REMOTE_CONNECT_TIMEOUT_S", false, &out.connect_timeout_s));
  SP_RETURN_IF_ERROR(
      SecondsFromEnv(getenv, "SHARDPACK_REMOTE_STALL_TIMEOUT_S", false, &out.stall_timeout_s));
  SP_RETURN_IF_ERROR(SecondsFromEnv(getenv, "SHARDPACK_REMOTE_BACKOFF_S", true, &out.backoff_s));
  std::string in_flight = absl::StrCat("FetchOptions.max_in_flight = ", out.max_in_flight);
  if (const char* text = getenv("SHARDPACK_REMOTE_IN_FLIGHT")) {
    in_flight = absl::StrCat("SHARDPACK_REMOTE_IN_FLIGHT=", common::Excerpt(text));
    if (!absl::SimpleAtoi(text, &out.max_in_flight)) out.max_in_flight = 0;
  }
  if (out.max_in_flight < 1 || out.max_in_flight > kMaxInFlight) {
    return absl::InvalidArgumentError(
        absl::StrCat(in_flight, ": expected an integer in 1..", kMaxInFlight));
  }
  return out;
}

namespace {

// One request of a call and its retries.
struct Pending {
  TransferJob job;
  size_t index = 0;  // in the call's requests
  absl::Status* status = nullptr;
  int64_t* object_size = nullptr;  // a range request's: RangeRequest::object_size
  int attempts = 0;
  Clock::time_point first{}, next{};
  std::string cause;  // why the last attempt failed
  bool short_body = false;
  int short_bodies = 0;  // in a row
};

// A multi handle and its transfers: one call's machinery, kept in the
// store's pool between calls so that its connections stay open.
struct Session {
  explicit Session(uint64_t seed) : multi(curl_multi_init()), rng(seed) {}
  ~Session() {
    transfers.clear();  // every handle was removed from `multi` when it ended
    curl_multi_cleanup(multi);
  }
  CURLM* multi;
  std::vector<std::unique_ptr<Transfer>> transfers;
  std::vector<Transfer*> idle;
  std::vector<Pending> pending;  // this call's requests
  EachDone done;                 // told of each as it becomes final
  std::vector<size_t> retry;     // those waiting for their next attempt
  std::minstd_rand rng;
  std::string url;  // a request's URL, built here
};

// A request's final status, told at once.
void Settle(Session& s, Pending& p, absl::Status status) {
  *p.status = std::move(status);
  s.done(p.index);
}

}  // namespace

class HttpStore final : public ObjectStore {
 public:
  HttpStore(std::string url, std::string base, FetchOptions options, TransferConfig config)
      : url_(std::move(url)), base_(std::move(base)), options_(options),
        config_(std::move(config)), slots_(options.max_in_flight) {
    // Both are quoted whole in messages: ParseDatasetUrl and ParseEndpoint
    // let no secret into them.
    SP_DCHECK(common::RedactUrl(url_) == url_ && common::RedactUrl(base_) == base_);
    config_.share = curl_share_init();
    curl_share_setopt(config_.share, CURLSHOPT_LOCKFUNC, &HttpStore::Lock);
    curl_share_setopt(config_.share, CURLSHOPT_UNLOCKFUNC, &HttpStore::Unlock);
    curl_share_setopt(config_.share, CURLSHOPT_USERDATA, this);
    curl_share_setopt(config_.share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(config_.share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  }
  ~HttpStore() override {
    ForgetInheritedSessions();
    pool_.clear();
    curl_share_cleanup(config_.share);
    curl_slist_free_all(config_.headers);
  }

  const std::string& url() const override { return url_; }
  absl::StatusOr<std::string> Get(std::string_view object, uint64_t max_bytes) override;
  using ObjectStore::Fetch;
  void Fetch(std::span<RangeRequest> requests, EachDone done) override;
  StoreStats stats() const override {
    return {requests_.load(), bytes_.load(), retries_.load()};
  }

 private:
  static void Lock(CURL*, curl_lock_data data, curl_lock_access, void* self) {
    static_cast<HttpStore*>(self)->share_mu_[data].lock();
  }
  static void Unlock(CURL*, curl_lock_data data, void* self) {
    static_cast<HttpStore*>(self)->share_mu_[data].unlock();
  }
  void ForgetInheritedSessions();  // pool_mu_ held, or no other thread
  std::unique_ptr<Session> TakeSession();
  void GiveBack(std::unique_ptr<Session> session);
  void Run(Session& s);
  void StartReady(Session& s, size_t* next_new, size_t* running);
  bool Acquire(Session& s, size_t running);
  void Start(Session& s, size_t index, Clock::time_point now);
  void Reap(Session& s, size_t* running);
  void Finish(Session& s, size_t index, const Verdict& verdict);
  absl::Status Failure(const Pending& p, const absl::Status& why) const;
  absl::Status GaveUp(const Pending& p, Clock::time_point now) const;
  long WaitMs(const Session& s) const;

  const std::string url_;
  const std::string base_;  // request URLs are base_ + the encoded object name
  const FetchOptions options_;
  TransferConfig config_;
  std::counting_semaphore<kMaxInFlight> slots_;  // requests in flight, store-wide
  std::mutex share_mu_[CURL_LOCK_DATA_LAST];
  std::atomic<uint64_t> requests_{0}, bytes_{0}, retries_{0};
  std::mutex pool_mu_;
  pid_t pid_ = getpid();  // the process whose sessions pool_ holds
  std::vector<std::unique_ptr<Session>> pool_;
};

// After a fork, the pooled sessions' sockets are the parent's too: a child
// that used them would read the parent's answers (or break its TLS
// streams), and one that closed them would send TLS alerts on them. The
// child leaves them alone, open, and makes its own.
void HttpStore::ForgetInheritedSessions() {
  if (getpid() == pid_) return;
  for (std::unique_ptr<Session>& s : pool_) (void)s.release();
  pool_.clear();
  pid_ = getpid();
}

std::unique_ptr<Session> HttpStore::TakeSession() {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    ForgetInheritedSessions();
    if (!pool_.empty()) {
      std::unique_ptr<Session> s = std::move(pool_.back());
      pool_.pop_back();
      return s;
    }
  }
  return std::make_unique<Session>(common::RandomSeed());
}

void HttpStore::GiveBack(std::unique_ptr<Session> session) {
  std::lock_guard<std::mutex> lock(pool_mu_);
  pool_.push_back(std::move(session));
}

absl::StatusOr<std::string> HttpStore::Get(std::string_view object, uint64_t max_bytes) {
  std::string out;
  SP_RETURN_IF_ERROR(CheckObjectName(object, UrlOf(object)));
  absl::Status status;
  std::unique_ptr<Session> s = TakeSession();
  s->pending.clear();
  s->done = {};
  Pending& p = s->pending.emplace_back();
  p.job.object = object;
  p.job.whole = &out;
  p.job.max_bytes = max_bytes;
  p.status = &status;
  Run(*s);
  GiveBack(std::move(s));
  if (!status.ok()) return status;
  return out;
}

void HttpStore::Fetch(std::span<RangeRequest> requests, EachDone done) {
  if (requests.empty()) return;
  std::unique_ptr<Session> s = TakeSession();
  s->pending.clear();
  s->done = done;
  for (size_t i = 0; i < requests.size(); ++i) {
    RangeRequest& r = requests[i];
    r.status = CheckObjectName(r.object, UrlOf(r.object));
    if (!r.status.ok()) {
      done(i);
      continue;
    }
    Pending& p = s->pending.emplace_back();
    p.index = i;
    p.job.object = r.object;
    p.job.offset = r.offset;
    p.job.dst = r.dst;
    p.status = &r.status;
    p.object_size = &r.object_size;
  }
  Run(*s);
  GiveBack(std::move(s));
}

// Until every request has its status: start what may start, let libcurl
// move bytes, judge what ended, wait for sockets or the next retry.
void HttpStore::Run(Session& s) {
  size_t next_new = 0;
  size_t running = 0;
  s.retry.clear();
  while (true) {
    StartReady(s, &next_new, &running);
    if (running == 0) {
      if (s.retry.empty() && next_new == s.pending.size()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(WaitMs(s)));  // only retries wait
      continue;
    }
    int still = 0;
    curl_multi_perform(s.multi, &still);
    Reap(s, &running);
    if (running > 0) curl_multi_poll(s.multi, nullptr, 0, static_cast<int>(WaitMs(s)), nullptr);
  }
}

namespace {

// Milliseconds until the earliest retry is due (at most 1 s).
long WaitMsUntil(const std::vector<Pending>& pending, const std::vector<size_t>& retry) {
  auto wait = std::chrono::milliseconds(1000);
  const auto now = Clock::now();
  for (size_t i : retry) {
    wait = std::min(wait, std::chrono::ceil<std::chrono::milliseconds>(pending[i].next - now));
  }
  return std::max<long>(0, static_cast<long>(wait.count()));
}

}  // namespace

long HttpStore::WaitMs(const Session& s) const { return WaitMsUntil(s.pending, s.retry); }

// Retries whose wait is over first, then requests not started yet, while
// a slot of max_in_flight is free.
void HttpStore::StartReady(Session& s, size_t* next_new, size_t* running) {
  const Clock::time_point now = Clock::now();
  for (size_t i = 0; i < s.retry.size();) {
    if (s.pending[s.retry[i]].next > now) {
      ++i;
      continue;
    }
    if (!Acquire(s, *running)) return;
    Start(s, s.retry[i], now);
    ++*running;
    s.retry[i] = s.retry.back();
    s.retry.pop_back();
  }
  while (*next_new < s.pending.size()) {
    Pending& p = s.pending[*next_new];
    if (p.job.whole == nullptr && p.job.dst.empty()) {
      Settle(s, p, absl::OkStatus());
      ++*next_new;
      continue;
    }
    if (!Acquire(s, *running)) return;
    p.first = now;
    Start(s, (*next_new)++, now);
    ++*running;
  }
}

// A slot and an idle transfer. A call with nothing in flight waits for a
// slot (it holds none, so others free theirs); one with transfers in flight
// only takes a free one, and goes on moving its own bytes otherwise.
bool HttpStore::Acquire(Session& s, size_t running) {
  if (running == 0) {
    slots_.acquire();
  } else if (!slots_.try_acquire()) {
    return false;
  }
  if (s.idle.empty()) {
    s.transfers.push_back(std::make_unique<Transfer>(config_));
    s.idle.push_back(s.transfers.back().get());
  }
  return true;
}

void HttpStore::Start(Session& s, size_t index, Clock::time_point now) {
  Pending& p = s.pending[index];
  Transfer* t = s.idle.back();
  s.idle.pop_back();
  s.url.assign(base_);
  AppendEncodedKey(p.job.object, &s.url);
  const auto left = p.first + std::chrono::duration<double>(options_.deadline_s) - now;
  t->Prepare(p.job, s.url, std::chrono::ceil<std::chrono::milliseconds>(left).count());
  t->request = index;
  requests_.fetch_add(1, std::memory_order_relaxed);
  if (p.attempts > 0) retries_.fetch_add(1, std::memory_order_relaxed);
  ++p.attempts;
  curl_multi_add_handle(s.multi, t->easy());
}

void HttpStore::Reap(Session& s, size_t* running) {
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(s.multi, &left)) {
    if (msg->msg != CURLMSG_DONE) continue;
    const CURLcode code = msg->data.result;
    Transfer* t = nullptr;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
    curl_multi_remove_handle(s.multi, t->easy());
    slots_.release();
    --*running;
    s.idle.push_back(t);
    bytes_.fetch_add(t->body_bytes(), std::memory_order_relaxed);
    const Verdict verdict = t->Judge(code);
    int64_t* size = s.pending[t->request].object_size;
    if (verdict.kind == Verdict::kDone && size != nullptr) *size = t->object_size();
    Finish(s, t->request, verdict);
  }
}

void HttpStore::Finish(Session& s, size_t index, const Verdict& verdict) {
  Pending& p = s.pending[index];
  if (verdict.kind == Verdict::kDone) {
    Settle(s, p, absl::OkStatus());
    return;
  }
  if (verdict.kind == Verdict::kFinal) {
    Settle(s, p, Failure(p, verdict.status));
    return;
  }
  p.cause = verdict.cause;
  p.short_body = verdict.short_body;
  p.short_bodies = verdict.short_body ? p.short_bodies + 1 : 0;
  const double base = std::min(kMaxBackoffS, options_.backoff_s * std::ldexp(1.0, p.attempts - 1));
  const double wait = base * std::uniform_real_distribution<double>(0.5, 1.0)(s.rng);
  const Clock::time_point now = Clock::now();
  p.next = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait));
  if (p.short_bodies >= kMaxShortBodies ||
      p.next >= p.first + std::chrono::duration<double>(options_.deadline_s)) {
    Settle(s, p, GaveUp(p, now));
    return;
  }
  s.retry.push_back(index);
}

// "<url> bytes A-B: <why>", in why's code.
absl::Status HttpStore::Failure(const Pending& p, const absl::Status& why) const {
  std::string where = UrlOf(p.job.object);
  if (p.job.whole == nullptr) {
    absl::StrAppend(&where, " bytes ", p.job.offset, "-", p.job.offset + p.job.dst.size() - 1);
  }
  return common::WithMessage(why, absl::StrCat(where, ": ", why.message()));
}

absl::Status HttpStore::GaveUp(const Pending& p, Clock::time_point now) const {
  const double spent = std::chrono::duration<double>(now - p.first).count();
  const std::string tries = absl::StrFormat("%d attempts in %.1f s (deadline %g s)", p.attempts,
                                            spent, options_.deadline_s);
  if (p.short_body) {
    return Failure(p, absl::DataLossError(absl::StrCat("the body stayed short after ", tries,
                                                       "; last: ", p.cause)));
  }
  const std::string to = base_.starts_with(url_) ? "" : absl::StrCat(" (requests to ", base_, ")");
  return Failure(p, absl::UnavailableError(
                        absl::StrCat("unavailable after ", tries, "; last: ", p.cause, to)));
}

namespace {

// Where an s3:// dataset's objects are requested: a custom endpoint path
// style, AWS's own virtual-hosted (path style for a bucket with a '.',
// which a virtual host's certificate cannot cover).
std::string S3Base(const DatasetUrl& url, const AwsConfig& aws) {
  std::string base;
  if (!aws.endpoint.empty()) {
    base = absl::StrCat(aws.endpoint, "/", url.bucket, "/");
  } else if (url.bucket.find('.') != std::string::npos) {
    base = absl::StrCat("https://s3.", aws.region, ".amazonaws.com/", url.bucket, "/");
  } else {
    base = absl::StrCat("https://", url.bucket, ".s3.", aws.region, ".amazonaws.com/");
  }
  AppendEncodedKey(url.prefix, &base);
  return base;
}

void Sign(const AwsConfig& aws, TransferConfig* config) {
  config->has_credentials = aws.has_credentials();
  config->credentials_searched = aws.credentials_source;
  if (!aws.has_credentials()) return;
  config->sigv4 = absl::StrCat("aws:amz:", aws.region, ":s3");
  config->user = aws.access_key_id;
  config->password = aws.secret_access_key;
  config->headers = curl_slist_append(config->headers, kEmptyBodySha256);
  if (!aws.session_token.empty()) {
    config->headers = curl_slist_append(
        config->headers, absl::StrCat("x-amz-security-token: ", aws.session_token).c_str());
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<ObjectStore>> OpenHttpStore(std::string_view url,
                                                           const FetchOptions& options,
                                                           EnvLookup getenv) {
  SP_ASSIGN_OR_RETURN(DatasetUrl parsed, ParseDatasetUrl(url));
  SP_ASSIGN_OR_RETURN(FetchOptions checked, ApplyFetchEnvironment(options, getenv));
  TransferConfig config;
  SP_ASSIGN_OR_RETURN(config.ca_bundle, CaBundle(getenv));
  config.connect_timeout_ms = std::lround(checked.connect_timeout_s * 1000);
  config.stall_timeout_s = std::max(1L, std::lround(checked.stall_timeout_s));
  std::string base = parsed.url;
  if (parsed.scheme == UrlScheme::kS3) {
    SP_ASSIGN_OR_RETURN(AwsConfig aws, LoadAwsConfig(getenv));
    base = S3Base(parsed, aws);
    Sign(aws, &config);
  }
  std::call_once(curl_initialized, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  return std::make_unique<HttpStore>(parsed.url, std::move(base), checked, std::move(config));
}

}  // namespace shardpack::remote
