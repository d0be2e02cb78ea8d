// shardpack.Writer: a dataset of any fields written from Python, one sample
// (a dict) at a time, over the C++ Writer (shardpack/writer.h).
#ifndef SHARDPACK_PYTHON_PY_WRITER_H_
#define SHARDPACK_PYTHON_PY_WRITER_H_

#include <pybind11/pybind11.h>

namespace shardpack::python {

// Adds the class Writer to the module.
void RegisterWriter(pybind11::module_& m);

}  // namespace shardpack::python

#endif  // SHARDPACK_PYTHON_PY_WRITER_H_
