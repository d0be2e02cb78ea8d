// Containment for files nobody checksummed: the file is read once by our
// reader classes in a forked child, so that if liblmdb or libhdf5 dies on it
// (SIGSEGV, SIGBUS, an abort) or loops, the child dies and the parent gets
// an error naming the file.
//
// Why fork and not a helper program: the child runs exactly the library
// code and our reader classes that the parent will run, with nothing to
// install or find on PATH. What fork costs: the child of a multithreaded
// process holds only the forking thread, so every lock another thread might
// hold must be safe: malloc's (glibc resets them at fork), and the HDF5
// mutex (hdf5_util.cc holds it across fork with pthread_atfork). The child
// touches nothing else that is locked, writes only to its pipe and leaves
// by _exit(), never running the parent's atexit handlers or flushing its
// stdio buffers.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "backends/shard_gate.h"
#include "backends/store.h"
#include "common/errors.h"
#include "common/posix_io.h"
#include "common/status_macros.h"
#include "shardpack/file.h"

namespace shardpack::backends {
namespace {

using Clock = std::chrono::steady_clock;

// The most of the child's error message that is passed back: one line for a
// person, far below a pipe's buffer so the child never blocks writing it.
constexpr size_t kMaxMessage = 4000;

const char* LibraryOf(Backend backend) {
  return backend == Backend::kLmdb ? "liblmdb" : "libhdf5";
}

// Opens the file and visits every record, as the parent will.
absl::Status ScanEverything(const std::string& path, Backend backend) {
  SP_ASSIGN_OR_RETURN(auto scanner, ShardScanner::Open(path, backend));
  return scanner->Scan(0, scanner->size(),
                       [](uint64_t, const Record&) { return absl::OkStatus(); });
}

[[noreturn]] void RunChild(const std::string& path, Backend backend, int fd) {
  // Die plainly: no core file per damaged file, and the default action for
  // the signals a damaged file causes, whatever handlers the parent
  // installed (Python's faulthandler, a sanitizer's), so that the parent
  // sees which signal it was.
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGPIPE}) signal(sig, SIG_DFL);
  absl::Status s = ScanEverything(path, backend);
  std::string result = absl::StrCat(static_cast<int>(s.code()), ":", s.message());
  // Nothing to do if the parent is gone: it then reports the child itself.
  const std::string message = result.substr(0, kMaxMessage);
  (void)::shardpack::common::WriteFull(
      fd, "the result pipe", {reinterpret_cast<const uint8_t*>(message.data()), message.size()});
  _exit(0);
}

// The child's result, read until it closes the pipe or `deadline` passes
// (false then).
bool ReadResult(int fd, Clock::time_point deadline, std::string* out) {
  char buffer[4096];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p = {fd, POLLIN, 0};
    int rc = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return false;
    if (rc == 0) continue;
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    if (out->size() < kMaxMessage) out->append(buffer, static_cast<size_t>(n));
  }
}

// Waits for the child to be gone, killing it at `deadline`. The wait
// status, or nullopt when it cannot be had (SIGCHLD ignored: the kernel
// reaps the child itself).
std::optional<int> Reap(pid_t pid, Clock::time_point deadline) {
  std::chrono::microseconds pause(20);
  while (true) {
    int status = 0;
    pid_t rc = waitpid(pid, &status, WNOHANG);
    if (rc == pid) return status;
    if (rc < 0 && errno != EINTR) return std::nullopt;
    if (Clock::now() >= deadline) {
      kill(pid, SIGKILL);
      deadline = Clock::time_point::max();
      continue;
    }
    // The child is usually exiting already: poll fast, then back off.
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10000));
  }
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? absl::StrCat("SIG", abbrev) : absl::StrCat("signal ", sig);
}

// "code:message" from the child -> the status it stands for.
std::optional<absl::Status> ParseResult(const std::string& result) {
  size_t colon = result.find(':');
  int code = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(result.substr(0, colon), &code) ||
      code < 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return std::nullopt;
  }
  return absl::Status(static_cast<absl::StatusCode>(code), result.substr(colon + 1));
}

absl::Status Damaged(const std::string& path, const std::string& what) {
  return absl::DataLossError(
      absl::StrCat(path, ": damaged: ", what, " (the file was not checksummed by shardpack)"));
}

}  // namespace

absl::Status VetShardFile(const std::string& path, Backend backend, const VetOptions& options) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return shardpack::common::ErrnoError("open", path, errno);
  const double seconds =
      options.base_seconds + static_cast<double>(st.st_size) / options.bytes_per_second;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return common::ErrnoError("pipe (to check)", path, errno);
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(fds[0]);
    close(fds[1]);
    return shardpack::common::ErrnoError("fork (to check)", path, err);
  }
  if (pid == 0) {
    close(fds[0]);
    RunChild(path, backend, fds[1]);
  }
  close(fds[1]);
  std::string result;
  const bool in_time = ReadResult(fds[0], deadline, &result);
  close(fds[0]);
  std::optional<int> status = Reap(pid, in_time ? deadline : Clock::now());
  const char* library = LibraryOf(backend);
  if (!in_time) {
    return Damaged(path, absl::StrCat("checking it with ", library, " took over ",
                                      static_cast<int64_t>(seconds), " s (stopped)"));
  }
  if (status.has_value() && WIFSIGNALED(*status)) {
    return Damaged(path, absl::StrCat(library, " died with ", SignalName(WTERMSIG(*status)),
                                      " while checking it"));
  }
  std::optional<absl::Status> parsed = ParseResult(result);
  if (parsed.has_value()) return *parsed;
  return Damaged(path, absl::StrCat("checking it with ", library, " ended without a result",
                                    status.has_value() && WIFEXITED(*status)
                                        ? absl::StrCat(" (exit status ", WEXITSTATUS(*status), ")")
                                        : std::string()));
}

}  // namespace shardpack::backends
