// The one POSIX I/O layer: every positional read, full write, fsync and
// atomic publish in the project goes through here, so that EINTR, short
// reads and failed fsyncs are handled (and reported) one way. Internal: not
// installed; the public file interface is shardpack/file.h.
//
// Messages name the file and, for reads, the offset:
//   "<name> @<offset>: read failed: <strerror>"   (code from errno)
//   "<name> @<offset>: file ended <n> bytes early (did it shrink after it
//    was opened?)"                                 (DataLossError)
//   "<what> <path>: <strerror>"                    (writes, fsyncs, renames)
#ifndef SHARDPACK_FORMAT_POSIX_IO_H_
#define SHARDPACK_FORMAT_POSIX_IO_H_

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "format/unique_fd.h"
#include "shardpack/file.h"

namespace shardpack::internal {

// "<name> @<offset>: read failed: <strerror(err)>", coded as ErrnoError codes it.
absl::Status ReadErrorAt(std::string_view name, uint64_t offset, int err);

// DataLossError "<name> @<offset>: file ended <missing> bytes early ...".
absl::Status ShortReadAt(std::string_view name, uint64_t offset, uint64_t missing);

// DataLossError "<name> @<offset>: read of <length> bytes past the end of
// the file (<size> bytes)": a range that the file's known size rules out.
absl::Status ReadPastEndAt(std::string_view name, uint64_t offset, uint64_t length, uint64_t size);

// pread(2), retried on EINTR: -1 with errno set on failure. For callers
// that must tell errors apart by errno (an O_DIRECT probe's EINVAL).
ssize_t PreadRetrying(int fd, void* dst, size_t n, uint64_t offset);

// One pread of up to dst.size() bytes at `offset`, retried on EINTR. Returns
// the bytes read: 0 only at the end of the file. For loops that read to the
// end or must stop at an unaligned count (O_DIRECT).
absl::StatusOr<size_t> PreadSome(int fd, std::string_view name, uint64_t offset,
                                 std::span<uint8_t> dst);

// Exactly dst.size() bytes at `offset`: short reads continued, EINTR
// retried; the end of the file before dst is full is ShortReadAt.
absl::Status PreadFull(int fd, std::string_view name, uint64_t offset, std::span<uint8_t> dst);

// All of `data` at the descriptor's position (write) or at `offset`
// (pwrite): short writes continued, EINTR retried. "write <name>: ...".
absl::Status WriteFull(int fd, std::string_view name, std::span<const uint8_t> data);
absl::Status PwriteFull(int fd, std::string_view name, uint64_t offset,
                        std::span<const uint8_t> data);

// fsync (or fdatasync, data and size only) of an open file: "fsync <name>: ...".
absl::Status SyncFile(int fd, std::string_view name);
absl::Status SyncFileData(int fd, std::string_view name);

// fsync of directory `dir`, so that the names created, renamed or removed in
// it are durable. "open directory <dir>: ..." when it cannot be opened,
// "fsync <dir>: ..." when the fsync fails.
absl::Status SyncDirectory(const std::string& dir);

// The directory holding `path`: "." for a bare name, "/" for "/x".
std::string ParentDirectory(const std::string& path);

// SyncDirectory of the directory holding `path` (ParentDirectory).
absl::Status SyncParentDirectory(const std::string& path);

// The one atomic publish: `partial`, already written and fsynced, is renamed
// to `path` and the directory is fsynced, so a crash leaves either the old
// state or the whole file at `path`. Every failure is reported; when the
// rename fails, `partial` is removed, so no temporary file is left behind.
// After a failed directory fsync the file is at `path` but may not survive a
// crash: the error says so by naming the directory. With `replace` false a
// file already at `path` is kept and the publish fails with
// AlreadyExistsError "<path> already exists" (renameat2's RENAME_NOREPLACE,
// or link + unlink where the file system has no renameat2).
absl::Status PublishFile(const std::string& partial, const std::string& path,
                         bool replace = true);

// Copies the regular file `from` to a new file `to` (created with O_EXCL |
// O_NOFOLLOW, 0644), in the kernel where it can (copy_file_range), and
// fsyncs it. Errors name both and carry the real errno ("copy <from> to
// <to>: No space left on device"), where std::filesystem::copy_file turns
// a short copy into EIO. A failed copy removes `to`.
absl::Status CopyFile(const std::string& from, const std::string& to);

// What ran out when a library reports a failed write to `path` only as an
// opaque error (liblmdb turns a short write into EIO, libhdf5 into its own
// stack): "No space left on device (<n> KiB free ...)" when the file system
// holding `path` has less than 1 MiB free for it, "File too large (the
// file-size limit, ulimit -f, is <n> bytes)" when the file has grown to
// within 1 MiB of that limit; "" when neither holds. Costs a statvfs and a
// stat: for error paths only.
std::string WriteFailureCause(const std::string& path);

// "<path>.partial-<12 lowercase hex digits>": a temporary's name that no
// other call, in this process or another, gives (the process id, the clock
// and a counter, mixed). Created with O_EXCL all the same.
std::string FreshPartialName(std::string_view path);

// Whether AtomicFile asks for an O_TMPFILE first (true, the default). Tests
// set it false to run the named fallback of file systems without one.
extern std::atomic<bool> atomic_file_tries_tmpfile;

// True when `name` is a temporary's name: "<base>.partial" (a backend's
// shard being written) or FreshPartialName's "<base>.partial-<12 hex>";
// *base then gets the final name.
bool IsPartialName(std::string_view name, std::string_view* base);

// A RandomAccessFile over an open regular file, read with PreadFull. The
// descriptor is also lent to the reader's block I/O engines (fd()), so a
// path is opened once.
class PosixFile final : public RandomAccessFile {
 public:
  // Through OpenRegularFile: never blocks on a FIFO, refuses non-files.
  static absl::StatusOr<std::unique_ptr<PosixFile>> Open(const std::string& path);

  PosixFile(std::string name, UniqueFd fd, uint64_t size)
      : name_(std::move(name)), fd_(std::move(fd)), size_(size) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }
  int fd() const { return fd_.get(); }
  absl::Status ReadExact(uint64_t offset, std::span<uint8_t> dst) const override;

 private:
  std::string name_;
  UniqueFd fd_;
  uint64_t size_;
};

}  // namespace shardpack::internal

#endif  // SHARDPACK_FORMAT_POSIX_IO_H_
