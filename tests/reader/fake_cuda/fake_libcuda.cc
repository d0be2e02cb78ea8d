// A fake CUDA driver, built as libcuda.so.1 for the tests: the driver API
// the copy engine loads (reader/cuda/driver.h), on host memory, so that the
// engine, its loader and its errors run where there is no GPU (every CI
// machine). Device memory is host memory, copies are done when queued and
// events are always complete; a launch of the finish kernel runs an
// emulation of it (finish_kernel.cu) on the arguments the engine passed.
//
// It checks what a real driver would refuse or what would leak: a call that
// needs a context with none current fails (CUDA_ERROR_INVALID_CONTEXT), a
// module must be a fatbin, and at exit every allocation, stream, event,
// module and primary-context reference must have been given back, else the
// process exits 3 naming what is left.
//
// The environment sets the machine: FAKE_CUDA_DRIVER_VERSION (13000 unless
// set), FAKE_CUDA_DEVICES (1), FAKE_CUDA_INIT_ERROR (a cuInit result).
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "reader/cuda/finish_kernel.h"

namespace {

using shardpack::reader::FinishArgs;
using CUresult = int;
using CUdeviceptr = unsigned long long;

constexpr CUresult kSuccess = 0, kInvalidValue = 1, kNotInitialized = 3, kInvalidDevice = 101,
                   kInvalidImage = 200, kInvalidContext = 201, kNotFound = 500;

int EnvInt(const char* name, int otherwise) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : otherwise;
}

struct Counts {
  std::atomic<long> device_blocks{0}, host_blocks{0}, streams{0}, events{0}, modules{0},
      retained{0};
  ~Counts() {
    const long left[] = {device_blocks, host_blocks, streams, events, modules, retained};
    const char* names[] = {"device allocations", "host allocations", "streams",
                           "events", "modules", "primary context references"};
    bool leaked = false;
    for (int i = 0; i < 6; ++i) {
      if (left[i] == 0) continue;
      std::fprintf(stderr, "fake libcuda: %ld %s never given back\n", left[i], names[i]);
      leaked = true;
    }
    if (leaked) std::_Exit(3);
  }
};
Counts counts;
bool initialized = false;
thread_local std::vector<void*> current;  // the thread's context stack
char contexts[64];                        // device d's primary context: &contexts[d]

bool HasContext() { return !current.empty(); }

// IEEE binary16 of `f`, rounded to nearest even, by the compiler's own conversion.
uint16_t Half(float f) {
  _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

// The kernel, per pixel as finish_kernel.cu does it (no FMA: -ffp-contract=off).
void Finish(const FinishArgs& a, const uint8_t* src, void* dst, size_t pixels, bool half,
            bool nchw) {
  const size_t plane = size_t(a.height) * a.width;
  for (size_t p = 0; p < pixels; ++p) {
    const size_t sample = p / plane, in_plane = p - sample * plane;
    for (int c = 0; c < a.channels; ++c) {
      const float product = float(src[p * a.channels + c]) * a.scale[c];
      const float v = product + a.bias[c];
      const size_t out = nchw ? (sample * a.channels + c) * plane + in_plane : p * a.channels + c;
      if (half) {
        static_cast<uint16_t*>(dst)[out] = Half(v);
      } else {
        static_cast<float*>(dst)[out] = v;
      }
    }
  }
}

// A stream, event or module: an object of its own, counted until destroyed.
CUresult NewHandle(void** handle, std::atomic<long>& count) {
  *handle = new char;
  ++count;
  return kSuccess;
}
CUresult DeleteHandle(void* handle, std::atomic<long>& count) {
  delete static_cast<char*>(handle);
  --count;
  return kSuccess;
}

struct Function {
  const char* name;
  bool half, nchw;
};
const Function kFunctions[] = {{"shardpack_finish_f32_nhwc", false, false},
                               {"shardpack_finish_f32_nchw", false, true},
                               {"shardpack_finish_f16_nhwc", true, false},
                               {"shardpack_finish_f16_nchw", true, true}};

}  // namespace

#define FAKE extern "C" __attribute__((visibility("default"))) CUresult
#define NEEDS_CONTEXT \
  if (!HasContext()) return kInvalidContext

FAKE cuGetErrorName(CUresult r, const char** s) {
  switch (r) {
    case kSuccess: *s = "CUDA_SUCCESS"; return kSuccess;
    case 100: *s = "CUDA_ERROR_NO_DEVICE"; return kSuccess;
    case kInvalidContext: *s = "CUDA_ERROR_INVALID_CONTEXT"; return kSuccess;
    case kInvalidImage: *s = "CUDA_ERROR_INVALID_IMAGE"; return kSuccess;
    default: *s = nullptr; return kInvalidValue;
  }
}
FAKE cuGetErrorString(CUresult r, const char** s) {
  switch (r) {
    case 100: *s = "no CUDA-capable device is detected"; return kSuccess;
    case kInvalidContext: *s = "invalid device context"; return kSuccess;
    default: *s = nullptr; return kInvalidValue;
  }
}
FAKE cuInit(unsigned) {
  const CUresult r = EnvInt("FAKE_CUDA_INIT_ERROR", kSuccess);
  initialized = r == kSuccess;
  return r;
}
FAKE cuDriverGetVersion(int* v) {
  *v = EnvInt("FAKE_CUDA_DRIVER_VERSION", 13000);
  return kSuccess;
}
FAKE cuDeviceGetCount(int* n) {
  if (!initialized) return kNotInitialized;
  *n = EnvInt("FAKE_CUDA_DEVICES", 1);
  return kSuccess;
}
FAKE cuDeviceGet(int* device, int ordinal) {
  if (ordinal < 0 || ordinal >= EnvInt("FAKE_CUDA_DEVICES", 1)) return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}
FAKE cuDevicePrimaryCtxRetain(void** context, int device) {
  *context = &contexts[device];
  ++counts.retained;
  return kSuccess;
}
FAKE cuDevicePrimaryCtxRelease_v2(int) {
  --counts.retained;
  return kSuccess;
}
FAKE cuCtxPushCurrent_v2(void* context) {
  current.push_back(context);
  return kSuccess;
}
FAKE cuCtxPopCurrent_v2(void** context) {
  if (current.empty()) return kInvalidContext;
  *context = current.back();
  current.pop_back();
  return kSuccess;
}
FAKE cuMemAlloc_v2(CUdeviceptr* p, size_t bytes) {
  NEEDS_CONTEXT;
  *p = reinterpret_cast<uintptr_t>(std::malloc(bytes));
  ++counts.device_blocks;
  return kSuccess;
}
FAKE cuMemFree_v2(CUdeviceptr p) {
  NEEDS_CONTEXT;
  std::free(reinterpret_cast<void*>(p));
  --counts.device_blocks;
  return kSuccess;
}
FAKE cuMemHostAlloc(void** p, size_t bytes, unsigned) {
  NEEDS_CONTEXT;
  *p = std::malloc(bytes);
  ++counts.host_blocks;
  return kSuccess;
}
FAKE cuMemFreeHost(void* p) {
  NEEDS_CONTEXT;
  std::free(p);
  --counts.host_blocks;
  return kSuccess;
}
FAKE cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes, void*) {
  NEEDS_CONTEXT;
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return kSuccess;
}
FAKE cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
  NEEDS_CONTEXT;
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  return kSuccess;
}
FAKE cuStreamCreate(void** s, unsigned) { NEEDS_CONTEXT; return NewHandle(s, counts.streams); }
FAKE cuStreamDestroy_v2(void* s) { NEEDS_CONTEXT; return DeleteHandle(s, counts.streams); }
FAKE cuStreamSynchronize(void*) { NEEDS_CONTEXT; return kSuccess; }
FAKE cuStreamWaitEvent(void*, void*, unsigned) { NEEDS_CONTEXT; return kSuccess; }
FAKE cuEventCreate(void** e, unsigned) { NEEDS_CONTEXT; return NewHandle(e, counts.events); }
FAKE cuEventDestroy_v2(void* e) { NEEDS_CONTEXT; return DeleteHandle(e, counts.events); }
FAKE cuEventRecord(void*, void*) { NEEDS_CONTEXT; return kSuccess; }
FAKE cuEventQuery(void*) { return kSuccess; }
FAKE cuEventSynchronize(void*) { return kSuccess; }
FAKE cuModuleLoadData(void** module, const void* image) {
  NEEDS_CONTEXT;
  uint32_t magic = 0;
  std::memcpy(&magic, image, 4);
  if (magic != 0xBA55ED50u) return kInvalidImage;  // a fatbin's header
  return NewHandle(module, counts.modules);
}
FAKE cuModuleUnload(void* module) { NEEDS_CONTEXT; return DeleteHandle(module, counts.modules); }
FAKE cuModuleGetFunction(const void** f, void*, const char* name) {
  NEEDS_CONTEXT;
  for (const Function& k : kFunctions) {
    if (std::strcmp(k.name, name) == 0) {
      *f = &k;
      return kSuccess;
    }
  }
  return kNotFound;
}
FAKE cuLaunchKernel(const void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                    unsigned by, unsigned bz, unsigned, void*, void** params, void** extra) {
  NEEDS_CONTEXT;
  if (gx == 0 || bx == 0 || gy != 1 || gz != 1 || by != 1 || bz != 1 || extra != nullptr) {
    return kInvalidValue;
  }
  const auto* k = static_cast<const Function*>(f);
  const auto& args = *static_cast<const FinishArgs*>(params[0]);
  const auto src = *static_cast<const CUdeviceptr*>(params[1]);
  const auto dst = *static_cast<const CUdeviceptr*>(params[2]);
  const auto pixels = *static_cast<const size_t*>(params[3]);
  if (args.half != k->half || args.nchw != k->nchw) return kInvalidValue;
  Finish(args, reinterpret_cast<const uint8_t*>(src), reinterpret_cast<void*>(dst), pixels,
         k->half, k->nchw);
  return kSuccess;
}
