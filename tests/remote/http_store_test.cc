// HttpStore against tests/remote/fault_proxy.py on loopback: whole objects,
// ranges in flight on kept-alive connections, every fault retried, errors
// as object_store.h documents them, TLS, and SigV4 reaching the origin.
#include "remote/http_store.h"

#include <curl/curl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "remote/object_file.h"
#include "tests/remote/fault_proxy.h"
#include "tests/testing/shard_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack::remote {
namespace {

using ::shardpack::testing::Proxy;
using ::shardpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr size_t kObjectBytes = 1 << 20;

class HttpStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    dir_ = new testing::TempDir();
    object_ = testing::PatternBytes(7, kObjectBytes);
    for (const char* rel : {"data/obj", "bucket-a/data/obj"}) {
      std::filesystem::create_directories(std::filesystem::path(dir_->Join(rel)).parent_path());
      std::ofstream(dir_->Join(rel), std::ios::binary)
          .write(reinterpret_cast<const char*>(object_.data()), object_.size());
    }
    std::ofstream(dir_->Join("data/small.json")) << "{\"hello\": 1}";
    std::ofstream(dir_->Join("data/empty"));
    proxy_ = new Proxy({"--serve", dir_->path().string()});
  }
  static void TearDownTestSuite() {
    delete proxy_;
    delete dir_;
  }
  void SetUp() override {
    ASSERT_GT(proxy_->port(), 0) << "fault_proxy.py did not start";
    proxy_->Faults("[]");
  }

  static FetchOptions Fast() {
    FetchOptions o;
    o.deadline_s = 5;
    o.backoff_s = 0.01;
    o.connect_timeout_s = 2;
    o.stall_timeout_s = 1;
    o.max_in_flight = 4;
    return o;
  }
  static FetchOptions WithDeadline(double seconds) {
    FetchOptions o = Fast();
    o.deadline_s = seconds;
    return o;
  }
  const char* Env(const char* name) const {
    auto it = env_.find(name);
    return it == env_.end() ? nullptr : it->second.c_str();
  }
  std::unique_ptr<ObjectStore> Open(const std::string& url, const FetchOptions& o = Fast()) {
    auto store = OpenHttpStore(url, o, [this](const char* name) { return Env(name); });
    EXPECT_THAT(store, testing::IsOk());
    return store.ok() ? *std::move(store) : nullptr;
  }
  std::string DataUrl() const { return proxy_->origin() + "/data/"; }

  // One range of the object; its status, the bytes checked when OK.
  absl::Status FetchOne(ObjectStore& store, uint64_t offset, size_t n) {
    std::vector<uint8_t> dst(n);
    RangeRequest r{.object = "obj", .offset = offset, .dst = dst, .status = {}};
    store.Fetch({&r, 1});
    if (r.status.ok()) {
      EXPECT_TRUE(std::equal(dst.begin(), dst.end(), object_.begin() + offset)) << offset;
    }
    return r.status;
  }

  static testing::TempDir* dir_;
  static std::vector<uint8_t> object_;
  static Proxy* proxy_;
  std::map<std::string, std::string> env_;
};

testing::TempDir* HttpStoreTest::dir_ = nullptr;
std::vector<uint8_t> HttpStoreTest::object_;
Proxy* HttpStoreTest::proxy_ = nullptr;

TEST_F(HttpStoreTest, ARangeAnswerSaysTheObjectsSize) {
  auto store = Open(DataUrl());
  ASSERT_NE(store, nullptr);
  std::vector<uint8_t> dst(10);
  RangeRequest r{.object = "obj", .offset = 1000, .dst = dst, .status = {}};
  store->Fetch({&r, 1});
  SP_ASSERT_OK(r.status);
  EXPECT_EQ(r.object_size, static_cast<int64_t>(kObjectBytes));
}

// An object read as a file (remote/object_file.h): its size from the first
// answer, reads split in pieces fetched together, a read past the end and a
// missing object refused naming the URL.
TEST_F(HttpStoreTest, AnObjectReadAsAFileInPieces) {
  std::shared_ptr<ObjectStore> store = Open(DataUrl());
  ASSERT_NE(store, nullptr);
  SP_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RandomAccessFile> file,
                          OpenObjectFile(store, "obj", /*piece_bytes=*/64 << 10));
  EXPECT_EQ(file->name(), DataUrl() + "obj");
  EXPECT_EQ(file->size(), kObjectBytes);
  const uint64_t requests = store->stats().requests;
  std::vector<uint8_t> dst(600 << 10);
  SP_ASSERT_OK(file->ReadExact(12345, dst));
  EXPECT_TRUE(std::equal(dst.begin(), dst.end(), object_.begin() + 12345));
  EXPECT_EQ(store->stats().requests - requests, (dst.size() + (64 << 10) - 1) / (64 << 10));
  std::vector<uint8_t> last(10);
  SP_ASSERT_OK(file->ReadExact(kObjectBytes - 10, last));
  EXPECT_TRUE(std::equal(last.begin(), last.end(), object_.end() - 10));
  EXPECT_THAT(file->ReadExact(kObjectBytes - 5, last),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(DataUrl() + "obj @" + std::to_string(kObjectBytes - 5)),
                             HasSubstr("passes the end of the object"))));
  EXPECT_THAT(OpenObjectFile(store, "nope.tar"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(DataUrl() + "nope.tar")));
  EXPECT_THAT(OpenObjectFile(store, "empty"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr(DataUrl() + "empty")));
  EXPECT_THAT(OpenObjectUrl(DataUrl(), Fast()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("names a folder")));
}

TEST_F(HttpStoreTest, GetsAWholeObjectWithinItsLimit) {
  auto store = Open(proxy_->origin() + "/data");
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->url(), DataUrl());
  SP_ASSERT_OK_AND_ASSIGN(std::string text, store->Get("small.json", 100));
  EXPECT_EQ(text, "{\"hello\": 1}");
  EXPECT_THAT(store->Get("small.json", 5),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(DataUrl() + "small.json"), HasSubstr("12 bytes"),
                             HasSubstr("limit of 5 bytes"))));
  EXPECT_THAT(store->Get("nope.json", 100),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr(DataUrl() + "nope.json"), HasSubstr("HTTP 404"))));
  EXPECT_THAT(store->Get("../secret", 100),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(DataUrl() + "../secret")));
  std::vector<uint8_t> dst(10);
  RangeRequest up{.object = "a/../../obj", .offset = 0, .dst = dst, .status = {}};
  store->Fetch({&up, 1});
  EXPECT_THAT(up.status, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'..'")));
  EXPECT_EQ(store->stats().requests, 3u);
  EXPECT_EQ(store->stats().retries, 0u);
}

TEST_F(HttpStoreTest, ManyRangesInFlightOnKeptAliveConnections) {
  auto store = Open(DataUrl());
  ASSERT_NE(store, nullptr);
  std::vector<uint8_t> dst(kObjectBytes);
  for (int call = 0; call < 2; ++call) {
    std::vector<RangeRequest> rs;
    for (size_t off = 0; off < kObjectBytes; off += 16384) {
      rs.push_back(
          {.object = "obj", .offset = off, .dst = {dst.data() + off, 16384}, .status = {}});
    }
    store->Fetch(rs);
    for (const RangeRequest& r : rs) SP_EXPECT_OK(r.status);
    EXPECT_EQ(dst, object_);
    std::fill(dst.begin(), dst.end(), 0);
  }
  const nlohmann::json log = proxy_->Log();
  std::set<int> conns;
  for (const auto& e : log) conns.insert(e["conn"].get<int>());
  EXPECT_EQ(log.size(), 128u);
  EXPECT_LE(conns.size(), 4u) << "at most max_in_flight connections, kept across calls";
  EXPECT_EQ(store->stats().requests, 128u);
  EXPECT_EQ(store->stats().bytes, 2 * kObjectBytes);
}

// Each request is told of once, when it is final: its status set and its
// bytes in place (a refused name and an empty range at once, a range past
// the end with its error).
TEST_F(HttpStoreTest, EachRequestIsToldOnceWhenItIsFinal) {
  auto store = Open(DataUrl());
  ASSERT_NE(store, nullptr);
  std::vector<uint8_t> dst(kObjectBytes), past(10);
  std::vector<RangeRequest> rs;
  for (size_t off = 0; off < kObjectBytes; off += kObjectBytes / 8) {
    rs.push_back({.object = "obj", .offset = off, .dst = {dst.data() + off, kObjectBytes / 8},
                  .status = {}});
  }
  rs.push_back({.object = "../obj", .offset = 0, .dst = past, .status = {}});
  rs.push_back({.object = "obj", .offset = 5, .dst = {}, .status = {}});
  rs.push_back({.object = "obj", .offset = kObjectBytes, .dst = past, .status = {}});
  struct Told {
    std::vector<RangeRequest>* rs;
    const std::vector<uint8_t>* object;
    std::vector<std::string> what;
  } told{&rs, &object_, std::vector<std::string>(rs.size())};
  auto tell = [](void* context, size_t i) {
    Told& t = *static_cast<Told*>(context);
    const RangeRequest& r = (*t.rs)[i];
    const bool same = std::equal(r.dst.begin(), r.dst.end(), t.object->begin() + r.offset);
    t.what[i] += r.status.ok() ? (same ? "its bytes;" : "other bytes;")
                               : absl::StrCat(absl::StatusCodeToString(r.status.code()), ";");
  };
  store->Fetch(rs, {tell, &told});
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(told.what[i], "its bytes;") << "request " << i;
  EXPECT_EQ(told.what[8], "INVALID_ARGUMENT;");
  EXPECT_EQ(told.what[9], "its bytes;");
  EXPECT_EQ(told.what[10], "DATA_LOSS;");
}

TEST_F(HttpStoreTest, EveryFaultIsRetriedToSuccess) {
  for (const char* action : {"status:503", "status:500", "status:429", "status:503:SlowDown",
                             "reset", "cut:100", "short:10"}) {
    SCOPED_TRACE(action);
    proxy_->Faults(std::string("[{\"match\": \"obj\", \"times\": 2, \"action\": \"") + action +
                   "\"}]");
    auto store = Open(DataUrl());
    ASSERT_NE(store, nullptr);
    SP_EXPECT_OK(FetchOne(*store, 1000, 50000));
    EXPECT_EQ(store->stats().retries, 2u);
    EXPECT_EQ(store->stats().requests, 3u);
    const nlohmann::json log = proxy_->Log();
    ASSERT_EQ(log.size(), 3u);
    EXPECT_EQ(log[0]["action"], action);
    EXPECT_TRUE(log[2]["action"].is_null());
  }
}

// A delay within the deadline is waited for; a stall (headers, then
// silence) is cut by the stall timeout (1 s here) and retried.
TEST_F(HttpStoreTest, SlowAnswersWithinTheDeadline) {
  const struct {
    const char* action;
    uint64_t retries;
  } cases[] = {{"delay:0.3", 0}, {"stall:4", 1}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.action);
    proxy_->Faults(std::string("[{\"times\": 1, \"action\": \"") + c.action + "\"}]");
    auto store = Open(DataUrl());
    ASSERT_NE(store, nullptr);
    SP_EXPECT_OK(FetchOne(*store, 4096, 4096));
    EXPECT_EQ(store->stats().retries, c.retries);
  }
}

TEST_F(HttpStoreTest, AFaultOutlastingTheDeadlineIsUnavailable) {
  proxy_->Faults(R"([{"action": "status:503:SlowDown"}])");
  auto store = Open(DataUrl(), WithDeadline(0.5));
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(FetchOne(*store, 100, 100),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(HasSubstr(DataUrl() + "obj bytes 100-199"), HasSubstr("attempts"),
                             HasSubstr("HTTP 503 SlowDown"))));
  EXPECT_GT(store->stats().retries, 1u);
  proxy_->Faults(R"([{"action": "delay:3"}])");
  EXPECT_THAT(FetchOne(*store, 0, 10),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("Timeout was reached")));
}

TEST_F(HttpStoreTest, ABodyThatStaysShortIsDataLoss) {
  proxy_->Faults(R"([{"action": "short:1"}])");
  auto store = Open(DataUrl(), WithDeadline(60));
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(FetchOne(*store, 0, 1000),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("obj bytes 0-999"), HasSubstr("stayed short after 3 "),
                             HasSubstr("got 999 of 1000 bytes"))));
  EXPECT_EQ(store->stats().requests, 3u);
}

TEST_F(HttpStoreTest, RangesPastTheEndAreDataLossWithoutRetries) {
  auto store = Open(DataUrl());
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(FetchOne(*store, kObjectBytes, 10),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("obj bytes 1048576-1048585"), HasSubstr("HTTP 416"),
                             HasSubstr("(1048576 bytes)"))));
  EXPECT_THAT(FetchOne(*store, kObjectBytes - 10, 20),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("has only 1048576 bytes")));
  EXPECT_EQ(store->stats().retries, 0u);
  std::vector<uint8_t> none;
  RangeRequest empty{.object = "obj", .offset = 5, .dst = none, .status = {}};
  store->Fetch({&empty, 1});
  SP_EXPECT_OK(empty.status);
}

TEST_F(HttpStoreTest, RefusalsAreNotRetried) {
  proxy_->Faults(R"([{"action": "status:403:ExpiredToken"}])");
  auto store = Open(DataUrl());
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(FetchOne(*store, 0, 10),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       AllOf(HasSubstr(DataUrl() + "obj"), HasSubstr("HTTP 403 ExpiredToken"))));
  EXPECT_EQ(store->stats().requests, 1u);
  // An s3:// store with no credentials says where it looked.
  env_["AWS_ENDPOINT_URL"] = proxy_->origin();
  auto s3 = Open("s3://bucket-a/data");
  ASSERT_NE(s3, nullptr);
  EXPECT_THAT(FetchOne(*s3, 0, 10),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       AllOf(HasSubstr("s3://bucket-a/data/obj bytes 0-9"),
                             HasSubstr("no AWS credentials were found"))));
}

TEST_F(HttpStoreTest, SeveralThreadsShareAStore) {
  auto store = Open(DataUrl());
  ASSERT_NE(store, nullptr);
  std::vector<std::thread> threads;
  std::vector<absl::Status> results(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 8 && results[t].ok(); ++i) {
        results[t] = FetchOne(*store, (t * 8 + i) * 30000, 30000);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& r : results) SP_EXPECT_OK(r);
  std::set<int> conns;
  for (const auto& e : proxy_->Log()) conns.insert(e["conn"].get<int>());
  EXPECT_LE(conns.size(), 8u);
}

// A DataLoader's workers are forked from a process whose store has open
// connections: a child must not read or write on them.
TEST_F(HttpStoreTest, AForkedChildOpensConnectionsOfItsOwn) {
  auto store = Open(DataUrl());
  ASSERT_NE(store, nullptr);
  SP_ASSERT_OK(FetchOne(*store, 0, 1000));
  const pid_t child = fork();
  if (child == 0) {
    std::vector<uint8_t> dst(1000);
    RangeRequest r{.object = "obj", .offset = 2000, .dst = dst, .status = {}};
    store->Fetch({&r, 1});
    _exit(r.status.ok() && std::equal(dst.begin(), dst.end(), object_.begin() + 2000) ? 0 : 1);
  }
  int status = -1;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(status, 0);
  SP_EXPECT_OK(FetchOne(*store, 5000, 1000));
  const nlohmann::json log = proxy_->Log();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_NE(log[1]["conn"], log[0]["conn"]) << "the child used the parent's connection";
  EXPECT_EQ(log[2]["conn"], log[0]["conn"]) << "the parent's connection was not kept";
}

TEST_F(HttpStoreTest, SignsS3RequestsWithSigV4ThroughAProxy) {
  Proxy front({"--upstream", proxy_->origin()});
  ASSERT_GT(front.port(), 0);
  env_ = {{"AWS_ENDPOINT_URL", front.origin()},
          {"AWS_ACCESS_KEY_ID", "AKIDTEST"},
          {"AWS_SECRET_ACCESS_KEY", "secret"},
          {"AWS_SESSION_TOKEN", "token"},
          {"AWS_REGION", "eu-west-3"}};
  auto store = Open("s3://bucket-a/data/");
  ASSERT_NE(store, nullptr);
  SP_EXPECT_OK(FetchOne(*store, 10, 1000));
  const nlohmann::json log = proxy_->Log();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0]["path"], "/bucket-a/data/obj");
  EXPECT_EQ(log[0]["auth"], "AWS4-HMAC-SHA256");
  EXPECT_THAT(log[0]["credential"].get<std::string>(),
              AllOf(::testing::StartsWith("AKIDTEST/"), HasSubstr("/eu-west-3/s3/aws4_request")));
}

TEST_F(HttpStoreTest, TlsWithTheCaBundleOfTheEnvironment) {
  testing::TempDir certs;
  const std::string cert = certs.Join("cert.pem"), key = certs.Join("key.pem");
  const std::string make =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext "
      "subjectAltName=IP:127.0.0.1 -keyout " + key + " -out " + cert + " 2>/dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0) << make;
  Proxy tls({"--serve", dir_->path().string(), "--tls-cert", cert, "--tls-key", key});
  ASSERT_GT(tls.port(), 0);
  const std::string url = tls.origin("https") + "/data/";
  auto untrusted = Open(url);
  ASSERT_NE(untrusted, nullptr);
  EXPECT_THAT(FetchOne(*untrusted, 0, 10),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(HasSubstr(url + "obj"), HasSubstr("SHARDPACK_CA_BUNDLE"))));
  EXPECT_EQ(untrusted->stats().retries, 0u);
  env_["SHARDPACK_CA_BUNDLE"] = certs.Join("missing.pem");
  EXPECT_THAT(OpenHttpStore(url, Fast(), [this](const char* name) { return Env(name); }),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("SHARDPACK_CA_BUNDLE"), HasSubstr("missing.pem"))));
  env_["SHARDPACK_CA_BUNDLE"] = cert;
  auto store = Open(url);
  ASSERT_NE(store, nullptr);
  SP_EXPECT_OK(FetchOne(*store, 12345, 100000));
  SP_ASSERT_OK_AND_ASSIGN(std::string text, store->Get("small.json", 100));
  EXPECT_EQ(text, "{\"hello\": 1}");
}

// Python's http.server answers every GET with the whole file (200): a
// range at offset 0 of exactly the object's size is that answer; any other
// is refused, with nothing written past the caller's buffer.
TEST_F(HttpStoreTest, AServerThatIgnoresRangesIsRefused) {
  Proxy plain({"--bind", "127.0.0.1", "--directory", dir_->path().string(), "0"},
              {"/usr/bin/python3", "-u", "-m", "http.server"}, " port ");
  ASSERT_GT(plain.port(), 0);
  auto store = Open(plain.origin() + "/data/");
  ASSERT_NE(store, nullptr);
  SP_EXPECT_OK(FetchOne(*store, 0, kObjectBytes));
  for (auto [offset, n] : {std::pair<uint64_t, size_t>{0, 100}, {100, 100}}) {
    EXPECT_THAT(FetchOne(*store, offset, n),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         AllOf(HasSubstr("obj bytes"), HasSubstr("ignored the Range header"))));
  }
}

TEST(FetchEnvironment, OverridesAndBadValuesNameTheVariable) {
  std::map<std::string, std::string> env = {{"SHARDPACK_REMOTE_DEADLINE_S", "7.5"},
                                            {"SHARDPACK_REMOTE_IN_FLIGHT", "3"}};
  auto lookup = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  SP_ASSERT_OK_AND_ASSIGN(FetchOptions o, ApplyFetchEnvironment(FetchOptions(), lookup));
  EXPECT_EQ(o.deadline_s, 7.5);
  EXPECT_EQ(o.max_in_flight, 3);
  const char* bad[][2] = {{"SHARDPACK_REMOTE_IN_FLIGHT", "0"},
                          {"SHARDPACK_REMOTE_IN_FLIGHT", "many"},
                          {"SHARDPACK_REMOTE_IN_FLIGHT", "5000"},
                          {"SHARDPACK_REMOTE_DEADLINE_S", "-1"},
                          {"SHARDPACK_REMOTE_DEADLINE_S", "nan"},
                          {"SHARDPACK_REMOTE_STALL_TIMEOUT_S", "soon"},
                          {"SHARDPACK_REMOTE_BACKOFF_S", "-0.1"}};
  for (const auto& [name, value] : bad) {
    std::map<std::string, std::string> saved = env;
    env[name] = value;
    EXPECT_THAT(ApplyFetchEnvironment(FetchOptions(), lookup),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(std::string(name) + "=" + value)));
    env = saved;
  }
  FetchOptions zero;
  zero.max_in_flight = 0;
  EXPECT_THAT(ApplyFetchEnvironment(zero, [](const char*) -> const char* { return nullptr; }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_in_flight")));
}

// Against a real S3 server when one is named (scripts that start moto set
// SHARDPACK_TEST_S3_ENDPOINT and put "pre fix/obj", 1 MiB of bytes i % 256,
// in bucket moto-bkt, writable by key "testing"); skipped otherwise.
TEST(S3Server, SignedRangesAndErrors) {
  const char* endpoint = std::getenv("SHARDPACK_TEST_S3_ENDPOINT");
  if (endpoint == nullptr) GTEST_SKIP() << "SHARDPACK_TEST_S3_ENDPOINT is not set";
  std::map<std::string, std::string> env = {{"AWS_ENDPOINT_URL", endpoint},
                                            {"AWS_ACCESS_KEY_ID", "testing"},
                                            {"AWS_SECRET_ACCESS_KEY", "testing"}};
  auto lookup = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  SP_ASSERT_OK_AND_ASSIGN(auto store,
                          OpenHttpStore("s3://moto-bkt/pre fix", FetchOptions(), lookup));
  std::vector<uint8_t> dst(1000);
  RangeRequest r{.object = "obj", .offset = 300, .dst = dst, .status = {}};
  store->Fetch({&r, 1});
  SP_ASSERT_OK(r.status);
  for (size_t i = 0; i < dst.size(); ++i) ASSERT_EQ(dst[i], (300 + i) % 256) << i;
  EXPECT_THAT(store->Get("missing", 10),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("s3://moto-bkt/pre fix/missing"), HasSubstr("NoSuchKey"))));
  RangeRequest past{.object = "obj", .offset = 1 << 20, .dst = dst, .status = {}};
  store->Fetch({&past, 1});
  EXPECT_THAT(past.status, StatusIs(absl::StatusCode::kDataLoss, HasSubstr("416")));
}

}  // namespace
}  // namespace shardpack::remote
