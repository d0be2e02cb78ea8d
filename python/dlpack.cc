#include "python/dlpack.h"

#include <algorithm>
#include <memory>

namespace shardpack::python {
namespace {

// DLPack's protocol name; a consumer renames the capsule "used_dltensor" when
// it takes the tensor over.
constexpr char kCapsuleName[] = "dltensor";

// One allocation per exported tensor (per batch, not per sample): the
// managed tensor and its shape live together.
struct Exported {
  DLManagedTensor managed;
  int64_t shape[4];
  int64_t strides[4];  // in elements; given although row-major, for old consumers
  PyObject* owner;
};

bool IsFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

// DLPack's deleter may run on any thread, with or without the GIL (torch
// calls it when the tensor's storage dies).
void DeleteExported(DLManagedTensor* self) {
  auto* exported = static_cast<Exported*>(self->manager_ctx);
  // A tensor freed while the interpreter shuts down (torch's own teardown)
  // must not take the GIL: the batch is leaked, the process is ending.
  if (!Py_IsInitialized() || IsFinalizing()) {
    delete exported;
    return;
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_DECREF(exported->owner);
  PyGILState_Release(gil);
  delete exported;
}

// A capsule that was never consumed still owns its tensor.
void DestroyCapsule(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kCapsuleName)) return;  // consumed: the tensor owns it
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
}

}  // namespace

PyObject* NewDlpackCapsule(void* data, DLDevice device, DLDataType dtype,
                           const std::vector<int64_t>& shape, PyObject* owner) {
  auto exported = std::make_unique<Exported>();
  const size_t ndim = std::min<size_t>(shape.size(), 4);
  std::copy_n(shape.begin(), ndim, exported->shape);
  int64_t stride = 1;
  for (size_t d = ndim; d-- > 0;) {
    exported->strides[d] = stride;
    stride *= exported->shape[d];
  }
  exported->owner = owner;
  DLTensor& t = exported->managed.dl_tensor;
  t.data = data;
  t.device = device;
  t.ndim = static_cast<int32_t>(ndim);
  t.dtype = dtype;
  t.shape = exported->shape;
  t.strides = exported->strides;
  t.byte_offset = 0;
  exported->managed.manager_ctx = exported.get();
  exported->managed.deleter = &DeleteExported;
  PyObject* capsule = PyCapsule_New(&exported->managed, kCapsuleName, &DestroyCapsule);
  if (capsule == nullptr) return nullptr;
  Py_INCREF(owner);
  exported.release();
  return capsule;
}

}  // namespace shardpack::python
