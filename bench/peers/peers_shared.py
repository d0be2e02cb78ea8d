"""Helpers the peer modules share: the inputs and the standard augmentation.

The two inputs of issue 32 (bench/peers/peer_api.py documents the interface;
the peer modules are bench/peers/peer_NAME.py):
  cifar        a CIFAR-10 binary file: records of 1 label byte + 3072 bytes of
               planar RGB (3 x 32 x 32, CHW).
  imagefolder  an ImageFolder root: one folder per class, .jpg files in it;
               classes are the sorted folder names, labels their indices.

The standard augmentation, written once here so that every peer that has no
operator of its own for it does exactly the same work:
  cifar        pad 4 (zeros) + random 32x32 crop + random horizontal flip, uint8.
  imagefolder  RandomResizedCrop(224) (torchvision's sampling: area 8-100 %,
               aspect 3/4-4/3, 10 tries, else the centre crop) + random
               horizontal flip, uint8 HWC.
Peers with their own operators (DALI, SPDL's FFmpeg filters) use those, with
the same parameters.
"""

import os
import random
import zlib

import numpy as np

import peer_api
from peer_api import CIFAR_RECORD, Unsupported, imagefolder_items, rrc_augment, rrc_box  # noqa: F401

CIFAR_PAD = 4
CROP = 224
SOURCE_FILE = "SOURCE"  # the peers that read the input as it is name it here


def cifar_records(path):
    """The records of a CIFAR-10 binary file as a read-only uint8 memmap [N, 3073]."""
    size = os.path.getsize(path)
    if size == 0 or size % CIFAR_RECORD != 0:
        raise ValueError(f"{path}: {size} bytes is not a whole number of "
                         f"{CIFAR_RECORD}-byte CIFAR-10 records")
    return np.memmap(path, dtype=np.uint8, mode="r").reshape(-1, CIFAR_RECORD)


def cifar_split(records):
    """(images uint8 [B, 3, 32, 32], labels int64 [B]) of CIFAR records [B, 3073]."""
    records = np.asarray(records)
    return (records[:, 1:].reshape(-1, 3, 32, 32),
            records[:, 0].astype(np.int64))


def cifar_augment_batch(images, rng):
    """Pad-4 random crop + random flip of uint8 [B, 3, 32, 32]; a new array."""
    b = images.shape[0]
    padded = np.zeros((b, 3, 32 + 2 * CIFAR_PAD, 32 + 2 * CIFAR_PAD), np.uint8)
    padded[:, :, CIFAR_PAD:CIFAR_PAD + 32, CIFAR_PAD:CIFAR_PAD + 32] = images
    out = np.empty_like(images)
    if peer_api.DETERMINISTIC_AUGMENT:  # the resume check: draws seeded by each image's bytes
        draws = [random.Random(zlib.crc32(image.tobytes())) for image in images]
        ys = [d.randrange(2 * CIFAR_PAD + 1) for d in draws]
        xs = [d.randrange(2 * CIFAR_PAD + 1) for d in draws]
        flips = [d.random() < 0.5 for d in draws]
    else:
        ys = rng.integers(0, 2 * CIFAR_PAD + 1, b)
        xs = rng.integers(0, 2 * CIFAR_PAD + 1, b)
        flips = rng.random(b) < 0.5
    for i in range(b):
        crop = padded[i, :, ys[i]:ys[i] + 32, xs[i]:xs[i] + 32]
        out[i] = crop[:, :, ::-1] if flips[i] else crop
    return out


def cifar_augment_one(image, rng):
    """cifar_augment_batch for one uint8 [3, 32, 32] image."""
    return cifar_augment_batch(image[None], rng)[0]


def imagefolder_files(root):
    """(paths, labels) of the .jpg files of an ImageFolder root (peer_api.imagefolder_items)."""
    items = [(p, label) for p, label in imagefolder_items(root)
             if p.lower().endswith((".jpg", ".jpeg"))]
    if not items:
        raise ValueError(f"{root}: no .jpg files in its class folders")
    return [p for p, _ in items], np.asarray([label for _, label in items], np.int64)


def require(name, kind, module, version):
    """Checks `kind`; raises Unsupported when the peer's package did not import
    (`module` None), `version` saying why."""
    check_kind(name, kind)
    if module is None:
        raise Unsupported(f"{name}: {version}")


def write_source(out_dir, src):
    """The convert of the peers that read the input as it is: out_dir/SOURCE names it."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, SOURCE_FILE), "w") as f:
        f.write(os.path.abspath(src) + "\n")


def read_source(out_dir):
    path = os.path.join(out_dir, SOURCE_FILE)
    try:
        with open(path) as f:
            return f.read().strip()
    except FileNotFoundError:
        raise ValueError(f"{path}: missing; run convert() first") from None


def check_kind(name, kind):
    if kind not in ("cifar", "imagefolder"):
        raise ValueError(f"{name}: kind {kind!r} is neither 'cifar' nor 'imagefolder'")
