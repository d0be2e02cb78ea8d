// A kernel that takes a fixed time per batch (bench/staging_bench.cc).
#ifndef SHARDPACK_BENCH_STAGING_SPIN_H_
#define SHARDPACK_BENCH_STAGING_SPIN_H_

#include <cuda_runtime.h>

namespace shardpack::bench {

// Queues one kernel on `stream` that reads data[0] (device memory) and spins
// for `ns` nanoseconds of the GPU's global timer.
cudaError_t LaunchSpin(const void* data, unsigned long long ns, cudaStream_t stream);

}  // namespace shardpack::bench

#endif  // SHARDPACK_BENCH_STAGING_SPIN_H_
