#include "python/py_reader.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/errors.h"
#include "common/redact.h"
#include "python/args.h"
#include "python/arrays.h"
#include "python/dlpack.h"
#include "python/field_values.h"
#include "reader/reader_state.h"
#include "shardpack/manifest.h"

namespace shardpack::python {
namespace {

PyObject* g_error = nullptr;      // shardpack.Error(RuntimeError)
PyObject* g_data_loss = nullptr;  // shardpack.DataLossError(shardpack.Error)

}  // namespace

void RegisterExceptions(py::module_& m) {
  g_error = PyErr_NewExceptionWithDoc(
      "shardpack.Error", "A reader error: its message names the file, record or offset.",
      PyExc_RuntimeError, nullptr);
  g_data_loss = PyErr_NewExceptionWithDoc(
      "shardpack.DataLossError",
      "Damaged data (checksum, record or JPEG): the message names the shard and offset.",
      g_error, nullptr);
  m.attr("Error") = py::handle(g_error);
  m.attr("DataLossError") = py::handle(g_data_loss);
}

void ThrowStatus(const absl::Status& status) {
  PyObject* type = g_error;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange: type = PyExc_ValueError; break;
    case absl::StatusCode::kNotFound: type = PyExc_FileNotFoundError; break;
    case absl::StatusCode::kDataLoss: type = g_data_loss; break;
    case absl::StatusCode::kUnimplemented: type = PyExc_NotImplementedError; break;
    default: break;
  }
  std::string message(status.message());
  if (status.code() == absl::StatusCode::kFailedPrecondition &&
      absl::StrContains(message, "Batch")) {
    absl::StrAppend(&message, " (in Python: free that batch's arrays, e.g. `del images, labels`,"
                              " or pass copy=True)");
  }
  RaiseError(type, message);
}

void RaiseError(PyObject* type, std::string_view message) {
  // One line, whatever a file or server put in it (a newline in a
  // manifest's shard path), with no URL's secret, whichever way it came into
  // the message (common/redact.h); all of it, NULs and bytes that are not
  // UTF-8 included (escaped), where PyErr_SetString would stop at the first NUL.
  const std::string shown = common::OneLine(common::RedactUrls(message));
  PyObject* text = PyUnicode_DecodeUTF8(shown.data(), static_cast<Py_ssize_t>(shown.size()),
                                        "backslashreplace");
  if (text == nullptr) throw py::error_already_set();
  PyErr_SetObject(type, text);
  Py_DECREF(text);
  throw py::error_already_set();
}

void RequireNumpy(std::string_view who, std::string_view hint) {
  try {
    py::module_::import("numpy");
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_ImportError)) throw;
    // The exception's own words ("No module named 'numpy'"), not what(),
    // which adds its type and a traceback.
    RaiseError(PyExc_ImportError,
               absl::StrCat(common::AsAbsl(who),
                            " needs numpy (pip install numpy; Debian: python3-numpy)",
                            common::AsAbsl(hint), ": ",
                            common::Excerpt(std::string(py::str(e.value())), 200)));
  }
}

// ---- ReaderCore ---------------------------------------------------------

absl::StatusOr<Batch> ReaderCore::Next() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (in_next_) {
      return absl::FailedPreconditionError("next() is already running in another thread");
    }
    in_next_ = true;
  }
  struct Leave {  // however next() ends, a KeyboardInterrupt included
    ReaderCore* core;
    ~Leave() {
      std::lock_guard<std::mutex> lock(core->mu_);
      core->in_next_ = false;
    }
  } leave{this};
  // The wait goes in slices: between them, with the GIL, Python runs its
  // signal handlers (Ctrl-C raises KeyboardInterrupt here), which it cannot
  // do while this thread waits in C++. A ready batch comes out of the first
  // slice at no cost (Reader::Next(timeout) reads no clock then); nothing is
  // consumed by a slice that ends empty.
  constexpr auto kSlice = std::chrono::milliseconds(50);
  for (;;) {
    absl::StatusOr<Batch> batch;
    {
      py::gil_scoped_release no_gil;
      batch = reader_->Next(kSlice);
    }
    if (!absl::IsDeadlineExceeded(batch.status())) return batch;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
}

absl::Status ReaderCore::Restore(const ReaderState& state) {
  std::lock_guard<std::mutex> lock(mu_);
  if (in_next_) return absl::FailedPreconditionError("next() is running in another thread");
  return reader_->Restore(state);
}

// ---- PyReader -------------------------------------------------------------

PyReader::PyReader(const ReaderOptions& options, bool copy, bool indices, Output output,
                   Ragged ragged)
    : options_(options), copy_(copy), indices_(indices), output_(output), ragged_(ragged) {
  if (options_.device >= 0 && (output_ != Output::kTorch || copy_)) {
    ThrowStatus(absl::InvalidArgumentError(
        "device='cuda' hands out CUDA tensors: it needs output='torch' and copy=False"));
  }
  if (output_ == Output::kNumpy) {
    RequireNumpy("shardpack.Reader(output='numpy')", "; or pass output='torch'");
  }
  if (output_ == Output::kTorch) {
    try {
      py::module_ torch = py::module_::import("torch");
      from_dlpack_ = py::module_::import("torch.utils.dlpack").attr("from_dlpack");
      torch_ = torch;
      // The copy that reuses a device buffer waits for the work torch had
      // queued on its current stream when the tensor was freed.
      if (options_.device >= 0 && torch.attr("cuda").attr("is_available")().cast<bool>()) {
        py::object stream = torch.attr("cuda").attr("current_stream")(options_.device);
        options_.consumer_stream =
            reinterpret_cast<void*>(stream.attr("cuda_stream").cast<uintptr_t>());
      }
    } catch (py::error_already_set& e) {
      if (!e.matches(PyExc_ImportError)) throw;
      RaiseError(PyExc_ImportError,
                 absl::StrCat("shardpack.Reader(output='torch') needs PyTorch (pip install "
                              "torch; Debian: python3-torch): ",
                              common::Excerpt(std::string(py::str(e.value())), 200)));
    }
  }
  absl::StatusOr<std::unique_ptr<Reader>> reader;
  {
    py::gil_scoped_release no_gil;
    reader = Reader::Open(options_);
  }
  if (!reader.ok()) ThrowStatus(reader.status());
  if (const std::string& why = (*reader)->device_fallback(); !why.empty()) {
    if (PyErr_WarnEx(PyExc_RuntimeWarning, why.c_str(), 1) != 0) throw py::error_already_set();
  }
  fields_ = FieldsOf((*reader)->schema());
  json_loads_ = py::module_::import("json").attr("loads");
  core_ = std::make_shared<ReaderCore>(*std::move(reader));
}

namespace {

// numpy's and torch's name of an element type.
const char* ElementName(DLDataType t) {
  if (t.code == kDLFloat) return t.bits == 16 ? "float16" : t.bits == 64 ? "float64" : "float32";
  if (t.code == kDLInt) return t.bits == 32 ? "int32" : "int64";
  return "uint8";
}

DLDataType DlTypeOf(ArrayDType d) {
  switch (d) {
    case ArrayDType::kU8: return {kDLUInt, 8, 1};
    case ArrayDType::kI32: return {kDLInt, 32, 1};
    case ArrayDType::kI64: return {kDLInt, 64, 1};
    case ArrayDType::kF16: return {kDLFloat, 16, 1};
    case ArrayDType::kF32: return {kDLFloat, 32, 1};
    case ArrayDType::kF64: return {kDLFloat, 64, 1};
  }
  return {kDLUInt, 8, 1};
}

constexpr DLDevice kCpu = {kDLCPU, 0};

}  // namespace

py::object PyReader::View(void* data, DLDataType dtype, DLDevice device,
                          const std::vector<int64_t>& shape, const py::object& owner) const {
  if (device.device_type == kDLCUDA || (output_ == Output::kTorch && !copy_)) {
    PyObject* capsule = NewDlpackCapsule(data, device, dtype, shape, owner.ptr());
    if (capsule == nullptr) throw py::error_already_set();
    return from_dlpack_(py::reinterpret_steal<py::object>(capsule));
  }
  if (output_ == Output::kTorch) return OwnedTensor(data, dtype, shape);  // copy=True
  const py::dtype np(ElementName(dtype));
  const size_t element_bytes = dtype.bits / 8;
  const std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  if (!copy_) return NewArray(np, element_bytes, dims, data, owner);
  py::array owned = NewArray(np, element_bytes, dims);
  std::memcpy(owned.mutable_data(), data, ArrayBytes(dims, element_bytes));
  return owned;
}

py::object PyReader::OwnedTensor(const void* data, DLDataType dtype,
                                 const std::vector<int64_t>& shape) const {
  SP_DCHECK(output_ == Output::kTorch && dtype.lanes == 1);
  py::object tensor = torch_.attr("empty")(py::cast(shape),
                                           py::arg("dtype") = torch_.attr(ElementName(dtype)));
  const std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  const auto to = tensor.attr("data_ptr")().cast<uintptr_t>();
  std::memcpy(reinterpret_cast<void*>(to), data, ArrayBytes(dims, dtype.bits / 8));
  return tensor;
}

py::object PyReader::ImagesOf(const Batch& batch, const py::object& owner) const {
  std::array<int64_t, 4> s = batch.shape();
  const std::vector<int64_t> shape = {s[0], s[1], s[2], s[3]};
  const ElementType type = batch.dtype();
  const auto bits = static_cast<uint8_t>(8 * ElementBytes(type));
  const DLDataType dtype = {type == ElementType::kUint8 ? kDLUInt : kDLFloat, bits, 1};
  // device_images() is images() on the host.
  const DLDevice device =
      batch.on_device() ? DLDevice{kDLCUDA, options_.device} : DLDevice{kDLCPU, 0};
  return View(const_cast<void*>(batch.device_images()), dtype, device, shape, owner);
}

py::object PyReader::LabelsOf(const Batch& batch, const py::object& owner) const {
  std::vector<int64_t> shape = {batch.size()};
  if (batch.num_labels() > 1) shape.push_back(batch.num_labels());
  return View(const_cast<int64_t*>(batch.labels()), DLDataType{kDLInt, 64, 1}, {kDLCPU, 0}, shape,
              owner);
}

py::object PyReader::IndicesOf(const Batch& b) const {
  std::vector<int64_t> records(static_cast<size_t>(b.size()));
  for (int i = 0; i < b.size(); ++i) records[i] = static_cast<int64_t>(b.record_index(i));
  if (output_ == Output::kTorch) {
    return OwnedTensor(records.data(), DLDataType{kDLInt, 64, 1}, {b.size()});
  }
  py::array indices = NewArray(py::dtype::of<int64_t>(), sizeof(int64_t), {b.size()});
  std::memcpy(indices.mutable_data(), records.data(), records.size() * sizeof(int64_t));
  return indices;
}

py::object PyReader::Next() {
  absl::StatusOr<Batch> batch = core_->Next();
  if (absl::IsOutOfRange(batch.status())) throw py::stop_iteration();
  if (!batch.ok()) ThrowStatus(batch.status());
  auto ref = std::make_shared<BatchRef>(core_, *std::move(batch));
  // With copy=True, `owner` is unused and the slot returns when `ref` dies.
  py::object owner = copy_ ? py::none() : py::cast(ref);
  const Batch& b = ref->batch();
  if (b.num_fields() > 0) return FieldsItem(b, owner);
  py::object images = ImagesOf(b, owner);
  py::object labels = LabelsOf(b, owner);
  if (!indices_) return py::make_tuple(images, labels);
  return py::make_tuple(images, labels, IndicesOf(b));
}

py::dict PyReader::FieldsItem(const Batch& b, const py::object& owner) const {
  py::dict item, present, shapes;
  const int64_t n = b.size();
  bool transformed = false;
  for (int k = 0; k < b.num_fields(); ++k) {
    const BatchField f = b.field(k);
    const py::str name(f.name.data(), f.name.size());
    item[name] = FieldItem(b, f, owner);
    transformed = transformed || f.transformed;
    if (f.optional) {
      present[name] = View(const_cast<uint8_t*>(f.present), {kDLUInt, 8, 1}, kCpu, {n}, owner);
    }
    if (f.image_shapes != nullptr) {
      shapes[name] = View(const_cast<int32_t*>(f.image_shapes), {kDLInt, 32, 1}, kCpu, {n, 3},
                          owner);
    }
  }
  item["__labels__"] = LabelsOf(b, owner);
  if (transformed) {
    item["__crop__"] = View(const_cast<float*>(b.crops()), {kDLFloat, 32, 1}, kCpu, {n, 4}, owner);
    item["__size__"] =
        View(const_cast<int32_t*>(b.source_sizes()), {kDLInt, 32, 1}, kCpu, {n, 2}, owner);
    item["__flip__"] = View(const_cast<uint8_t*>(b.flips()), {kDLUInt, 8, 1}, kCpu, {n}, owner);
  }
  if (py::len(present) != 0) item["__present__"] = present;
  if (py::len(shapes) != 0) item["__shapes__"] = shapes;
  if (indices_) item["__index__"] = IndicesOf(b);
  return item;
}

py::object PyReader::FieldItem(const Batch& b, const BatchField& f,
                               const py::object& owner) const {
  // The transformed image of images() (on a device, device_images()).
  if (f.transformed && (f.values == nullptr || f.values == b.images())) return ImagesOf(b, owner);
  if (f.variable) return RaggedItem(b, f, owner);
  return View(const_cast<void*>(f.values), DlTypeOf(f.dtype), kCpu,
              std::vector<int64_t>(f.shape.begin(), f.shape.begin() + f.rank), owner);
}

py::object PyReader::RaggedItem(const Batch& b, const BatchField& f,
                                const py::object& owner) const {
  const int n = b.size();
  const auto* bytes = static_cast<const char*>(f.values);
  if (f.type == FieldType::kString || f.type == FieldType::kJson) {
    py::list out;
    for (int i = 0; i < n; ++i) {
      if (f.present[i] == 0) {
        out.append(py::none());
        continue;
      }
      // The writer checked the text (UTF-8, JSON that parses); a block's
      // CRC-32C checked its bytes.
      py::object text = py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(
          bytes + f.offsets[i], static_cast<Py_ssize_t>(f.offsets[i + 1] - f.offsets[i]), "replace"));
      if (!text) throw py::error_already_set();
      out.append(f.type == FieldType::kJson ? json_loads_(text) : text);
    }
    return out;
  }
  py::object values = View(const_cast<void*>(f.values), DlTypeOf(f.dtype), kCpu,
                           std::vector<int64_t>(f.shape.begin(), f.shape.begin() + f.rank), owner);
  if (ragged_ == Ragged::kOffsets) {
    return py::make_tuple(values, View(const_cast<int64_t*>(f.offsets), {kDLInt, 64, 1}, kCpu,
                                       {int64_t{n} + 1}, owner));
  }
  // A raw image delivered as stored comes shaped as stored.
  const Field* decl = nullptr;
  for (const Field& d : fields_) decl = d.name == f.name ? &d : decl;
  const bool raw = f.image_shapes != nullptr && decl != nullptr &&
                   decl->image.encoding == Encoding::kRaw;
  const bool chw = raw && decl->image.layout == Layout::kCHW;
  py::list out;
  for (int i = 0; i < n; ++i) {
    if (f.optional && f.present[i] == 0) {
      out.append(py::none());
      continue;
    }
    py::object v = values.attr("__getitem__")(py::slice(f.offsets[i], f.offsets[i + 1], 1));
    if (raw) {
      const int32_t* s = &f.image_shapes[3 * i];
      v = chw ? v.attr("reshape")(s[2], s[0], s[1]) : v.attr("reshape")(s[0], s[1], s[2]);
    }
    out.append(v);
  }
  return out;
}

void PyReader::SetEpoch(uint64_t epoch) {
  SP_DCHECK(epoch <= kMaxEpoch);  // module.cc checks the argument
  ReaderState now = core_->reader().state();
  if (now.epoch == epoch && now.segment.batches == 0 && now.earlier.empty()) return;
  now.epoch = epoch;  // this reader's own options: an ordinary epoch
  now.segment.batches = 0;
  now.earlier.clear();
  LoadState(now);
}

void PyReader::LoadState(const ReaderState& state) {
  absl::Status s = core_->Restore(state);
  if (!s.ok()) ThrowStatus(s);
}

namespace {

// A value of a state_dict() as ReadState asks for it (reader/reader_state.h):
// the keys and their checks are the C++ serializer's, the Python types and
// the quoting (Shown) are this binding's.
class PyStateValue final : public reader::StateValue {
 public:
  explicit PyStateValue(py::object v) : v_(std::move(v)) {}
  std::string Shown() const override { return python::Shown(v_); }
  std::optional<uint64_t> Uint() const override {
    if (!py::isinstance<py::int_>(v_) || py::isinstance<py::bool_>(v_)) return std::nullopt;
    try {
      return v_.cast<uint64_t>();  // fails for negatives and past 2**64-1
    } catch (const py::cast_error&) {
      return std::nullopt;
    }
  }
  std::optional<bool> Bool() const override {
    if (!py::isinstance<py::bool_>(v_)) return std::nullopt;
    return v_.cast<bool>();
  }
  std::optional<std::string> Text() const override { return Utf8Of(v_); }
  std::optional<size_t> Length() const override {
    if (!py::isinstance<py::list>(v_)) return std::nullopt;
    return py::len(v_);
  }
  std::unique_ptr<StateValue> Element(size_t i) const override {
    return std::make_unique<PyStateValue>(v_.cast<py::list>()[i]);
  }
  bool IsMap() const override { return py::isinstance<py::dict>(v_); }
  std::unique_ptr<StateValue> Member(std::string_view key) const override {
    const py::dict d = v_.cast<py::dict>();
    const py::str name(key.data(), key.size());
    if (!d.contains(name)) return nullptr;
    return std::make_unique<PyStateValue>(d[name]);
  }
  std::optional<std::string> KeyNotIn(const std::vector<std::string_view>& known) const override {
    for (const auto& item : v_.cast<py::dict>()) {
      const std::optional<std::string> name = Utf8Of(item.first);
      if (!name || std::find(known.begin(), known.end(), *name) == known.end()) {
        return python::Shown(item.first);
      }
    }
    return std::nullopt;
  }

 private:
  py::object v_;
};

// load_state_dict()'s words: state_dict['epoch'] is -1: it must be an int
// from 0 to 2**63-1.
constexpr reader::StateDialect kPythonState = {
    "state_dict", "state_dict()", "a dict", "dicts", "a list", "an int", "a bool", "**", '\''};

}  // namespace

namespace {

py::list ListOf(const std::vector<std::string>& names) {
  py::list out;
  for (const std::string& name : names) out.append(name);
  return out;
}

}  // namespace

py::list PyReader::Classes() const {
  const shardpack::Schema& schema = core_->reader().schema();
  return schema.labels.empty() ? py::list() : ListOf(schema.labels[0].classes);
}

py::dict PyReader::Schema() const {
  const shardpack::Schema& schema = core_->reader().schema();
  py::dict image;
  image["encoding"] = std::string(EncodingName(schema.image.encoding));
  image["layout"] = std::string(LayoutName(schema.image.layout));
  image["height"] = schema.image.height;  // 0 when the shape varies (JPEG)
  image["width"] = schema.image.width;
  image["channels"] = schema.image.channels;
  py::list labels;
  for (const LabelField& f : schema.labels) {
    py::dict field;
    field["name"] = f.name;
    field["classes"] = ListOf(f.classes);
    labels.append(field);
  }
  py::dict d;
  d["image"] = image;
  d["labels"] = labels;
  return d;
}

py::dict PyReader::Fields() const { return FieldTypes(fields_); }

py::tuple PyReader::OutputShape() const {
  const std::array<int64_t, 4> s = core_->reader().output_shape();
  return py::make_tuple(s[0], s[1], s[2], s[3]);
}

std::string PyReader::fingerprint() const {
  return FormatFingerprint(core_->reader().fingerprint());
}

py::dict PyReader::StateDict() const {
  // The saved form's keys and values are ReaderState::ToJson's.
  const std::string json = core_->reader().state().ToJson();
  return py::module_::import("json").attr("loads")(json).cast<py::dict>();
}

void PyReader::LoadStateDict(const py::object& object) {
  absl::StatusOr<ReaderState> state = reader::ReadState(PyStateValue(object), kPythonState);
  if (!state.ok()) ThrowStatus(state.status());
  LoadState(*state);
}

py::dict PyReader::Stats() const {
  ReaderStats s = core_->reader().stats();
  py::dict d;
  d["batches"] = s.batches;
  d["samples"] = s.samples;
  d["bytes_read"] = s.bytes_read;
  d["skipped"] = s.skipped;
  d["io_wait_s"] = s.io_wait_s;
  d["transform_wait_s"] = s.transform_wait_s;
  d["consumer_wait_s"] = s.consumer_wait_s;
  d["memory_budget_bytes"] = s.memory_budget_bytes;
  d["index_bytes"] = s.index_bytes;
  d["plan_bytes"] = s.plan_bytes;
  d["plan_peak_bytes"] = s.plan_peak_bytes;
  py::list per_source;
  for (uint64_t n : s.source_samples) per_source.append(n);
  d["source_samples"] = per_source;
  py::dict remote;
  remote["requests"] = s.remote.requests;
  remote["bytes"] = s.remote.bytes;
  remote["retries"] = s.remote.retries;
  remote["cache_hits"] = s.remote.cache_hits;
  remote["cache_misses"] = s.remote.cache_misses;
  remote["cache_kept"] = s.remote.cache_kept;
  remote["cache_evicted"] = s.remote.cache_evicted;
  remote["refetched"] = s.remote.refetched;
  remote["damaged"] = s.remote.damaged;
  d["remote"] = remote;
  return d;
}

py::list PyReader::Sources() const {
  py::list out;
  for (const SourceInfo& s : core_->reader().sources()) {
    py::dict d;
    // As the system gave the path: bytes that are not UTF-8 come back as
    // os.fsdecode gives them.
    d["path"] = py::module_::import("os").attr("fsdecode")(py::bytes(s.path));
    d["records"] = s.records;
    d["per_epoch"] = s.per_epoch;
    d["per_rank"] = s.per_rank;
    out.append(d);
  }
  return out;
}

}  // namespace shardpack::python
