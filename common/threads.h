// Threads the system may refuse to make. std::thread's constructor throws
// std::system_error when the kernel will not start a thread: EAGAIN under a
// pids cgroup (containers, Slurm), RLIMIT_NPROC, or no memory for a stack
// (RLIMIT_AS, a memory cgroup). Thrown out of a tool's main or a worker, it
// ends the process in std::terminate; these turn it into a Status instead.
// Internal: not installed.
#ifndef SHARDPACK_COMMON_THREADS_H_
#define SHARDPACK_COMMON_THREADS_H_

#include <functional>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"

namespace shardpack::common {

// Starts `fn` on a new thread, moved into *thread (which must not be
// joinable). When the system refuses: ResourceExhaustedError "cannot start
// <what>: <strerror> (<n> threads run in this process; the system's limit
// on threads or memory was reached: a pids or memory cgroup, ulimit -u or
// ulimit -v)", and *thread is left as it was.
absl::Status StartThread(std::thread* thread, std::string_view what, std::function<void()> fn);

// Threads started and joined together. Start() and JoinAll() are called
// from the owner's thread. The destructor joins whatever still runs, so a
// group's threads must stop on their own, or be told to by the owner,
// before it goes (the owner's stop flag, set before JoinAll()).
//
// A thread whose function throws std::bad_alloc or std::system_error (the
// system refused memory, or a thread of its own) ends there instead of the
// whole process: the group keeps the first such error for JoinAll() and
// calls `on_failure` on that thread, which must make the others (and the
// owner, if it waits for the failed thread's work) stop.
class ThreadGroup {
 public:
  ThreadGroup() = default;
  ~ThreadGroup() { (void)JoinAll(); }
  ThreadGroup(const ThreadGroup&) = delete;
  ThreadGroup& operator=(const ThreadGroup&) = delete;

  // Starts `count` threads running fn(i), i = 0..count-1, named `what` in
  // errors. Stops at the first thread the system refuses and returns
  // StartThread's error naming it ("thread 5 of 16 of <what>"); the
  // threads started before it keep running.
  absl::Status Start(int count, std::string_view what, const std::function<void(int)>& fn,
                     const std::function<void()>& on_failure = nullptr);

  // Joins every thread started so far; the group may then start again.
  // Returns the first error a thread ended with (ResourceExhaustedError
  // "out of memory in thread 3 of 4 of <what>: ..."), else OK.
  absl::Status JoinAll();

  size_t size() const { return threads_.size(); }

 private:
  void Failed(absl::Status error, const std::function<void()>& on_failure);

  std::vector<std::thread> threads_;
  std::mutex mu_;
  absl::Status error_;  // guarded by mu_
};

}  // namespace shardpack::common

#endif  // SHARDPACK_COMMON_THREADS_H_
