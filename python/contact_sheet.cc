// shardpack.contact_sheet: a batch as one image for a notebook, drawn by the
// same code as `shardbench --save-batch` (codec/contact_sheet.h).
#include "python/contact_sheet.h"

#include <pybind11/numpy.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/contact_sheet.h"
#include "common/errors.h"
#include "python/args.h"
#include "python/arrays.h"
#include "python/py_reader.h"

namespace shardpack::python {
namespace {

[[noreturn]] void Bad(const std::string& message) {
  ThrowStatus(absl::InvalidArgumentError(message));
}

// numpy's view of `obj`: an ndarray, anything numpy.asarray takes, or a torch
// tensor (moved to the CPU and detached first).
py::array AsArray(py::object obj) {
  if (py::hasattr(obj, "detach") && py::hasattr(obj, "cpu"))
    obj = obj.attr("detach")().attr("cpu")();
  return py::module_::import("numpy").attr("asarray")(obj).cast<py::array>();
}

// NCHW when asked, or when told by the shape: dimension 1 holds 1 or 3
// channels and dimension 3 does not.
bool IsNchw(const py::array& a, const py::object& layout) {
  if (!layout.is_none()) {
    std::string l = StrArg(layout, "layout");
    for (char& c : l) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (l != "NHWC" && l != "NCHW") {
      Bad(absl::StrCat("layout '", common::Excerpt(l), "': expected 'NHWC' or 'NCHW'"));
    }
    return l == "NCHW";
  }
  const auto c1 = a.shape(1), c3 = a.shape(3);
  return (c1 == 1 || c1 == 3) && c3 != 1 && c3 != 3;
}

// A list of names from any sequence of str.
std::vector<std::string> Names(py::handle seq) {
  std::vector<std::string> out;
  for (py::handle item : py::iter(seq)) {
    py::str text(item);
    out.push_back(Utf8Of(text).value_or(Shown(item)));  // lone surrogates: the repr
  }
  return out;
}

// classes: None, a list of names (the first label field), or a list of such
// lists (one per label field).
std::vector<std::vector<std::string>> ClassLists(const py::object& classes) {
  std::vector<std::vector<std::string>> out;
  if (classes.is_none()) return out;
  if (!PySequence_Check(classes.ptr()) || PyUnicode_Check(classes.ptr())) {
    WrongType("classes", "a list of names, or one list per label field", classes);
  }
  py::list list(classes);
  if (list.size() > 0 && py::isinstance<py::str>(list[0])) {
    out.push_back(Names(list));
  } else {
    for (py::handle field : list) out.push_back(Names(field));
  }
  return out;
}

std::array<float, 3> Triple(const char* what, const py::object& v, float fill) {
  if (!v || v.is_none()) return {fill, fill, fill};
  return TripleArg(v, what);
}

// The arguments not given are None, as their defaults are.
py::array ContactSheet(const py::args& args, const py::kwargs& kwargs) {
  const CallArgs a("contact_sheet", args, kwargs,
                   {"images", "labels", "classes", "columns", "tile", "mean", "std", "indices",
                    "layout"},
                   5, 2);
  auto arg = [&](const char* name) {
    py::object v = a[name];
    return v ? v : py::none();
  };
  py::object images_obj = arg("images"), labels_obj = arg("labels"), classes = arg("classes");
  py::object columns = arg("columns"), tile = arg("tile"), mean = arg("mean"), std = arg("std");
  py::object indices = arg("indices"), layout = arg("layout");
  RequireNumpy("shardpack.contact_sheet");
  py::array images = AsArray(images_obj);
  if (images.ndim() == 3)
    images =
        images.attr("reshape")(py::make_tuple(1, images.shape(0), images.shape(1), images.shape(2)))
            .cast<py::array>();
  if (images.ndim() != 4)
    Bad(absl::StrCat("images: expected N x H x W x C or N x C x H x W, got ", images.ndim(),
                     " dimensions"));
  codec::BatchImages b;
  b.is_float = py::dtype::of<uint8_t>().is(images.dtype()) ? false : true;
  if (b.is_float && images.dtype().kind() != 'f') {
    Bad(absl::StrCat("images: dtype ", std::string(py::str(images.dtype())),
                     " (uint8 or float expected)"));
  }
  py::array data =
      b.is_float
          ? py::array(py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(images))
          : py::array(
                py::array_t<uint8_t, py::array::c_style | py::array::forcecast>::ensure(images));
  b.nchw = IsNchw(data, layout);
  b.n = data.shape(0);
  b.c = b.nchw ? data.shape(1) : data.shape(3);
  b.h = b.nchw ? data.shape(2) : data.shape(1);
  b.w = b.nchw ? data.shape(3) : data.shape(2);
  b.data = data.data();
  b.mean = Triple("mean", mean, 0.f);
  b.std = Triple("std", std, 1.f);
  auto labels =
      py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(AsArray(labels_obj));
  if (!labels || labels.ndim() < 1 || labels.ndim() > 2 || labels.shape(0) != b.n) {
    Bad(absl::StrCat("labels: expected ", b.n, " labels (N or N x K integers), one per image"));
  }
  std::vector<uint64_t> index_list;
  if (!indices.is_none()) {
    for (py::handle i : AsArray(indices).attr("reshape")(-1).attr("tolist")()) {
      index_list.push_back(UintArg(i, "indices[]", UINT64_MAX, "record indexes, 0 to 2**64-1"));
    }
    if (static_cast<int64_t>(index_list.size()) != b.n)
      Bad(absl::StrCat("indices: expected ", b.n, " record indexes"));
  }
  const std::vector<std::vector<std::string>> class_lists = ClassLists(classes);
  codec::BatchCaptions captions{labels.data(),
                                labels.ndim() == 2 ? static_cast<int>(labels.shape(1)) : 1,
                                index_list, class_lists};
  codec::SheetOptions options{.tile = 0};  // 0: the images' own size
  if (!columns.is_none()) {
    options.columns = static_cast<uint32_t>(
        UintArg(columns, "columns", UINT32_MAX, "0 (about square) to 2**32-1"));
  }
  if (!tile.is_none()) {
    options.tile = static_cast<uint32_t>(UintArg(
        tile, "tile", UINT32_MAX,
        absl::StrCat(codec::kMinSheetTile, " to ", codec::kMaxSheetTile, " pixels")));
  }
  absl::StatusOr<codec::ContactSheet> sheet;
  {
    py::gil_scoped_release unlocked;
    sheet = codec::BatchSheet(b, captions, options);
  }
  if (!sheet.ok()) ThrowStatus(sheet.status());
  const codec::PixelView v = sheet->view();
  py::array out = NewArray(py::dtype::of<uint8_t>(), 1,
                           {static_cast<py::ssize_t>(v.height), static_cast<py::ssize_t>(v.width), 3});
  std::memcpy(out.mutable_data(), v.data, v.bytes());
  return out;
}

constexpr char kDoc[] = R"doc(contact_sheet(images, labels, classes=None, columns=None,
              tile=None, *, mean=None, std=None, indices=None, layout=None)

A contact sheet of a batch: an H x W x 3 uint8 numpy array.

images: N x H x W x C or N x C x H x W (told by the shape, or layout="NHWC" /
"NCHW"), uint8, or float normalized as the reader makes it:
(pixel / 255 - mean) / std, undone with the mean and std given (default 0 and
1: the reader's defaults); numpy arrays or torch tensors (copied to the CPU).
C is 1 or 3. labels: N or N x K integers. classes: the names of label values
(reader.classes), or one list per label field. indices: record indexes for the
captions (default 0..N-1). columns: tiles per row (default about square).
tile: tile side in pixels, 16..1024 (default the images' longer side, so the
tiles show the batch's own pixels). Each tile is captioned "#<index> <label>"
and the class name, in a built-in bitmap font.)doc";

}  // namespace

void BindContactSheet(py::module_& m) {
  // The arguments are checked by python/args.h, which names them; the
  // docstring gives the signature (pybind11's would say *args, **kwargs).
  py::options options;
  options.disable_function_signatures();
  m.def("contact_sheet", &ContactSheet, kDoc);
}

}  // namespace shardpack::python
