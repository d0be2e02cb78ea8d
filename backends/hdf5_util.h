// What the HDF5 reader and writer share: the process-wide lock, silenced
// error stacks turned into one line, and owning handles.
#ifndef SHARDPACK_BACKENDS_HDF5_UTIL_H_
#define SHARDPACK_BACKENDS_HDF5_UTIL_H_

#include <hdf5.h>

#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"

namespace shardpack::backends::internal {

// Held around every HDF5 call: Debian's libhdf5 is not thread-safe. Taking
// it also turns HDF5's automatic error printing and its loading of filter
// plugins off (once per process).
std::unique_lock<std::mutex> LockHdf5();

// The innermost meaningful message of the current HDF5 error stack
// ("truncated file: eof = ...", "required filter 'x' is not registered"),
// as one printable line, then clears the stack. Empty when HDF5 gave none.
// Call with the lock held.
std::string Hdf5ErrorText();

// DataLossError "<path>: <what>: <Hdf5ErrorText()>", or "<path>: <what>
// failed" when HDF5 gave no message. Lock held.
absl::Status Hdf5Error(std::string_view path, std::string_view what);

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

}  // namespace shardpack::backends::internal

#endif  // SHARDPACK_BACKENDS_HDF5_UTIL_H_
