"""shardpack itself, as the peer modules are called (bench/peers/peer_api.py):
`shardpack cifar` / `shardpack images` (the wheel's tool, beside this Python)
and shardpack.Reader with its own threads (docs/python.md)."""

import os
import subprocess
import sys

import shardpack

NAME = "shardpack"
VERSION = shardpack.__version__
SETTINGS = ("shardpack cifar/images --threads W (defaults: pack-time shuffle, 1 shard); "
            "Reader(transform=cifar-train|rrc:224, threads=W, uint8 NHWC, output=numpy, "
            "default ring and shuffle_bytes)")


def _tool():
    tool = os.path.join(os.path.dirname(sys.executable), "shardpack")
    if not os.path.exists(tool):
        raise FileNotFoundError(f"{tool}: no shardpack tool beside {sys.executable} "
                                "(bench/peers/setup.sh installs the wheel)")
    return tool


def convert(kind, src, out_dir, workers):
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
    return shardpack.Reader(out_dir, batch_size=batch_size, seed=seed, transform=transform,
                            threads=workers, **on_gpu, **options)
