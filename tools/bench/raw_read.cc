#include "tools/bench/raw_read.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/posix_io.h"
#include "common/posix_open.h"
#include "common/status_macros.h"
#include "common/unique_fd.h"
#include "shardpack/dataset.h"
#include "shardpack/file.h"

namespace shardpack::shardbench {
namespace {

namespace fs = std::filesystem;
using ::shardpack::common::CheckRegularFile;

// O_DIRECT wants the buffer, offsets and lengths aligned to the logical
// block size; 4096 covers every device we meet (the reader uses the same).
constexpr size_t kDirectAlignment = 4096;

using Fd = ::shardpack::common::UniqueFd;

// One pass over one file; returns the bytes read.
absl::StatusOr<uint64_t> ReadFile(const std::string& path, bool direct, uint8_t* buffer) {
  SP_RETURN_IF_ERROR(CheckRegularFile(path));  // a FIFO would block the open
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0)));
  if (fd.get() < 0) {
    if (direct && errno == EINVAL) {
      return absl::UnavailableError(
          absl::StrCat(path, ": O_DIRECT is not supported on this filesystem"));
    }
    return common::ErrnoError(direct ? "open (O_DIRECT)" : "open", path, errno);
  }
  // What dd does not do, but the reader's pread engine does too; advice only.
  if (!direct) posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  uint64_t offset = 0;
  for (;;) {
    SP_ASSIGN_OR_RETURN(size_t n, ::shardpack::common::PreadSome(fd.get(), path, offset,
                                                                   {buffer, kRawReadSize}));
    if (n == 0) break;
    offset += n;
    // An O_DIRECT read cannot go on from an unaligned offset: that was the end.
    if (direct && offset % kDirectAlignment != 0) break;
  }
  return offset;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ShardFiles(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return std::vector<std::string>{path};
  SP_ASSIGN_OR_RETURN(Manifest manifest, ReadManifest(path));
  std::vector<std::string> files;
  for (const ShardEntry& shard : manifest.shards) {
    files.push_back((fs::path(path) / shard.path).string());
  }
  return files;
}

absl::Status DropCaches(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    SP_RETURN_IF_ERROR(CheckRegularFile(path));
    Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return common::ErrnoError("open", path, errno);
    // Dirty pages are not dropped; a freshly packed file may still have some.
    fdatasync(fd.get());
    int rc = posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
    if (rc != 0) return common::ErrnoError("posix_fadvise(DONTNEED)", path, rc);
  }
  return absl::OkStatus();
}

absl::StatusOr<RawRun> RawRead(const std::vector<std::string>& paths, bool direct, int passes) {
  RawRun run;
  run.direct = direct;
  std::unique_ptr<void, decltype(&std::free)> buffer(
      std::aligned_alloc(kDirectAlignment, kRawReadSize), &std::free);
  if (buffer == nullptr) return absl::ResourceExhaustedError("no memory for the raw read buffer");
  // Touch the buffer once so the first pass does not pay its page faults.
  std::memset(buffer.get(), 0, kRawReadSize);
  const auto start = std::chrono::steady_clock::now();
  for (int pass = 0; pass < passes; ++pass) {
    for (const std::string& path : paths) {
      SP_ASSIGN_OR_RETURN(uint64_t bytes,
                          ReadFile(path, direct, static_cast<uint8_t*>(buffer.get())));
      run.bytes += bytes;
    }
    ++run.passes;
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace shardpack::shardbench
