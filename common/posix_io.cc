#include "common/posix_io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/posix_open.h"
#include "common/rng.h"
#include "common/status_macros.h"

namespace shardpack::common {

absl::Status ReadErrorAt(std::string_view name, uint64_t offset, int err) {
  absl::Status coded = common::ErrnoError("read", name, err);
  return absl::Status(coded.code(),
                      absl::StrCat(AsAbsl(name), " @", offset, ": read failed: ", strerror(err)));
}

absl::Status ShortReadAt(std::string_view name, uint64_t offset, uint64_t missing) {
  return DataLossAt(
      name, offset,
      absl::StrCat("file ended ", missing, " bytes early (did it shrink after it was opened?)"));
}

absl::Status ReadPastEndAt(std::string_view name, uint64_t offset, uint64_t length, uint64_t size) {
  return DataLossAt(
      name, offset,
      absl::StrCat("read of ", length, " bytes past the end of the file (", size, " bytes)"));
}

ssize_t PreadRetrying(int fd, void* dst, size_t n, uint64_t offset) {
  ssize_t got;
  do {
    got = pread(fd, dst, n, static_cast<off_t>(offset));
  } while (got < 0 && errno == EINTR);
  return got;
}

absl::StatusOr<size_t> PreadSome(int fd, std::string_view name, uint64_t offset,
                                 std::span<uint8_t> dst) {
  const ssize_t n = PreadRetrying(fd, dst.data(), dst.size(), offset);
  if (n < 0) return ReadErrorAt(name, offset, errno);
  return static_cast<size_t>(n);
}

absl::Status PreadFull(int fd, std::string_view name, uint64_t offset, std::span<uint8_t> dst) {
  size_t done = 0;
  while (done < dst.size()) {
    SP_ASSIGN_OR_RETURN(size_t n, PreadSome(fd, name, offset + done, dst.subspan(done)));
    if (n == 0) return ShortReadAt(name, offset + done, dst.size() - done);
    done += n;
  }
  return absl::OkStatus();
}

absl::Status WriteFull(int fd, std::string_view name, std::span<const uint8_t> data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return common::ErrnoError("write", name, errno);
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status PwriteFull(int fd, std::string_view name, uint64_t offset,
                        std::span<const uint8_t> data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n =
        pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return common::ErrnoError("write", name, errno);
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status SyncFile(int fd, std::string_view name) {
  if (fsync(fd) != 0) return common::ErrnoError("fsync", name, errno);
  return absl::OkStatus();
}

absl::Status SyncFileData(int fd, std::string_view name) {
  if (fdatasync(fd) != 0) return common::ErrnoError("fsync", name, errno);
  return absl::OkStatus();
}

absl::Status SyncDirectory(const std::string& dir) {
  const UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return common::ErrnoError("open directory", dir, errno);
  return SyncFile(fd.get(), dir);
}

std::string ParentDirectory(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

absl::Status SyncParentDirectory(const std::string& path) {
  return SyncDirectory(ParentDirectory(path));
}

namespace {

// renameat2(2) where the file system has it; -1 with errno EINVAL or
// ENOSYS where it does not.
int Rename2(const std::string& from, const std::string& to, unsigned flags) {
  return renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), flags);
}

// rename(2) that keeps a file already at `to`: 0, or -1 with errno (EEXIST
// when `to` exists).
int RenameNoReplace(const std::string& from, const std::string& to) {
  if (Rename2(from, to, RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
  // No renameat2 here (some network file systems): link(2) fails on an
  // existing name too; the temporary's name then goes.
  if (link(from.c_str(), to.c_str()) != 0) return -1;
  unlink(from.c_str());
  return 0;
}

constexpr std::string_view kPartialSuffix = ".partial";
constexpr size_t kPartialHexDigits = 12;

}  // namespace

absl::Status PublishFile(const std::string& partial, const std::string& path, bool replace) {
  const int rc = replace ? rename(partial.c_str(), path.c_str()) : RenameNoReplace(partial, path);
  if (rc != 0) {
    const int err = errno;
    unlink(partial.c_str());
    if (err == EEXIST && !replace) {
      return absl::AlreadyExistsError(absl::StrCat(AsAbsl(path), " already exists"));
    }
    return common::ErrnoError("rename", partial, err);
  }
  return SyncParentDirectory(path);
}

std::atomic<bool> atomic_file_tries_tmpfile{true};

namespace {

absl::Status CopyBytes(int in, int out, uint64_t size, const std::string& what) {
  bool in_kernel = true;
  std::vector<uint8_t> buffer;
  for (uint64_t done = 0; done < size;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(size - done, uint64_t{1} << 30));
    if (in_kernel) {
      const ssize_t n = copy_file_range(in, nullptr, out, nullptr, want, 0);
      if (n > 0) {
        done += static_cast<uint64_t>(n);
        continue;
      }
      if (n == 0) return ShortReadAt(what, done, size - done);
      if (errno == EINTR) continue;
      if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) {
        return ErrnoError("copy", what, errno);
      }
      in_kernel = false;  // another file system or kernel: through user space
      buffer.resize(uint64_t{1} << 20);
    }
    const size_t chunk = std::min(want, buffer.size());
    SP_RETURN_IF_ERROR(PreadFull(in, what, done, {buffer.data(), chunk}));
    SP_RETURN_IF_ERROR(PwriteFull(out, what, done, {buffer.data(), chunk}));
    done += chunk;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CopyFile(const std::string& from, const std::string& to) {
  uint64_t size;
  SP_ASSIGN_OR_RETURN(int in_fd, OpenRegularFile(from, 0, &size));
  const UniqueFd in(in_fd);
  const UniqueFd out(open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (out.get() < 0) return ErrnoError("create", to, errno);
  const std::string what = absl::StrCat(AsAbsl(from), " to ", AsAbsl(to));
  absl::Status status = CopyBytes(in.get(), out.get(), size, what);
  if (status.ok()) status = SyncFile(out.get(), to);
  if (!status.ok()) unlink(to.c_str());
  return status;
}

std::string WriteFailureCause(const std::string& path) {
  constexpr uint64_t kNearlyFull = uint64_t{1} << 20;
  struct stat st;
  const bool exists = stat(path.c_str(), &st) == 0;
  struct rlimit limit;
  if (exists && getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      static_cast<uint64_t>(st.st_size) + kNearlyFull >= limit.rlim_cur) {
    return ErrnoText(EFBIG);
  }
  const std::string dir = ParentDirectory(path);
  struct statvfs fs;
  if (statvfs(dir.c_str(), &fs) == 0) {
    // Root may write into the reserved blocks (f_bfree); others not.
    const uint64_t blocks = geteuid() == 0 ? fs.f_bfree : fs.f_bavail;
    const uint64_t free_bytes = blocks * fs.f_frsize;
    if (free_bytes < kNearlyFull || fs.f_favail == 0) {
      return absl::StrCat(strerror(ENOSPC), " (", free_bytes / 1024,
                          " KiB free on the file system of ", AsAbsl(dir), ")");
    }
  }
  return "";
}

std::string FreshPartialName(std::string_view path) {
  static std::atomic<uint64_t> counter{0};
  const uint64_t now = static_cast<uint64_t>(
      std::chrono::steady_clock::now().time_since_epoch().count());
  const uint64_t mixed = Draw(static_cast<uint64_t>(getpid()), now,
                              counter.fetch_add(1, std::memory_order_relaxed));
  return absl::StrCat(AsAbsl(path), AsAbsl(kPartialSuffix), "-",
                      absl::Hex(mixed >> 16, absl::kZeroPad12));
}

bool IsPartialName(std::string_view name, std::string_view* base) {
  if (name.size() > kPartialHexDigits + 1 && name[name.size() - kPartialHexDigits - 1] == '-') {
    const std::string_view hex = name.substr(name.size() - kPartialHexDigits);
    if (std::all_of(hex.begin(), hex.end(),
                    [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); })) {
      name.remove_suffix(kPartialHexDigits + 1);
    }
  }
  if (!name.ends_with(kPartialSuffix)) return false;
  name.remove_suffix(kPartialSuffix.size());
  *base = name;
  return true;
}

absl::Status WriteWholeFile(const std::string& path, std::span<const uint8_t> data) {
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) return ErrnoError("create", path, errno);
  SP_RETURN_IF_ERROR(WriteFull(fd.get(), path, data));
  if (close(fd.release()) != 0) return ErrnoError("close", path, errno);
  return absl::OkStatus();
}

absl::Status WriteWholeFileDirect(const std::string& path, std::span<const uint8_t> data,
                                  size_t capacity) {
  constexpr size_t kAlign = 4096;
  const size_t aligned = (data.size() + kAlign - 1) / kAlign * kAlign;
  if (reinterpret_cast<uintptr_t>(data.data()) % kAlign != 0 || capacity < aligned) {
    return absl::UnavailableError(absl::StrCat(path, ": the bytes are not aligned for O_DIRECT"));
  }
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_DIRECT, 0644));
  if (fd.get() < 0 && errno == EINVAL) {
    return absl::UnavailableError(absl::StrCat(path, ": O_DIRECT is not supported here"));
  }
  if (fd.get() < 0) return ErrnoError("create", path, errno);
  // Whole 4 KiB blocks from the caller's padding, then the file cut to size.
  SP_RETURN_IF_ERROR(WriteFull(fd.get(), path, {data.data(), aligned}));
  if (ftruncate(fd.get(), static_cast<off_t>(data.size())) != 0) {
    return ErrnoError("truncate", path, errno);
  }
  if (close(fd.release()) != 0) return ErrnoError("close", path, errno);
  return absl::OkStatus();
}

absl::StatusOr<UniqueFd> OpenDirectory(const std::string& dir) {
  UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoError("open", dir, errno);
  return fd;
}

absl::StatusOr<LockResult> TryLockExclusive(int fd, std::string_view name) {
  int rc;
  do {
    rc = flock(fd, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return LockResult::kLocked;
  if (errno == EWOULDBLOCK) return LockResult::kBusy;
  // What flock() says on a file system without locks, as opposed to a lock
  // held by someone else.
  if (errno == ENOLCK || errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL ||
      errno == EBADF) {
    return LockResult::kUnsupported;
  }
  return ErrnoError("lock", name, errno);
}

absl::StatusOr<LockResult> LockShared(int fd, std::string_view name) {
  int rc;
  do {
    rc = flock(fd, LOCK_SH);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return LockResult::kLocked;
  if (errno == ENOLCK || errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL ||
      errno == EBADF) {
    return LockResult::kUnsupported;
  }
  return ErrnoError("lock", name, errno);
}

bool NamesOpenFile(const std::string& path, int fd) {
  struct stat open_st, path_st;
  return fstat(fd, &open_st) == 0 && lstat(path.c_str(), &path_st) == 0 &&
         open_st.st_dev == path_st.st_dev && open_st.st_ino == path_st.st_ino;
}

absl::StatusOr<UniqueFd> CreateNewFile(const std::string& path) {
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (fd.get() < 0) return ErrnoError("create", path, errno);
  return fd;
}

absl::StatusOr<UniqueFd> CreateScratchFile(const std::string& dir) {
  constexpr const char* what = "create a scratch file in";
  UniqueFd fd(open(dir.c_str(), O_RDWR | O_TMPFILE | O_CLOEXEC, 0600));
  if (fd.get() >= 0) return fd;
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
    return ErrnoError(what, dir, errno);
  }
  for (int attempt = 0;; ++attempt) {
    const std::string path = FreshPartialName(absl::StrCat(dir, "/.scratch"));
    fd = UniqueFd(open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd.get() >= 0) {
      unlink(path.c_str());
      return fd;
    }
    if (errno != EEXIST || attempt == 8) return ErrnoError(what, dir, errno);
  }
}

absl::StatusOr<std::vector<DirectoryEntry>> ListDirectory(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return ErrnoError("list", dir, errno);
  std::vector<DirectoryEntry> entries;
  absl::Status status;
  errno = 0;
  while (const dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (fstatat(dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      status = ErrnoError("stat", absl::StrCat(dir, "/", name), errno);
      break;
    }
    entries.push_back({std::move(name), st.st_mode});
    errno = 0;
  }
  if (status.ok() && errno != 0) status = ErrnoError("list", dir, errno);
  closedir(d);
  if (!status.ok()) return status;
  return entries;
}

namespace {

// One pass of RemoveFilesAt: true when it removed something.
absl::StatusOr<bool> RemovePass(int dir_fd, const std::string& dir, std::string_view keep) {
  if (lseek(dir_fd, 0, SEEK_SET) != 0) return ErrnoError("list", dir, errno);
  bool removed = false;
  alignas(dirent64) char buffer[16384];
  for (ssize_t n; (n = getdents64(dir_fd, buffer, sizeof(buffer))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("list", dir, errno);
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const dirent64*>(buffer + at);
      at += e->d_reclen;
      const std::string_view name = e->d_name;
      if (name == "." || name == ".." || (!keep.empty() && name == keep)) continue;
      if (unlinkat(dir_fd, e->d_name, 0) != 0 && errno != ENOENT) {
        return ErrnoError("remove", absl::StrCat(dir, "/", AsAbsl(name)), errno);
      }
      removed = true;
    }
  }
  return removed;
}

}  // namespace

absl::Status RemoveFilesAt(int dir_fd, const std::string& dir, std::string_view keep) {
  for (bool removed = true; removed;) {
    SP_ASSIGN_OR_RETURN(removed, RemovePass(dir_fd, dir, keep));
  }
  return absl::OkStatus();
}

absl::Status RenamePath(const std::string& from, const std::string& to, RenameMode mode) {
  const unsigned flags = mode == RenameMode::kNoReplace ? RENAME_NOREPLACE
                         : mode == RenameMode::kExchange ? RENAME_EXCHANGE
                                                         : 0;
  const int rc = flags == 0 ? rename(from.c_str(), to.c_str()) : Rename2(from, to, flags);
  if (rc == 0) return absl::OkStatus();
  const std::string what = absl::StrCat("rename ", from, " to");
  if (flags != 0 && (errno == EINVAL || errno == ENOSYS)) {
    return absl::UnimplementedError(absl::StrCat(
        what, " ", to, ": this file system cannot ",
        mode == RenameMode::kExchange ? "exchange" : "keep an existing target", " (",
        strerror(errno), ")"));
  }
  return ErrnoError(what, to, errno);
}

absl::StatusOr<std::unique_ptr<PosixFile>> PosixFile::Open(const std::string& path) {
  uint64_t size;
  SP_ASSIGN_OR_RETURN(int fd, OpenRegularFile(path, 0, &size));
  return std::make_unique<PosixFile>(path, UniqueFd(fd), size);
}

absl::Status PosixFile::ReadExact(uint64_t offset, std::span<uint8_t> dst) const {
  if (offset > size_ || dst.size() > size_ - offset) {
    return ReadPastEndAt(name_, offset, dst.size(), size_);
  }
  return PreadFull(fd_.get(), name_, offset, dst);
}

}  // namespace shardpack::common
