// What the HDF5 reader and writer share: the process-wide lock, silenced
// error stacks turned into one line, owning handles, and closing files once.
#ifndef SHARDPACK_BACKENDS_HDF5_UTIL_H_
#define SHARDPACK_BACKENDS_HDF5_UTIL_H_

#include <hdf5.h>

#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"

namespace shardpack::backends {

// Held around every HDF5 call: Debian's libhdf5 is not thread-safe. Taking
// it also turns HDF5's automatic error printing and its loading of filter
// plugins off (once per process).
std::unique_lock<std::mutex> LockHdf5();

// The innermost meaningful message of the current HDF5 error stack
// ("truncated file: eof = ...", "required filter 'x' is not registered"),
// as one printable line, then clears the stack. Empty when HDF5 gave none.
// When a system call failed (HDF5's file drivers put "errno = N" in their
// message), its strerror ("No space left on device") in place of the
// driver's dump of times, descriptors and buffer addresses, and *err is
// set to N (else 0), when err is not null. Call with the lock held.
std::string Hdf5ErrorText(int* err = nullptr);

// A name or text from a file (dataset, filter, link names) as one
// printable ASCII line: other bytes become '?'.
std::string Printable(std::string_view text);

// "<path>: <what>: <Hdf5ErrorText()>", or "<path>: <what> failed" when HDF5
// gave no message: a DataLossError, or when a system call failed, the code
// of its errno (ResourceExhaustedError for ENOSPC, as for every file
// shardpack writes). Lock held.
absl::Status Hdf5Error(std::string_view path, std::string_view what);

// Closes a file id, once. libhdf5 1.10 keeps the id of a file whose
// H5Fclose failed (its last writes did: a full disk) registered while it
// frees the file's structures; closing that id again, or H5close (which
// libhdf5 otherwise runs from atexit), then reads freed memory and the
// process dies by SIGSEGV. So libhdf5's own atexit handler is off in this
// process (H5dont_atexit, before the library starts) and ours runs H5close
// only when no file close failed. Never touch `file` again after this
// call, whatever it returns. Lock held.
herr_t CloseFile(hid_t file);

// Before closing a finished file: reserves the file system's blocks for
// all of the file's address space (fallocate of [0, EOA)), so that what
// H5Fclose still writes (metadata, inside that space) cannot fail for want
// of space. A failure ("<path>: reserving N bytes: No space left on
// device", coded as Hdf5Error codes it) comes while the file can still be
// abandoned; a file system that cannot reserve (or a file without a
// descriptor) is no error. Flushing first would not do: after one failed
// flush libhdf5 1.10's metadata cache refuses every later one ("slist
// already enabled?"), H5Fclose's included. Lock held.
absl::Status ReserveFileSpace(hid_t file, std::string_view path);

// For a file about to be abandoned (closed and deleted unfinished): its
// descriptor is pointed at an anonymous in-memory file, so that what
// libhdf5 still writes on closing it (cached chunks and metadata) cannot
// fail on the full disk that stopped the write, and CloseFile succeeds and
// frees everything. The file must use the sec2 driver. Best effort:
// nothing changes if any step fails. Lock held.
void DiscardFurtherWrites(hid_t file);

// An owning hid_t, closed by the given function (H5Dclose, H5Sclose, ...).
// Destroy it with the lock held.
class Hid {
 public:
  using Closer = herr_t (*)(hid_t);
  Hid() = default;
  Hid(hid_t id, Closer close) : id_(id), close_(close) {}
  Hid(Hid&& o) noexcept : id_(std::exchange(o.id_, -1)), close_(o.close_) {}
  Hid& operator=(Hid&& o) noexcept {
    if (this != &o) {
      Reset();
      id_ = std::exchange(o.id_, -1);
      close_ = o.close_;
    }
    return *this;
  }
  ~Hid() { Reset(); }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes now; false when HDF5 reported an error closing (a file's last
  // writes failed).
  bool Reset() {
    bool ok = true;
    if (id_ >= 0 && close_ != nullptr) ok = close_(id_) >= 0;
    id_ = -1;
    return ok;
  }

 private:
  hid_t id_ = -1;
  Closer close_ = nullptr;
};

}  // namespace shardpack::backends

#endif  // SHARDPACK_BACKENDS_HDF5_UTIL_H_
