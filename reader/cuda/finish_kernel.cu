#include <cuda_fp16.h>

#include "reader/cuda/finish_kernel.h"

namespace shardpack::reader {
namespace {

// One thread per pixel (grid-stride): reads its `channels` bytes (a warp reads
// 32 x 3 contiguous bytes), writes one value per channel. Explicit roundings,
// no FMA contraction, so the CPU reference (FinishOnHost) is bit-identical.
template <bool kHalf, bool kNchw>
__global__ void FinishKernel(FinishArgs a, const uint8_t* __restrict__ src,
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

cudaError_t LaunchFinish(const FinishArgs& args, int n, const uint8_t* src, void* dst,
                         cudaStream_t stream) {
  const size_t pixels = size_t(n) * args.height * args.width;
  if (pixels == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  // Enough blocks to fill any current GPU; the grid-stride loop does the rest.
  const unsigned blocks = static_cast<unsigned>(
      pixels / kThreads + 1 < 4096 ? pixels / kThreads + 1 : 4096);
  if (args.half && args.nchw) {
    FinishKernel<true, true><<<blocks, kThreads, 0, stream>>>(args, src, dst, pixels);
  } else if (args.half) {
    FinishKernel<true, false><<<blocks, kThreads, 0, stream>>>(args, src, dst, pixels);
  } else if (args.nchw) {
    FinishKernel<false, true><<<blocks, kThreads, 0, stream>>>(args, src, dst, pixels);
  } else {
    FinishKernel<false, false><<<blocks, kThreads, 0, stream>>>(args, src, dst, pixels);
  }
  return cudaGetLastError();
}

}  // namespace shardpack::reader
