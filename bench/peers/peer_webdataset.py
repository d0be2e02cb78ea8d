"""WebDataset (webdataset 1.0.2): tar shards written with wds.ShardWriter,
read with WebDataset + WebLoader as its documentation recommends for speed:
shards shuffled, a sample shuffle buffer, decoding and augmentation in the
workers, batching in the workers (.batched) and WebLoader(batch_size=None)."""

import glob
import io
import os

import numpy as np
import webdataset as wds

from peer_api import (caption_items, cifar_augment, imagefolder_items, read_cifar,
                      rrc_augment, worker_rng)

NAME = "webdataset"
VERSION = wds.__version__
KINDS = ("cifar", "imagefolder", "caption")
SHARD_RECORDS = 5000  # 10 shards of 50,000 records
SHARD_FILES = 1000    # 20 shards of 20,000 JPEGs
MIN_SHARDS = 8        # its docs: at least as many shards as workers, on small inputs too
SETTINGS = (f"ShardWriter(maxcount={SHARD_RECORDS} CIFAR records of raw HWC pixel bytes, or "
            f"{SHARD_FILES} JPEGs as their file bytes; at least {MIN_SHARDS} shards) + cls "
            "(+ txt: the caption); "
            "WebDataset(shardshuffle=100, seed) .shuffle(5000) .map(decode + augment) "
            ".batched(B) in the workers, "
            "WebLoader(batch_size=None, num_workers=W)")


def convert(kind, src, out_dir, workers):
    pattern = os.path.join(out_dir, "shard-%06d.tar")
    if kind == "caption":
        items = caption_items(src)
        maxcount = min(SHARD_FILES, -(-len(items) // MIN_SHARDS))
        with wds.ShardWriter(pattern, maxcount=maxcount, verbose=0) as sink:
            for i, (path, label, caption) in enumerate(items):
                with open(path, "rb") as f:
                    sink.write({"__key__": f"{i:08d}", "jpg": f.read(), "cls": label,
                                "txt": caption})
        return
    if kind == "imagefolder":
        items = imagefolder_items(src)
        maxcount = min(SHARD_FILES, -(-len(items) // MIN_SHARDS))
        with wds.ShardWriter(pattern, maxcount=maxcount, verbose=0) as sink:
            for i, (path, label) in enumerate(items):
                with open(path, "rb") as f:
                    sink.write({"__key__": f"{i:08d}", "jpg": f.read(), "cls": label})
        return
    images, labels = read_cifar(src)
    maxcount = min(SHARD_RECORDS, -(-len(images) // MIN_SHARDS))
    with wds.ShardWriter(pattern, maxcount=maxcount, verbose=0) as sink:
        for i in range(len(images)):
            sink.write({"__key__": f"{i:06d}", "u8": images[i].tobytes(),
                        "cls": int(labels[i])})


def _sample(kind, seed):
    rng = None

    def decode(sample):
        nonlocal rng
        if rng is None:
            rng = worker_rng(seed)
        if kind == "caption":
            raw, cls, txt = sample
            return rrc_augment(raw, rng), int(cls), txt.decode("utf-8")
        raw, cls = sample
        if kind == "imagefolder":
            return rrc_augment(raw, rng), int(cls)
        image = np.frombuffer(raw, dtype=np.uint8).reshape(32, 32, 3)
        return cifar_augment(image, rng), int(cls)
    return decode


def loader(kind, out_dir, batch_size, workers, seed):
    shards = sorted(glob.glob(os.path.join(out_dir, "shard-*.tar")))
    if not shards:
        raise FileNotFoundError(f"{out_dir}: no shard-*.tar")
    dataset = (wds.WebDataset(shards, shardshuffle=100, seed=seed)
               .shuffle(5000, seed=seed)
               .to_tuple(*{"cifar": ("u8", "cls"), "imagefolder": ("jpg", "cls"),
                           "caption": ("jpg", "cls", "txt")}[kind])
               .map(_sample(kind, seed))
               .batched(batch_size, partial=False))
    return wds.WebLoader(dataset, batch_size=None, num_workers=workers)
