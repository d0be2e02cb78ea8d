"""LitData (litdata 0.2.76): chunks written by litdata.optimize (W worker
processes, chunk_bytes 64MB), read with StreamingDataset(shuffle=True, seed,
transform=augmentation) and StreamingDataLoader(num_workers=W), as its README
recommends."""

from peer_api import cifar_augment, imagefolder_items, read_cifar, rrc_augment, worker_rng

import litdata  # noqa: E402

NAME = "litdata"
VERSION = litdata.__version__
CHUNK_INPUTS = 1000  # records per input of optimize's fn
SETTINGS = ("optimize(fn yields {image: uint8 HWC ndarray or the JPEG file's bytes, label: int}, "
            "num_workers=W, "
            "chunk_bytes=64MB); StreamingDataset(shuffle=True, seed, transform=augment) + "
            "StreamingDataLoader(batch_size=B, num_workers=W)")

_images = {}


def _files(item):
    """optimize's fn, imagefolder: one input (path, label) -> its record."""
    path, label = item
    with open(path, "rb") as f:
        return {"image": f.read(), "label": label}


def _records(item):
    """optimize's fn, cifar: one input (src, start, stop) -> its records."""
    src, start, stop = item
    if src not in _images:
        _images[src] = read_cifar(src)
    images, labels = _images[src]
    for i in range(start, stop):
        yield {"image": images[i], "label": int(labels[i])}


def convert(kind, src, out_dir, workers):
    if kind == "imagefolder":
        litdata.optimize(fn=_files, inputs=imagefolder_items(src), output_dir=out_dir,
                         chunk_bytes="64MB", num_workers=workers, mode="overwrite")
        return
    n = len(read_cifar(src)[1])
    inputs = [(src, a, min(a + CHUNK_INPUTS, n)) for a in range(0, n, CHUNK_INPUTS)]
    litdata.optimize(fn=_records, inputs=inputs, output_dir=out_dir, chunk_bytes="64MB",
                     num_workers=workers, mode="overwrite")


class _Augment:
    def __init__(self, kind, seed):
        self.augment = rrc_augment if kind == "imagefolder" else cifar_augment
        self.seed = seed
        self.rng = None

    def __call__(self, sample):
        if self.rng is None:
            self.rng = worker_rng(self.seed)
        return self.augment(sample["image"], self.rng), sample["label"]


def loader(kind, out_dir, batch_size, workers, seed):
    dataset = litdata.StreamingDataset(out_dir, shuffle=True, seed=seed,
                                       transform=_Augment(kind, seed))
    return litdata.StreamingDataLoader(dataset, batch_size=batch_size, num_workers=workers,
                                       drop_last=True)
