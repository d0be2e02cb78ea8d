#include "common/child_process.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "common/errors.h"
#include "common/posix_io.h"
#include "common/unique_fd.h"

namespace shardpack::common {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void RunChild(absl::FunctionRef<std::string()> body, size_t max_output, int fd) {
  // Die plainly: no core file, and the default action for the signals a
  // crash raises whatever handlers the parent installed (Python's
  // faulthandler, a sanitizer's), so that the parent sees which it was.
  struct rlimit no_core = {0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGPIPE}) ::signal(sig, SIG_DFL);
  const std::string output = body();
  const size_t n = std::min(output.size(), max_output);
  // Nothing to do if the parent is gone: it then reports the child itself.
  (void)WriteFull(fd, "the result pipe", {reinterpret_cast<const uint8_t*>(output.data()), n});
  ::_exit(0);
}

// The child's output, read until it closes the pipe or `deadline` passes
// (false then).
bool ReadOutput(int fd, Clock::time_point deadline, size_t max_output, std::string* out) {
  char buffer[4096];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p = {fd, POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return false;
    if (rc == 0) continue;
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    if (out->size() < max_output) out->append(buffer, static_cast<size_t>(n));
  }
}

// Waits for the child to be gone, killing it at `deadline`.
std::optional<int> Reap(pid_t pid, Clock::time_point deadline) {
  std::chrono::microseconds pause(20);
  while (true) {
    int status = 0;
    pid_t rc = ::waitpid(pid, &status, WNOHANG);
    if (rc == pid) return status;
    if (rc < 0 && errno != EINTR) return std::nullopt;
    if (Clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      deadline = Clock::time_point::max();
      continue;
    }
    // The child is usually exiting already: poll fast, then back off.
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10000));
  }
}

}  // namespace

absl::StatusOr<ChildOutcome> RunInChild(absl::FunctionRef<std::string()> body,
                                        Clock::time_point deadline, size_t max_output,
                                        std::string_view purpose, std::string_view name) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return ErrnoError("pipe (" + std::string(purpose) + ")", name, errno);
  }
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoError("fork (" + std::string(purpose) + ")", name, errno);
  if (pid == 0) {
    read_end = UniqueFd();
    RunChild(body, max_output, write_end.get());
  }
  write_end = UniqueFd();
  ChildOutcome outcome;
  outcome.in_time = ReadOutput(read_end.get(), deadline, max_output, &outcome.output);
  read_end = UniqueFd();
  outcome.wait_status = Reap(pid, outcome.in_time ? deadline : Clock::now());
  if (outcome.output.size() > max_output) outcome.output.resize(max_output);
  return outcome;
}

}  // namespace shardpack::common
