// The reference shardbench compares the reader with: the dataset's shard
// files read start to end in 4 MiB requests into one buffer, as
// `dd if=SHARD of=/dev/null bs=4M` (or `iflag=direct`) reads them, with
// nothing done to the bytes.
#ifndef SHARDPACK_TOOLS_BENCH_RAW_READ_H_
#define SHARDPACK_TOOLS_BENCH_RAW_READ_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shardpack::shardbench {

// dd's bs=4M.
inline constexpr size_t kRawReadSize = size_t{4} << 20;

// The shard files of a dataset directory (from its manifest), or `path`
// itself when it is a single shard file.
absl::StatusOr<std::vector<std::string>> ShardFiles(const std::string& path);

// posix_fadvise(POSIX_FADV_DONTNEED) over each whole file: evicts its clean
// pages from the page cache, without root (a no-op on tmpfs, whose pages are
// the file). Files whose pages another process has mapped keep them.
absl::Status DropCaches(const std::vector<std::string>& paths);

struct RawRun {
  uint64_t bytes = 0;   // bytes read, all passes
  double seconds = 0;   // wall time of the reads
  int passes = 0;       // times every file was read start to end
  bool direct = false;  // O_DIRECT
};

// Reads every file start to end, `passes` times over, in kRawReadSize
// requests with pread (O_DIRECT when `direct`; the files must then be on a
// filesystem that supports it). Errors name the file and offset.
absl::StatusOr<RawRun> RawRead(const std::vector<std::string>& paths, bool direct, int passes);

}  // namespace shardpack::shardbench

#endif  // SHARDPACK_TOOLS_BENCH_RAW_READ_H_
