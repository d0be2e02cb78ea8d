"""NVIDIA DALI, CPU pipelines only (device_id=None: no GPU is touched).

The package is nvidia-dali-cuda130: a CUDA build whatever the device, about
270 MB of wheels to download (DALI 199 MB, nvImageCodec, nvCOMP, nvJPEG,
nvJPEG2000, nvTIFF) and about 600 MB installed; its CPU operators need no GPU.

imagefolder: DALI reads the folder as it is (convert only names it), with the
  operators of DALI's ResNet-50 training example moved to the CPU:
  fn.readers.file(file_root, random_shuffle=True, pad_last_batch=True) ->
  fn.decoders.image_random_crop(device="cpu", RandomResizedCrop's area and
  aspect ranges; DALI's fused decode + crop decodes only the region) ->
  fn.resize(224 x 224) -> fn.flip(horizontal=coin_flip).
cifar: DALI has no reader for the CIFAR binary, so it is fed with its
  parallel external source (parallel=True, batch mode with batch_info: a
  picklable callable that returns batch `iteration` of epoch `epoch_idx`
  from a memmap of the file, shuffled by a seeded permutation) in
  py_num_workers=workers Python worker processes (forked), so the batches
  are assembled beside the pipeline, not on the main thread (convert only
  names the file); fn.crop(40 x 40, out_of_bounds_policy=
  "pad") pads 4 zeros around, then fn.crop_mirror_normalize takes a random
  32 x 32 window (9 positions a side) with a random mirror, uint8 CHW.
The pipeline runs num_threads=workers CPU threads, prefetch_queue_depth=2
(DALI's default), executed pipelined and asynchronously (the defaults).

With a GPU (peer_bench.py run --device cuda; not yet run on one): device_id
is the GPU, the JPEGs are decoded by the mixed decoder (nvJPEG,
decoders.image_random_crop(device="mixed")) and resized and flipped there;
the CIFAR pixels go to the GPU (.gpu()) before the crops; batches reach
torch through DALI's DALIGenericIterator, as its PyTorch examples do.
"""

import math

import numpy as np

import peers_shared as shared

NAME = "dali"
try:
    import nvidia.dali as dali
    import nvidia.dali.fn as fn
    import nvidia.dali.types as types
    VERSION = dali.__version__
except ImportError as e:
    dali = None
    VERSION = f"not installed ({e})"

SETTINGS = ("CPU pipeline (device_id=None), num_threads=workers, prefetch_queue_depth=2, "
            "exec_pipelined+exec_async; imagefolder: readers.file(random_shuffle=True, "
            "initial_fill=1024, pad_last_batch=True) -> decoders.image_random_crop(cpu) -> "
            "resize(224,224) -> flip(coin_flip); cifar: parallel external_source over the "
            "binary (batch_info callable, py_num_workers=workers, fork; seeded permutation) "
            "-> crop(40,pad) -> crop_mirror_normalize(32, random pos, mirror, uint8)")


def convert(kind, src, out_dir, workers):
    """DALI reads the ImageFolder and the CIFAR binary as they are: out_dir names them."""
    shared.require(NAME, kind, dali, VERSION)
    shared.write_source(out_dir, src)


def _device_id(device):
    """DALI's device_id: None for CPU pipelines, N for cuda:N."""
    if device == "cpu":
        return None
    return int(device.split(":", 1)[1]) if ":" in device else 0


def _imagefolder_pipe(root, batch_size, workers, seed, device="cpu"):
    on_gpu = device != "cpu"

    @dali.pipeline_def(batch_size=batch_size, num_threads=workers, device_id=_device_id(device),
                       seed=seed, prefetch_queue_depth=2)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, seed=seed,
                                        pad_last_batch=True, name="Reader")
        images = fn.decoders.image_random_crop(jpegs, device="mixed" if on_gpu else "cpu",
                                               output_type=types.RGB,
                                               random_area=[0.08, 1.0],
                                               random_aspect_ratio=[3 / 4, 4 / 3],
                                               num_attempts=10)
        images = fn.resize(images, resize_x=shared.CROP, resize_y=shared.CROP)
        images = fn.flip(images, horizontal=fn.random.coin_flip())
        return images, labels
    return pipe()


class _CifarBatches:
    """The parallel external source's callback (batch mode, batch_info=True):
    batch `info.iteration` of epoch `info.epoch_idx`, StopIteration past the
    epoch's end. Runs in DALI's Python workers; each maps the file itself."""

    def __init__(self, path, n, batch_size, seed):
        self.path, self.n, self.batch_size, self.seed = path, n, batch_size, seed
        self.records = self.order = self.epoch = None

    def __call__(self, info):
        lo = info.iteration * self.batch_size
        if lo >= self.n:
            raise StopIteration
        if self.records is None:
            self.records = shared.cifar_records(self.path)
        if self.epoch != info.epoch_idx:
            self.epoch = info.epoch_idx
            self.order = np.random.default_rng([self.seed, self.epoch]).permutation(self.n)
        rows = self.records[np.sort(self.order[lo:lo + self.batch_size])]
        images, labels = shared.cifar_split(rows)
        return np.ascontiguousarray(images), labels


def _cifar_pipe(path, batch_size, workers, seed, device="cpu"):
    n = shared.cifar_records(path).shape[0]
    source = _CifarBatches(path, n, batch_size, seed)

    pad = 32 + 2 * shared.CIFAR_PAD
    positions = [i / (2 * shared.CIFAR_PAD) for i in range(2 * shared.CIFAR_PAD + 1)]

    @dali.pipeline_def(batch_size=batch_size, num_threads=workers, device_id=_device_id(device),
                       seed=seed, prefetch_queue_depth=2, py_num_workers=workers,
                       py_start_method="fork")
    def pipe():
        images, labels = fn.external_source(source=source, num_outputs=2, batch=True,
                                            batch_info=True, parallel=True,
                                            layout=["CHW", ""],
                                            dtype=[types.UINT8, types.INT64])
        if device != "cpu":
            images = images.gpu()
        images = fn.crop(images, crop=(pad, pad), out_of_bounds_policy="pad", fill_values=0)
        images = fn.crop_mirror_normalize(images, crop=(32, 32),
                                          crop_pos_x=fn.random.uniform(values=positions),
                                          crop_pos_y=fn.random.uniform(values=positions),
                                          mirror=fn.random.coin_flip(), dtype=types.UINT8,
                                          output_layout="CHW")
        return images, labels
    return pipe(), n


class _Loader:
    """Iterates one epoch per `for`, over one pipeline built at the first."""

    def __init__(self, kind, src, batch_size, workers, seed, device="cpu"):
        self.kind, self.src = kind, src
        self.batch_size, self.workers, self.seed = batch_size, workers, seed
        self.device = device
        self.pipe = None

    def _build(self):
        if self.kind == "cifar":
            self.pipe, self.size = _cifar_pipe(self.src, self.batch_size, self.workers, self.seed,
                                               self.device)
        else:
            self.pipe = _imagefolder_pipe(self.src, self.batch_size, self.workers, self.seed,
                                          self.device)
        self.pipe.build()
        if self.kind == "imagefolder":
            self.size = self.pipe.epoch_size("Reader")
        if self.device != "cpu":
            from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy
            reader = {"reader_name": "Reader"} if self.kind == "imagefolder" else {}
            self.torch_iter = DALIGenericIterator(
                self.pipe, ["images", "labels"], last_batch_policy=LastBatchPolicy.PARTIAL,
                auto_reset=True, **reader)

    def __iter__(self):
        if self.pipe is None:
            self._build()
        if self.device != "cpu":
            for (batch,) in self.torch_iter:  # one dict a pipeline (one GPU)
                yield batch["images"], batch["labels"].reshape(-1)
            return
        if self.kind == "cifar":
            # the source's StopIteration ends the epoch: run until the pipeline raises it
            # (prefetching has already met it), then reset for the next one.
            while True:
                try:
                    images, labels = self.pipe.run()
                except StopIteration:
                    self.pipe.reset()
                    return
                yield images.as_array(), labels.as_array().reshape(-1).astype(np.int64)
        left = self.size
        for _ in range(math.ceil(self.size / self.batch_size)):
            images, labels = self.pipe.run()
            labels = labels.as_array().reshape(-1).astype(np.int64)
            take = min(left, len(labels))  # pad_last_batch repeats the last file
            left -= take
            yield images.as_array()[:take], labels[:take]


# With a GPU, DALI's own pipeline puts the batches there (mixed decoder).
DEVICE_LOADER = True


def loader(kind, out_dir, batch_size, workers, seed, device="cpu"):
    shared.require(NAME, kind, dali, VERSION)
    return _Loader(kind, shared.read_source(out_dir), batch_size, workers, seed, device)
