// DLPack export of a batch's host (or device) memory, so that torch (and any DLPack
// consumer) can view a ring slot without a copy.
//
// The structs below are DLPack's ABI (dlpack.h v0.x, the version torch 1.13
// consumes: DLManagedTensor in a PyCapsule named "dltensor"). They are
// declared here rather than taken from a header because Debian 12 packages no
// dlpack.h and the layout is small and frozen.
#ifndef SHARDPACK_PYTHON_DLPACK_H_
#define SHARDPACK_PYTHON_DLPACK_H_

#include <Python.h>

#include <cstdint>
#include <vector>

namespace shardpack::python {

struct DLDevice {
  int32_t device_type;  // kDLCPU = 1, kDLCUDA = 2
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;  // kDLInt = 0, kDLUInt = 1, kDLFloat = 2
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; nullptr means row-major
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};
static_assert(sizeof(DLDevice) == 8 && sizeof(DLDataType) == 4);
static_assert(sizeof(DLTensor) == 48 && sizeof(DLManagedTensor) == 64);

inline constexpr int32_t kDLCPU = 1, kDLCUDA = 2;
inline constexpr uint8_t kDLInt = 0, kDLUInt = 1, kDLFloat = 2;

// A new "dltensor" capsule viewing `data` (on `device`, row-major `shape`,
// elements of `dtype`). It holds a reference to `owner` until the consumer's tensor
// is freed (or the capsule, if never consumed): `owner` keeps `data` alive.
// Returns nullptr with a Python error set on failure. Needs the GIL.
PyObject* NewDlpackCapsule(void* data, DLDevice device, DLDataType dtype,
                           const std::vector<int64_t>& shape, PyObject* owner);

}  // namespace shardpack::python

#endif  // SHARDPACK_PYTHON_DLPACK_H_
