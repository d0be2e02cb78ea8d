// Running a piece of this program in a forked child, for work that may
// crash or hang in a library we cannot make safe (backends/shard_vet.cc
// reads a file nobody checksummed with liblmdb or libhdf5 there).
//
// What fork costs: the child of a multithreaded process holds only the
// forking thread, so `body` may take only locks that are safe after fork
// (malloc's: glibc resets them; others held across fork with
// pthread_atfork). The child leaves by _exit(), never running the parent's
// atexit handlers or flushing its stdio buffers.
#ifndef SHARDPACK_COMMON_CHILD_PROCESS_H_
#define SHARDPACK_COMMON_CHILD_PROCESS_H_

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"

namespace shardpack::common {

// How a child run by RunInChild ended.
struct ChildOutcome {
  // False when the deadline passed first: the child was then killed.
  bool in_time = true;
  // What `body` returned, cut to max_output bytes ("" when the child died
  // before it could say).
  std::string output;
  // The wait status (test with WIFSIGNALED, WTERMSIG, WIFEXITED, ...), or
  // nullopt when it cannot be had (SIGCHLD ignored: the kernel reaps the
  // child itself).
  std::optional<int> wait_status;
};

// Forks a child that, with core files off and the default action for the
// signals a crash raises (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
// SIGPIPE) whatever handlers this process installed, runs `body` and sends
// back what it returns (at most `max_output` bytes, which must stay below a
// pipe's buffer, 4 KiB at the least, so the child never blocks). The parent
// waits for it until `deadline`, then kills it (SIGKILL). Errors only when
// the child cannot be started: "pipe (<purpose>) <name>: ...", "fork
// (<purpose>) <name>: ...".
absl::StatusOr<ChildOutcome> RunInChild(absl::FunctionRef<std::string()> body,
                                        std::chrono::steady_clock::time_point deadline,
                                        size_t max_output, std::string_view purpose,
                                        std::string_view name);

}  // namespace shardpack::common

#endif  // SHARDPACK_COMMON_CHILD_PROCESS_H_
