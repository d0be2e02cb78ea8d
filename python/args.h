// The arguments of shardpack's Python functions, checked the way the reader
// checks its options: a TypeError (a missing, unknown or doubled argument,
// a wrong type) or a ValueError (a value out of range) that names the
// argument and says what it accepts, in one line. Not pybind11's signature
// dump or "Unable to cast", and never a value echoed unbounded.
//
// Ints are Python ints or objects with __index__ (numpy's), never bools;
// floats are any number but a bool; strings are str; bools are bool or
// numpy.bool_.
#ifndef SHARDPACK_PYTHON_ARGS_H_
#define SHARDPACK_PYTHON_ARGS_H_

#include <pybind11/pybind11.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardpack/reader.h"

namespace shardpack::python {

namespace py = pybind11;

// The arguments of one call of `func`, whose parameters are `names`: the
// first `positional` of them may come by position, the first `required`
// must come. TypeErrors as Python words them: too many positional
// arguments, an unknown keyword, one given twice, a missing one.
class CallArgs {
 public:
  CallArgs(std::string func, const py::args& args, const py::kwargs& kwargs,
           std::vector<std::string> names, size_t positional = 0, size_t required = 0);
  // The value of `name`, or a null object when it was not given.
  py::object operator[](std::string_view name) const;

 private:
  std::vector<std::string> names_;
  std::vector<py::object> values_;
};

// `v` for a message: its repr, bounded (common/errors.h, Excerpt); an int
// too long to print whole as "an int of N bits"; "a <type>" when its repr
// fails.
std::string Shown(py::handle v);
// The name of `v`'s type ("int", "NoneType"), for "must be an int, not X".
std::string TypeName(py::handle v);
// The UTF-8 bytes of a str, or nothing (not a str, or lone surrogates).
std::optional<std::string> Utf8Of(py::handle v);

// TypeError "<name> must be <what>, not <type of v>".
[[noreturn]] void WrongType(std::string_view name, std::string_view what, py::handle v);
// ValueError "<name> <v> is out of range: <accepted>".
[[noreturn]] void OutOfRange(std::string_view name, py::handle v, std::string_view accepted);

// An int option of ReaderOptions (batch_size, threads, ...): a value that
// does not even fit the field is the reader's own out-of-range message
// (reader/options.h); the reader checks the rest.
int OptionInt(py::handle v, const char* option);
// An int from 0 to `max`; `accepted` says that range ("0 to 2**64-1").
uint64_t UintArg(py::handle v, std::string_view name, uint64_t max = UINT64_MAX,
                 std::string_view accepted = "0 to 2**64-1");
bool BoolArg(py::handle v, std::string_view name);
std::string StrArg(py::handle v, std::string_view name);
// A str, bytes or os.PathLike, as the bytes the system takes (os.fsencode).
std::string PathArg(py::handle v, std::string_view name);
// A sequence of three numbers (one a channel).
std::array<float, 3> TripleArg(py::handle v, std::string_view name);
// A list or tuple of str (field names); None: empty. TypeError naming the
// argument or the element (`fields[1] must be a str, not int`).
std::vector<std::string> NamesArg(py::handle v, std::string_view name);
// A mixture's sources (shardpack.Reader's `path` given as a list or tuple):
// each a dict {"path": ..., and exactly one of "weight": w > 0, "repeat":
// 0 < r <= kMaxMixRepeat, "choose": n >= 1}. Errors name the element and
// key: `path[1]["weight"] nan is out of range: ...`. What depends on the
// sources' records (a count that draws no sample, a choose past
// kMaxMixRepeat times the records) is Reader::Open's to check.
std::vector<MixSource> SourcesArg(py::handle v, std::string_view name);

}  // namespace shardpack::python

#endif  // SHARDPACK_PYTHON_ARGS_H_
