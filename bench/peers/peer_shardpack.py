"""shardpack itself, as the peer modules are called (bench/peers/peer_api.py):
`shardpack cifar` / `shardpack images` (the wheel's tool, beside this Python),
or shardpack.Writer for captions, and shardpack.Reader with its own threads
(docs/python.md)."""

import os
import random
import subprocess
import sys

import shardpack

from peer_api import caption_items

NAME = "shardpack"
VERSION = shardpack.__version__
KINDS = ("cifar", "imagefolder", "caption")
SETTINGS = ("shardpack cifar/images --threads W (defaults: pack-time shuffle, 1 shard); "
            "captions: shardpack.Writer({image: jpeg, label: label, caption: string}) in a "
            "shuffled order (as the packer's pack-time shuffle), W unused; "
            "Reader(transform=cifar-train|rrc:224, threads=W, uint8 NHWC, output=numpy, "
            "default ring and shuffle_bytes; captions: fields=[image, label, caption])")
CAPTION_SCHEMA = {"image": "jpeg", "label": "label", "caption": "string"}


def _tool():
    tool = os.path.join(os.path.dirname(sys.executable), "shardpack")
    if not os.path.exists(tool):
        raise FileNotFoundError(f"{tool}: no shardpack tool beside {sys.executable} "
                                "(bench/peers/setup.sh installs the wheel)")
    return tool


def convert(kind, src, out_dir, workers):
    if kind == "caption":
        items = caption_items(src)
        random.Random(0).shuffle(items)
        with shardpack.Writer(out_dir, CAPTION_SCHEMA, overwrite=True) as w:
            for path, label, caption in items:
                with open(path, "rb") as f:
                    w.write({"__key__": path, "image": f.read(), "label": label,
                             "caption": caption})
        return
    sub = ["cifar", "--cifar", "10"] if kind == "cifar" else ["images"]
    subprocess.run([_tool(), *sub, src, "-o", out_dir, "--overwrite", "-q",
                    "--threads", str(workers)], check=True)


# With a GPU, the reader's own staging delivers the images to it (docs/python.md,
# `device`): pinned ring slots copied on the reader's stream.
DEVICE_LOADER = True


def loader(kind, out_dir, batch_size, workers, seed, device="cpu", **options):
    """`options`: more Reader options (peer_shardpack_32m.py: shuffle_bytes)."""
    transform = "cifar-train" if kind == "cifar" else "rrc:224"
    on_gpu = {} if device == "cpu" else {"device": device, "output": "torch", "copy": False}
    if kind == "caption":
        options["fields"] = list(CAPTION_SCHEMA)
    reader = shardpack.Reader(out_dir, batch_size=batch_size, seed=seed, transform=transform,
                              threads=workers, **on_gpu, **options)
    return _Captioned(reader) if kind == "caption" else reader


class _Captioned:
    """A Reader of the caption dataset as the harness takes it: (images,
    labels, captions) batches of its dict batches; the rest (state_dict,
    set_epoch, ...) is the Reader's."""

    def __init__(self, reader):
        self._reader = reader

    def __iter__(self):
        for batch in self._reader:
            yield batch["image"], batch["label"], batch["caption"]

    def __getattr__(self, name):
        return getattr(self._reader, name)
