// shardpack.Dataset: records by index and by key (shardpack/records.h) from
// Python. Reads run without the GIL, each into a RecordBuffer taken from a
// small pool (one per thread reading at once), so concurrent Python threads
// read in parallel and a buffer's memory is reused from call to call.
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "python/args.h"
#include "python/arrays.h"
#include "python/field_values.h"
#include "python/py_dataset.h"
#include "python/py_reader.h"
#include "shardpack/records.h"

namespace shardpack::python {
namespace {

constexpr char kDatasetDoc[] = R"doc(Dataset(path, *, mmap=False, cache_dir=None, cache_bytes=None)

Random access to the records of a dataset: any path the tools accept (a
dataset folder, its manifest.json, a lone shard; .shard, LMDB or HDF5).
len(ds) records; ds[i] (negative i counts from the end; IndexError past it)
is ds.record(i); ds.find(key) the index of the first record with that key
(KeyError when none has it), through the dataset's record table. mmap=True
maps .shard files (faster for data in the page cache). Thread-safe: reads
release the GIL.)doc";

constexpr char kRecordDoc[] = R"doc(record(i, *, decode=False) -> dict

Record i of a dataset of images and labels: {"index", "key" (str; bytes
that are not UTF-8 as surrogate escapes), "labels" (tuple of int),
"encoding" ("raw" or "jpeg"), "shape" ((height, width, channels) as
stored), "data" (the stored payload, bytes), "extra" (bytes)}; with
decode=True also "image", a numpy uint8 array of shape (height, width,
channels), HWC (a JPEG decoded, CHW interleaved); decode="raw" gives "image"
for raw pixels only, not decoding JPEGs.

Record i of a dataset with fields (ds.fields): {"__key__", "__index__",
then every field by name}: images as bytes (with decode=True numpy uint8
HWC arrays, every image field; with decode="raw" the raw ones as such
arrays of their pixels, JPEGs as bytes), labels int, strings str, json the parsed
object, bytes bytes, arrays numpy arrays of their dtype, shape [rows, ...];
an absent optional field None. Each record's CRC-32C and fields are checked
first. shardpack.DataLossError for damage, naming the shard, offset, record
and, where one is to blame, the field.)doc";

// record()'s decode: False (the default), True, or "raw".
ImageValues DecodeArg(py::handle v) {
  if (!v) return ImageValues::kStored;
  if (PyUnicode_Check(v.ptr())) {
    if (StrArg(v, "decode") != "raw") OutOfRange("decode", v, "True, False or \"raw\"");
    return ImageValues::kRawAsArrays;
  }
  return BoolArg(v, "decode") ? ImageValues::kDecoded : ImageValues::kStored;
}

class PyDataset {
 public:
  PyDataset(const std::string& path, const RecordReaderOptions& options) {
    absl::StatusOr<std::unique_ptr<RecordReader>> reader;
    {
      py::gil_scoped_release no_gil;
      reader = RecordReader::Open(path, options);
    }
    if (!reader.ok()) ThrowStatus(reader.status());
    reader_ = *std::move(reader);
  }

  uint64_t Len() const { return reader_->size(); }

  py::dict Record(py::handle i, ImageValues images) {
    // A dataset of images and labels holds one encoding: "raw" decodes raw
    // pixels (a copy) and leaves JPEGs as they are.
    const bool decode = images == ImageValues::kDecoded ||
                        (images == ImageValues::kRawAsArrays && reader_->fields().empty() &&
                         reader_->schema().image.encoding == Encoding::kRaw);
    const uint64_t index = Index(i);
    std::unique_ptr<RecordBuffer> buffer = Take();
    absl::Status read;
    {
      py::gil_scoped_release no_gil;
      read = reader_->Read(index, buffer.get(), decode);
    }
    if (!read.ok()) {
      Give(std::move(buffer));
      ThrowStatus(read);
    }
    py::dict out = reader_->fields().empty() ? ToDict(*buffer, decode)
                                             : FieldsDict(reader_->fields(), *buffer, images);
    Give(std::move(buffer));
    return out;
  }

  int64_t Find(const py::object& key) const {
    std::string bytes;
    if (py::isinstance<py::bytes>(key)) {
      bytes = key.cast<std::string>();
    } else if (py::isinstance<py::str>(key)) {
      py::object encoded = key.attr("encode")("utf-8", "surrogateescape");
      bytes = encoded.cast<std::string>();
    } else {
      WrongType("key", "a str or bytes", key);
    }
    absl::StatusOr<uint64_t> found = reader_->Find(bytes);
    if (absl::IsNotFound(found.status())) RaiseError(PyExc_KeyError, std::string(found.status().message()));
    if (!found.ok()) ThrowStatus(found.status());
    return static_cast<int64_t>(*found);
  }

  const std::string& path() const { return reader_->path(); }
  bool has_record_table() const { return reader_->has_record_table(); }
  // A classic dataset's implicit fields ("image" and its labels) as well.
  py::dict fields() const { return FieldTypes(FieldsOf(reader_->schema())); }
  py::dict classes() const { return FieldClasses(FieldsOf(reader_->schema())); }

 private:
  // Python's index rules: an int (or __index__, not a bool); negative
  // counts from the end; IndexError past either end, however far.
  uint64_t Index(py::handle v) const {
    if (PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr())) {
      RaiseError(PyExc_TypeError,
                 absl::StrCat("Dataset indices must be an int, not ", TypeName(v),
                              PySlice_Check(v.ptr()) ? " (one record at a time: no slices)" : ""));
    }
    py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
    if (!i) throw py::error_already_set();
    const int64_t n = static_cast<int64_t>(reader_->size());
    int overflow = 0;
    const long long value = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
    const int64_t at = value < 0 ? value + n : value;
    if (overflow != 0 || at < 0 || at >= n) {
      RaiseError(PyExc_IndexError, absl::StrCat(reader_->path(), ": record ", Shown(i),
                                                " is out of range (", n, " records)"));
    }
    return static_cast<uint64_t>(at);
  }

  static py::dict ToDict(const RecordBuffer& b, bool decode) {
    const shardpack::Record& r = b.record();
    py::dict d;
    d["index"] = b.index();
    PyObject* key = PyUnicode_DecodeUTF8(r.key.data(), static_cast<Py_ssize_t>(r.key.size()),
                                         "surrogateescape");
    if (key == nullptr) throw py::error_already_set();
    d["key"] = py::reinterpret_steal<py::object>(key);
    py::tuple labels(r.labels.size());
    for (int f = 0; f < r.labels.size(); ++f) labels[f] = r.labels[f];
    d["labels"] = labels;
    d["encoding"] = std::string(EncodingName(r.image.encoding));
    d["shape"] = py::make_tuple(r.image.height, r.image.width, r.image.channels);
    d["data"] = py::bytes(reinterpret_cast<const char*>(r.payload.data()), r.payload.size());
    d["extra"] = py::bytes(reinterpret_cast<const char*>(r.extra.data()), r.extra.size());
    if (decode) {
      RequireNumpy("Dataset.record(decode=True)");
      const DecodedImage& im = b.image();
      py::array image = NewArray(py::dtype::of<uint8_t>(), 1,
                                 {im.height, im.width, static_cast<py::ssize_t>(im.channels)});
      std::memcpy(image.mutable_data(), im.data, im.bytes());
      d["image"] = image;
    }
    return d;
  }

  std::unique_ptr<RecordBuffer> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    if (pool_.empty()) return std::make_unique<RecordBuffer>();
    std::unique_ptr<RecordBuffer> b = std::move(pool_.back());
    pool_.pop_back();
    return b;
  }
  void Give(std::unique_ptr<RecordBuffer> b) {
    std::lock_guard<std::mutex> lock(mu_);
    pool_.push_back(std::move(b));
  }

  std::unique_ptr<RecordReader> reader_;
  std::mutex mu_;
  std::vector<std::unique_ptr<RecordBuffer>> pool_;
};

}  // namespace

void RegisterDataset(py::module_& m) {
  // Every argument is checked by python/args.h, which names it: pybind11's
  // signatures would say (*args, **kwargs), so each docstring starts with
  // its own.
  py::options options;
  options.disable_function_signatures();
  py::class_<PyDataset>(m, "Dataset", kDatasetDoc)
      .def(py::init([](const py::args& args, const py::kwargs& kwargs) {
        const CallArgs a("Dataset", args, kwargs, {"path", "mmap", "cache_dir", "cache_bytes"},
                         1, 1);
        RecordReaderOptions o;
        if (py::object v = a["mmap"]) o.mmap = BoolArg(v, "mmap");
        if (py::object v = a["cache_dir"]; v && !v.is_none()) {
          o.cache_dir = PathArg(v, "cache_dir");
        }
        if (py::object v = a["cache_bytes"]; v && !v.is_none()) {
          o.cache_bytes =
              static_cast<int64_t>(std::min<uint64_t>(UintArg(v, "cache_bytes"), INT64_MAX));
        }
        return std::make_unique<PyDataset>(PathArg(a["path"], "path"), o);
      }))
      .def("__len__", &PyDataset::Len, "__len__()\n\nRecords in the dataset.")
      .def("__getitem__",
           [](PyDataset& d, py::handle i) { return d.Record(i, ImageValues::kStored); },
           "__getitem__(index)\n\nds.record(index).")
      .def("record",
           [](PyDataset& d, const py::args& args, const py::kwargs& kwargs) {
             const CallArgs a("record", args, kwargs, {"index", "decode"}, 1, 1);
             return d.Record(a["index"], DecodeArg(a["decode"]));
           },
           kRecordDoc)
      .def("find",
           [](const PyDataset& d, const py::args& args, const py::kwargs& kwargs) {
             const CallArgs a("find", args, kwargs, {"key"}, 1, 1);
             return d.Find(a["key"]);
           },
           "find(key)\n\n"
           "The index of the first record whose key is `key` (str or bytes); KeyError when "
           "none has it; shardpack.Error when the dataset has no record table "
           "(`shardpack index PATH` writes one).")
      .def_property_readonly("path", &PyDataset::path)
      .def_property_readonly("has_record_table", &PyDataset::has_record_table)
      .def_property_readonly("fields", &PyDataset::fields,
                             "{name: type} of every field, in record order: the type as text "
                             "(\"jpeg\", \"raw:32x32x3\", \"label\", \"string\", \"bytes\", "
                             "\"json\", \"f32[n,4]\"; \"?\" after an optional one). A dataset of "
                             "images and labels has the field \"image\" and its label fields.")
      .def_property_readonly("classes", &PyDataset::classes,
                             "{name: [class names]} of every label field.");
}

}  // namespace shardpack::python
