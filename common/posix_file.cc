// POSIX implementations of the file interface, and the in-memory ones.
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/errors.h"
#include "common/mapping_guard.h"
#include "common/posix_io.h"
#include "common/posix_open.h"
#include "common/redact.h"
#include "common/status_macros.h"
#include "common/unique_fd.h"
#include "shardpack/file.h"

namespace shardpack {
namespace {

class MemoryFile : public RandomAccessFile {
 public:
  MemoryFile(std::string name, std::span<const uint8_t> data)
      : name_(std::move(name)), data_(data) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return data_.size(); }
  const uint8_t* data() const override { return data_.data(); }
  absl::Status ReadExact(uint64_t offset, std::span<uint8_t> dst) const override {
    if (offset > data_.size() || dst.size() > data_.size() - offset) {
      return common::ReadPastEndAt(name_, offset, dst.size(), data_.size());
    }
    if (!dst.empty()) std::memcpy(dst.data(), data_.data() + offset, dst.size());
    return absl::OkStatus();
  }

 private:
  std::string name_;
  std::span<const uint8_t> data_;
};

class StringWritableFile : public WritableFile {
 public:
  StringWritableFile(std::string name, std::string* out)
      : name_(std::move(name)), out_(out) {}
  const std::string& name() const override { return name_; }
  absl::Status Append(std::span<const uint8_t> data) override {
    out_->append(reinterpret_cast<const char*>(data.data()), data.size());
    return absl::OkStatus();
  }
  absl::Status Sync() override { return absl::OkStatus(); }

 private:
  std::string name_;
  std::string* out_;
};

// Registered with the SIGBUS guard, so that a file truncated under the
// mapping is an error, not a signal.
class MappedFile : public RandomAccessFile {
 public:
  MappedFile(std::string name, const uint8_t* base, uint64_t size)
      : name_(std::move(name)), base_(base), size_(size), guard_(base, size, name_) {}
  ~MappedFile() override {
    guard_ = common::MappingGuard();  // unregistered before the range goes
    if (size_ != 0) munmap(const_cast<uint8_t*>(base_), size_);
  }
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }
  const uint8_t* data() const override { return base_; }
  absl::Status ReadExact(uint64_t offset, std::span<uint8_t> dst) const override {
    if (offset > size_ || dst.size() > size_ - offset) {
      return common::ReadPastEndAt(name_, offset, dst.size(), size_);
    }
    if (!dst.empty()) std::memcpy(dst.data(), base_ + offset, dst.size());
    return guard_.Damage();
  }
  absl::Status CheckIntact() const override { return guard_.Damage(); }

 private:
  std::string name_;
  const uint8_t* base_;
  uint64_t size_;
  common::MappingGuard guard_;
};

}  // namespace

// A file-size or descriptor limit is rarely one the user knows was set:
// its value is said.
std::string common::ErrnoText(int err) {
  struct rlimit limit;
  if (err == EFBIG && getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    return absl::StrCat(strerror(err), " (the file-size limit, ulimit -f, is ", limit.rlim_cur,
                        " bytes)");
  }
  if (err == EMFILE && getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    return absl::StrCat(strerror(err), " (the limit on open files, ulimit -n, is ",
                        limit.rlim_cur, ")");
  }
  return strerror(err);
}

absl::Status common::ErrnoError(std::string_view what, std::string_view path, int err) {
  // A path that looks like a URL is shown without its secrets: "HTTPS://..."
  // is a local path to the opener, and still may hold a password.
  std::string message = absl::StrCat(common::AsAbsl(what), " ",
                                     common::AsAbsl(common::RedactUrl(path)), ": ", ErrnoText(err));
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case EAGAIN:
      return absl::ResourceExhaustedError(message);
    case EEXIST:
      return absl::AlreadyExistsError(message);
    default:
      return absl::UnknownError(message);
  }
}

std::unique_ptr<RandomAccessFile> NewMemoryFile(std::string name,
                                                std::span<const uint8_t> data) {
  return std::make_unique<MemoryFile>(std::move(name), data);
}

std::unique_ptr<WritableFile> NewStringWritableFile(std::string name,
                                                    std::string* out) {
  return std::make_unique<StringWritableFile>(std::move(name), out);
}

bool common::IsUrlPath(std::string_view path) {
  return path.starts_with("s3://") || path.starts_with("https://") ||
         path.starts_with("http://");
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenPosixFile(const std::string& path) {
  SP_ASSIGN_OR_RETURN(auto file, common::PosixFile::Open(path));
  return file;
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenMappedFile(const std::string& path) {
  uint64_t size;
  SP_ASSIGN_OR_RETURN(int raw, common::OpenRegularFile(path, 0, &size));
  const common::UniqueFd fd(raw);  // closed on return: the mapping keeps the file
  void* base = nullptr;
  if (size != 0) {
    base = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0);
    if (base == MAP_FAILED) return common::ErrnoError("mmap", path, errno);
    madvise(base, size, MADV_SEQUENTIAL);
  }
  return std::make_unique<MappedFile>(path, static_cast<const uint8_t*>(base), size);
}

namespace {

// File systems without O_TMPFILE say so with one of these.
bool NoTmpfile(int err) { return err == EOPNOTSUPP || err == EISDIR || err == EINVAL; }

}  // namespace

absl::StatusOr<std::unique_ptr<AtomicFile>> AtomicFile::Create(std::string path,
                                                               Existing existing) {
  struct stat st;
  if (existing == Existing::kRefuse && lstat(path.c_str(), &st) == 0) {
    return absl::AlreadyExistsError(absl::StrCat(path, " already exists"));
  }
  int fd = -1;
  errno = EOPNOTSUPP;
  if (common::atomic_file_tries_tmpfile.load(std::memory_order_relaxed)) {
    fd = open(common::ParentDirectory(path).c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  }
  std::string partial;
  if (fd < 0 && NoTmpfile(errno)) {
    // O_EXCL: never an existing file, never through a symbolic link.
    partial = common::FreshPartialName(path);
    fd = open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  }
  if (fd < 0) return common::ErrnoError("create", path, errno);
  return std::unique_ptr<AtomicFile>(
      new AtomicFile(std::move(path), std::move(partial), fd, existing));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) close(fd_);  // an unnamed temporary goes with its descriptor
  if (!committed_ && !partial_.empty()) unlink(partial_.c_str());
}

absl::Status AtomicFile::NameTemporary() {
  // linkat through /proc gives an O_TMPFILE file a name without
  // CAP_DAC_READ_SEARCH (which AT_EMPTY_PATH needs); like open(O_EXCL), it
  // fails on an existing name instead of following or replacing it.
  const std::string proc = absl::StrCat("/proc/self/fd/", fd_);
  for (int attempt = 0;; ++attempt) {
    std::string name = common::FreshPartialName(path_);
    if (linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) == 0 ||
        linkat(fd_, "", AT_FDCWD, name.c_str(), AT_EMPTY_PATH) == 0) {
      partial_ = std::move(name);
      return absl::OkStatus();
    }
    if (errno != EEXIST || attempt == 8) return common::ErrnoError("name", path_, errno);
  }
}

absl::Status AtomicFile::Append(std::span<const uint8_t> data) {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, ": already committed"));
  SP_RETURN_IF_ERROR(common::WriteFull(fd_, path_, data));
  size_ += data.size();
#ifdef SYNC_FILE_RANGE_WRITE
  // Start the writeback of what is written, without waiting: the disk works
  // while the next bytes are made, as it does for one long `dd`, instead of
  // the whole file waiting for Commit()'s fsync (a pack of 256 MiB shards
  // ran at 0.74x of dd conv=fsync so). Only a start: a failure to write
  // comes out of that fsync.
  constexpr uint64_t kWritebackStep = uint64_t{8} << 20;
  if (size_ - written_back_ >= kWritebackStep) {
    (void)sync_file_range(fd_, static_cast<off_t>(written_back_),
                          static_cast<off_t>(size_ - written_back_), SYNC_FILE_RANGE_WRITE);
    written_back_ = size_;
  }
#endif
  return absl::OkStatus();
}

absl::Status AtomicFile::Sync() {
  if (fd_ < 0) return absl::OkStatus();
  return common::SyncFileData(fd_, path_);
}

absl::Status AtomicFile::Commit() {
  SP_RETURN_IF_ERROR(Sync());
  if (partial_.empty()) SP_RETURN_IF_ERROR(NameTemporary());
  if (close(fd_) != 0) {
    fd_ = -1;
    return common::ErrnoError("close", path_, errno);
  }
  fd_ = -1;
  // Renamed, or removed when the rename failed: either way nothing is left
  // at partial_ for the destructor to clean up.
  committed_ = true;
  return common::PublishFile(partial_, path_, existing_ == Existing::kReplace);
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path) {
  SP_ASSIGN_OR_RETURN(auto file, OpenPosixFile(path));
  if (file->size() > kMaxSmallFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", file->size(),
                                                   " bytes, more than the ", kMaxSmallFileBytes,
                                                   " a manifest or list file may have"));
  }
  std::string contents(file->size(), '\0');
  SP_RETURN_IF_ERROR(file->ReadExact(
      0, {reinterpret_cast<uint8_t*>(contents.data()), contents.size()}));
  return contents;
}

absl::Status WriteFileAtomically(const std::string& path, std::string_view contents,
                                 AtomicFile::Existing existing) {
  SP_ASSIGN_OR_RETURN(auto file, AtomicFile::Create(path, existing));
  SP_RETURN_IF_ERROR(file->Append(
      {reinterpret_cast<const uint8_t*>(contents.data()), contents.size()}));
  return file->Commit();
}

namespace common {

const char* FileKindName(uint32_t st_mode) {
  switch (st_mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symbolic link";
    default: return "not a regular file";
  }
}

namespace {
absl::Status NotRegular(const std::string& path, uint32_t st_mode) {
  return absl::FailedPreconditionError(
      absl::StrCat(path, ": ", FileKindName(st_mode), ", not a regular file"));
}
}  // namespace

absl::StatusOr<int> OpenRegularFile(const std::string& path, int extra_flags, uint64_t* size) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | extra_flags);
  if (fd < 0 && errno == EINVAL && (extra_flags & O_DIRECT) != 0) {
    return absl::UnavailableError(
        absl::StrCat(path, ": O_DIRECT is not supported on this filesystem"));
  }
  if (fd < 0) return common::ErrnoError("open", path, errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return common::ErrnoError("stat", path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return NotRegular(path, st.st_mode);
  }
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    close(fd);
    return common::ErrnoError("fcntl", path, err);
  }
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

absl::StatusOr<std::string> ReadStream(const std::string& path, uint64_t max_bytes) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return common::ErrnoError("open", path, errno);
  if (S_ISREG(st.st_mode)) return ReadSmallFile(path);
  if (!S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode)) return NotRegular(path, st.st_mode);
  // A pipe: read to its end. With no writer attached, the end is at once.
  const UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return common::ErrnoError("open", path, errno);
  std::string contents;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = read(fd.get(), chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return common::ErrnoError("read", path, errno);
    if (n == 0) break;
    if (contents.size() + static_cast<size_t>(n) > max_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": more than ", max_bytes, " bytes; stopped reading"));
    }
    contents.append(chunk, static_cast<size_t>(n));
  }
  return contents;
}

absl::Status CheckRegularFile(const std::string& path, uint64_t* size) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return common::ErrnoError("open", path, errno);
  if (!S_ISREG(st.st_mode)) return NotRegular(path, st.st_mode);
  if (size != nullptr) *size = static_cast<uint64_t>(st.st_size);
  return absl::OkStatus();
}

absl::Status ReadInputFile(const std::string& path, std::vector<uint8_t>* out) {
  uint64_t size = 0;
  SP_ASSIGN_OR_RETURN(int raw, OpenRegularFile(path, 0, &size));
  const UniqueFd fd(raw);
  if (size == 0) return DataLossAt(path, 0, "empty file");
  if (size > kMaxInputFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: file too large for an input (%u bytes)", path, size));
  }
  out->resize(size);
  return PreadFull(fd.get(), path, 0, {out->data(), size});
}

}  // namespace common
}  // namespace shardpack
