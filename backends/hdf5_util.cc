#include "backends/hdf5_util.h"

#include <pthread.h>

#include "absl/strings/str_cat.h"

namespace shardpack::backends::internal {
namespace {

std::mutex& Hdf5Mutex() {
  static std::mutex* mutex = [] {
    // A child forked while another thread is inside libhdf5 would inherit
    // the mutex locked by a thread it does not have, and the library's state
    // half-changed: the shard vetting child (shard_vet.cc) would then hang
    // on its first HDF5 call. So fork waits for the mutex (prepare), and
    // both sides release it after (the child's copy is held by the forking
    // thread, the child's only one). Never fork with the lock held.
    pthread_atfork([] { Hdf5Mutex().lock(); }, [] { Hdf5Mutex().unlock(); },
                   [] { Hdf5Mutex().unlock(); });
    return new std::mutex;
  }();
  return *mutex;
}

herr_t KeepInnermost(unsigned n, const H5E_error2_t* err, void* data) {
  // Walking upward, entry 0 is where the error was detected: the most
  // specific message.
  if (n == 0 && err->desc != nullptr) *static_cast<std::string*>(data) = err->desc;
  return 0;
}

}  // namespace

std::unique_lock<std::mutex> LockHdf5() {
  std::unique_lock<std::mutex> lock(Hdf5Mutex());
  static bool silenced = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)silenced;
  return lock;
}

std::string Hdf5ErrorText() {
  std::string text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, KeepInnermost, &text);
  H5Eclear2(H5E_DEFAULT);
  return text.empty() ? "unknown HDF5 error" : text;
}

absl::Status Hdf5Error(std::string_view path, std::string_view what) {
  return absl::DataLossError(absl::StrCat(absl::string_view(path.data(), path.size()), ": ",
                                          absl::string_view(what.data(), what.size()), ": ",
                                          Hdf5ErrorText()));
}

}  // namespace shardpack::backends::internal
