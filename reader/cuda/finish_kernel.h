// The on-device finish (reader/staging.h, FinishParams): one kernel that
// turns a uint8 NHWC batch into float32 or float16, NHWC or NCHW, with
// value = pixel * scale[c] + bias[c]. Plain C++ so nvcc sees no Abseil.
#ifndef SHARDPACK_READER_CUDA_FINISH_KERNEL_H_
#define SHARDPACK_READER_CUDA_FINISH_KERNEL_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace shardpack::reader {

struct FinishArgs {
  int height = 0, width = 0, channels = 0;  // channels <= 3
  bool half = false;
  bool nchw = false;
  float scale[3] = {0, 0, 0};
  float bias[3] = {0, 0, 0};
};

// Queues the finish of `n` samples from `src` (device, uint8 NHWC) into
// `dst` (device) on `stream`; the launch's error, if any.
cudaError_t LaunchFinish(const FinishArgs& args, int n, const uint8_t* src, void* dst,
                         cudaStream_t stream);

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_CUDA_FINISH_KERNEL_H_
