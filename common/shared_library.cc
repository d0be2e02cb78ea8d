#include "common/shared_library.h"

#include <dlfcn.h>

#include <utility>

#include "absl/status/status.h"

namespace shardpack::common {

absl::StatusOr<SharedLibrary> SharedLibrary::Open(const std::string& name) {
  dlerror();  // clear a stale message
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::NotFoundError(why != nullptr ? why : name + ": cannot be loaded");
  }
  return SharedLibrary(handle);
}

SharedLibrary& SharedLibrary::operator=(SharedLibrary&& other) noexcept {
  std::swap(handle_, other.handle_);
  return *this;
}

SharedLibrary::~SharedLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

void* SharedLibrary::Symbol(const char* symbol) const {
  return handle_ == nullptr ? nullptr : dlsym(handle_, symbol);
}

}  // namespace shardpack::common
