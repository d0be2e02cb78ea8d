// Planar to interleaved pixels: three planes (R, G, B, as CIFAR stores them)
// to RGB RGB ..., the layout every HWC consumer wants.
#ifndef SHARDPACK_CODEC_INTERLEAVE_H_
#define SHARDPACK_CODEC_INTERLEAVE_H_

#include <cstddef>
#include <cstdint>

namespace shardpack::codec {

// out[3i + c] = plane_c[i] for i < n. SSSE3 (pshufb, 16 pixels a step) when
// the CPU has it, else scalar; the same bytes either way. The packer spends
// most of its own CPU here on CIFAR input (a scalar loop took 18% of a
// pack's CPU time beside the kernel's write copies).
void InterleaveRgb(const uint8_t* r, const uint8_t* g, const uint8_t* b, size_t n, uint8_t* out);

// `channels` planes of `plane` bytes each, back to back at `planes` (CHW), as
// interleaved pixels at `out` (HWC): out[channels * i + c] = planes[c * plane
// + i]. Three planes by InterleaveRgb.
void InterleavePlanes(const uint8_t* planes, size_t plane, size_t channels, uint8_t* out);

// The scalar loop, for the tests to compare with.
void InterleaveRgbScalar(const uint8_t* r, const uint8_t* g, const uint8_t* b, size_t n,
                         uint8_t* out);

}  // namespace shardpack::codec

#endif  // SHARDPACK_CODEC_INTERLEAVE_H_
