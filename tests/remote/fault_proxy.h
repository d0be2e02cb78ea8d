// tests/remote/fault_proxy.py on loopback, for the tests of what reads
// through HTTP: started by the constructor, stopped by the destructor, its
// faults set and its request log read through its control endpoints
// (libcurl; the caller runs curl_global_init first).
#ifndef SHARDPACK_TESTS_REMOTE_FAULT_PROXY_H_
#define SHARDPACK_TESTS_REMOTE_FAULT_PROXY_H_

#include <curl/curl.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace shardpack::testing {

// fault_proxy.py running until the object is destroyed.
class Proxy {
 public:
  // fault_proxy.py with `args`; or, with `program`, that command, whose
  // first line gives the port after `marker` ("Serving HTTP on ... port N").
  explicit Proxy(const std::vector<std::string>& args, std::vector<std::string> program = {},
                 const std::string& marker = "listening on ") {
    std::vector<std::string> argv = {
        "/usr/bin/python3", std::string(SHARDPACK_SOURCE_DIR) + "/tests/remote/fault_proxy.py"};
    const bool quiet = !program.empty();  // another server's request log is noise here
    if (quiet) argv = std::move(program);
    argv.insert(argv.end(), args.begin(), args.end());
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      if (quiet) dup2(open("/dev/null", O_WRONLY), 2);
      std::vector<char*> c;
      for (auto& a : argv) c.push_back(a.data());
      c.push_back(nullptr);
      execv(c[0], c.data());
      _exit(127);
    }
    close(fds[1]);
    out_ = fds[0];  // kept open while the proxy runs
    std::string line;
    char c = 0;
    pollfd p = {out_, POLLIN, 0};
    while (line.size() < 64 && poll(&p, 1, 20000) == 1 && read(out_, &c, 1) == 1 && c != '\n') {
      line += c;
    }
    const size_t at = line.find(marker);
    if (at != std::string::npos) port_ = std::atoi(line.c_str() + at + marker.size());
  }
  ~Proxy() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) close(out_);
  }
  int port() const { return port_; }
  std::string origin(const char* scheme = "http") const {
    return std::string(scheme) + "://127.0.0.1:" + std::to_string(port_);
  }

  // A control request: the answer's body.
  std::string Control(const char* method, const char* path, const std::string& body = "",
                      const std::string& ca = "") const {
    std::string out;
    CURL* c = curl_easy_init();
    const std::string url = origin(ca.empty() ? "http" : "https") + path;
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (!ca.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, ca.c_str());
    if (!body.empty()) curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION,
                     +[](char* d, size_t s, size_t n, void* o) {
                       static_cast<std::string*>(o)->append(d, s * n);
                       return s * n;
                     });
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &out);
    EXPECT_EQ(curl_easy_perform(c), CURLE_OK) << url;
    curl_easy_cleanup(c);
    return out;
  }
  void Faults(const std::string& rules) const {
    EXPECT_EQ(Control("PUT", "/__faults", rules), "ok\n") << rules;
    Control("DELETE", "/__log");
  }
  nlohmann::json Log() const { return nlohmann::json::parse(Control("GET", "/__log")); }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  int port_ = 0;
};

}  // namespace shardpack::testing

#endif  // SHARDPACK_TESTS_REMOTE_FAULT_PROXY_H_
