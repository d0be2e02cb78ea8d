// shardpack.contact_sheet(images, labels, classes=None, columns=None,
// tile=None, *, mean=None, std=None, indices=None, layout=None).
#ifndef SHARDPACK_PYTHON_CONTACT_SHEET_H_
#define SHARDPACK_PYTHON_CONTACT_SHEET_H_

#include <pybind11/pybind11.h>

namespace shardpack::python {

// Adds contact_sheet to the module `m`.
void BindContactSheet(pybind11::module_& m);

}  // namespace shardpack::python

#endif  // SHARDPACK_PYTHON_CONTACT_SHEET_H_
