// A shared library loaded at run time (dlopen): what the reader uses for the
// CUDA driver, which a machine may or may not have, so that nothing of ours
// links it. The one place outside the loader that calls dlopen/dlsym.
#ifndef SHARDPACK_COMMON_SHARED_LIBRARY_H_
#define SHARDPACK_COMMON_SHARED_LIBRARY_H_

#include <string>

#include "absl/status/statusor.h"

namespace shardpack::common {

class SharedLibrary {
 public:
  // The library `name` as the dynamic loader finds it (LD_LIBRARY_PATH, the
  // cache, the default folders), loaded RTLD_LOCAL; NotFoundError with the
  // loader's own message ("libcuda.so.1: cannot open shared object file: No
  // such file or directory") when there is none or it cannot be loaded.
  static absl::StatusOr<SharedLibrary> Open(const std::string& name);

  SharedLibrary(SharedLibrary&& other) noexcept : handle_(other.handle_) { other.handle_ = nullptr; }
  SharedLibrary& operator=(SharedLibrary&& other) noexcept;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;
  ~SharedLibrary();

  // The address of `symbol`, or null when the library has no such symbol.
  void* Symbol(const char* symbol) const;

 private:
  explicit SharedLibrary(void* handle) : handle_(handle) {}
  void* handle_ = nullptr;
};

}  // namespace shardpack::common

#endif  // SHARDPACK_COMMON_SHARED_LIBRARY_H_
