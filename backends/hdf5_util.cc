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

// Walking upward, entry 0 is where the error was detected: the most
// specific message. Entries of the plugin loader are skipped: they name
// plugin folders, which says nothing about the file (a filter that needs a
// plugin is reported by the pipeline entry above them, with its name).
herr_t KeepInnermost(unsigned, const H5E_error2_t* err, void* data) {
  auto* text = static_cast<std::string*>(data);
  if (!text->empty() || err->maj_num == H5E_PLUGIN || err->desc == nullptr ||
      err->desc[0] == '\0') {
    return 0;
  }
  *text = err->desc;
  return 0;
}

}  // namespace

std::unique_lock<std::mutex> LockHdf5() {
  std::unique_lock<std::mutex> lock(Hdf5Mutex());
  static bool configured = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    // No filter plugins: a file must not make this process dlopen a library
    // from HDF5_PLUGIN_PATH. The reader refuses such filters by name anyway.
    H5PLset_loading_state(0);
    return true;
  }();
  (void)configured;
  return lock;
}

std::string Hdf5ErrorText() {
  std::string text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, KeepInnermost, &text);
  H5Eclear2(H5E_DEFAULT);
  // Messages can quote names from the file: one printable line.
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return text;
}

absl::Status Hdf5Error(std::string_view path, std::string_view what) {
  std::string text = Hdf5ErrorText();
  return absl::DataLossError(absl::StrCat(absl::string_view(path.data(), path.size()), ": ",
                                          absl::string_view(what.data(), what.size()),
                                          text.empty() ? " failed" : ": ", text));
}

}  // namespace shardpack::backends::internal
