// The operating system beyond reading and writing files (common/posix_io.h):
// what a path is (stat), making and removing a directory or a name, the
// page size and the machine's memory, and the hints given to the kernel
// about memory and files. With posix_io.h, the only place outside the
// allowlist of scripts/check-structure that calls the operating system.
//
// Errors are "<what> <path>: <strerror>", coded as ErrnoError codes errno
// (NotFoundError for ENOENT, AlreadyExistsError for EEXIST, ...).
#ifndef SHARDPACK_COMMON_OS_H_
#define SHARDPACK_COMMON_OS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/unique_fd.h"

namespace shardpack::common {

// What stat(2) says of a file, the fields this project reads.
struct FileStatus {
  uint32_t mode = 0;  // st_mode: test with S_ISDIR, S_ISREG, S_ISLNK
  uint64_t size = 0;
  uint64_t device = 0;
  uint64_t inode = 0;
  bool IsDirectory() const;
  bool IsRegularFile() const;
  bool IsSymbolicLink() const;
  // Whether both name the same file (device and inode).
  bool SameFile(const FileStatus& other) const {
    return device == other.device && inode == other.inode;
  }
};

// stat(2) of `path`, following a symbolic link (Stat) or not (Lstat), or of
// the open descriptor `fd` (Fstat, `name` in errors). "<what> <path>: ...".
absl::StatusOr<FileStatus> Stat(const std::string& path, std::string_view what = "stat");
absl::StatusOr<FileStatus> Lstat(const std::string& path, std::string_view what = "stat");
absl::StatusOr<FileStatus> Fstat(int fd, std::string_view name);

// Whether `path` names something, following symbolic links (access(2),
// F_OK): false when it is not there or cannot be seen.
bool PathExists(const std::string& path);

// mkdir(2) of `path` with mode 0777 (less the umask): "create <path>: ...";
// AlreadyExistsError when something is there.
absl::Status MakeDirectory(const std::string& path);

// rmdir(2) of the empty directory `path`: "remove <path>: ...";
// FailedPreconditionError "remove <path>: Directory not empty" when it holds
// something (ENOTEMPTY or EEXIST).
absl::Status RemoveDirectory(const std::string& path);

// unlink(2) of the name `path` (never a directory): "remove <path>: ...".
absl::Status RemoveFile(const std::string& path);

// A directory open for making and removing names in it (openat, unlinkat):
// a name is looked up in the directory opened, never through a symbolic link
// put in the path meanwhile. Errors name "<dir>/<name>". Move-only; the
// descriptor is closed with it.
class DirFd {
 public:
  // Opens the directory `dir` (a symbolic link to one is followed):
  // "open directory <dir>: ...".
  static absl::StatusOr<DirFd> Open(const std::string& dir);

  // Creates the new file `name` in it for writing (O_CREAT | O_EXCL |
  // O_NOFOLLOW, 0644): "create <dir>/<name>: ..."; AlreadyExistsError when
  // anything, a symbolic link included, has that name.
  absl::StatusOr<UniqueFd> CreateNewFile(const std::string& name) const;

  // Removes the name `name` in it (a file or a link, never a directory):
  // "<what> <dir>/<name>: ..."; NotFoundError when there is none.
  absl::Status RemoveFile(const std::string& name, std::string_view what = "remove") const;

  const std::string& path() const { return dir_; }
  int get() const { return fd_.get(); }

 private:
  DirFd(std::string dir, UniqueFd fd) : dir_(std::move(dir)), fd_(std::move(fd)) {}
  std::string Shown(const std::string& name) const;

  std::string dir_;
  UniqueFd fd_;
};

// Closes `fd`, reporting a failed close (a write the kernel had still to
// make on NFS): "close <name>: ...".
absl::Status CloseFile(UniqueFd fd, std::string_view name);

// Reserves the first `bytes` of the open file `fd` on disk (fallocate(2)),
// so that a full disk is found now rather than by a later write. 0, or the
// errno of the failure; 0 also where the file system cannot reserve
// (EOPNOTSUPP: nothing is reserved then).
int ReserveFileBytes(int fd, uint64_t bytes);

// Points the descriptor `fd` at a new, empty in-memory file (memfd_create
// and dup2), closing what it was open on, so that writes through it (a
// library's, that holds the number) land nowhere lasting. False, `fd`
// unchanged, when no such file can be made.
bool RedirectToMemoryFile(int fd);

// The size of a memory page (sysconf(_SC_PAGESIZE)), read once.
size_t PageSize();

// The machine's physical memory in bytes (sysconf), 0 when unknown.
uint64_t PhysicalMemoryBytes();

// 64 bits from the kernel's random source (getrandom(2)), for seeds that must
// differ between processes (retry jitter), never for the reader's stream,
// which is a pure function of its seed (common/rng.h). Thread-safe. Where
// getrandom fails, the time and the pid. std::random_device would do, but in
// the wheel, whose libstdc++ is linked statically, it needs glibc 2.36's
// arc4random, above manylinux_2_34 (docs/python.md, "The manylinux wheel").
uint64_t RandomSeed();

// Whether the file system holding `path` keeps its files in memory (tmpfs,
// ramfs). "statfs <path>: ..." when it cannot be asked.
absl::StatusOr<bool> IsMemoryFileSystem(const std::string& path);

// The bytes of the regular file `path` in the page cache now, in whole
// pages (mincore(2) over a read-only mapping, a window of up to 1 GiB at a
// time; the last page counts whole): what a read would copy from memory
// instead of waiting for a device. "<what> <path>: ..." when it cannot be
// opened or mapped.
absl::StatusOr<uint64_t> ResidentBytes(const std::string& path);

// Whether the page cache maps the regular file `path` in 2 MiB pages: one
// 2 MiB piece from its middle is mapped at a 2 MiB boundary and faulted in
// (MADV_POPULATE_READ; it reads it in if it is not cached), and
// /proc/self/smaps_rollup's FilePmdMapped must grow by it. Linux 6.18 holds
// an ext4 file so when it was written or read in large pieces (not when read
// in by posix_fadvise(WILLNEED)). False for a file under 2 MiB, or where the
// kernel cannot say; "<what> <path>: ..." when it cannot be opened.
absl::StatusOr<bool> PageCacheMapsHugePages(const std::string& path);

// madvise(2) advice: hints, whose failure changes only speed.
enum class MemoryAdvice {
  kWillNeed,   // read the pages in now
  kDontNeed,   // drop them from this process (mapped file pages come back on use)
  kHugePages,  // back the range with transparent huge pages
};

// madvise of the `n` bytes at `p`, widened to whole pages (the start rounded
// down to a page; the kernel rounds the end up). `p` must lie in a mapping
// or an allocation of this process that holds the whole range. Failures
// are ignored: advice is a hint.
void AdviseMemory(const void* p, size_t n, MemoryAdvice advice);

// posix_fadvise(2) advice on an open file: hints, failures ignored.
enum class FileAdvice {
  kWillNeed,    // start reading the range into the page cache
  kSequential,  // read ahead more (the whole file when length is 0)
  kDontNeed,    // drop the file's clean pages from the page cache
};
void AdviseFile(int fd, uint64_t offset, uint64_t length, FileAdvice advice);

}  // namespace shardpack::common

#endif  // SHARDPACK_COMMON_OS_H_
