#include "backends/hdf5_util.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/os.h"

namespace shardpack::backends {
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

// libhdf5's atexit handler (H5close) is off before any HDF5 call: see
// CloseFile. False when something in this process started the library
// first (it then closes itself at exit, as before).
const bool atexit_is_ours = H5dont_atexit() >= 0;
std::atomic<bool> file_close_failed{false};

void CloseHdf5AtExit() {
  // A thread still inside libhdf5 (or a failed close) makes closing it
  // here worse than leaving the process's memory to the kernel.
  if (file_close_failed.load() || !Hdf5Mutex().try_lock()) return;
  H5close();
  Hdf5Mutex().unlock();
}

// What the error stack says: the innermost message and the first errno.
struct StackText {
  std::string text;
  int err = 0;
};

// Walking upward, entry 0 is where the error was detected: the most
// specific message. Entries of the plugin loader are skipped: they name
// plugin folders, which says nothing about the file (a filter that needs a
// plugin is reported by the pipeline entry above them, with its name).
// HDF5's file drivers report a failed system call as "..., errno = N,
// error message = '...', ...".
herr_t KeepInnermost(unsigned, const H5E_error2_t* err, void* data) {
  auto* out = static_cast<StackText*>(data);
  if (err->desc == nullptr || err->desc[0] == '\0') return 0;
  if (out->err == 0) {
    if (const char* at = std::strstr(err->desc, "errno = ")) out->err = std::atoi(at + 8);
  }
  if (out->text.empty() && err->maj_num != H5E_PLUGIN) out->text = err->desc;
  return 0;
}

// "<path>: <what>: <text>" ("<path>: <what> failed" without text): with the
// code errno has wherever shardpack reports a failed system call, else
// (err 0: libhdf5 itself found something wrong) DataLossError.
absl::Status PathError(std::string_view path, std::string_view what, std::string_view text,
                       int err) {
  using common::AsAbsl;
  std::string message =
      absl::StrCat(AsAbsl(path), ": ", AsAbsl(what), text.empty() ? " failed" : ": ", AsAbsl(text));
  if (err == 0) return absl::DataLossError(message);
  return absl::Status(shardpack::common::ErrnoError("", "", err).code(), message);
}

// The POSIX descriptor of a file opened with the sec2 driver; -1 if none.
int Sec2Descriptor(hid_t file) {
  void* handle = nullptr;
  if (H5Fget_vfd_handle(file, H5P_DEFAULT, &handle) < 0 || handle == nullptr) {
    H5Eclear2(H5E_DEFAULT);
    return -1;
  }
  return *static_cast<int*>(handle);
}

}  // namespace

std::unique_lock<std::mutex> LockHdf5() {
  std::unique_lock<std::mutex> lock(Hdf5Mutex());
  static bool configured = [] {
    if (atexit_is_ours) std::atexit(CloseHdf5AtExit);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    // No filter plugins: a file must not make this process dlopen a library
    // from HDF5_PLUGIN_PATH. The reader refuses such filters by name anyway.
    H5PLset_loading_state(0);
    return true;
  }();
  (void)configured;
  return lock;
}

std::string Hdf5ErrorText(int* err) {
  StackText stack;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, KeepInnermost, &stack);
  H5Eclear2(H5E_DEFAULT);
  if (err != nullptr) *err = stack.err;
  // The driver's message holds times, descriptors and buffer addresses:
  // what the user needs is the cause.
  if (stack.err != 0) return shardpack::common::ErrnoText(stack.err);
  // Messages can quote names from the file: one printable line.
  for (char& c : stack.text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return stack.text;
}

std::string Printable(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

absl::Status Hdf5Error(std::string_view path, std::string_view what) {
  int err = 0;
  std::string text = Hdf5ErrorText(&err);
  return PathError(path, what, text, err);
}

herr_t CloseFile(hid_t file) {
  const herr_t result = H5Fclose(file);
  if (result < 0) file_close_failed.store(true);
  return result;
}

absl::Status ReserveFileSpace(hid_t file, std::string_view path) {
  const int fd = Sec2Descriptor(file);
  haddr_t eoa = 0;
  if (fd < 0 || H5Fget_eoa(file, &eoa) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return absl::OkStatus();  // nothing to reserve with: H5Fclose as before
  }
  const int err = common::ReserveFileBytes(fd, eoa);
  if (err == 0) return absl::OkStatus();
  return PathError(path, absl::StrCat("reserving ", eoa, " bytes"), strerror(err), err);
}

void DiscardFurtherWrites(hid_t file) {
  const int fd = Sec2Descriptor(file);
  if (fd < 0) return;
  // Closes the partial file's descriptor; HDF5 keeps its number, and its
  // dirty caches (a few MiB) go to memory.
  (void)common::RedirectToMemoryFile(fd);
}

}  // namespace shardpack::backends
