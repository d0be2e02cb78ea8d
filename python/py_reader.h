// shardpack.Reader: the C++ Reader as a Python iterable of (images, labels).
//
// Lifetime of what it hands out (docs/python.md):
// - copy=False (the default): images and labels view the ring slot. Both
//   arrays (or tensors) keep a BatchRef alive through their base object (or
//   DLPack deleter); the slot goes back to the ring when the last of them is
//   freed. The batch delivered ring_slots steps ago must be freed before
//   next() (its slot is the one the next batch is built into), else next()
//   raises shardpack.Error instead of waiting forever.
// - copy=True: owned arrays; the slot is returned before next() returns.
// Outstanding arrays keep the C++ reader alive after the Python Reader dies.
#ifndef SHARDPACK_PYTHON_PY_READER_H_
#define SHARDPACK_PYTHON_PY_READER_H_

#include <pybind11/pybind11.h>

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "python/dlpack.h"
#include "shardpack/reader.h"

namespace shardpack::python {

namespace py = pybind11;

// Raises the Python exception that goes with `status`'s code, carrying its
// message: ValueError, FileNotFoundError, shardpack.DataLossError or
// shardpack.Error.
[[noreturn]] void ThrowStatus(const absl::Status& status);
// Raises `type` with all of `message` (NULs and bytes that are not UTF-8
// escaped, where PyErr_SetString would stop at a NUL).
[[noreturn]] void RaiseError(PyObject* type, std::string_view message);
// Registers shardpack.Error and shardpack.DataLossError in `m`.
void RegisterExceptions(py::module_& m);
// Imports numpy, or raises an ImportError saying that `who` needs it and how
// to get it (`hint` follows): pybind11 would import it at the first array,
// with an error that names none of this.
void RequireNumpy(std::string_view who, std::string_view hint = "");

// The C++ reader, shared by the Python Reader and every live BatchRef.
// Batches may be freed by any Python thread, also while next() waits with
// the GIL released: destroying a Batch is safe on any thread (reader.h).
class ReaderCore {
 public:
  explicit ReaderCore(std::unique_ptr<Reader> reader) : reader_(std::move(reader)) {}
  Reader& reader() { return *reader_; }
  // Reader::Next() without the GIL; KeyboardInterrupt (py::error_already_set)
  // when a signal handler raises while it waits.
  absl::StatusOr<Batch> Next();
  // Reader::Restore(), refused while next() runs in another thread.
  absl::Status Restore(const ReaderState& state);

 private:
  std::unique_ptr<Reader> reader_;
  std::mutex mu_;
  bool in_next_ = false;
};

// Owns one delivered Batch: the base object of its zero-copy arrays.
class BatchRef {
 public:
  BatchRef(std::shared_ptr<ReaderCore> core, Batch batch)
      : core_(std::move(core)), batch_(std::move(batch)) {}
  // batch_ goes before core_ (reverse declaration order): the Reader
  // outlives the Batch.
  BatchRef(const BatchRef&) = delete;
  BatchRef& operator=(const BatchRef&) = delete;
  const Batch& batch() const { return batch_; }

 private:
  std::shared_ptr<ReaderCore> core_;
  Batch batch_;
};

enum class Output { kNumpy, kTorch };
// How a batch hands out variable-length fields: (values, offsets), or a
// list of one array a sample.
enum class Ragged { kOffsets, kList };

class PyReader {
 public:
  // The keyword arguments of shardpack.Reader (module.cc documents them).
  // `options.device` >= 0: images are CUDA tensors (output must be torch).
  PyReader(const ReaderOptions& options, bool copy, bool indices, Output output,
           Ragged ragged = Ragged::kOffsets);

  // (images, labels[, indices]) of a classic read; a dict of the fields
  // otherwise (docs/python.md, "Fields").
  py::object Next();
  uint64_t Len() const { return core_->reader().batches_per_epoch(); }
  void SetEpoch(uint64_t epoch);
  py::dict StateDict() const;
  void LoadStateDict(const py::object& state);
  py::dict Stats() const;
  // Reader::sources(): what each source draws an epoch.
  py::list Sources() const;
  const ReaderOptions& options() const { return options_; }
  uint64_t records() const { return core_->reader().records(); }
  int ring_slots() const { return core_->reader().ring_slots(); }
  uint64_t shuffle_bytes() const { return core_->reader().shuffle_bytes(); }
  // The first label field's class names (empty when the dataset has none).
  py::list Classes() const;
  // The dataset's schema: image encoding, layout and shape, label fields.
  py::dict Schema() const;
  // {name: type text} of every field of the dataset (as Dataset.fields).
  py::dict Fields() const;
  // A full batch's images shape, known before the first batch.
  py::tuple OutputShape() const;
  std::string Engine() const { return std::string(IoEngineName(core_->reader().io_engine())); }
  uint64_t batches_in_epoch() const { return core_->reader().batches_in_epoch(); }
  std::string fingerprint() const;

 private:
  void LoadState(const ReaderState& state);
  py::object ImagesOf(const Batch& batch, const py::object& owner) const;
  py::object LabelsOf(const Batch& batch, const py::object& owner) const;
  py::object IndicesOf(const Batch& batch) const;
  // The dict of a batch of fields, and one field's value in it.
  py::dict FieldsItem(const Batch& batch, const py::object& owner) const;
  py::object FieldItem(const Batch& batch, const BatchField& f, const py::object& owner) const;
  // A variable-length field: its texts (strings, JSON), its (values,
  // offsets), or its list of per-sample arrays.
  py::object RaggedItem(const Batch& batch, const BatchField& f, const py::object& owner) const;
  py::object View(void* data, DLDataType dtype, DLDevice device,
                  const std::vector<int64_t>& shape, const py::object& owner) const;
  // A tensor torch owns, holding a copy of `data` (output="torch" with
  // copy=True, and the indices): made without numpy, which torch does not need.
  py::object OwnedTensor(const void* data, DLDataType dtype,
                         const std::vector<int64_t>& shape) const;

  ReaderOptions options_;
  bool copy_;
  bool indices_;  // a third element: the samples' record indices
  Output output_;
  Ragged ragged_;
  std::vector<Field> fields_;  // the schema's (FieldsOf): how an image is laid out
  std::shared_ptr<ReaderCore> core_;
  py::object from_dlpack_;   // torch.utils.dlpack.from_dlpack (output="torch")
  py::object torch_;         // the torch module (output="torch")
  py::object json_loads_;    // json.loads, for JSON fields
};

}  // namespace shardpack::python

#endif  // SHARDPACK_PYTHON_PY_READER_H_
