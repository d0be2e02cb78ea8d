"""MosaicML Streaming (mosaicml-streaming 0.13.0): MDS shards written with
streaming.MDSWriter, read from the local directory with StreamingDataset
(shuffle=True, its default py1e algorithm, batch_size given) and its
StreamingDataLoader, the augmentation in get_item, as its docs show."""

from peer_api import (caption_items, cifar_augment, imagefolder_items, read_cifar,
                      rrc_augment, torchvision_shim, worker_rng)

torchvision_shim()
import streaming  # noqa: E402  (after the shim: it imports torchvision)
from streaming import MDSWriter, StreamingDataLoader, StreamingDataset  # noqa: E402

NAME = "mosaicml-streaming"
VERSION = streaming.__version__
KINDS = ("cifar", "imagefolder", "caption")
SETTINGS = ("MDSWriter(columns ndarray:uint8:32,32,3 or the JPEG file as bytes + int "
            "(+ str: the caption), "
            "no compression, size_limit 64 MB, one writer: W unused); "
            "StreamingDataset(local, shuffle=True, shuffle_algo=py1e, "
            "shuffle_seed, batch_size=B) + StreamingDataLoader(num_workers=W)")


def convert(kind, src, out_dir, workers):
    if kind == "caption":
        columns = {"x": "bytes", "y": "int", "t": "str"}
        with MDSWriter(out=out_dir, columns=columns) as out:
            for path, label, caption in caption_items(src):
                with open(path, "rb") as f:
                    out.write({"x": f.read(), "y": label, "t": caption})
        return
    if kind == "imagefolder":
        # "bytes", not "jpeg": MDS's jpeg encoding re-encodes a PIL image;
        # this keeps the same bytes as every other peer.
        with MDSWriter(out=out_dir, columns={"x": "bytes", "y": "int"}) as out:
            for path, label in imagefolder_items(src):
                with open(path, "rb") as f:
                    out.write({"x": f.read(), "y": label})
        return
    images, labels = read_cifar(src)
    columns = {"x": "ndarray:uint8:32,32,3", "y": "int"}
    with MDSWriter(out=out_dir, columns=columns) as out:
        for i in range(len(images)):
            out.write({"x": images[i], "y": int(labels[i])})


class _Augmented(StreamingDataset):
    def __init__(self, *args, kind="cifar", seed=0, **kwargs):
        super().__init__(*args, **kwargs)
        self._kind = kind
        self._seed = seed
        self._rng = None

    def get_item(self, idx):
        sample = super().get_item(idx)
        if self._rng is None:
            self._rng = worker_rng(self._seed)
        augment = cifar_augment if self._kind == "cifar" else rrc_augment
        if self._kind == "caption":
            return augment(sample["x"], self._rng), sample["y"], sample["t"]
        return augment(sample["x"], self._rng), sample["y"]


def loader(kind, out_dir, batch_size, workers, seed):
    # A crashed earlier run leaves its shared memory behind; the docs' advice.
    streaming.base.util.clean_stale_shared_memory()
    dataset = _Augmented(local=out_dir, shuffle=True, shuffle_seed=seed, batch_size=batch_size,
                         kind=kind, seed=seed)
    return StreamingDataLoader(dataset, batch_size=batch_size, num_workers=workers,
                               drop_last=True)
