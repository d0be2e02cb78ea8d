// Making numpy arrays without pybind11's view of numpy's dtype struct.
//
// pybind11 before 2.12 (Debian 12 ships 2.10) reads a dtype's element size
// from numpy 1's PyArray_Descr layout, which numpy 2 changed: there it reads
// 0, and an array made with default strides has every stride 0, so each
// element shows the first one's value. Every array this module makes is
// therefore made here, with byte strides and sizes from the element type we
// know, never from dtype.itemsize(), nbytes() or default strides.
#ifndef SHARDPACK_PYTHON_ARRAYS_H_
#define SHARDPACK_PYTHON_ARRAYS_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardpack::python {

namespace py = pybind11;

// A C-contiguous array of `shape`, `element_bytes` per element: a view of
// `data` kept alive by `base` when `data` is set, else memory numpy owns.
inline py::array NewArray(const py::dtype& dtype, size_t element_bytes,
                          const std::vector<py::ssize_t>& shape, const void* data = nullptr,
                          const py::handle& base = py::handle()) {
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t stride = static_cast<py::ssize_t>(element_bytes);
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return py::array(dtype, shape, strides, data, base);
}

// The array's bytes, counted from the shape we gave it.
inline size_t ArrayBytes(const std::vector<py::ssize_t>& shape, size_t element_bytes) {
  size_t n = element_bytes;
  for (py::ssize_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

}  // namespace shardpack::python

#endif  // SHARDPACK_PYTHON_ARRAYS_H_
