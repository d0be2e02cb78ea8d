// The finish kernel (reader/cuda/finish_kernel.h), compiled by nvcc into the
// fatbin the build embeds; nothing here runs on the host.
#include <cuda_fp16.h>

#include <cstdint>

#include "reader/cuda/finish_kernel.h"

namespace shardpack::reader {
namespace {

// One thread per pixel (grid-stride): reads its `channels` bytes (a warp reads
// 32 x 3 contiguous bytes), writes one value per channel. Explicit roundings,
// no FMA contraction, so the CPU reference (FinishOnHost) is bit-identical.
template <bool kHalf, bool kNchw>
__device__ __forceinline__ void Finish(const FinishArgs& a, const uint8_t* __restrict__ src,
                                       void* __restrict__ dst, size_t pixels) {
  const size_t plane = size_t(a.height) * a.width;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t p = size_t(blockIdx.x) * blockDim.x + threadIdx.x; p < pixels; p += stride) {
    const size_t sample = p / plane;
    const size_t in_plane = p - sample * plane;
    for (int c = 0; c < a.channels; ++c) {
      const float v = __fadd_rn(__fmul_rn(float(src[p * a.channels + c]), a.scale[c]), a.bias[c]);
      const size_t out = kNchw ? (sample * a.channels + c) * plane + in_plane : p * a.channels + c;
      if constexpr (kHalf) {
        static_cast<__half*>(dst)[out] = __float2half_rn(v);
      } else {
        static_cast<float*>(dst)[out] = v;
      }
    }
  }
}

}  // namespace
}  // namespace shardpack::reader

// C names, so that the engine finds them in the module (FinishKernelName).
#define SHARDPACK_FINISH_KERNEL(name, half, nchw)                                          \
  extern "C" __global__ void name(shardpack::reader::FinishArgs a,                           \
                                  const uint8_t* __restrict__ src, void* __restrict__ dst, \
                                  size_t pixels) {                                         \
    shardpack::reader::Finish<half, nchw>(a, src, dst, pixels);                            \
  }
SHARDPACK_FINISH_KERNEL(shardpack_finish_f32_nhwc, false, false)
SHARDPACK_FINISH_KERNEL(shardpack_finish_f32_nchw, false, true)
SHARDPACK_FINISH_KERNEL(shardpack_finish_f16_nhwc, true, false)
SHARDPACK_FINISH_KERNEL(shardpack_finish_f16_nchw, true, true)
