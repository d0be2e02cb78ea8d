// The Python module `shardpack`: shardpack.Reader over the C++ reader.
// docs/python.md is the guide; the docstrings below are the reference.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <cctype>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "python/contact_sheet.h"
#include "python/py_reader.h"
#include "shardpack/reader.h"

namespace shardpack::python {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

[[noreturn]] void BadChoice(const char* name, const std::string& value, const char* choices) {
  ThrowStatus(absl::InvalidArgumentError(
      absl::StrCat(name, "='", value, "' is not one of ", choices)));
}

template <typename T>
T Unwrap(absl::StatusOr<T> v) {
  if (!v.ok()) ThrowStatus(v.status());
  return *std::move(v);
}

// The options every keyword of Reader() maps to.
struct Args {
  py::object path;
  int batch_size;
  bool shuffle;
  uint64_t seed;
  int rank, world_size;
  std::string transform;
  int threads, ring_slots;
  uint64_t shuffle_bytes, read_ahead_bytes;
  std::string io, remainder, layout, dtype;
  std::array<float, 3> mean, std;
  std::string on_corrupt;
  bool copy, indices;
  std::string output, device;
};

// "cpu" -> -1, "cuda" -> 0, "cuda:N" -> N.
int ParseDevice(const std::string& device) {
  const std::string d = Lower(device);
  if (d == "cpu") return -1;
  if (d == "cuda") return 0;
  int n = -1;
  if (d.rfind("cuda:", 0) == 0 && absl::SimpleAtoi(d.substr(5), &n) && n >= 0) return n;
  BadChoice("device", device, "cpu, cuda, cuda:N");
}

std::unique_ptr<PyReader> MakeReader(const Args& a) {
  ReaderOptions o;
  o.path = py::module_::import("os").attr("fspath")(a.path).cast<std::string>();
  o.batch_size = a.batch_size;
  o.shuffle = a.shuffle;
  o.seed = a.seed;
  o.rank = a.rank;
  o.world_size = a.world_size;
  o.transform = Unwrap(ParseTransform(a.transform));
  o.threads = a.threads;
  o.ring_slots = a.ring_slots;
  o.shuffle_bytes = a.shuffle_bytes;
  o.read_ahead_bytes = a.read_ahead_bytes;
  o.io = Unwrap(ParseIoEngine(a.io));
  const std::string dtype = Lower(a.dtype), output = Lower(a.output);
  o.remainder = Unwrap(ParseRemainder(a.remainder));
  o.layout = Unwrap(ParseOutputLayout(a.layout));
  o.device = ParseDevice(a.device);
  // On a device, float output is made there by the finish kernel from uint8
  // (a quarter of the bytes on the bus); on the host, by the transform.
  if (dtype == "uint8") o.dtype = DType::kUint8;
  else if (dtype == "float32" && o.device >= 0) o.device_dtype = DeviceDType::kFloat32;
  else if (dtype == "float32") o.dtype = DType::kFloat32;
  else if (dtype == "float16" && o.device >= 0) o.device_dtype = DeviceDType::kFloat16;
  else BadChoice("dtype", a.dtype, "uint8, float32, float16 (float16 with device='cuda')");
  o.mean = a.mean;
  o.std = a.std;
  o.on_corrupt = Unwrap(ParseOnCorrupt(a.on_corrupt));
  Output out = Output::kNumpy;
  if (output == "torch") out = Output::kTorch;
  else if (output != "numpy") BadChoice("output", a.output, "numpy, torch");
  return std::make_unique<PyReader>(o, a.copy, a.indices, out);
}

constexpr char kReaderDoc[] = R"doc(
Reader(path, *, batch_size=256, shuffle=True, seed=0, rank=-1, world_size=-1,
       transform="none", threads=0, ring_slots=0, shuffle_bytes=256 MiB,
       read_ahead_bytes=32 MiB, io="auto", remainder="drop", layout="NHWC",
       dtype="uint8", mean=(0, 0, 0), std=(1, 1, 1), on_corrupt="error",
       copy=False, indices=False, output="numpy", device="cpu")

An iterable of (images, labels) batches from a shardpack dataset (a directory
with manifest.json, or one .shard file). Iterating runs the rest of the
current epoch; the next iteration runs the next epoch (or call set_epoch).

images: [batch, H, W, C] (NHWC) or [batch, C, H, W] (NCHW), uint8 or float32
((pixel / 255 - mean) / std). labels: int64 [batch] ([batch, L] when the
dataset has L > 1 labels). indices=True adds a third element: int64 [batch]
of the samples' record indices in the dataset.

output="numpy" gives numpy arrays, output="torch" torch tensors (through
DLPack, no copy). copy=False (the default): the arrays view the reader's
ring slot. They stay valid as long as they live, but the batch delivered
ring_slots steps before must be freed before the next batch can be built
into its slot: next() raises shardpack.Error rather than wait if it is not.
ring_slots=0 (the default) chooses 4, or for small batches as many up to 16
as fit in 32 MiB; the reader's ring_slots property says how many.
copy=True: owned arrays, nothing to release.

rank / world_size: -1 takes RANK / WORLD_SIZE from the environment (as
torchrun sets them), else 0 / 1. threads=0: all cores. transform: "none",
"cifar-train[:SIZE]", "cifar-eval[:SIZE]", "rrc[:SIZE]", "center[:SIZE]".
io: "auto", "pread", "direct", "mmap", "uring". device: "cpu", or "cuda" /
"cuda:N" with output="torch": images are CUDA tensors, copied from pinned
slots on the reader's own stream (labels stay on the CPU); dtype "float32" or
"float16" is then made on the GPU from uint8. Without a GPU the reader warns
(RuntimeWarning, saying why) and the tensors stay on the CPU. docs/python.md and docs/reader.md
explain every option.

Errors raise ValueError (bad options), FileNotFoundError, shardpack.DataLossError
(damaged data, naming shard and offset) or shardpack.Error. The GIL is released
while next() waits for a batch. Not thread-safe: iterate from one thread.
)doc";

}  // namespace
}  // namespace shardpack::python

PYBIND11_MODULE(shardpack, m) {
  namespace py = pybind11;
  using namespace shardpack::python;  // NOLINT: the module's own names
  m.doc() = "shardpack: stream sharded image datasets into training loops (docs/python.md)";
  m.attr("__version__") = SHARDPACK_VERSION;
  RegisterExceptions(m);
  BindContactSheet(m);

  py::class_<BatchRef, std::shared_ptr<BatchRef>>(
      m, "_BatchRef", "Owns a ring slot while zero-copy arrays of its batch live.");

  py::class_<PyReader>(m, "Reader", kReaderDoc)
      .def(py::init([](py::object path, int batch_size, bool shuffle, uint64_t seed, int rank,
                       int world_size, std::string transform, int threads, int ring_slots,
                       uint64_t shuffle_bytes, uint64_t read_ahead_bytes, std::string io,
                       std::string remainder, std::string layout, std::string dtype,
                       std::array<float, 3> mean, std::array<float, 3> std,
                       std::string on_corrupt, bool copy, bool indices, std::string output,
                       std::string device) {
             return MakeReader({path, batch_size, shuffle, seed, rank, world_size, transform,
                                threads, ring_slots, shuffle_bytes, read_ahead_bytes, io,
                                remainder, layout, dtype, mean, std, on_corrupt, copy, indices,
                                output, device});
           }),
           py::arg("path"), py::kw_only(), py::arg("batch_size") = 256,
           py::arg("shuffle") = true, py::arg("seed") = 0, py::arg("rank") = -1,
           py::arg("world_size") = -1, py::arg("transform") = "none", py::arg("threads") = 0,
           py::arg("ring_slots") = 0, py::arg("shuffle_bytes") = uint64_t{256} << 20,
           py::arg("read_ahead_bytes") = uint64_t{32} << 20, py::arg("io") = "auto",
           py::arg("remainder") = "drop", py::arg("layout") = "NHWC", py::arg("dtype") = "uint8",
           py::arg("mean") = std::array<float, 3>{0, 0, 0},
           py::arg("std") = std::array<float, 3>{1, 1, 1}, py::arg("on_corrupt") = "error",
           py::arg("copy") = false, py::arg("indices") = false, py::arg("output") = "numpy",
           py::arg("device") = "cpu")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &PyReader::Next, "The next batch; StopIteration at the epoch's end.")
      .def("__len__", &PyReader::Len, "Batches per epoch on this rank (equal on every rank).")
      .def("set_epoch", &PyReader::SetEpoch, py::arg("epoch"),
           "Start epoch `epoch` at its first batch (a no-op when already there). Every\n"
           "zero-copy array of this reader must be freed first when it has to jump.")
      .def("state_dict", &PyReader::StateDict,
           "The position after the last batch delivered: seed, epoch, batch, the dataset's\n"
           "fingerprint, the plan options (world_size, batch_size, remainder, shuffle,\n"
           "shuffle_bytes) and the epoch's earlier segments. The same on every rank.")
      .def("load_state_dict", &PyReader::LoadStateDict, py::arg("state"),
           "Resume from a state_dict() saved by any rank of any job on this dataset and seed.\n"
           "Same world size and options: the identical rest of the stream. Another world size\n"
           "or batch size (elastic resume): the ranks together deliver what the epoch still\n"
           "owes, once each, in equal batch counts (docs/python.md). Never a replay. Every\n"
           "zero-copy array of this reader must be freed first.")
      .def("stats", &PyReader::Stats,
           "Batches, samples, bytes read, skipped samples, stage waits (seconds) and the\n"
           "memory budget (bytes).")
      .def_property_readonly("batch_size", [](const PyReader& r) { return r.options().batch_size; })
      .def_property_readonly("records", &PyReader::records, "Records in the dataset.")
      .def_property_readonly("ring_slots", &PyReader::ring_slots,
                             "Slots of the ring (ring_slots, or what 0 chose): up to\n"
                             "ring_slots - 1 zero-copy batches may be held across next().")
      .def_property_readonly("batches_in_epoch", &PyReader::batches_in_epoch,
                             "Batches of the current epoch on this rank: len(reader), or after\n"
                             "an elastic load_state_dict what the epoch's rest gives.")
      .def_property_readonly("classes", &PyReader::Classes,
                             "Class names of the (first) label field: classes[label]; [] when\n"
                             "the dataset has none.")
      .def_property_readonly("schema", &PyReader::Schema,
                             "The dataset's schema: {'image': {'encoding', 'layout', 'height',\n"
                             "'width', 'channels'}, 'labels': [{'name', 'classes'}]}.")
      .def_property_readonly("output_shape", &PyReader::OutputShape,
                             "Shape of a full batch's images, before the first batch:\n"
                             "(batch, H, W, C) for NHWC, (batch, C, H, W) for NCHW.")
      .def_property_readonly("engine", &PyReader::Engine,
                             "The I/O engine in use: what io='auto' chose.")
      .def_property_readonly("fingerprint", &PyReader::fingerprint,
                             "The dataset's fingerprint (16 hex digits): equal on every rank\n"
                             "that reads the same dataset; compare it across ranks.");
}
