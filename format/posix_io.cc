#include "format/posix_io.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "format/errors.h"
#include "format/posix_open.h"
#include "format/status_macros.h"

namespace shardpack::internal {

absl::Status ReadErrorAt(std::string_view name, uint64_t offset, int err) {
  absl::Status coded = internal::ErrnoError("read", name, err);
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
    if (n < 0) return internal::ErrnoError("write", name, errno);
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
    if (n < 0) return internal::ErrnoError("write", name, errno);
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status SyncFile(int fd, std::string_view name) {
  if (fsync(fd) != 0) return internal::ErrnoError("fsync", name, errno);
  return absl::OkStatus();
}

absl::Status SyncFileData(int fd, std::string_view name) {
  if (fdatasync(fd) != 0) return internal::ErrnoError("fsync", name, errno);
  return absl::OkStatus();
}

absl::Status SyncDirectory(const std::string& dir) {
  const UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return internal::ErrnoError("open directory", dir, errno);
  return SyncFile(fd.get(), dir);
}

absl::Status SyncParentDirectory(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return SyncDirectory(parent.empty() ? std::string(".") : parent.string());
}

absl::Status PublishFile(const std::string& partial, const std::string& path) {
  if (rename(partial.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(partial.c_str());
    return internal::ErrnoError("rename", partial, err);
  }
  return SyncParentDirectory(path);
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

}  // namespace shardpack::internal
