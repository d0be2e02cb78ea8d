// shardpack.Dataset: random access to records (shardpack/records.h).
#ifndef SHARDPACK_PYTHON_PY_DATASET_H_
#define SHARDPACK_PYTHON_PY_DATASET_H_

#include <pybind11/pybind11.h>

namespace shardpack::python {

// Adds the class Dataset to the module.
void RegisterDataset(pybind11::module_& m);

}  // namespace shardpack::python

#endif  // SHARDPACK_PYTHON_PY_DATASET_H_
