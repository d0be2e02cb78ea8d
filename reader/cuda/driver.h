// The CUDA driver API (libcuda.so.1), loaded at run time: the part of it the
// copy engine uses, declared here so that nothing of ours needs the CUDA
// toolkit's headers or links its runtime. The same build imports on a machine
// with no GPU or driver and stages on one with any driver from CUDA 11.0 on;
// the finish kernel needs one as new as the toolkit that built it
// (reader/cuda/finish_kernel.h).
//
// The declarations follow cuda.h's ABI: handles are opaque pointers, device
// memory a 64-bit address, and each function is taken by the versioned
// symbol cuda.h maps its name to (cuMemAlloc is cuMemAlloc_v2).
#ifndef SHARDPACK_READER_CUDA_DRIVER_H_
#define SHARDPACK_READER_CUDA_DRIVER_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/shared_library.h"

namespace shardpack::reader {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;

inline constexpr CUresult kCudaSuccess = 0;
inline constexpr CUresult kCudaErrorNotReady = 600;
inline constexpr unsigned kCudaStreamNonBlocking = 0x1;
inline constexpr unsigned kCudaEventBlockingSync = 0x1;
inline constexpr unsigned kCudaEventDisableTiming = 0x2;
// The oldest driver the copies run on: cuDevicePrimaryCtxRelease_v2 came with 11.0.
inline constexpr int kOldestCudaDriver = 11000;

// The entry points, each filled from the symbol named beside it.
struct CudaDriver {
  std::shared_ptr<common::SharedLibrary> library;  // libcuda.so.1, never closed
  int version = 0;  // cuDriverGetVersion: 12040 is CUDA 12.4
  CUresult (*GetErrorName)(CUresult, const char**);                      // cuGetErrorName
  CUresult (*GetErrorString)(CUresult, const char**);                    // cuGetErrorString
  CUresult (*Init)(unsigned);                                            // cuInit
  CUresult (*DriverGetVersion)(int*);                                    // cuDriverGetVersion
  CUresult (*DeviceGetCount)(int*);                                      // cuDeviceGetCount
  CUresult (*DeviceGet)(CUdevice*, int);                                 // cuDeviceGet
  CUresult (*PrimaryCtxRetain)(CUcontext*, CUdevice);                    // cuDevicePrimaryCtxRetain
  CUresult (*PrimaryCtxRelease)(CUdevice);                               // ..._v2
  CUresult (*CtxPushCurrent)(CUcontext);                                 // cuCtxPushCurrent_v2
  CUresult (*CtxPopCurrent)(CUcontext*);                                 // cuCtxPopCurrent_v2
  CUresult (*MemAlloc)(CUdeviceptr*, size_t);                            // cuMemAlloc_v2
  CUresult (*MemFree)(CUdeviceptr);                                      // cuMemFree_v2
  CUresult (*MemHostAlloc)(void**, size_t, unsigned);                    // cuMemHostAlloc
  CUresult (*MemFreeHost)(void*);                                        // cuMemFreeHost
  CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);  // ..._v2
  CUresult (*MemcpyDtoH)(void*, CUdeviceptr, size_t);                    // cuMemcpyDtoH_v2
  CUresult (*StreamCreate)(CUstream*, unsigned);                         // cuStreamCreate
  CUresult (*StreamDestroy)(CUstream);                                   // cuStreamDestroy_v2
  CUresult (*StreamSynchronize)(CUstream);                               // cuStreamSynchronize
  CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned);              // cuStreamWaitEvent
  CUresult (*EventCreate)(CUevent*, unsigned);                           // cuEventCreate
  CUresult (*EventDestroy)(CUevent);                                     // cuEventDestroy_v2
  CUresult (*EventRecord)(CUevent, CUstream);                            // cuEventRecord
  CUresult (*EventQuery)(CUevent);                                       // cuEventQuery
  CUresult (*EventSynchronize)(CUevent);                                 // cuEventSynchronize
  CUresult (*ModuleLoadData)(CUmodule*, const void*);                    // cuModuleLoadData
  CUresult (*ModuleUnload)(CUmodule);                                    // cuModuleUnload
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*);     // cuModuleGetFunction
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, unsigned, CUstream, void**, void**);  // cuLaunchKernel
};

// The driver, loaded and initialized (cuInit) once per process, or why
// there is none, in one line: "no CUDA driver (libcuda.so.1: cannot open
// shared object file: ...)", "the CUDA driver lacks cuMemAlloc_v2 ...", "the
// CUDA driver supports CUDA 10.2; staging needs 11.0 or newer", "cuInit:
// CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)".
absl::StatusOr<const CudaDriver*> LoadCudaDriver();

// "<what>: CUDA_ERROR_NAME (its description)" for a failed call; OK for
// kCudaSuccess.
absl::Status CudaCheck(const CudaDriver& d, CUresult r, absl::string_view what);

// "12.4" for 12040.
std::string CudaVersionText(int version);

// Makes a context current on the calling thread while it lives and restores
// the one before: the reader must not change its caller's current device.
class CudaContextScope {
 public:
  CudaContextScope(const CudaDriver& d, CUcontext c) : d_(d), pushed_(d.CtxPushCurrent(c) == kCudaSuccess) {}
  ~CudaContextScope() {
    CUcontext popped = nullptr;
    if (pushed_) d_.CtxPopCurrent(&popped);
  }
  CudaContextScope(const CudaContextScope&) = delete;
  CudaContextScope& operator=(const CudaContextScope&) = delete;

 private:
  const CudaDriver& d_;
  const bool pushed_;
};

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_CUDA_DRIVER_H_
