#include "common/threads.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <new>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/errors.h"

namespace shardpack::common {
namespace {

// The number of threads this process runs, from /proc/self/status
// ("Threads:\t17"); 0 when it cannot be read.
int ThreadsInProcess() {
  std::FILE* f = std::fopen("/proc/self/status", "re");
  if (f == nullptr) return 0;
  char line[256];
  int n = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "Threads: %d", &n) == 1) break;
  }
  std::fclose(f);
  return n;
}

}  // namespace

absl::Status StartThread(std::thread* thread, std::string_view what, std::function<void()> fn) {
  try {
    *thread = std::thread(std::move(fn));
    return absl::OkStatus();
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot start ", AsAbsl(what), ": ", std::strerror(e.code().value()), " (",
        ThreadsInProcess(),
        " threads run in this process; the system's limit on threads or memory was reached: a "
        "pids or memory cgroup, ulimit -u or ulimit -v)"));
  }
}

absl::Status ThreadGroup::Start(int count, std::string_view what,
                                const std::function<void(int)>& fn,
                                const std::function<void()>& on_failure) {
  threads_.reserve(threads_.size() + static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    const std::string name = absl::StrCat("thread ", i + 1, " of ", count, " of ", AsAbsl(what));
    // Made now: where memory has run out, the handler cannot make a message
    // (a Status is copied by reference count, with no allocation).
    const absl::Status out_of_memory = absl::ResourceExhaustedError(absl::StrCat(
        "out of memory in ", name,
        ": the system refused an allocation (a memory cgroup, ulimit -v, or the machine's memory "
        "is used up)"));
    const absl::Status refused = absl::ResourceExhaustedError(absl::StrCat(
        name, ": the system refused a thread or a lock (a pids or memory cgroup, ulimit -u)"));
    std::thread t;
    absl::Status status = StartThread(&t, name, [this, fn, on_failure, i, out_of_memory, refused] {
      try {
        fn(i);
      } catch (const std::bad_alloc&) {
        Failed(out_of_memory, on_failure);
      } catch (const std::system_error&) {
        Failed(refused, on_failure);
      }
    });
    if (!status.ok()) return status;
    threads_.push_back(std::move(t));
  }
  return absl::OkStatus();
}

void ThreadGroup::Failed(absl::Status error, const std::function<void()>& on_failure) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.ok()) error_ = std::move(error);
  }
  if (on_failure) on_failure();
}

absl::Status ThreadGroup::JoinAll() {
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(error_, absl::OkStatus());
}

}  // namespace shardpack::common
