// shardpack.Writer: samples (dicts of field values) into a dataset, through
// the C++ Writer and ImageConverter (shardpack/writer.h).
//
// A write has two halves. With the GIL, the sample's Python values become
// FieldValues that view Python objects (bytes, contiguous numpy arrays) or
// buffers of this object (UTF-8 text, JSON text); without it, image values
// are converted to their field's encoding and the record is written, so
// other Python threads run while a JPEG is decoded or a shard is written.
// Threads take turns: a write() waits (without the GIL) for another's.
#include "python/py_writer.h"

#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/errors.h"
#include "common/posix_open.h"
#include "common/size.h"
#include "python/args.h"
#include "python/py_reader.h"
#include "shardpack/writer.h"
#include "writer/compression.h"

namespace shardpack::python {
namespace {

constexpr char kWriterDoc[] = R"doc(Writer(out, schema, *, format="shard", shard_max_bytes="256MiB",
       shard_max_records=None, block_size="4MiB", compression="none", overwrite=False,
       part=None, job=None, on_error="fail", metadata=None, record_table=True,
       classes=None, jpeg_quality=100, files=None)

Writes a dataset of the fields `schema` declares, one sample at a time, as
`shardpack pack` writes one: built in OUT.partial, published by close() with
its manifest last; nothing is published when the writer is discarded.

schema: a dict of field name -> type, in record order: "jpeg", "raw",
"raw:HxWxC", "raw:gray", "raw:rgb" (images), "label" (class names through
classes={"name": [...]}), "string", "bytes", "json", or an array
"DTYPE[DIMS]" (DTYPE u8 i32 i64 f16 f32 f64; e.g. "f32[n,4]", n a first
dimension that varies; an i32 or i64 one may name its elements' classes
too); "?" at the end for an optional field.
part=(i, n) with job="name": part i of n of a write on many machines, which
`shardpack merge` makes one dataset of; part=(i, None) where n is not known
yet (merge --count N is told it). on_error="skip" leaves a bad sample
out and lists it in w.skipped and OUT/skipped.tsv. metadata: a dict of
JSON values, kept in the manifest. files=["image", ...]: image or bytes
fields whose values may be paths (str or os.PathLike): the file's bytes
are the value, read by write() without the GIL. As a context manager, a clean exit
publishes and an exception discards. docs/python.md, "Writing a dataset".)doc";

constexpr char kWriteDoc[] = R"doc(write(sample) -> bool

Writes one sample, a dict of field name -> value, and "__key__" (str; the
sample's index as 8 digits by default). Values: bytes of an image file
(JPEG, PNG, WebP, BMP, TIFF, PNM) or uint8 pixels (a HxW or HxWxC array, a
PIL image) for an image field, stored in the field's encoding; int (or a
class name) for a label; str for a string; bytes for bytes; a str of JSON
text or any object json.dumps takes for json; a numpy array of the field's
dtype (or one that casts to it safely) or a sequence of numbers for an
array; for a field named in the Writer's files=, a path (str or
os.PathLike) of a file whose bytes are the value. A missing key or None:
the field is absent (it must be optional).
True when written; False when skipped (on_error="skip"). A bad value raises
TypeError or ValueError naming the sample and the field; an unknown key
raises ValueError whatever on_error says.)doc";

// A field's value that is wrong: routed through Writer::Reject, which
// returns it (on_error="fail") or lists it (skip).
struct BadValue {
  PyObject* type;  // PyExc_TypeError or PyExc_ValueError
  std::string message;  // "field 'NAME': ..."
};

[[noreturn]] void Bad(PyObject* type, const Field& f, std::string_view what) {
  throw BadValue{type, absl::StrCat("field '", f.name, "': ", common::AsAbsl(what))};
}

std::string NumpyDType(ArrayDType d) {
  switch (d) {
    case ArrayDType::kU8: return "|u1";
    case ArrayDType::kI32: return "<i4";
    case ArrayDType::kI64: return "<i8";
    case ArrayDType::kF16: return "<f2";
    case ArrayDType::kF32: return "<f4";
    case ArrayDType::kF64: return "<f8";
  }
  return "|u1";
}

bool IsBytesLike(py::handle v) {
  return PyBytes_Check(v.ptr()) || PyByteArray_Check(v.ptr()) || PyMemoryView_Check(v.ptr());
}

// The shape of a field's array, "(n, 4)".
std::string ShapeText(const std::vector<uint64_t>& shape) {
  std::vector<std::string> dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    dims.push_back(d == 0 && shape[d] == 0 ? "n" : absl::StrCat(shape[d]));
  }
  return absl::StrCat("(", absl::StrJoin(dims, ", "), dims.size() == 1 ? ",)" : ")");
}

// One sample's values as the C++ Writer takes them, with what they view.
class SampleValues {
 public:
  // `files`: by field, whether its value may be a path of a file.
  SampleValues(std::vector<Field> fields, std::vector<bool> files)
      : fields_(std::move(fields)),
        files_(std::move(files)),
        values_(fields_.size()),
        texts_(fields_.size()),
        paths_(fields_.size()) {}

  // An image waiting for the converter (run without the GIL).
  struct PendingImage {
    size_t field;
    ByteSpan bytes;
    bool pixels;  // else an image file
    uint32_t height = 0, width = 0, channels = 0;
    bool path = false;  // `bytes` set once the file is read (files=)
  };

  void Clear() {
    for (FieldValue& v : values_) v = FieldValue{};
    images_.clear();
    files_given_.clear();
    views_.clear();
  }

  // Field `i` from `v` (not None); BadValue when it is wrong, what numpy or
  // json said of it included (not a missing numpy, nor memory).
  void Set(size_t i, py::handle v) {
    const Field& f = fields_[i];
    FieldValue& out = values_[i];
    out.present = true;
    try {
      if (files_[i] && SetPath(i, v)) return;
      switch (f.type) {
        case FieldType::kImage: return SetImage(i, v);
        case FieldType::kLabel: out.label = Label(f, v); return;
        case FieldType::kString: out.bytes = Text(i, String(f, v)); return;
        case FieldType::kBytes: out.bytes = Bytes(f, v); return;
        case FieldType::kJson: out.bytes = Text(i, Json(f, v)); return;
        case FieldType::kArray: out.bytes = Array(f, v); return;
      }
    } catch (py::error_already_set& e) {
      if (!e.matches(PyExc_Exception) || e.matches(PyExc_MemoryError) ||
          e.matches(PyExc_ImportError)) {
        throw;
      }
      Bad(e.matches(PyExc_TypeError) ? PyExc_TypeError : PyExc_ValueError, f,
          common::OneLine(std::string(py::str(e.value()))));
    }
  }

  std::vector<FieldValue>& values() { return values_; }
  std::vector<PendingImage>& images() { return images_; }
  // The fields given as paths (their values and images set once read).
  const std::vector<size_t>& files() const { return files_given_; }
  const std::string& path(size_t field) const { return paths_[field]; }

 private:
  // Keeps `v`'s buffer (a bytes object, a contiguous array) for the write.
  ByteSpan View(const Field& f, py::handle v) {
    views_.push_back(py::buffer(py::reinterpret_borrow<py::object>(v)).request());
    const py::buffer_info& b = views_.back();
    py::ssize_t stride = b.itemsize;  // C order, rows packed
    for (size_t d = b.shape.size(); d-- > 0;) {
      if (b.shape[d] > 1 && b.strides[d] != stride) {
        Bad(PyExc_TypeError, f, "a buffer that is not contiguous (copy it: bytes(view))");
      }
      stride *= b.shape[d];
    }
    return ByteSpan(static_cast<const uint8_t*>(b.ptr),
                    static_cast<size_t>(b.size * b.itemsize));
  }

  // A path (str, or os.PathLike as os.fspath gives it) for a field of
  // files=: kept for the read, which WriteConverted does without the GIL.
  // False for a value that is not a path (bytes are the file's bytes).
  bool SetPath(size_t i, py::handle v) {
    if (!PyUnicode_Check(v.ptr()) && (IsBytesLike(v) || !py::hasattr(v, "__fspath__"))) {
      return false;
    }
    const py::object path = py::reinterpret_steal<py::object>(PyOS_FSPath(v.ptr()));
    if (!path) throw py::error_already_set();
    if (PyBytes_Check(path.ptr())) {
      paths_[i] = path.cast<std::string>();
    } else {
      std::optional<std::string> text = Utf8Of(path);
      if (!text) Bad(PyExc_ValueError, fields_[i], "a path that is not UTF-8 (lone surrogates)");
      paths_[i] = *std::move(text);
    }
    if (paths_[i].empty() || paths_[i].find('\0') != std::string::npos) {
      Bad(PyExc_ValueError, fields_[i],
          paths_[i].empty() ? "an empty path" : "a path with a NUL character");
    }
    files_given_.push_back(i);
    if (fields_[i].type == FieldType::kImage) {
      images_.push_back({.field = i, .bytes = {}, .pixels = false, .path = true});
    }
    return true;
  }

  ByteSpan Text(size_t i, std::string text) {
    texts_[i] = std::move(text);
    return ByteSpan(reinterpret_cast<const uint8_t*>(texts_[i].data()), texts_[i].size());
  }

  void SetImage(size_t i, py::handle v) {
    const Field& f = fields_[i];
    if (IsBytesLike(v)) {
      images_.push_back({i, View(f, v), false});
      return;
    }
    if (!PyObject_CheckBuffer(v.ptr()) && !py::hasattr(v, "__array_interface__") &&
        !py::hasattr(v, "__array__")) {
      Bad(PyExc_TypeError, f, absl::StrCat("must be bytes (an image file), a uint8 array HxW "
                                           "or HxWxC, or a PIL image, not ", TypeName(v)));
    }
    RequireNumpy("shardpack.Writer (an image given as pixels)");
    const py::object a = py::module_::import("numpy").attr("ascontiguousarray")(v);
    const std::string dtype = py::str(a.attr("dtype"));
    if (dtype != "uint8") {
      Bad(PyExc_TypeError, f, absl::StrCat("pixels must be uint8, not ", dtype));
    }
    const auto shape = a.attr("shape").cast<std::vector<int64_t>>();
    if (shape.size() != 2 && shape.size() != 3) {
      Bad(PyExc_ValueError, f, absl::StrCat("pixels of ", shape.size(),
                                            " dimensions: an image is HxW or HxWxC"));
    }
    for (int64_t d : shape) {
      if (d < 1 || d > UINT32_MAX) {
        Bad(PyExc_ValueError, f, absl::StrCat("pixels of shape (", absl::StrJoin(shape, ", "),
                                              "): each side at least 1"));
      }
    }
    images_.push_back({i, View(f, a), true, static_cast<uint32_t>(shape[0]),
                       static_cast<uint32_t>(shape[1]),
                       shape.size() == 3 ? static_cast<uint32_t>(shape[2]) : 1});
  }

  static int64_t Label(const Field& f, py::handle v) {
    if (PyUnicode_Check(v.ptr()) && !f.classes.empty()) {
      const std::optional<std::string> name = Utf8Of(v);
      for (size_t k = 0; name && k < f.classes.size(); ++k) {
        if (f.classes[k] == *name) return static_cast<int64_t>(k);
      }
      Bad(PyExc_ValueError, f, absl::StrCat(Shown(v), " is not one of its ", f.classes.size(),
                                            " classes"));
    }
    if (PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr())) {
      Bad(PyExc_TypeError, f, absl::StrCat("a label must be an int", f.classes.empty() ? "" :
                                           " or a class name", ", not ", TypeName(v)));
    }
    const py::object n = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
    if (!n) throw py::error_already_set();
    int overflow = 0;
    const long long value = PyLong_AsLongLongAndOverflow(n.ptr(), &overflow);
    if (overflow != 0) Bad(PyExc_ValueError, f, absl::StrCat("label ", Shown(n), " is not 64-bit"));
    return value;
  }

  static std::string String(const Field& f, py::handle v) {
    if (!PyUnicode_Check(v.ptr())) {
      Bad(PyExc_TypeError, f, absl::StrCat("must be a str, not ", TypeName(v)));
    }
    std::optional<std::string> text = Utf8Of(v);
    if (!text) Bad(PyExc_ValueError, f, "not UTF-8: a str with lone surrogates");
    return *std::move(text);
  }

  ByteSpan Bytes(const Field& f, py::handle v) {
    if (!IsBytesLike(v)) {
      Bad(PyExc_TypeError, f, absl::StrCat("must be bytes, not ", TypeName(v)));
    }
    return View(f, v);
  }

  // A str is JSON text (checked to parse when written); anything else is
  // what json.dumps makes of it.
  static std::string Json(const Field& f, py::handle v) {
    if (PyUnicode_Check(v.ptr())) return String(f, v);
    const py::object dumps = py::module_::import("json").attr("dumps");
    const py::object text = dumps(v, py::arg("ensure_ascii") = false,
                                  py::arg("allow_nan") = false,
                                  py::arg("separators") = py::make_tuple(",", ":"));
    return String(f, text);
  }

  // The field's dtype, exactly or by a safe cast (numpy's can_cast "safe");
  // a sequence of Python numbers: ints for an integer dtype (each in its
  // range), ints or floats for a float dtype.
  ByteSpan Array(const Field& f, py::handle v) {
    RequireNumpy(absl::StrCat("shardpack.Writer (array field '", f.name, "')"));
    const py::module_ np = py::module_::import("numpy");
    const py::object want = np.attr("dtype")(NumpyDType(f.dtype));
    const bool integers = f.dtype != ArrayDType::kF16 && f.dtype != ArrayDType::kF32 &&
                          f.dtype != ArrayDType::kF64;
    py::object a;
    if (py::isinstance(v, np.attr("ndarray")) || py::isinstance(v, np.attr("generic"))) {
      a = py::reinterpret_borrow<py::object>(v);
      if (!np.attr("can_cast")(a.attr("dtype"), want, "safe").cast<bool>()) {
        Bad(PyExc_TypeError, f, absl::StrFormat(
            "a %s array does not cast safely to %s: convert it (a.astype(numpy.%s))",
            std::string(py::str(a.attr("dtype"))), AsAbsl(ArrayDTypeName(f.dtype)),
            std::string(py::str(want.attr("name")))));
      }
    } else if (PyUnicode_Check(v.ptr()) || IsBytesLike(v) || !PySequence_Check(v.ptr())) {
      Bad(PyExc_TypeError, f, absl::StrCat("must be a numpy array or a sequence of numbers, not ",
                                           TypeName(v)));
    } else {
      a = np.attr("asarray")(v);
      const std::string kind = py::str(a.attr("dtype").attr("kind"));
      const bool empty = a.attr("size").cast<int64_t>() == 0;
      const bool numbers = kind == "b" || kind == "i" || kind == "u" || kind == "f";
      if (!empty && !numbers) {
        Bad(PyExc_TypeError, f, "a sequence of numbers, nested as the field's shape, is needed");
      }
      if (!empty && integers && kind == "f") {
        Bad(PyExc_TypeError, f, absl::StrCat("floats in a field of ",
                                             AsAbsl(ArrayDTypeName(f.dtype))));
      }
      if (!empty && integers && !np.attr("array_equal")(a.attr("astype")(want), a).cast<bool>()) {
        Bad(PyExc_ValueError, f, absl::StrCat("a value out of the range of ",
                                              AsAbsl(ArrayDTypeName(f.dtype))));
      }
    }
    a = np.attr("ascontiguousarray")(a, py::arg("dtype") = want);
    auto shape = a.attr("shape").cast<std::vector<uint64_t>>();
    if (shape == std::vector<uint64_t>{0} && f.shape[0] == 0 && f.shape.size() > 1) {
      shape = f.shape;  // [] for no rows
    }
    bool fits = shape.size() == f.shape.size() && (f.shape[0] == 0 || shape[0] == f.shape[0]);
    for (size_t d = 1; fits && d < shape.size(); ++d) fits = shape[d] == f.shape[d];
    if (!fits) {
      const auto given = a.attr("shape").cast<std::vector<uint64_t>>();
      Bad(PyExc_ValueError, f, absl::StrCat("an array of shape ", ShapeText(given),
                                            ", the field holds ", ShapeText(f.shape)));
    }
    return View(f, a);
  }

  static absl::string_view AsAbsl(std::string_view s) { return common::AsAbsl(s); }

  const std::vector<Field> fields_;
  const std::vector<bool> files_;           // by field: named in files=
  std::vector<FieldValue> values_;
  std::vector<std::string> texts_;          // by field: UTF-8 and JSON text
  std::vector<std::string> paths_;          // by field: a path given
  std::vector<size_t> files_given_;         // fields given as paths
  std::vector<PendingImage> images_;
  std::vector<py::buffer_info> views_;      // released with the GIL held
};

class PyWriter {
 public:
  PyWriter(std::unique_ptr<Writer> writer, std::unique_ptr<ImageConverter> images,
           std::vector<bool> files)
      : writer_(std::move(writer)),
        images_(std::move(images)),
        sample_(writer_->fields(), std::move(files)),
        storage_(writer_->fields().size()),
        read_(writer_->fields().size()),
        fields_(writer_->fields()),
        path_(writer_->path()) {}

  bool Write(py::handle sample) {
    const std::unique_lock<std::mutex> turn = Turn();
    Writer& w = Open("write");
    if (!PyDict_Check(sample.ptr())) WrongType("sample", "a dict of field name -> value", sample);
    const uint64_t index = w.samples();
    const std::string key = KeyOf(py::reinterpret_borrow<py::dict>(sample), index);
    const std::string name = absl::StrCat("sample ", index, " ('", common::Excerpt(key), "')");
    CheckKeys(py::reinterpret_borrow<py::dict>(sample), name);
    const size_t skipped = w.skipped().size();
    // The sample's buffers go once it is written (with the GIL, which
    // releasing a Python buffer needs).
    struct Clear {
      SampleValues* sample;
      ~Clear() { sample->Clear(); }
    } clear{&sample_};
    absl::Status written;
    try {
      for (size_t i = 0; i < w.fields().size(); ++i) {
        PyObject* v = PyDict_GetItemString(sample.ptr(), w.fields()[i].name.c_str());
        if (v != nullptr && v != Py_None) sample_.Set(i, v);
      }
    } catch (const BadValue& bad) {
      written = w.Reject(key, absl::InvalidArgumentError(bad.message));
      if (!written.ok()) RaiseError(bad.type, std::string(written.message()));
      return false;
    }
    {
      py::gil_scoped_release no_gil;
      written = WriteConverted(w, key);
    }
    if (!written.ok()) ThrowStatus(written);
    return w.skipped().size() == skipped;
  }

  void Close() {
    const std::unique_lock<std::mutex> turn = Turn();
    Writer& w = Open("close");
    absl::StatusOr<Manifest> manifest;
    {
      py::gil_scoped_release no_gil;
      manifest = w.Finish();
    }
    records_ = w.records();
    skipped_ = w.skipped();
    writer_.reset();  // published, or (a failure) removed
    if (!manifest.ok()) ThrowStatus(manifest.status());
  }

  void Discard() {
    const std::unique_lock<std::mutex> turn = Turn();
    if (writer_ == nullptr) return;
    records_ = 0;
    skipped_ = writer_->skipped();
    py::gil_scoped_release no_gil;
    writer_.reset();
  }

  py::dict Schema() const {
    py::dict d;
    for (const Field& f : fields_) d[py::str(f.name)] = FieldText(f);
    return d;
  }
  uint64_t records() const { return writer_ ? writer_->records() : records_; }
  uint64_t samples() const { return writer_ ? writer_->samples() : samples_; }
  py::list skipped() const {
    py::list out;
    for (const Skipped& s : writer_ ? writer_->skipped() : skipped_) {
      out.append(py::make_tuple(s.path, s.reason));
    }
    return out;
  }
  bool closed() const { return writer_ == nullptr; }
  const std::string& path() const { return path_; }

 private:
  Writer& Open(const char* call) {
    if (writer_ == nullptr) {
      RaiseError(PyExc_ValueError, absl::StrCat(call, "() on a closed Writer (", path_, ")"));
    }
    samples_ = writer_->samples();
    return *writer_;
  }

  // This thread's turn with the writer, waited for without the GIL (the
  // thread whose turn it is may be waiting for the GIL).
  std::unique_lock<std::mutex> Turn() {
    std::unique_lock<std::mutex> turn(mu_, std::defer_lock);
    py::gil_scoped_release no_gil;
    turn.lock();
    return turn;
  }

  std::string KeyOf(const py::dict& sample, uint64_t index) const {
    PyObject* key = PyDict_GetItemString(sample.ptr(), "__key__");
    if (key == nullptr || key == Py_None) return absl::StrFormat("%08u", index);
    if (PyBytes_Check(key)) return py::reinterpret_borrow<py::bytes>(key);
    if (!PyUnicode_Check(key)) WrongType("__key__", "a str or bytes", key);
    std::optional<std::string> text = Utf8Of(key);
    if (!text) {
      RaiseError(PyExc_ValueError, absl::StrCat("sample ", index, ": __key__ ", Shown(key),
                                                " is not UTF-8 (lone surrogates)"));
    }
    return *std::move(text);
  }

  // Every key of the sample is a field or "__key__": a typo would otherwise
  // leave a field absent, or be dropped in silence.
  void CheckKeys(const py::dict& sample, const std::string& name) const {
    std::vector<std::string> unknown;
    for (auto [k, v] : sample) {
      const std::optional<std::string> key = Utf8Of(k);
      if (key && (*key == "__key__" || writer_->Find(*key) >= 0)) continue;
      unknown.push_back(key ? absl::StrCat("'", common::Excerpt(*key), "'") : Shown(k));
    }
    if (unknown.empty()) return;
    std::vector<std::string> names;
    for (const Field& f : writer_->fields()) names.push_back(f.name);
    RaiseError(PyExc_ValueError,
               absl::StrCat(name, ": unknown field", unknown.size() > 1 ? "s " : " ",
                            absl::StrJoin(unknown, ", "), " (the schema has ",
                            absl::StrJoin(names, ", "), ")"));
  }

  // Without the GIL: the files given by path read, images into their
  // fields' encodings, then the record.
  absl::Status WriteConverted(Writer& w, const std::string& key) {
    std::vector<FieldValue>& values = sample_.values();
    for (size_t i : sample_.files()) {
      std::vector<uint8_t>& bytes = read_[i];
      if (absl::Status s = common::ReadInputFile(sample_.path(i), &bytes); !s.ok()) {
        return w.Reject(key, common::WithMessage(s, absl::StrCat("field '", w.fields()[i].name,
                                                                "': ", s.message())));
      }
      values[i].bytes = ByteSpan(bytes.data(), bytes.size());
    }
    for (SampleValues::PendingImage& p : sample_.images()) {
      if (p.path) p.bytes = values[p.field].bytes;  // read above
      const Field& f = w.fields()[p.field];
      absl::StatusOr<FieldValue> v =
          p.pixels ? images_->FromPixels(f, p.bytes, p.height, p.width, p.channels,
                                         &storage_[p.field])
                   : images_->FromFile(f, p.bytes, &storage_[p.field]);
      if (!v.ok()) {
        // A file given by path: the path too ("... (read from /data/x.jpg)").
        if (!p.path) return w.Reject(key, v.status());
        const std::string message =
            absl::StrCat(v.status().message(), " (read from ", sample_.path(p.field), ")");
        return w.Reject(key, common::WithMessage(v.status(), message));
      }
      values[p.field] = *v;
    }
    return w.Write(key, values);
  }

  std::unique_ptr<Writer> writer_;  // null once closed or discarded
  std::unique_ptr<ImageConverter> images_;
  SampleValues sample_;
  std::vector<std::vector<uint8_t>> storage_;  // by field: converted images
  std::vector<std::vector<uint8_t>> read_;     // by field: files read (files=)
  std::mutex mu_;                              // one write, close or discard at a time
  // What stays readable once the writer is gone.
  std::vector<Field> fields_;
  std::string path_;
  uint64_t records_ = 0;
  uint64_t samples_ = 0;
  std::vector<Skipped> skipped_;
};

// The index of the field named `name` in `fields`, or -1 (the Writer's
// Find, for arguments checked before it exists).
int FieldIndex(const std::vector<Field>& fields, std::string_view name) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// The schema dict into fields, with their classes.
std::vector<Field> FieldsArg(py::handle schema, py::handle classes) {
  if (!PyDict_Check(schema.ptr())) WrongType("schema", "a dict of field name -> type", schema);
  std::vector<Field> fields;
  for (auto [name, type] : py::reinterpret_borrow<py::dict>(schema)) {
    const std::string n = StrArg(name, "a schema field name");
    const std::string t = StrArg(type, absl::StrCat("schema['", common::Excerpt(n), "']"));
    absl::StatusOr<Field> f = ParseFieldText(n, t);
    if (!f.ok()) ThrowStatus(f.status());
    fields.push_back(*std::move(f));
  }
  if (!classes || classes.is_none()) return fields;
  if (!PyDict_Check(classes.ptr())) WrongType("classes", "a dict of label field -> names", classes);
  for (auto [name, names] : py::reinterpret_borrow<py::dict>(classes)) {
    const std::string n = StrArg(name, "a classes key");
    const int index = FieldIndex(fields, n);
    Field* const field = index < 0 ? nullptr : &fields[static_cast<size_t>(index)];
    // A label names its values' classes; so may an i32 / i64 array its
    // elements' (COCO's category ids: docs/format.md, 17.4).
    const bool takes_classes =
        field != nullptr &&
        (field->type == FieldType::kLabel ||
         (field->type == FieldType::kArray &&
          (field->dtype == ArrayDType::kI32 || field->dtype == ArrayDType::kI64)));
    if (!takes_classes) {
      RaiseError(PyExc_ValueError,
                 absl::StrCat("classes['", common::Excerpt(n),
                              "']: the schema has no field of that name that takes class names "
                              "(a label, or an i32 or i64 array)"));
    }
    const std::string at = absl::StrCat("classes['", common::Excerpt(n), "']");
    if (PyUnicode_Check(names.ptr()) || !PySequence_Check(names.ptr())) {
      WrongType(at, "a list of str", names);
    }
    for (py::handle c : py::reinterpret_borrow<py::sequence>(names)) {
      field->classes.push_back(StrArg(c, absl::StrCat(at, "[", field->classes.size(), "]")));
    }
  }
  return fields;
}

// files=[name, ...]: by field, whether it is named; each an image or bytes
// field of the schema.
std::vector<bool> FilesArg(py::handle v, const std::vector<Field>& fields) {
  std::vector<bool> files(fields.size());
  if (!v || v.is_none()) return files;
  if (PyUnicode_Check(v.ptr()) || !PySequence_Check(v.ptr())) {
    WrongType("files", "a list of field names", v);
  }
  for (py::handle name : py::reinterpret_borrow<py::sequence>(v)) {
    const std::string n = StrArg(name, "a files entry");
    const int index = FieldIndex(fields, n);
    const bool holds_files =
        index >= 0 && (fields[static_cast<size_t>(index)].type == FieldType::kImage ||
                       fields[static_cast<size_t>(index)].type == FieldType::kBytes);
    if (!holds_files) {
      RaiseError(PyExc_ValueError,
                 absl::StrCat("files: '", common::Excerpt(n), "' is not an image or bytes field "
                              "of the schema (a file's bytes are the value of one of those)"));
    }
    files[static_cast<size_t>(index)] = true;
  }
  return files;
}

// A size in bytes: an int, or text such as "256MiB"; None: 0.
uint64_t SizeArg(py::handle v, std::string_view name) {
  if (v.is_none()) return 0;
  if (!PyUnicode_Check(v.ptr())) return UintArg(v, name);
  absl::StatusOr<uint64_t> size = common::ParseSize(StrArg(v, name));
  if (!size.ok()) OutOfRange(name, v, "bytes, as an int or a size such as \"256MiB\"");
  return *size;
}

// (i, n), or (i, None) for a part that does not know n (kOpenPartCount).
WriterPart PartArg(py::handle v) {
  const char* what = "a tuple (i, n) with 1 <= i <= n <= 2**32-1, or (i, None)";
  if (PyUnicode_Check(v.ptr()) || !PySequence_Check(v.ptr()) || py::len(v) != 2) {
    WrongType("part", what, v);
  }
  const auto seq = py::reinterpret_borrow<py::sequence>(v);
  const uint64_t i = UintArg(seq[0], "part[0]", kMaxParts, "1 to 2**32-1");
  const py::object count = seq[1];
  const uint64_t n =
      count.is_none() ? kOpenPartCount : UintArg(count, "part[1]", kMaxParts, "1 to 2**32-1");
  if (i == 0 || (!count.is_none() && (n == 0 || i > n))) OutOfRange("part", v, what);
  return WriterPart{static_cast<uint32_t>(i), static_cast<uint32_t>(n)};
}

std::string Choice(py::handle v, std::string_view name, std::vector<std::string> choices) {
  const std::string text = StrArg(v, name);
  if (std::find(choices.begin(), choices.end(), text) == choices.end()) {
    OutOfRange(name, v, absl::StrJoin(choices, ", "));
  }
  return text;
}

WriterOptions OptionsArg(const CallArgs& a) {
  WriterOptions o;
  if (py::object v = a["format"]) {
    o.backend = *ParseBackend(Choice(v, "format", {"shard", "lmdb", "hdf5"}));
  }
  if (py::object v = a["shard_max_bytes"]) o.shard_max_bytes = SizeArg(v, "shard_max_bytes");
  if (py::object v = a["shard_max_records"]; v && !v.is_none()) {
    o.shard_max_records = UintArg(v, "shard_max_records");
  }
  if (py::object v = a["block_size"]) {
    const uint64_t block = SizeArg(v, "block_size");
    if (block == 0 || block > kMaxBlockSize) OutOfRange("block_size", v, "1 byte to 1GiB");
    o.shard.block_size = static_cast<uint32_t>(block);
  }
  if (py::object v = a["compression"]) {
    if (absl::Status s = writer::ParseCompress(StrArg(v, "compression"), &o.shard); !s.ok()) {
      RaiseError(PyExc_ValueError, absl::StrCat("compression ", s.message()));
    }
  }
  if (py::object v = a["overwrite"]) o.overwrite = BoolArg(v, "overwrite");
  if (py::object v = a["part"]; v && !v.is_none()) o.part = PartArg(v);
  if (py::object v = a["job"]; v && !v.is_none()) o.job = StrArg(v, "job");
  if (py::object v = a["on_error"]) {
    o.on_error = Choice(v, "on_error", {"fail", "skip"}) == "skip" ? OnError::kSkip
                                                                   : OnError::kFail;
  }
  if (py::object v = a["metadata"]; v && !v.is_none()) {
    if (!PyDict_Check(v.ptr())) WrongType("metadata", "a dict of JSON values", v);
    const py::object dumps = py::module_::import("json").attr("dumps");
    o.metadata_json = py::str(dumps(v, py::arg("allow_nan") = false));
  }
  if (py::object v = a["record_table"]) o.record_table = BoolArg(v, "record_table");
  return o;
}

}  // namespace

void RegisterWriter(py::module_& m) {
  py::options options;
  options.disable_function_signatures();
  py::class_<PyWriter>(m, "Writer", kWriterDoc)
      .def(py::init([](const py::args& args, const py::kwargs& kwargs) {
        const CallArgs a("Writer", args, kwargs,
                         {"out", "schema", "format", "shard_max_bytes", "shard_max_records",
                          "block_size", "compression", "overwrite", "part", "job", "on_error",
                          "metadata", "record_table", "classes", "jpeg_quality", "files"},
                         2, 2);
        const std::string out = PathArg(a["out"], "out");
        std::vector<Field> fields = FieldsArg(a["schema"], a["classes"]);
        std::vector<bool> files = FilesArg(a["files"], fields);
        const WriterOptions o = OptionsArg(a);
        ImageConverterOptions image_options;
        if (py::object v = a["jpeg_quality"]) {
          image_options.jpeg_quality =
              static_cast<int>(UintArg(v, "jpeg_quality", 100, "1 to 100"));
          if (image_options.jpeg_quality == 0) OutOfRange("jpeg_quality", v, "1 to 100");
        }
        absl::StatusOr<std::unique_ptr<ImageConverter>> images =
            ImageConverter::Create(image_options);
        if (!images.ok()) ThrowStatus(images.status());
        absl::StatusOr<std::unique_ptr<Writer>> writer;
        {
          py::gil_scoped_release no_gil;
          writer = Writer::Create(out, std::move(fields), o);
        }
        if (!writer.ok()) ThrowStatus(writer.status());
        return std::make_unique<PyWriter>(*std::move(writer), *std::move(images),
                                          std::move(files));
      }))
      .def("write",
           [](PyWriter& w, const py::args& args, const py::kwargs& kwargs) {
             const CallArgs a("write", args, kwargs, {"sample"}, 1, 1);
             return w.Write(a["sample"]);
           },
           kWriteDoc)
      .def("close", &PyWriter::Close,
           "close()\n\nPublishes the dataset (its manifest last); the writer is then closed. "
           "shardpack.Error (or ValueError, FileNotFoundError) when it cannot be published: "
           "nothing is, and the writer is closed.")
      .def("discard", &PyWriter::Discard,
           "discard()\n\nRemoves what was written; nothing is published. Closes the writer.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__",
           [](PyWriter& w, py::handle type, py::handle, py::handle) {
             if (w.closed()) return false;  // closed or discarded in the block
             if (type.is_none()) {
               w.Close();
             } else {
               w.Discard();
             }
             return false;
           })
      .def_property_readonly("schema", &PyWriter::Schema,
                             "The fields, name -> type text, in record order.")
      .def_property_readonly("path", &PyWriter::path)
      .def_property_readonly("records", &PyWriter::records, "Samples written.")
      .def_property_readonly("samples", &PyWriter::samples,
                             "Samples offered: written, skipped and refused.")
      .def_property_readonly("skipped", &PyWriter::skipped,
                             "The samples left out (on_error=\"skip\"): a list of (key, reason).")
      .def_property_readonly("closed", &PyWriter::closed);
}

}  // namespace shardpack::python
