// Containment for files nobody checksummed: the file is read once by our
// reader classes in a forked child, so that if liblmdb or libhdf5 dies on it
// (SIGSEGV, SIGBUS, an abort) or loops, the child dies and the parent gets
// an error naming the file.
//
// Why fork and not a helper program: the child runs exactly the library
// code and our reader classes that the parent will run, with nothing to
// install or find on PATH. What fork costs is in common/child_process.h:
// the locks the child may meet are malloc's and the HDF5 mutex
// (hdf5_util.cc holds it across fork with pthread_atfork).
#include <string.h>
#include <sys/wait.h>

#include <chrono>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "backends/shard_gate.h"
#include "backends/store.h"
#include "common/child_process.h"
#include "common/errors.h"
#include "common/os.h"
#include "common/posix_io.h"
#include "common/status_macros.h"
#include "shardpack/file.h"

namespace shardpack::backends {
namespace {

using Clock = std::chrono::steady_clock;

// The most of the child's error message that is passed back: one line for a
// person, far below a pipe's buffer (RunInChild's max_output).
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
  SP_ASSIGN_OR_RETURN(const common::FileStatus st, common::Stat(path, "open"));
  const double seconds =
      options.base_seconds + static_cast<double>(st.size) / options.bytes_per_second;
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  auto child = [&]() -> std::string {
    absl::Status s = ScanEverything(path, backend);
    return absl::StrCat(static_cast<int>(s.code()), ":", s.message());
  };
  SP_ASSIGN_OR_RETURN(common::ChildOutcome outcome,
                      common::RunInChild(child, deadline, kMaxMessage, "to check", path));
  const bool in_time = outcome.in_time;
  const std::optional<int> status = outcome.wait_status;
  const std::string& result = outcome.output;
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
