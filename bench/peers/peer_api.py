"""The interface every loader module of bench/peers/ follows, and what they share.

bench/peers/peer_bench.py loads each module by name (bench/peers/peer_NAME.py;
the prefix keeps a module from shadowing the package it measures: a file
webdataset.py would hide the webdataset package) and calls:

    NAME = "webdataset"          # the row label
    VERSION = "1.0.2"            # the package's __version__, read at import
    SETTINGS = "..."             # the documented fastest settings used, one line

    KINDS = ("cifar", "imagefolder", "caption")   # optional: the kinds the
                                 # module runs; default ("cifar", "imagefolder");
                                 # the harness makes any other an Unsupported row

    def convert(kind, src, out_dir, workers) -> None
        # kind "cifar": src is a CIFAR-10 binary file (3073-byte records:
        #   1 label byte, 3072 planar RGB bytes), class-sorted;
        # kind "imagefolder": src is an ImageFolder root (class dirs of .jpg);
        # kind "caption": the same with a caption beside each image
        #   (CLASS/NAME.txt beside CLASS/NAME.jpg, UTF-8; caption_items).
        # Writes the peer's own format into out_dir (which exists, empty) with
        # the peer's own tool, using `workers` processes or threads where the
        # tool has that knob.

    def loader(kind, out_dir, batch_size, workers, seed) -> iterable
        # One epoch per iter(): (images, labels) batches of `batch_size`
        # (the short last batch dropped or kept, the peer's default), images
        # uint8 (numpy or torch, NHWC or NCHW), labels integers, with the
        # standard augmentation (cifar: pad-4 random crop + random flip;
        # imagefolder: RandomResizedCrop(224) + flip), shuffled with `seed`,
        # `workers` threads or worker processes (the peer's own knob).
        # kind "caption": (images, labels, captions) batches, the images as
        # imagefolder's, captions a list of str (the sample's caption).

    DEVICE_LOADER = True         # optional: loader(..., device="cuda") puts the
                                 # images on that GPU itself (peer_bench.py
                                 # run --device cuda); without it the harness
                                 # copies each host batch there

A module that cannot run a kind (not installed, not buildable, no such
feature) raises Unsupported("reason: the error") from convert or loader, or
at import; the table records the reason in that row.

The harness runs every convert and every loader in a subprocess of its own,
pinned with taskset, and measures from outside (wall time, the RSS of the
whole process tree); a module only does the work.
"""

import io
import math
import os
import random
import zlib

import numpy as np

CIFAR_RECORD = 1 + 3 * 32 * 32

# Set by peer_bench.py's resume check only (peer_resume.deterministic_augment,
# through the environment, so that worker processes a peer spawns see it too):
# the augmentations then draw from a generator seeded by the image's own bytes,
# so the augmented pixels are a function of the sample and a resumed stream can
# be compared pixel for pixel (the per-process generators of the peers' workers
# are in no state_dict). Never set for the timed runs.
DETERMINISTIC_ENV = "SHARDPACK_PEER_DETERMINISTIC_AUGMENT"
DETERMINISTIC_AUGMENT = os.environ.get(DETERMINISTIC_ENV) == "1"


class Unsupported(Exception):
    """A peer cannot run this row on this machine: the message says why."""


def read_cifar(src):
    """A CIFAR-10 binary file -> (images uint8 [N, 32, 32, 3] NHWC, labels int64 [N])."""
    raw = np.fromfile(src, dtype=np.uint8)
    if raw.size == 0 or raw.size % CIFAR_RECORD != 0:
        raise ValueError(f"{src}: {raw.size} bytes is not a whole number of "
                         f"{CIFAR_RECORD}-byte CIFAR-10 records")
    records = raw.reshape(-1, CIFAR_RECORD)
    labels = records[:, 0].astype(np.int64)
    images = records[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), labels


def cifar_augment(image, rng):
    """The CIFAR train augmentation on one uint8 HWC image, in numpy: pad 4
    (zeros) + random 32x32 crop + random horizontal flip; as
    torchvision's RandomCrop(32, padding=4) + RandomHorizontalFlip. For the
    peers whose documentation applies a per-sample transform (PyPI's
    torchvision does not work beside torch 2.13 here, so no torchvision)."""
    if DETERMINISTIC_AUGMENT:
        rng = random.Random(zlib.crc32(image.tobytes()))
    dy, dx = rng.randrange(9), rng.randrange(9)
    out = np.zeros_like(image)
    # The crop window [dy-4, dy+28) x [dx-4, dx+28) of the unpadded image.
    y0, x0 = max(dy - 4, 0), max(dx - 4, 0)
    y1, x1 = min(dy + 28, 32), min(dx + 28, 32)
    out[y0 - dy + 4:y1 - dy + 4, x0 - dx + 4:x1 - dx + 4] = image[y0:y1, x0:x1]
    if rng.random() < 0.5:
        out = out[:, ::-1]
    return np.ascontiguousarray(out)


def imagefolder_items(root):
    """An ImageFolder root -> sorted [(path, label)], the classes being the
    sorted subfolder names (as torchvision's ImageFolder numbers them)."""
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    if not classes:
        raise ValueError(f"{root}: no class folders (an ImageFolder root has ROOT/CLASS/FILE)")
    items = []
    for label, name in enumerate(classes):
        folder = os.path.join(root, name)
        for f in sorted(os.listdir(folder)):
            items.append((os.path.join(folder, f), label))
    return items


DEFAULT_KINDS = ("cifar", "imagefolder")


def caption_items(root):
    """An ImageFolder root with a caption beside each image (CLASS/NAME.txt
    beside CLASS/NAME.jpg) -> sorted [(jpeg path, label, caption str)]."""
    items = []
    for path, label in imagefolder_items(root):
        stem, ext = os.path.splitext(path)
        if ext != ".jpg":
            continue
        with open(stem + ".txt", encoding="utf-8") as f:
            items.append((path, label, f.read()))
    return items


def _randint(rng, low, high):
    """An int in [low, high] from a random.Random or a numpy Generator."""
    return int(rng.integers(low, high + 1)) if hasattr(rng, "integers") else rng.randint(low, high)


def rrc_box(rng, width, height, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """torchvision's RandomResizedCrop.get_params: (left, top, crop_w, crop_h), ten
    tries, else the center crop. `rng` is a random.Random or a numpy Generator."""
    area = width * height
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target = area * rng.uniform(scale[0], scale[1])
        aspect = math.exp(rng.uniform(log_ratio[0], log_ratio[1]))
        w = int(round(math.sqrt(target * aspect)))
        h = int(round(math.sqrt(target / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return _randint(rng, 0, width - w), _randint(rng, 0, height - h), w, h
    in_ratio = width / height
    if in_ratio < ratio[0]:
        w, h = width, int(round(width / ratio[0]))
    elif in_ratio > ratio[1]:
        w, h = int(round(height * ratio[1])), height
    else:
        w, h = width, height
    return (width - w) // 2, (height - h) // 2, w, h


def rrc_augment(jpeg, rng, size=224):
    """The ImageNet train augmentation on one encoded image (bytes), with
    Pillow: decode, RandomResizedCrop(size) (rrc_box; bilinear) + random
    horizontal flip -> uint8 [size, size, 3] HWC. `rng`: a random.Random or a
    numpy Generator."""
    from PIL import Image
    if DETERMINISTIC_AUGMENT:
        rng = random.Random(zlib.crc32(jpeg))
    with Image.open(io.BytesIO(jpeg)) as image:
        left, top, w, h = rrc_box(rng, *image.size)
        out = image.convert("RGB").resize((size, size), Image.BILINEAR,
                                          box=(left, top, left + w, top + h))
    if rng.random() < 0.5:
        out = out.transpose(Image.FLIP_LEFT_RIGHT)
    return np.asarray(out)


def worker_rng(seed):
    """A random.Random for this process, for cifar_augment (Python's own
    generator: a draw costs far less than a numpy Generator call). A
    DataLoader worker gets its own stream from torch's per-worker seed; the
    main process one from `seed`."""
    try:
        import torch.utils.data
        info = torch.utils.data.get_worker_info()
        if info is not None:
            return random.Random(f"{seed}:{info.id}:{info.seed}")
    except ImportError:
        pass
    return random.Random(f"{seed}:main")


def files_under(path):
    """Every regular file under `path`, or `path` itself when it is a file (for
    bytes on disk and cold cache)."""
    if os.path.isfile(path):
        yield path
        return
    for top, _, names in os.walk(path):
        for name in names:
            yield os.path.join(top, name)


_torchvision_lib = None


def torchvision_shim():
    """Lets PyPI's torchvision 0.28.0 import beside torch 2.13.0+cpu (for
    mosaicml-streaming, which imports it at import time). That wheel's _C.so
    is linked against CUDA torch (libtorch_cuda.so), so its ops never load,
    and its _meta_registrations then fails on register_fake("torchvision::nms")
    ("operator torchvision::nms does not exist"). Defining the two schemas
    it registers fakes for, with no kernels, lets the import finish; nothing
    in the benchmarks calls a torchvision op."""
    global _torchvision_lib
    if _torchvision_lib is not None:
        return
    import torch
    _torchvision_lib = torch.library.Library("torchvision", "DEF")
    for op in ("nms", "qnms"):
        try:
            _torchvision_lib.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) "
                                    "-> Tensor")
        except RuntimeError:  # already defined: torchvision's own ops did load
            pass
