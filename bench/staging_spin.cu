// The benchmark's stand-in for a training step: a kernel that reads the batch
// and then takes a fixed time (busy-waiting on the GPU's global timer).
#include "bench/staging_spin.h"

namespace shardpack::bench {
namespace {

__device__ unsigned long long GlobalNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void Spin(const unsigned char* data, unsigned long long ns, unsigned* sink) {
  const unsigned long long start = GlobalNs();
  const unsigned first = data[0];
  while (GlobalNs() - start < ns) {
  }
  if (first == 256u) *sink = first;  // never true: keeps the read
}

}  // namespace

cudaError_t LaunchSpin(const void* data, unsigned long long ns, cudaStream_t stream) {
  Spin<<<1, 1, 0, stream>>>(static_cast<const unsigned char*>(data), ns, nullptr);
  return cudaGetLastError();
}

}  // namespace shardpack::bench
