#include "common/os.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/posix_open.h"
#include "common/status_macros.h"
#include "common/unique_fd.h"

namespace shardpack::common {
namespace {

FileStatus FromStat(const struct stat& st) {
  FileStatus s;
  s.mode = st.st_mode;
  s.size = static_cast<uint64_t>(st.st_size);
  s.device = static_cast<uint64_t>(st.st_dev);
  s.inode = static_cast<uint64_t>(st.st_ino);
  return s;
}

}  // namespace

bool FileStatus::IsDirectory() const { return S_ISDIR(mode); }
bool FileStatus::IsRegularFile() const { return S_ISREG(mode); }
bool FileStatus::IsSymbolicLink() const { return S_ISLNK(mode); }

absl::StatusOr<FileStatus> Stat(const std::string& path, std::string_view what) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoError(what, path, errno);
  return FromStat(st);
}

absl::StatusOr<FileStatus> Lstat(const std::string& path, std::string_view what) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return ErrnoError(what, path, errno);
  return FromStat(st);
}

absl::StatusOr<FileStatus> Fstat(int fd, std::string_view name) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoError("stat", name, errno);
  return FromStat(st);
}

bool PathExists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

absl::Status MakeDirectory(const std::string& path) {
  if (::mkdir(path.c_str(), 0777) != 0) return ErrnoError("create", path, errno);
  return absl::OkStatus();
}

absl::Status RemoveDirectory(const std::string& path) {
  if (::rmdir(path.c_str()) == 0) return absl::OkStatus();
  const int err = errno;
  if (err == ENOTEMPTY || err == EEXIST) {
    return absl::FailedPreconditionError(
        absl::StrCat("remove ", path, ": ", ErrnoText(ENOTEMPTY)));
  }
  return ErrnoError("remove", path, err);
}

absl::Status RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0) return ErrnoError("remove", path, errno);
  return absl::OkStatus();
}

absl::StatusOr<DirFd> DirFd::Open(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoError("open directory", dir, errno);
  return DirFd(dir, std::move(fd));
}

std::string DirFd::Shown(const std::string& name) const { return absl::StrCat(dir_, "/", name); }

absl::StatusOr<UniqueFd> DirFd::CreateNewFile(const std::string& name) const {
  UniqueFd fd(::openat(fd_.get(), name.c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (fd.get() < 0) return ErrnoError("create", Shown(name), errno);
  return fd;
}

absl::Status DirFd::RemoveFile(const std::string& name, std::string_view what) const {
  if (::unlinkat(fd_.get(), name.c_str(), 0) != 0) return ErrnoError(what, Shown(name), errno);
  return absl::OkStatus();
}

absl::Status CloseFile(UniqueFd fd, std::string_view name) {
  if (::close(fd.release()) != 0) return ErrnoError("close", name, errno);
  return absl::OkStatus();
}

int ReserveFileBytes(int fd, uint64_t bytes) {
  if (::fallocate(fd, 0, 0, static_cast<off_t>(bytes)) == 0 || errno == EOPNOTSUPP) return 0;
  return errno;
}

bool RedirectToMemoryFile(int fd) {
  // Sparse: only what is written takes memory.
  UniqueFd sink(::memfd_create("shardpack-discarded", MFD_CLOEXEC));
  return sink.get() >= 0 && ::dup2(sink.get(), fd) >= 0;
}

size_t PageSize() {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

uint64_t PhysicalMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  return pages <= 0 ? 0 : static_cast<uint64_t>(pages) * PageSize();
}

uint64_t RandomSeed() {
  uint64_t seed = 0;
  if (::getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == static_cast<ssize_t>(sizeof(seed))) {
    return seed;
  }
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return (static_cast<uint64_t>(now.tv_sec) * 1000000000ULL + static_cast<uint64_t>(now.tv_nsec)) ^
         (static_cast<uint64_t>(::getpid()) << 32);
}

absl::StatusOr<bool> IsMemoryFileSystem(const std::string& path) {
  struct statfs st;
  if (::statfs(path.c_str(), &st) != 0) return ErrnoError("statfs", path, errno);
  const auto type = static_cast<uint32_t>(st.f_type);
  return type == uint32_t{TMPFS_MAGIC} || type == uint32_t{RAMFS_MAGIC};
}

absl::StatusOr<uint64_t> ResidentBytes(const std::string& path) {
  uint64_t size = 0;
  SP_ASSIGN_OR_RETURN(int raw, OpenRegularFile(path, 0, &size));
  UniqueFd fd(raw);
  constexpr uint64_t kWindow = uint64_t{1} << 30;
  const uint64_t page = PageSize();
  // One byte a page of the largest window: the work is the file's, not 1 GiB's.
  std::vector<unsigned char> pages((std::min(kWindow, size) + page - 1) / page);
  uint64_t resident = 0;
  for (uint64_t at = 0; at < size; at += kWindow) {
    const size_t n = static_cast<size_t>(std::min(kWindow, size - at));
    void* map = ::mmap(nullptr, n, PROT_READ, MAP_SHARED, fd.get(), static_cast<off_t>(at));
    if (map == MAP_FAILED) return ErrnoError("map", path, errno);
    const int r = ::mincore(map, n, pages.data());
    const int err = errno;
    ::munmap(map, n);
    if (r != 0) return ErrnoError("mincore", path, err);
    for (size_t i = 0; i < (n + page - 1) / page; ++i) resident += pages[i] & 1;
  }
  return resident * page;
}

namespace {

constexpr uint64_t kHugePage = uint64_t{2} << 20;

// FilePmdMapped of this process, in bytes; nullopt where the kernel does not
// report it.
std::optional<uint64_t> FilePmdMappedBytes() {
  UniqueFd fd(::open("/proc/self/smaps_rollup", O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return std::nullopt;
  char text[4096];
  const ssize_t n = ::read(fd.get(), text, sizeof(text) - 1);
  if (n <= 0) return std::nullopt;
  text[n] = '\0';
  const char* line = std::strstr(text, "\nFilePmdMapped:");
  if (line == nullptr) return std::nullopt;
  return std::strtoull(line + std::strlen("\nFilePmdMapped:"), nullptr, 10) * 1024;
}

}  // namespace

absl::StatusOr<bool> PageCacheMapsHugePages(const std::string& path) {
  uint64_t size = 0;
  SP_ASSIGN_OR_RETURN(int raw, OpenRegularFile(path, 0, &size));
  UniqueFd fd(raw);
  if (size < kHugePage) return false;
  // A huge page maps a 2 MiB-aligned piece of the file at a 2 MiB-aligned
  // address: reserve twice that and place the piece on the boundary inside.
  void* area = ::mmap(nullptr, 2 * kHugePage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area == MAP_FAILED) return false;
  const uintptr_t aligned = (reinterpret_cast<uintptr_t>(area) + kHugePage - 1) & ~(kHugePage - 1);
  const off_t offset = static_cast<off_t>(size / 2 / kHugePage * kHugePage);
  void* piece = ::mmap(reinterpret_cast<void*>(aligned), kHugePage, PROT_READ,
                       MAP_SHARED | MAP_FIXED, fd.get(), offset);
  bool huge = false;
  if (piece != MAP_FAILED) {
    constexpr int kPopulateRead = 22;  // MADV_POPULATE_READ, Linux 5.14
    const std::optional<uint64_t> before = FilePmdMappedBytes();
    if (before && ::madvise(piece, kHugePage, kPopulateRead) == 0) {
      const std::optional<uint64_t> after = FilePmdMappedBytes();
      huge = after && *after >= *before + kHugePage;
    }
  }
  ::munmap(area, 2 * kHugePage);
  return huge;
}

void AdviseMemory(const void* p, size_t n, MemoryAdvice advice) {
  if (n == 0) return;
  const uintptr_t page = PageSize();
  const auto at = reinterpret_cast<uintptr_t>(p);
  const uintptr_t start = at & ~(page - 1);
  const int flag = advice == MemoryAdvice::kWillNeed   ? MADV_WILLNEED
                   : advice == MemoryAdvice::kDontNeed ? MADV_DONTNEED
                                                       : MADV_HUGEPAGE;
  (void)::madvise(reinterpret_cast<void*>(start), at + n - start, flag);
}

void AdviseFile(int fd, uint64_t offset, uint64_t length, FileAdvice advice) {
  const int flag = advice == FileAdvice::kWillNeed     ? POSIX_FADV_WILLNEED
                   : advice == FileAdvice::kSequential ? POSIX_FADV_SEQUENTIAL
                                                       : POSIX_FADV_DONTNEED;
  (void)::posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(length), flag);
}

}  // namespace shardpack::common
