"""torchdata.nodes over the input files as they are (no format of its own).

The pipeline of torchdata's "Migrating to torchdata.nodes from torch.utils.data"
guide: SamplerWrapper(RandomSampler) -> ParallelMapper(num_workers, method) ->
Batcher -> collate -> Prefetcher -> Loader. ParallelMapper's method follows its
docstring: "thread" where the work releases the GIL (PIL's JPEG decode and
resize), "process" where it does not (the CIFAR crop and flip are small NumPy
steps in Python, so the map is done a batch at a time: indices are batched
first and a worker gathers and augments a whole batch, in_order=False).
"""

import itertools
import os

import numpy as np

import peers_shared as shared

NAME = "torchdata"
try:
    import torch
    import torchdata
    import torchdata.nodes as tn
    VERSION = torchdata.__version__
except ImportError as e:  # the table records the row as unsupported
    tn = None
    VERSION = f"not installed ({e})"

SETTINGS = ("torchdata.nodes: SamplerWrapper(RandomSampler) -> ParallelMapper(num_workers="
            "workers, in_order=False; cifar: method=process over index batches; "
            "imagefolder: method=thread per file, PIL decode) -> Batcher -> Prefetcher("
            "prefetch_factor=2*workers) -> Loader")


def convert(kind, src, out_dir, workers):
    """torchdata reads the files themselves: out_dir only names them."""
    shared.require(NAME, kind, tn, VERSION)
    shared.write_source(out_dir, src)


class _CifarBatch:
    """Gathers and augments a batch of record indices (picklable for method=process)."""

    def __init__(self, path, seed):
        self.path = path
        self.seed = seed
        self.records = None
        self.calls = itertools.count()

    def __getstate__(self):
        return {"path": self.path, "seed": self.seed}

    def __setstate__(self, state):
        self.__init__(state["path"], state["seed"])

    def __call__(self, indices):
        if self.records is None:
            self.records = shared.cifar_records(self.path)
        idx = np.sort(np.asarray(indices, np.int64))
        rng = np.random.default_rng([self.seed, int(idx[0]), os.getpid(), next(self.calls)])
        images, labels = shared.cifar_split(self.records[idx])
        return shared.cifar_augment_batch(images, rng), labels


class _JpegSample:
    def __init__(self, paths, labels, seed):
        self.paths = paths
        self.labels = labels
        self.seed = seed
        self.calls = itertools.count()

    def __call__(self, index):
        rng = np.random.default_rng([self.seed, index, next(self.calls)])
        with open(self.paths[index], "rb") as f:
            data = f.read()
        return shared.rrc_augment(data, rng), self.labels[index]


def _collate(samples):
    return (np.stack([s[0] for s in samples]),
            np.asarray([s[1] for s in samples], np.int64))


def loader(kind, out_dir, batch_size, workers, seed):
    shared.require(NAME, kind, tn, VERSION)
    src = shared.read_source(out_dir)
    generator = torch.Generator()
    generator.manual_seed(seed)
    if kind == "cifar":
        n = shared.cifar_records(src).shape[0]
        node = tn.SamplerWrapper(torch.utils.data.RandomSampler(range(n), generator=generator))
        node = tn.Batcher(node, batch_size=batch_size, drop_last=False)
        node = tn.ParallelMapper(node, map_fn=_CifarBatch(src, seed), num_workers=workers,
                                 in_order=False, method="process")
    else:
        paths, labels = shared.imagefolder_files(src)
        node = tn.SamplerWrapper(torch.utils.data.RandomSampler(range(len(paths)),
                                                                generator=generator))
        node = tn.ParallelMapper(node, map_fn=_JpegSample(paths, labels, seed),
                                 num_workers=workers, in_order=False, method="thread")
        node = tn.Batcher(node, batch_size=batch_size, drop_last=False)
        node = tn.Mapper(node, _collate)
    node = tn.Prefetcher(node, prefetch_factor=2 * workers)
    return tn.Loader(node)
