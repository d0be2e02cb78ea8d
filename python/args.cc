#include "python/args.h"

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/errors.h"
#include "python/py_reader.h"
#include "reader/options.h"

namespace shardpack::python {
namespace {

// Python's own counting: "1 positional argument", "2 positional arguments".
std::string Arguments(size_t n, std::string_view what) {
  return absl::StrCat(n, " ", common::AsAbsl(what), n == 1 ? " argument" : " arguments");
}

// `v` as an int, through __index__ (numpy ints too); a TypeError for
// anything else, bools included.
py::int_ IntOf(py::handle v, std::string_view name, std::string_view what) {
  if (PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr())) WrongType(name, what, v);
  PyObject* n = PyNumber_Index(v.ptr());
  if (n == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::int_>(n);
}

// A source's weight or repeat: a number above 0 and at most `max` (NaN and
// infinities are out of range), never a bool or a str.
double PositiveArg(py::handle x, const std::string& at, double max, std::string_view accepted) {
  if (PyBool_Check(x.ptr()) || PyUnicode_Check(x.ptr()) || PyBytes_Check(x.ptr())) {
    WrongType(at, "a number", x);
  }
  const double d = PyFloat_AsDouble(x.ptr());  // __float__, or __index__
  if (d == -1.0 && PyErr_Occurred() != nullptr) {
    const bool overflow = PyErr_ExceptionMatches(PyExc_OverflowError) != 0;  // an int past 1e308
    PyErr_Clear();
    if (overflow) OutOfRange(at, x, accepted);
    WrongType(at, "a number", x);
  }
  if (!(d > 0 && d <= max)) OutOfRange(at, x, accepted);
  return d;
}

// One element of a mixture's list: a dict of "path" and one count.
MixSource SourceOf(py::handle item, const std::string& at) {
  constexpr std::string_view kKeys[] = {"path", "weight", "repeat", "choose"};
  if (!PyDict_Check(item.ptr())) {
    WrongType(at, "a dict of \"path\" and one of \"weight\", \"repeat\", \"choose\"", item);
  }
  const auto d = py::reinterpret_borrow<py::dict>(item);
  for (auto [key, value] : d) {
    const std::optional<std::string> name = Utf8Of(key);
    if (!name || std::find(std::begin(kKeys), std::end(kKeys), *name) == std::end(kKeys)) {
      RaiseError(PyExc_ValueError,
                 absl::StrCat(at, " has an unknown key ", Shown(key),
                              " (a source takes path and one of weight, repeat, choose)"));
    }
  }
  if (!d.contains("path")) {
    RaiseError(PyExc_ValueError, absl::StrCat(at, " has no \"path\": each source names its "
                                                  "dataset"));
  }
  MixSource m;
  m.path = PathArg(d["path"], absl::StrCat(at, "[\"path\"]"));
  const int set = int(d.contains("weight")) + int(d.contains("repeat")) + int(d.contains("choose"));
  if (set != 1) {
    RaiseError(PyExc_ValueError,
               absl::StrCat(at, set == 0 ? " sets none" : " sets more than one",
                            " of \"weight\", \"repeat\" and \"choose\": set exactly one"));
  }
  const char* count = d.contains("weight") ? "weight" : d.contains("repeat") ? "repeat" : "choose";
  const std::string key = absl::StrCat(at, "[\"", count, "\"]");
  if (d.contains("weight")) {
    m.weight = PositiveArg(d["weight"], key, DBL_MAX, "a finite number above 0");
  } else if (d.contains("repeat")) {
    m.repeat = PositiveArg(d["repeat"], key, kMaxMixRepeat,
                           absl::StrCat("a number above 0, at most ", kMaxMixRepeat));
  } else {
    m.choose = UintArg(d["choose"], key, UINT64_MAX, "1 to 2**64-1");
    if (m.choose == 0) OutOfRange(key, d["choose"], "1 to 2**64-1");
  }
  return m;
}

}  // namespace

CallArgs::CallArgs(std::string func, const py::args& args, const py::kwargs& kwargs,
                   std::vector<std::string> names, size_t positional, size_t required)
    : names_(std::move(names)), values_(names_.size()) {
  func += "()";
  if (args.size() > positional) {
    std::string takes =
        positional == 0 ? "no positional arguments"
                        : absl::StrCat(Arguments(positional, "positional"), " (",
                                       absl::StrJoin(names_.begin(), names_.begin() + positional,
                                                     ", "),
                                       ")");
    RaiseError(PyExc_TypeError, absl::StrCat(func, " takes ", takes, " but ", args.size(),
                                        args.size() == 1 ? " was" : " were", " given",
                                        names_.size() > positional ? ": pass the others by keyword"
                                                                   : ""));
  }
  for (size_t i = 0; i < args.size(); ++i) values_[i] = args[i];
  for (auto [key, value] : kwargs) {
    const std::optional<std::string> name = Utf8Of(key);
    size_t i = 0;
    while (i < names_.size() && (!name || *name != names_[i])) ++i;
    if (i == names_.size()) {
      RaiseError(PyExc_TypeError,
            absl::StrCat(func, " got an unexpected keyword argument ", Shown(key), " (",
                         names_.empty() ? "it takes none" : absl::StrJoin(names_, ", "), ")"));
    }
    if (values_[i]) {
      RaiseError(PyExc_TypeError, absl::StrCat(func, " got multiple values for argument '",
                                          names_[i], "'"));
    }
    values_[i] = py::reinterpret_borrow<py::object>(value);
  }
  for (size_t i = 0; i < required; ++i) {
    if (!values_[i]) {
      RaiseError(PyExc_TypeError,
            absl::StrCat(func, " missing required argument '", names_[i], "'"));
    }
  }
}

py::object CallArgs::operator[](std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return values_[i];
  }
  return py::object();
}

std::string TypeName(py::handle v) { return Py_TYPE(v.ptr())->tp_name; }

std::optional<std::string> Utf8Of(py::handle v) {
  if (!PyUnicode_Check(v.ptr())) return std::nullopt;
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(v.ptr(), &size);
  if (data == nullptr) {
    PyErr_Clear();
    return std::nullopt;
  }
  return std::string(data, static_cast<size_t>(size));
}

std::string Shown(py::handle v) {
  // Python 3.11 refuses to print an int of more than 4300 digits; a repr of
  // one of a million would be a megabyte.
  if (PyLong_Check(v.ptr())) {
    const size_t bits = py::reinterpret_borrow<py::object>(v).attr("bit_length")().cast<size_t>();
    if (bits > 256) return absl::StrCat("an int of ", bits, " bits");
  }
  PyObject* repr = PyObject_Repr(v.ptr());
  std::optional<std::string> text;
  if (repr != nullptr) text = Utf8Of(repr);
  Py_XDECREF(repr);
  if (!text) {
    PyErr_Clear();
    return absl::StrCat("a ", TypeName(v));
  }
  return common::Excerpt(*text);
}

void WrongType(std::string_view name, std::string_view what, py::handle v) {
  RaiseError(PyExc_TypeError, absl::StrCat(common::AsAbsl(name), " must be ",
                                      common::AsAbsl(what), ", not ", TypeName(v)));
}

void OutOfRange(std::string_view name, py::handle v, std::string_view accepted) {
  RaiseError(PyExc_ValueError, absl::StrCat(common::AsAbsl(name), " ", Shown(v),
                                       " is out of range: ", common::AsAbsl(accepted)));
}

int OptionInt(py::handle v, const char* option) {
  py::int_ n = IntOf(v, option, "an int");
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(n.ptr(), &overflow);
  if (overflow != 0 || value < INT_MIN || value > INT_MAX) {
    ThrowStatus(reader::OptionOutOfRange(option, Shown(n)));
  }
  return static_cast<int>(value);
}

uint64_t UintArg(py::handle v, std::string_view name, uint64_t max, std::string_view accepted) {
  py::int_ n = IntOf(v, name, "an int");
  const unsigned long long value = PyLong_AsUnsignedLongLong(n.ptr());  // fails < 0, >= 2**64
  if (PyErr_Occurred() != nullptr) {
    PyErr_Clear();
    OutOfRange(name, n, accepted);
  }
  if (value > max) OutOfRange(name, n, accepted);
  return value;
}

bool BoolArg(py::handle v, std::string_view name) {
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True;
  if (TypeName(v) == "numpy.bool_" || TypeName(v) == "numpy.bool") return PyObject_IsTrue(v.ptr());
  WrongType(name, "a bool", v);
}

std::string StrArg(py::handle v, std::string_view name) {
  if (!PyUnicode_Check(v.ptr())) WrongType(name, "a str", v);
  std::optional<std::string> text = Utf8Of(v);
  if (!text) {
    RaiseError(PyExc_ValueError,
          absl::StrCat(common::AsAbsl(name), " ", Shown(v), " is not valid text (UTF-8)"));
  }
  return *std::move(text);
}

std::string PathArg(py::handle v, std::string_view name) {
  if (!PyUnicode_Check(v.ptr()) && !PyBytes_Check(v.ptr()) &&
      !PyObject_HasAttrString(reinterpret_cast<PyObject*>(Py_TYPE(v.ptr())), "__fspath__")) {
    WrongType(name, "a str, bytes or os.PathLike", v);
  }
  // os.fsencode: a str in the file system's encoding, lone surrogates
  // (undecodable bytes from os.listdir) back to their bytes.
  py::object encoded = py::module_::import("os").attr("fsencode")(v);
  if (!PyBytes_Check(encoded.ptr())) WrongType(name, "a str, bytes or os.PathLike", v);
  char* data = nullptr;
  Py_ssize_t size = 0;
  PyBytes_AsStringAndSize(encoded.ptr(), &data, &size);
  std::string path(data, static_cast<size_t>(size));
  // A NUL would cut the path the system sees (or the cache's folder).
  if (absl::Status s = reader::CheckPathOption(name, path); !s.ok()) ThrowStatus(s);
  return path;
}

std::array<float, 3> TripleArg(py::handle v, std::string_view name) {
  const std::string what = "a sequence of 3 numbers (one a channel)";
  if (PyUnicode_Check(v.ptr()) || PyBytes_Check(v.ptr()) || !PySequence_Check(v.ptr())) {
    WrongType(name, what, v);
  }
  const Py_ssize_t n = PySequence_Size(v.ptr());
  if (n < 0) throw py::error_already_set();
  if (n != 3) {
    RaiseError(PyExc_ValueError, absl::StrCat(common::AsAbsl(name), " ", Shown(v), " holds ", n,
                                         " numbers: it must be ", what));
  }
  std::array<float, 3> out{};
  for (Py_ssize_t c = 0; c < 3; ++c) {
    py::object x = py::reinterpret_steal<py::object>(PySequence_GetItem(v.ptr(), c));
    if (!x) throw py::error_already_set();
    const std::string at = absl::StrCat(common::AsAbsl(name), "[", c, "]");
    if (PyBool_Check(x.ptr()) || PyUnicode_Check(x.ptr()) || PyBytes_Check(x.ptr())) {
      WrongType(at, "a number", x);
    }
    const double d = PyFloat_AsDouble(x.ptr());  // __float__, or __index__
    if (d == -1.0 && PyErr_Occurred() != nullptr) {
      PyErr_Clear();
      WrongType(at, "a number", x);
    }
    if (!(std::fabs(d) <= FLT_MAX)) OutOfRange(at, x, "a finite number (a float32)");
    out[c] = static_cast<float>(d);
  }
  return out;
}

std::vector<std::string> NamesArg(py::handle v, std::string_view name) {
  if (v.is_none()) return {};
  if (!PyList_Check(v.ptr()) && !PyTuple_Check(v.ptr())) WrongType(name, "a list of str", v);
  const auto items = py::reinterpret_borrow<py::sequence>(v);
  std::vector<std::string> names;
  for (size_t i = 0; i < py::len(items); ++i) {
    names.push_back(StrArg(items[i], absl::StrCat(common::AsAbsl(name), "[", i, "]")));
  }
  return names;
}

std::vector<MixSource> SourcesArg(py::handle v, std::string_view name) {
  const auto items = py::reinterpret_borrow<py::sequence>(v);
  const size_t n = py::len(items);
  if (n == 0 || n > static_cast<size_t>(kMaxMixSources)) {
    RaiseError(PyExc_ValueError,
               absl::StrCat(common::AsAbsl(name), " holds ", n, " sources: a mixture has 1 to ",
                            kMaxMixSources));
  }
  std::vector<MixSource> sources;
  for (size_t i = 0; i < n; ++i) {
    sources.push_back(SourceOf(items[i], absl::StrCat(common::AsAbsl(name), "[", i, "]")));
  }
  return sources;
}

}  // namespace shardpack::python
