// The one POSIX I/O layer: every positional read, full write, fsync, atomic
// publish, directory listing, directory lock and rename of a folder in the
// project goes through here, so that EINTR, short reads and failed fsyncs
// are handled (and reported) one way. Internal: not
// installed; the public file interface is shardpack/file.h.
//
// Messages name the file and, for reads, the offset:
//   "<name> @<offset>: read failed: <strerror>"   (code from errno)
//   "<name> @<offset>: file ended <n> bytes early (did it shrink after it
//    was opened?)"                                 (DataLossError)
//   "<what> <path>: <strerror>"                    (writes, fsyncs, renames)
#ifndef SHARDPACK_COMMON_POSIX_IO_H_
#define SHARDPACK_COMMON_POSIX_IO_H_

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/unique_fd.h"
#include "shardpack/file.h"

namespace shardpack::common {

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

// Creates `path`, or truncates the file there, with mode 0644 (less the
// umask), writes all of `data` (WriteFull) and closes it, reporting a failed
// close. Neither atomic nor fsynced: for files made again when lost (demo
// data); a file that must survive a crash goes through WriteFileAtomically.
// "create <path>: ...", "write <path>: ...", "close <path>: ...".
absl::Status WriteWholeFile(const std::string& path, std::span<const uint8_t> data);

// WriteWholeFile through O_DIRECT, bypassing the page cache (whose buffered
// writes cost several times a copy on some file systems): `data` must be
// 4096-aligned with `capacity` >= its size rounded up to 4096 (the padding
// is written, then cut off by ftruncate). UnavailableError, with nothing
// created, where the bytes are not aligned or the file system refuses
// O_DIRECT (tmpfs): the caller then writes buffered.
absl::Status WriteWholeFileDirect(const std::string& path, std::span<const uint8_t> data,
                                  size_t capacity);

// --- Directories -----------------------------------------------------------

// Opens the directory `dir` itself for reading, never through a symbolic
// link (O_NOFOLLOW): "open <dir>: ..." otherwise (a link or a file is
// ENOTDIR or ELOOP, NotFoundError / UnknownError).
absl::StatusOr<UniqueFd> OpenDirectory(const std::string& dir);

enum class LockResult {
  kLocked,       // this descriptor holds the lock now
  kBusy,         // another open file description holds it
  kUnsupported,  // the file system has no flock() (some NFS and Lustre mounts)
};

// flock(LOCK_EX | LOCK_NB) on `fd` (named `name` in errors), never waiting.
// The lock lasts as long as the open file description: a second open of the
// same file, in this process or another, finds it kBusy. Errors other than
// those three outcomes: "lock <name>: ...".
absl::StatusOr<LockResult> TryLockExclusive(int fd, std::string_view name);

// flock(LOCK_SH) on `fd`: a shared hold that keeps TryLockExclusive of the
// same file kBusy while it lasts (a cache entry in use is not evicted).
// Waits only while an exclusive holder has it (never long: an evictor
// holds it to unlink the file). The results are TryLockExclusive's.
absl::StatusOr<LockResult> LockShared(int fd, std::string_view name);

// Whether `path` names, without following a link, the file open as `fd`
// (same device and inode): false when it is gone or was replaced.
bool NamesOpenFile(const std::string& path, int fd);

// Creates the new file `path` for writing (O_CREAT | O_EXCL | O_NOFOLLOW,
// 0644): never an existing file, never through a link. "create <path>: ...".
absl::StatusOr<UniqueFd> CreateNewFile(const std::string& path);

// A file with no name in `dir`, for reading and writing: scratch space that
// vanishes when the descriptor is closed, or the process ends, whatever
// happens (O_TMPFILE; where the file system lacks it, a fresh name unlinked
// at once). "create a scratch file in <dir>: ...".
absl::StatusOr<UniqueFd> CreateScratchFile(const std::string& dir);

// One entry of a directory; `mode` is lstat's: a symbolic link is a link.
struct DirectoryEntry {
  std::string name;
  uint32_t mode = 0;
};

// The entries of `dir` but "." and "..", in the order the file system
// gives. "list <dir>: ..." when it cannot be read, "stat <dir>/<name>: ..."
// when an entry cannot be lstat()ed (one removed meanwhile included).
absl::StatusOr<std::vector<DirectoryEntry>> ListDirectory(const std::string& dir);

// Removes every entry of the directory open as `dir_fd` (named `dir` in
// errors) but the one named `keep` ("" keeps none), through that descriptor:
// no other is opened, so a process out of descriptors (ulimit -n) can still
// clean up. Entries must be files (a subdirectory is an error naming it):
// "list <dir>: ...", "remove <dir>/<name>: ...". Reads the directory again
// until a pass finds nothing to remove, since removing while reading may
// skip entries.
absl::Status RemoveFilesAt(int dir_fd, const std::string& dir, std::string_view keep = "");

// How RenamePath treats what is at `to`.
enum class RenameMode {
  kReplace,    // rename(2): a file, or an empty directory, at `to` is replaced
  kNoReplace,  // anything at `to` is kept: AlreadyExistsError
  kExchange,   // `from` and `to` (both there) swap places in one step
};

// Renames `from` to `to` as `mode` says (renameat2(2)). "rename <from> to
// <to>: <strerror>", coded as ErrnoError codes errno (EEXIST: AlreadyExists).
// UnimplementedError "rename <from> to <to>: this file system cannot
// (exchange|keep an existing target)" where renameat2 or the flag is
// missing (EINVAL, ENOSYS: some network file systems), for the caller to
// fall back.
absl::Status RenamePath(const std::string& from, const std::string& to,
                        RenameMode mode = RenameMode::kReplace);

// --- Paths that are URLs ---------------------------------------------------

// Whether `path` is spelled as a URL remote/ serves: "s3://", "https://" or
// "http://" (remote::IsUrl says the same). A syntax test only: this layer
// opens local files; URLs are opened through a remote::Storage.
bool IsUrlPath(std::string_view path);

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

}  // namespace shardpack::common

#endif  // SHARDPACK_COMMON_POSIX_IO_H_
