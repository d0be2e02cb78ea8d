#include "reader/cuda/driver.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/shared_library.h"

namespace shardpack::reader {
namespace {

// Fills `*fn` from `symbol`; false when the driver has no such symbol.
template <typename Fn>
bool Bind(const common::SharedLibrary& lib, const char* symbol, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(lib.Symbol(symbol));
  if (*fn == nullptr && missing->empty()) *missing = symbol;
  return *fn != nullptr;
}

bool BindAll(const common::SharedLibrary& lib, CudaDriver* d, std::string* missing) {
  bool ok = Bind(lib, "cuGetErrorName", &d->GetErrorName, missing);
  ok &= Bind(lib, "cuGetErrorString", &d->GetErrorString, missing);
  ok &= Bind(lib, "cuInit", &d->Init, missing);
  ok &= Bind(lib, "cuDriverGetVersion", &d->DriverGetVersion, missing);
  ok &= Bind(lib, "cuDeviceGetCount", &d->DeviceGetCount, missing);
  ok &= Bind(lib, "cuDeviceGet", &d->DeviceGet, missing);
  ok &= Bind(lib, "cuDevicePrimaryCtxRetain", &d->PrimaryCtxRetain, missing);
  ok &= Bind(lib, "cuDevicePrimaryCtxRelease_v2", &d->PrimaryCtxRelease, missing);
  ok &= Bind(lib, "cuCtxPushCurrent_v2", &d->CtxPushCurrent, missing);
  ok &= Bind(lib, "cuCtxPopCurrent_v2", &d->CtxPopCurrent, missing);
  ok &= Bind(lib, "cuMemAlloc_v2", &d->MemAlloc, missing);
  ok &= Bind(lib, "cuMemFree_v2", &d->MemFree, missing);
  ok &= Bind(lib, "cuMemHostAlloc", &d->MemHostAlloc, missing);
  ok &= Bind(lib, "cuMemFreeHost", &d->MemFreeHost, missing);
  ok &= Bind(lib, "cuMemcpyHtoDAsync_v2", &d->MemcpyHtoDAsync, missing);
  ok &= Bind(lib, "cuMemcpyDtoH_v2", &d->MemcpyDtoH, missing);
  ok &= Bind(lib, "cuStreamCreate", &d->StreamCreate, missing);
  ok &= Bind(lib, "cuStreamDestroy_v2", &d->StreamDestroy, missing);
  ok &= Bind(lib, "cuStreamSynchronize", &d->StreamSynchronize, missing);
  ok &= Bind(lib, "cuStreamWaitEvent", &d->StreamWaitEvent, missing);
  ok &= Bind(lib, "cuEventCreate", &d->EventCreate, missing);
  ok &= Bind(lib, "cuEventDestroy_v2", &d->EventDestroy, missing);
  ok &= Bind(lib, "cuEventRecord", &d->EventRecord, missing);
  ok &= Bind(lib, "cuEventQuery", &d->EventQuery, missing);
  ok &= Bind(lib, "cuEventSynchronize", &d->EventSynchronize, missing);
  ok &= Bind(lib, "cuModuleLoadData", &d->ModuleLoadData, missing);
  ok &= Bind(lib, "cuModuleUnload", &d->ModuleUnload, missing);
  ok &= Bind(lib, "cuModuleGetFunction", &d->ModuleGetFunction, missing);
  ok &= Bind(lib, "cuLaunchKernel", &d->LaunchKernel, missing);
  return ok;
}

absl::StatusOr<CudaDriver> Load() {
  // The driver's own library, never the toolkit's stub of the same name:
  // libcuda.so.1 is what a driver installs (and what an LD_LIBRARY_PATH may
  // put first, as the tests' fake driver does).
  constexpr const char* kLibrary = "libcuda.so.1";
  absl::StatusOr<common::SharedLibrary> lib = common::SharedLibrary::Open(kLibrary);
  if (!lib.ok()) {
    return absl::UnavailableError(absl::StrCat("no CUDA driver (", lib.status().message(), ")"));
  }
  CudaDriver d;
  std::string missing;
  if (!BindAll(*lib, &d, &missing)) {
    return absl::UnavailableError(absl::StrCat("the CUDA driver ", kLibrary, " lacks ", missing,
                                               ": staging needs a driver for CUDA ",
                                               CudaVersionText(kOldestCudaDriver), " or newer"));
  }
  if (d.DriverGetVersion(&d.version) != kCudaSuccess || d.version < kOldestCudaDriver) {
    return absl::UnavailableError(absl::StrCat("the CUDA driver supports CUDA ",
                                               CudaVersionText(d.version), "; staging needs ",
                                               CudaVersionText(kOldestCudaDriver), " or newer"));
  }
  if (absl::Status s = CudaCheck(d, d.Init(0), "cuInit"); !s.ok()) {
    return absl::UnavailableError(s.message());
  }
  // Kept with the entry points, which live as long as the process: the
  // driver's own threads and the consumer's CUDA work may outlive any reader.
  d.library = std::make_shared<common::SharedLibrary>(*std::move(lib));
  return d;
}

}  // namespace

absl::StatusOr<const CudaDriver*> LoadCudaDriver() {
  static const auto* const driver = new absl::StatusOr<CudaDriver>(Load());
  if (!driver->ok()) return driver->status();
  return &driver->value();
}

absl::Status CudaCheck(const CudaDriver& d, CUresult r, absl::string_view what) {
  if (r == kCudaSuccess) return absl::OkStatus();
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.GetErrorName(r, &name) != kCudaSuccess || name == nullptr) name = "CUDA error";
  if (d.GetErrorString(r, &text) != kCudaSuccess || text == nullptr) text = "no description";
  return absl::InternalError(absl::StrCat(what, ": ", name, " (", text, ", ", r, ")"));
}

std::string CudaVersionText(int version) {
  return absl::StrCat(version / 1000, ".", version % 1000 / 10);
}

}  // namespace shardpack::reader
