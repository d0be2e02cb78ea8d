// The small file interface through which the format code reads and writes.
//
// Format code never opens a path: it is handed a RandomAccessFile or a
// WritableFile. Tests hand it memory; tools and the reader hand it POSIX
// files (see OpenPosixFile and AtomicFile below). This is LevelDB's Env idea,
// kept to what we use.
#ifndef SHARDPACK_FILE_H_
#define SHARDPACK_FILE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shardpack {

// Positional reads of a file of fixed size. Implementations are thread-safe:
// ReadExact may be called from several threads at once.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;

  // The name used in error messages (usually the path).
  virtual const std::string& name() const = 0;
  virtual uint64_t size() const = 0;

  // Reads exactly dst.size() bytes starting at `offset` into dst. A read that
  // would pass the end of the file is a DataLossError naming the file and
  // offset; an I/O failure is an error with errno's text.
  virtual absl::Status ReadExact(uint64_t offset,
                                 std::span<uint8_t> dst) const = 0;

  // The whole file as memory, when the file is memory (in-memory or
  // mmapped): callers may then read without copying. Null otherwise.
  // Valid for the life of the file.
  virtual const uint8_t* data() const { return nullptr; }

  // OK while every byte read through data() was the file's. A mapped file
  // that shrinks while mapped does not kill the process with SIGBUS: the
  // lost pages read as zeros instead, and from then on this returns a
  // DataLossError naming the file. Callers of data() check it after they
  // used the bytes (per block, not per byte). Always OK for other files.
  virtual absl::Status CheckIntact() const { return absl::OkStatus(); }
};

// Sequential writes. Not thread-safe.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual const std::string& name() const = 0;
  virtual absl::Status Append(std::span<const uint8_t> data) = 0;
  // Makes everything appended so far durable (fsync). A no-op in memory.
  virtual absl::Status Sync() = 0;
};

// A RandomAccessFile over borrowed memory; `data` must outlive the file.
std::unique_ptr<RandomAccessFile> NewMemoryFile(
    std::string name, std::span<const uint8_t> data);

// Maps `path` read-only (for tmpfs and page-cached files: reads are then
// plain memory accesses, and data() is non-null).
absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenMappedFile(
    const std::string& path);

// A WritableFile that appends to `*out`, which must outlive the file.
std::unique_ptr<WritableFile> NewStringWritableFile(std::string name,
                                                    std::string* out);

// Opens `path` for positional reads with pread. NotFoundError if it does not
// exist, another error naming the path otherwise.
absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenPosixFile(
    const std::string& path);

// A file that appears at its final path only when complete.
//
// Bytes go to a new file in `path`'s directory that no name reaches: an
// unnamed one (O_TMPFILE) where the file system has them, else one under a
// fresh name "<path>.partial-<12 hex digits>" created with O_EXCL. Either
// way the temporary is never a file that existed before, is never reached
// through a symbolic link planted in its place, and a process killed while
// writing leaves nothing (an unnamed file) or a name no later write uses.
// Its writeback starts every 8 MiB (Linux's sync_file_range), so Commit()'s
// fsync waits for the last few MiB, not the whole file. Commit() fsyncs it,
// gives it `path` and fsyncs the directory, so a crash leaves either nothing
// or the whole file at `path`; each of those steps that fails is Commit()'s
// error (a failed directory fsync too: the file is then at `path` but may
// not survive a crash). A failed Commit() leaves no temporary, and
// destroying an uncommitted AtomicFile removes it.
class AtomicFile : public WritableFile {
 public:
  // What Commit() does with a file already at `path`.
  enum class Existing {
    kReplace,  // replaced whole, in one rename (a manifest rewritten)
    kRefuse,   // kept: Create() and Commit() fail with AlreadyExistsError
  };

  // Fails if the temporary cannot be created ("create <path>: <strerror>"),
  // and with kRefuse when `path` exists ("<path> already exists").
  static absl::StatusOr<std::unique_ptr<AtomicFile>> Create(
      std::string path, Existing existing = Existing::kReplace);
  ~AtomicFile() override;

  const std::string& name() const override { return path_; }
  absl::Status Append(std::span<const uint8_t> data) override;
  absl::Status Sync() override;
  absl::Status Commit();

  // Bytes appended so far.
  uint64_t size() const { return size_; }

 private:
  AtomicFile(std::string path, std::string partial, int fd, Existing existing)
      : path_(std::move(path)), partial_(std::move(partial)), fd_(fd), existing_(existing) {}
  // Gives an unnamed temporary the name partial_ (a fresh one).
  absl::Status NameTemporary();

  std::string path_;
  std::string partial_;  // the temporary's name; empty while it has none
  int fd_;
  Existing existing_;
  uint64_t size_ = 0;
  uint64_t written_back_ = 0;  // bytes whose writeback was started
  bool committed_ = false;
};

// The most ReadSmallFile reads: 256 MiB (a list file of ImageNet's 1.28M
// images is about 80 MB).
inline constexpr uint64_t kMaxSmallFileBytes = uint64_t{256} << 20;

// Reads a whole (small) regular file, e.g. a manifest. NotFoundError if
// missing; FailedPreconditionError for a FIFO, directory or device (never
// blocks on one); InvalidArgumentError past kMaxSmallFileBytes.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path);

// Writes `contents` to `path` through an AtomicFile.
absl::Status WriteFileAtomically(const std::string& path, std::string_view contents,
                                 AtomicFile::Existing existing = AtomicFile::Existing::kReplace);

}  // namespace shardpack

#endif  // SHARDPACK_FILE_H_
