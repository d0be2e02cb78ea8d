// The Python module `shardpack`: shardpack.Reader over the C++ reader.
// docs/python.md is the guide; the docstrings below are the reference.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cctype>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/errors.h"
#include "python/args.h"
#include "python/contact_sheet.h"
#include "python/py_dataset.h"
#include "python/py_reader.h"
#include "python/py_writer.h"
#include "reader/option_table.h"
#include "shardpack/reader.h"

namespace shardpack::python {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

[[noreturn]] void BadChoice(const char* name, const std::string& value, const char* choices) {
  ThrowStatus(absl::InvalidArgumentError(absl::StrCat(name, "='", common::Excerpt(value),
                                                      "' is not one of ", choices)));
}

template <typename T>
T Unwrap(absl::StatusOr<T> v) {
  if (!v.ok()) ThrowStatus(v.status());
  return *std::move(v);
}

// "cpu" -> -1, "cuda" -> 0, "cuda:N" -> N.
int ParseDevice(const std::string& device) {
  const std::string d = Lower(device);
  if (d == "cpu") return -1;
  if (d == "cuda") return 0;
  int n = -1;
  if (d.rfind("cuda:", 0) == 0 && absl::SimpleAtoi(d.substr(5), &n) && n >= 0) return n;
  BadChoice("device", device, "cpu, cuda, cuda:N");
}

// A method of no arguments: any given is a TypeError naming the method.
template <typename Result>
auto NoArguments(const char* name, Result (PyReader::*method)() const) {
  return [name, method](const PyReader& r, const py::args& args, const py::kwargs& kwargs) {
    CallArgs(name, args, kwargs, {});
    return (r.*method)();
  };
}

// The Python Reader's keywords, in the table's order (reader/option_table.h).
// Rows without one are C++ only: a mixture's sources come as a list `path`,
// and ReaderOptions::storage (a Storage shared by readers) has no keyword,
// each shardpack.Reader making its own from cache_dir and cache_bytes.
std::vector<std::string> ReaderKeywords() {
  std::vector<std::string> names;
  for (const reader::OptionSpec& s : reader::kOptionTable) {
    if (!s.python.empty()) names.emplace_back(s.python);
  }
  return names;
}

// A text keyword's default: its row's python_default without the quotes
// docs/python.md writes around it (`"none"` is none).
std::string_view TextDefault(const char* name) {
  const std::string_view d = reader::FindOption(name).python_default;
  SP_CHECK(d.size() >= 4 && d.starts_with("`\"") && d.ends_with("\"`"));
  return d.substr(2, d.size() - 4);
}

// Reader(path, **keywords): each argument checked and named (python/args.h);
// one not given keeps ReaderOptions' default.
std::unique_ptr<PyReader> MakeReader(const py::args& args, const py::kwargs& kwargs) {
  const CallArgs a("Reader", args, kwargs, ReaderKeywords(), 1, 1);
  // A text keyword, or its default as the option table says it.
  auto str = [&](const char* name) {
    py::object v = a[name];
    return v ? StrArg(v, name) : std::string(TextDefault(name));
  };
  ReaderOptions o;
  // A list or tuple is a mixture; anything else one dataset's path.
  if (PyList_Check(a["path"].ptr()) || PyTuple_Check(a["path"].ptr())) {
    o.sources = SourcesArg(a["path"], "path");
  } else {
    o.path = PathArg(a["path"], "path");
  }
  if (py::object v = a["epoch_samples"]) o.epoch_samples = UintArg(v, "epoch_samples");
  o.label_space = Unwrap(ParseLabelSpace(str("label_space")));
  for (auto [name, field] : {std::pair<const char*, int*>{"batch_size", &o.batch_size},
                             {"rank", &o.rank},
                             {"world_size", &o.world_size},
                             {"threads", &o.threads},
                             {"ring_slots", &o.ring_slots}}) {
    if (py::object v = a[name]) *field = OptionInt(v, name);
  }
  for (auto [name, field] : {std::pair<const char*, uint64_t*>{"seed", &o.seed},
                             {"shuffle_bytes", &o.shuffle_bytes},
                             {"read_ahead_bytes", &o.read_ahead_bytes}}) {
    if (py::object v = a[name]) *field = UintArg(v, name);
  }
  if (py::object v = a["cache_dir"]) o.cache_dir = PathArg(v, "cache_dir");
  if (py::object v = a["cache_bytes"]) {
    o.cache_bytes = static_cast<int64_t>(std::min<uint64_t>(UintArg(v, "cache_bytes"), INT64_MAX));
  }
  if (py::object v = a["shuffle"]) o.shuffle = BoolArg(v, "shuffle");
  if (py::object v = a["mean"]) o.mean = TripleArg(v, "mean");
  if (py::object v = a["std"]) o.std = TripleArg(v, "std");
  if (py::object v = a["fields"]) o.fields = NamesArg(v, "fields");
  if (py::object v = a["image_fields"]) o.image_fields = NamesArg(v, "image_fields");
  const std::string ragged_arg = str("ragged"), ragged = Lower(ragged_arg);
  if (ragged != "offsets" && ragged != "list") BadChoice("ragged", ragged_arg, "offsets, list");
  const bool copy = a["copy"] ? BoolArg(a["copy"], "copy") : false;
  const bool indices = a["indices"] ? BoolArg(a["indices"], "indices") : false;
  o.transform = Unwrap(ParseTransform(str("transform")));
  o.io = Unwrap(ParseIoEngine(str("io")));
  o.remainder = Unwrap(ParseRemainder(str("remainder")));
  o.layout = Unwrap(ParseOutputLayout(str("layout")));
  o.on_corrupt = Unwrap(ParseOnCorrupt(str("on_corrupt")));
  o.device = ParseDevice(str("device"));
  // On a device, float output is made there by the finish kernel from uint8
  // (a quarter of the bytes on the bus); on the host, by the transform.
  const std::string dtype_arg = str("dtype"), dtype = Lower(dtype_arg);
  if (dtype == "uint8") o.dtype = DType::kUint8;
  else if (dtype == "float32" && o.device >= 0) o.device_dtype = DeviceDType::kFloat32;
  else if (dtype == "float32") o.dtype = DType::kFloat32;
  else if (dtype == "float16" && o.device >= 0) o.device_dtype = DeviceDType::kFloat16;
  else BadChoice("dtype", dtype_arg, "uint8, float32, float16 (float16 with device='cuda')");
  const std::string output_arg = str("output"), output = Lower(output_arg);
  Output out = Output::kNumpy;
  if (output == "torch") out = Output::kTorch;
  else if (output != "numpy") BadChoice("output", output_arg, "numpy, torch");
  return std::make_unique<PyReader>(o, copy, indices, out,
                                    ragged == "list" ? Ragged::kList : Ragged::kOffsets);
}

constexpr char kReaderDoc[] = R"doc(
Reader(path, *, batch_size=256, shuffle=True, seed=0, rank=-1, world_size=-1,
       transform="none", threads=0, ring_slots=0, shuffle_bytes=0,
       read_ahead_bytes=32 MiB, io="auto", remainder="drop", layout="NHWC",
       dtype="uint8", mean=(0, 0, 0), std=(1, 1, 1), on_corrupt="error",
       copy=False, indices=False, output="numpy", device="cpu",
       epoch_samples=0, label_space="shared", cache_dir=None, cache_bytes=None,
       fields=None, image_fields=None, ragged="offsets")

An iterable of (images, labels) batches from a shardpack dataset (a directory
with manifest.json, or one .shard file, or a dataset in an object store:
"s3://bucket/prefix/" or "https://host/path/", read through a local cache of
checked blocks in cache_dir within cache_bytes; None: SHARDPACK_CACHE_DIR and
SHARDPACK_CACHE_BYTES, else ~/.cache/shardpack and 16 GiB; docs/reader.md,
"Datasets in an object store"; stats()["remote"] says what it fetched).
Iterating runs the rest of the current epoch; the next iteration runs the
next epoch (or call set_epoch).

A mixture: path is a list of sources, each a dict {"path": ...} with exactly
one of "weight" (a share, > 0, of what epoch_samples leaves after the other
sources), "repeat" (this many times its records an epoch, > 0, at most 1024)
or "choose" (exactly this many samples an epoch). Each source is an endless
stream of its own epochs, so every record is drawn once per epoch of its
source; every batch holds floor or ceil of its share of each source, every
rank the same counts. epoch_samples: samples an epoch draws, all ranks
together (0: the sum of the sources' records). label_space: "shared" (the
sources' label fields are the same), "offset" (each source's labels shifted
past the classes of the sources before it), "source" (one more label: the
source's index). The sources property says the counts resolved, and
stats()["source_samples"] the samples delivered from each. Record indices
run on from one source to the next. docs/reader.md, "Mixtures".

images: [batch, H, W, C] (NHWC) or [batch, C, H, W] (NCHW), uint8 or float32
((pixel / 255 - mean) / std). labels: int64 [batch] ([batch, L] when the
dataset has L > 1 labels). indices=True adds a third element: int64 [batch]
of the samples' record indices in the dataset.

A dataset of fields (or fields= / image_fields= given): each item is a dict
of the fields delivered (fields: a list of names, default all). Fixed-shape
fields (labels, arrays of a fixed shape, transformed images) are arrays
[batch, ...]; strings are lists of str, JSON lists of parsed objects (None
where absent); other variable-length fields (arrays whose first dimension
varies, bytes, images delivered as stored) are (values, offsets) with
ragged="offsets", sample i being values[offsets[i]:offsets[i + 1]], or a
list of per-sample arrays with ragged="list". image_fields: the image fields
the transform applies to ("NAME", "NAME:linear", "NAME:nearest"); the first
is the images, the others take its crop window and flip. "__crop__" (y, x,
h, w in source pixels, float32 [batch, 4]), "__size__" (source height and
width, int32 [batch, 2]) and "__flip__" (uint8 [batch]) say where the
images came from; "__present__" holds a uint8 [batch] mask for each optional
field; "__labels__" the labels as a classic item has them; "__index__" the
record indices with indices=True. docs/python.md, "Fields".

output="numpy" gives numpy arrays, output="torch" torch tensors (through
DLPack, no copy). copy=False (the default): the arrays view the reader's
ring slot. They stay valid as long as they live, but the batch delivered
ring_slots steps before must be freed before the next batch can be built
into its slot: next() raises shardpack.Error rather than wait if it is not.
ring_slots=0 (the default): the reader chooses (docs/reader.md,
ring_slots); the reader's ring_slots property says how many.
shuffle_bytes=0 (the default): the reader chooses the shuffle's budget, the
dataset whole when a rank's share is at most 256 MiB, else a 32 MiB window
(docs/reader.md, Shuffle); the shuffle_bytes property says which.
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

Errors raise TypeError (an argument of the wrong type), ValueError (a value out
of range), FileNotFoundError, shardpack.DataLossError (damaged data, naming shard
and offset) or shardpack.Error; each message names the argument or the file.
The GIL is released while next() waits for a batch, and Ctrl-C interrupts that
wait (KeyboardInterrupt). Not thread-safe: iterate from one thread.
)doc";

}  // namespace
}  // namespace shardpack::python

PYBIND11_MODULE(_shardpack, m) {
  namespace py = pybind11;
  using namespace shardpack::python;  // NOLINT: the module's own names
  m.doc() = "The compiled part of the shardpack package: import shardpack instead.";
  m.attr("__version__") = SHARDPACK_VERSION;
  RegisterExceptions(m);
  RegisterDataset(m);
  RegisterWriter(m);
  BindContactSheet(m);

  py::class_<BatchRef, std::shared_ptr<BatchRef>>(
      m, "_BatchRef", "Owns a ring slot while zero-copy arrays of its batch live.");

  // Every argument is checked by python/args.h, which names it: pybind11's
  // signatures would say (*args, **kwargs), so each docstring starts with
  // its own.
  py::options options;
  options.disable_function_signatures();
  py::class_<PyReader>(m, "Reader", kReaderDoc)
      .def(py::init([](const py::args& args, const py::kwargs& kwargs) {
        return MakeReader(args, kwargs);
      }))
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &PyReader::Next, "The next batch; StopIteration at the epoch's end.")
      .def("__len__", &PyReader::Len, "Batches per epoch on this rank (equal on every rank).")
      .def("set_epoch",
           [](PyReader& r, const py::args& args, const py::kwargs& kwargs) {
             const CallArgs a("set_epoch", args, kwargs, {"epoch"}, 1, 1);
             r.SetEpoch(UintArg(a["epoch"], "epoch", shardpack::kMaxEpoch, "0 to 2**63-1"));
           },
           "set_epoch(epoch)\n\n"
           "Start epoch `epoch` (0 to 2**63-1) at its first batch (a no-op when already there).\n"
           "Every zero-copy array of this reader must be freed first when it has to jump.")
      .def("state_dict", NoArguments("state_dict", &PyReader::StateDict),
           "state_dict()\n\n"
           "The position after the last batch delivered: seed, epoch, batch, the dataset's\n"
           "fingerprint, the plan options (world_size, batch_size, remainder, shuffle,\n"
           "shuffle_bytes) and the epoch's earlier segments. The same on every rank; the\n"
           "same keys as the C++ ReaderState::ToJson() (docs/reader.md, The saved state).")
      .def("load_state_dict",
           [](PyReader& r, const py::args& args, const py::kwargs& kwargs) {
             const CallArgs a("load_state_dict", args, kwargs, {"state"}, 1, 1);
             r.LoadStateDict(a["state"]);
           },
           "load_state_dict(state)\n\n"
           "Resume from a state_dict() saved by any rank of any job on this dataset and seed.\n"
           "Same world size and options: the identical rest of the stream. Another world size\n"
           "or batch size (elastic resume): the ranks together deliver what the epoch still\n"
           "owes, once each, in equal batch counts (docs/python.md). Never a replay. Every\n"
           "zero-copy array of this reader must be freed first.")
      .def("stats", NoArguments("stats", &PyReader::Stats),
           "stats()\n\n"
           "Batches, samples, bytes read, skipped samples, stage waits (seconds), the\n"
           "memory budget (bytes) and source_samples: a mixture's samples delivered from\n"
           "each source (in the order of `sources`), [] for one dataset.")
      .def_property_readonly("sources", &PyReader::Sources,
                             "What each source draws an epoch: a list of dicts {'path',\n"
                             "'records', 'per_epoch' (all ranks together), 'per_rank'}; a\n"
                             "mixture's sources in order, else one, the dataset.")
      .def_property_readonly("batch_size", [](const PyReader& r) { return r.options().batch_size; })
      .def_property_readonly("records", &PyReader::records,
                             "Records in the dataset (a mixture: of all its sources).")
      .def_property_readonly("ring_slots", &PyReader::ring_slots,
                             "Slots of the ring (ring_slots, or what 0 chose): up to\n"
                             "ring_slots - 1 zero-copy batches may be held across next().")
      .def_property_readonly("shuffle_bytes", &PyReader::shuffle_bytes,
                             "The shuffle's budget in bytes (shuffle_bytes, or what 0 chose).")
      .def_property_readonly("batches_in_epoch", &PyReader::batches_in_epoch,
                             "Batches of the current epoch on this rank: len(reader), or after\n"
                             "an elastic load_state_dict what the epoch's rest gives.")
      .def_property_readonly("classes", &PyReader::Classes,
                             "Class names of the (first) label field: classes[label]; [] when\n"
                             "the dataset has none.")
      .def_property_readonly("schema", &PyReader::Schema,
                             "The dataset's schema: {'image': {'encoding', 'layout', 'height',\n"
                             "'width', 'channels'}, 'labels': [{'name', 'classes'}]}.")
      .def_property_readonly("fields", &PyReader::Fields,
                             "{name: type} of every field of the dataset, in record order, the\n"
                             "type as text (\"jpeg\", \"f32[n,4]\", \"json?\"), as Dataset.fields:\n"
                             "the names fields= and image_fields= take.")
      .def_property_readonly("output_shape", &PyReader::OutputShape,
                             "Shape of a full batch's images, before the first batch:\n"
                             "(batch, H, W, C) for NHWC, (batch, C, H, W) for NCHW.")
      .def_property_readonly("engine", &PyReader::Engine,
                             "The I/O engine in use: what io='auto' chose.")
      .def_property_readonly("fingerprint", &PyReader::fingerprint,
                             "The dataset's fingerprint (16 hex digits): equal on every rank\n"
                             "that reads the same dataset; compare it across ranks.");
}
