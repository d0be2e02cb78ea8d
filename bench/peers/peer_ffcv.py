"""FFCV: its DatasetWriter to a .beton file and its Loader (numba-compiled).

Installing: `pip install ffcv==1.0.2` builds from source and needs
pkg-config, libturbojpeg and OpenCV's headers (pkg-config opencv4). On a bare
Debian 12 here the build fails with "RuntimeError: Could not find required
package: opencv4." (then "... package: opencv."): libopencv-dev (56 Debian
packages) is missing; with it the build succeeds, pulling numba, llvmlite and
opencv-python from PyPI.

convert: DatasetWriter(num_workers=workers) from an indexed dataset of
  (HWC uint8 image, label). cifar: RGBImageField(write_mode="raw") as FFCV's
  CIFAR example does; imagefolder: RGBImageField(write_mode="jpg",
  jpeg_quality=90) with no max_resolution, so the pixels of every file are
  kept (FFCV re-encodes them with OpenCV at the same quality).
loader: Loader(order=RANDOM, os_cache=True (FFCV's advice when the dataset
  fits in memory), num_workers=workers, batches_ahead=3, drop_last=False,
  seed). cifar: SimpleRGBImageDecoder -> RandomHorizontalFlip ->
  RandomTranslate(padding=4, fill=0) (pad-4 random crop), as FFCV's CIFAR
  example; imagefolder: RandomResizedCropRGBImageDecoder((224, 224)) ->
  RandomHorizontalFlip, as FFCV's ImageNet example. Output: uint8 NHWC numpy.
  The first batch includes numba's compilation of the pipeline (3 to 8 s
  here); the table's last two columns (the cold epoch after its first batch,
  a later epoch's first batch) leave it out.
"""

import os

import numpy as np

import peers_shared as shared

NAME = "ffcv"
try:
    from importlib import metadata

    from ffcv.fields import IntField, RGBImageField
    from ffcv.fields.decoders import (IntDecoder, RandomResizedCropRGBImageDecoder,
                                      SimpleRGBImageDecoder)
    from ffcv.loader import Loader, OrderOption
    from ffcv.transforms import RandomHorizontalFlip, RandomTranslate
    from ffcv.writer import DatasetWriter
    VERSION = metadata.version("ffcv")  # ffcv.__version__ still says 0.0.3rc1
except ImportError as e:
    DatasetWriter = None
    VERSION = (f"not installed ({e}); `pip install ffcv==1.0.2` builds from source and "
               "fails without OpenCV's headers: 'RuntimeError: Could not find required "
               "package: opencv4.' (Debian: libopencv-dev)")

SETTINGS = ("DatasetWriter(num_workers=workers), cifar RGBImageField(raw), imagefolder "
            "RGBImageField(jpg, q90, no max_resolution); Loader(order=RANDOM, os_cache=True, "
            "num_workers=workers, batches_ahead=3, drop_last=False); cifar: "
            "SimpleRGBImageDecoder+RandomHorizontalFlip+RandomTranslate(4); imagefolder: "
            "RandomResizedCropRGBImageDecoder(224)+RandomHorizontalFlip")


def _beton(out_dir, kind):
    return os.path.join(out_dir, f"{kind}.beton")


class _Cifar:
    def __init__(self, path):
        self.images, self.labels = shared.cifar_split(shared.cifar_records(path))

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return np.ascontiguousarray(self.images[i].transpose(1, 2, 0)), int(self.labels[i])


class _Folder:
    def __init__(self, root):
        self.paths, self.labels = shared.imagefolder_files(root)

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        from PIL import Image
        with Image.open(self.paths[i]) as image:
            return image.convert("RGB"), int(self.labels[i])


def convert(kind, src, out_dir, workers, image_field=None):
    """`image_field`: the imagefolder field when not every image as a JPEG
    (peer_ffcv_proportion.py)."""
    shared.require(NAME, kind, DatasetWriter, VERSION)
    os.makedirs(out_dir, exist_ok=True)
    if kind == "cifar":
        dataset, image_field = _Cifar(src), RGBImageField(write_mode="raw")
    else:
        dataset = _Folder(src)
        image_field = image_field or RGBImageField(write_mode="jpg", jpeg_quality=90)
    writer = DatasetWriter(_beton(out_dir, kind), {"image": image_field, "label": IntField()},
                           num_workers=workers)
    writer.from_indexed_dataset(dataset)


class _Epochs:
    def __init__(self, loader):
        self.loader = loader

    def __iter__(self):
        for images, labels in self.loader:
            yield images, labels.reshape(-1).astype(np.int64)


def loader(kind, out_dir, batch_size, workers, seed):
    shared.require(NAME, kind, DatasetWriter, VERSION)
    path = _beton(out_dir, kind)
    if not os.path.exists(path):
        raise ValueError(f"{path}: missing; run convert() first")
    if kind == "cifar":
        image = [SimpleRGBImageDecoder(), RandomHorizontalFlip(),
                 RandomTranslate(padding=shared.CIFAR_PAD, fill=(0, 0, 0))]
    else:
        image = [RandomResizedCropRGBImageDecoder((shared.CROP, shared.CROP)),
                 RandomHorizontalFlip()]
    return _Epochs(Loader(path, batch_size=batch_size, num_workers=workers,
                          order=OrderOption.RANDOM, os_cache=True, drop_last=False,
                          batches_ahead=3, seed=seed,
                          pipelines={"image": image, "label": [IntDecoder()]}))
