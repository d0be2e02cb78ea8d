"""WebDataset (webdataset 1.0.2): tar shards written with wds.ShardWriter,
read with WebDataset + WebLoader as its documentation recommends for speed:
shards shuffled, a sample shuffle buffer, decoding and augmentation in the
workers, batching in the workers (.batched) and WebLoader(batch_size=None)."""

import glob
import io
import os

import numpy as np
import webdataset as wds

from peer_api import Unsupported, cifar_augment, read_cifar, worker_rng

NAME = "webdataset"
VERSION = wds.__version__
SHARD_RECORDS = 5000  # 10 shards of 50,000: at least as many shards as workers
SETTINGS = (f"ShardWriter(maxcount={SHARD_RECORDS}), raw HWC pixel bytes + cls; "
            "WebDataset(shardshuffle=100, seed) .shuffle(5000) .map augment "
            ".batched(B) in the workers, WebLoader(batch_size=None, num_workers=W)")


def convert(kind, src, out_dir, workers):
    if kind != "cifar":
        raise Unsupported("imagefolder: not written yet")
    images, labels = read_cifar(src)
    with wds.ShardWriter(os.path.join(out_dir, "shard-%06d.tar"), maxcount=SHARD_RECORDS,
                         verbose=0) as sink:
        for i in range(len(images)):
            sink.write({"__key__": f"{i:06d}", "u8": images[i].tobytes(),
                        "cls": int(labels[i])})


def _sample(seed):
    rng = None

    def decode(sample):
        nonlocal rng
        if rng is None:
            rng = worker_rng(seed)
        raw, cls = sample
        image = np.frombuffer(raw, dtype=np.uint8).reshape(32, 32, 3)
        return cifar_augment(image, rng), int(cls)
    return decode


def loader(kind, out_dir, batch_size, workers, seed):
    if kind != "cifar":
        raise Unsupported("imagefolder: not written yet")
    shards = sorted(glob.glob(os.path.join(out_dir, "shard-*.tar")))
    if not shards:
        raise FileNotFoundError(f"{out_dir}: no shard-*.tar")
    dataset = (wds.WebDataset(shards, shardshuffle=100, seed=seed)
               .shuffle(5000, seed=seed)
               .to_tuple("u8", "cls")
               .map(_sample(seed))
               .batched(batch_size, partial=False))
    return wds.WebLoader(dataset, batch_size=None, num_workers=workers)
