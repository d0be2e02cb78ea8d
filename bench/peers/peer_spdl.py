"""SPDL's pipeline over the input files as they are (no format of its own).

The structure of SPDL's examples (image_dataloading.py, the "Getting Started"
guide): PipelineBuilder().add_source(...).pipe(op, concurrency=N).aggregate(
batch_size).pipe(collate).add_sink(buffer).build(num_threads=N), with
N = workers threads in one process (SPDL's model: the work releases the GIL).

cifar: the source yields shuffled index batches; the pipe gathers the records
  from a memmap of the binary and augments them (pad-4 crop + flip) in a
  ProcessPoolExecutor of `workers` processes (spawned; SPDL's multi-process
  model for work that holds the GIL, as numpy's fancy indexing of small
  arrays does: as threads, 2 workers ran slower than 1), the batches coming
  back pickled.
imagefolder: the source yields shuffled (path, label); the pipe demuxes the
  JPEG (spdl.io.demux_image, which gives the size), then decodes it through an
  FFmpeg filter graph doing the RandomResizedCrop(224) + flip
  (crop=...,scale=224:224,hflip,format=rgb24). spdl.io needs FFmpeg's shared
  libraries 4-9 (Debian 12: libavdevice59 + libavfilter8, the others come with
  them); without them the kind is Unsupported with the import error.
"""

import concurrent.futures
import multiprocessing
import os

import numpy as np

import peers_shared as shared
from peers_shared import Unsupported

NAME = "spdl"
try:
    from importlib import metadata

    import spdl.pipeline
    VERSION = metadata.version("spdl")
except ImportError as e:
    spdl = None
    VERSION = f"not installed ({e})"

SETTINGS = ("PipelineBuilder: source (shuffled) -> pipe(load+augment, concurrency=workers; "
            "cifar: executor=ProcessPoolExecutor(workers, spawn)) -> "
            "aggregate(batch_size) / collate -> add_sink(buffer_size=2*workers), build("
            "num_threads=workers); imagefolder: spdl.io demux_image + decode_packets with an "
            "FFmpeg filter crop,scale=224:224:flags=bilinear,hflip,format=rgb24")


def _need_io():
    """spdl.io's FFmpeg bindings load lazily: try them now for a clear Unsupported."""
    import spdl.io
    try:
        spdl.io.demux_config()
    except Exception as e:  # RuntimeError: Failed to import libspdl. "..."
        raise Unsupported(f"spdl.io cannot load FFmpeg: {e}") from None


def convert(kind, src, out_dir, workers):
    """SPDL reads the files themselves: out_dir only names them."""
    shared.require(NAME, kind, spdl, VERSION)
    if kind == "imagefolder":
        _need_io()
    shared.write_source(out_dir, src)


def _jpeg_op(seed):
    import spdl.io

    def load(item):
        index, path, label, draw = item
        rng = np.random.default_rng([seed, index, draw])
        packets = spdl.io.demux_image(path)
        left, top, w, h = shared.rrc_box(rng, packets.width, packets.height)
        flip = ",hflip" if rng.random() < 0.5 else ""
        desc = (f"crop={w}:{h}:{left}:{top},scale={shared.CROP}:{shared.CROP}"
                f":flags=bilinear{flip},format=pix_fmts=rgb24")
        frames = spdl.io.decode_packets(packets, filter_desc=desc)
        return spdl.io.to_numpy(spdl.io.convert_frames(frames)), label
    return load


class _CifarLoad:
    """Gathers and augments one index batch; picklable, for the worker
    processes: each maps the binary itself the first time."""

    def __init__(self, path):
        self.path, self.records = path, None

    def __getstate__(self):
        return {"path": self.path}

    def __setstate__(self, state):
        self.path, self.records = state["path"], None

    def __call__(self, item):
        if self.records is None:
            self.records = shared.cifar_records(self.path)
        draw, idx = item
        images, labels = shared.cifar_split(self.records[idx])
        return shared.cifar_augment_batch(images, np.random.default_rng(draw)), labels


def _collate(samples):
    return (np.stack([s[0] for s in samples]), np.asarray([s[1] for s in samples], np.int64))


class _Epoch:
    """Builds and runs the pipeline once per iteration; stops it when done."""

    def __init__(self, build):
        self.build = build

    def __iter__(self):
        pipeline = self.build()
        with pipeline.auto_stop():
            yield from pipeline.get_iterator(timeout=600)


def loader(kind, out_dir, batch_size, workers, seed):
    shared.require(NAME, kind, spdl, VERSION)
    src = shared.read_source(out_dir)
    rng = np.random.default_rng(seed)
    if kind == "cifar":
        n = shared.cifar_records(src).shape[0]
        load = _CifarLoad(src)
        executor = concurrent.futures.ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context("spawn"))

        def source():
            order = rng.permutation(n)
            for lo in range(0, len(order), batch_size):
                yield int(rng.integers(1 << 62)), np.sort(order[lo:lo + batch_size])

        def build():
            return (spdl.pipeline.PipelineBuilder().add_source(source())
                    .pipe(load, concurrency=workers, executor=executor,
                          output_order="completion")
                    .add_sink(2 * workers).build(num_threads=workers))
    else:
        _need_io()
        paths, labels = shared.imagefolder_files(src)
        op = _jpeg_op(seed)

        def source():
            for i in rng.permutation(len(paths)):
                yield int(i), paths[i], labels[i], int(rng.integers(1 << 62))

        def build():
            return (spdl.pipeline.PipelineBuilder().add_source(source())
                    .pipe(op, concurrency=workers, output_order="completion")
                    .aggregate(batch_size).pipe(_collate)
                    .add_sink(2 * workers).build(num_threads=workers))
    return _Epoch(build)
