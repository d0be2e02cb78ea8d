#!/usr/bin/env python3
"""Segmentation data: a photo and its mask of class ids, given the same crop and flip.

    python examples/segmentation.py --out DIR [--records 256] [--steps 30] [--check]

(in the venv of `pip install .`; from a source build,
PYTHONPATH=build/python /usr/bin/python3 examples/segmentation.py --out DIR ...)

1. Writes DIR/segmentation with shardpack.Writer: `photo` (a JPEG of varying
   size: shapes on a gray background) and `mask` (`raw:gray`: one byte a
   pixel, the class id of the photo's pixel: 0 background, 1 disc, 2 square,
   3 triangle; stored losslessly, as a PNG mask's bytes would be).
2. Reads both with image_fields=["photo", "mask:nearest"]: the photo is
   randomly cropped, resized and flipped, and the mask takes the same crop
   window and flip, resized nearest-neighbour so that every value stays a
   class id. Trains a tiny fully convolutional net on them for a few steps.

--check asserts, for every sample, that each class's region of the mask lies
on that class's color in the photo (IoU > 0.9 off the edges between colors)
and that the mask holds only the class ids written into that record
(tests/python/examples_test.py runs it).
"""
import os

import numpy as np
import shardpack
import torch
from torch import nn
import torch.nn.functional as F

from fields_example import arguments, batches

CLASSES = ("background", "disc", "square", "triangle")
COLORS = np.array([(128, 128, 128), (220, 40, 40), (40, 200, 60), (40, 70, 230)], np.float32)
S = 64  # the crop's output side
MEAN, STD = (0.5, 0.5, 0.5), (0.25, 0.25, 0.25)


def sample(i):
    """Record i: an HxWx3 uint8 photo and its HxW uint8 mask of class ids. Each
    photo has one to three of the shapes, so some masks hold only ids 0 and 3,
    where a linear resize would make up 1s and 2s on the edges."""
    rng = np.random.default_rng(i)
    h, w = rng.integers(80, 128), rng.integers(80, 128)
    mask = np.zeros((h, w), np.uint8)
    yy, xx = np.mgrid[:h, :w]
    for c in rng.permutation([1, 2, 3])[:rng.integers(1, 4)]:  # later shapes cover earlier ones
        cy, cx, r = rng.integers(20, h - 20), rng.integers(20, w - 20), rng.integers(12, 24)
        shape = {1: (yy - cy) ** 2 + (xx - cx) ** 2 < r * r,
                 2: (abs(yy - cy) < r) & (abs(xx - cx) < r),
                 3: (yy < cy + r) & (abs(xx - cx) < (yy - cy + r) / 2)}[c]
        mask[shape] = c
    photo = COLORS[mask] + rng.normal(0, 4, (h, w, 1))
    return photo.clip(0, 255).astype(np.uint8), mask


def write_dataset(path, records):
    # A mask from a PNG file: {"mask": open("m.png", "rb").read()} (decoded
    # losslessly; a palette PNG as numpy.asarray(PIL.Image.open(...))).
    with shardpack.Writer(path, {"photo": "jpeg", "mask": "raw:gray"}, overwrite=True) as w:
        for i in range(records):
            photo, mask = sample(i)
            w.write({"__key__": f"seg/{i:06d}", "photo": photo, "mask": mask})
    return path


def check(batch):
    """Every sample's mask lies on its photo: per class, the mask's pixels of that
    class and the photo's pixels nearest its color overlap with IoU > 0.9, away
    from the photo's edges between colors (where the linear resize blends two);
    and the mask holds only ids that record was written with. Returns the
    regions written and those checked (the others the crop (nearly) cut away)."""
    photo = batch["photo"] * torch.tensor(STD)[:, None, None] + torch.tensor(MEAN)[:, None, None]
    pixels = (photo * 255).permute(0, 2, 3, 1)                            # [B, S, S, 3]
    nearest = torch.cdist(pixels.reshape(-1, 3), torch.tensor(COLORS)).argmin(1)
    nearest = nearest.reshape(pixels.shape[:3])                           # the photo's classes
    # An edge pixel: one whose 3 x 3 neighbourhood in the photo holds two classes.
    n = nearest[:, None].float()
    inner = (F.max_pool2d(n, 3, 1, 1) == -F.max_pool2d(-n, 3, 1, 1))[:, 0]
    written_regions = checked = 0
    for j, i in enumerate(batch["__index__"].tolist()):
        mask = batch["mask"][j, 0]                                         # [S, S] uint8
        written = set(np.unique(sample(i)[1]).tolist())
        assert set(mask.unique().tolist()) <= written, \
            f"record {i}: mask values {mask.unique().tolist()}, written {sorted(written)}"
        for c in written - {0}:
            written_regions += 1
            if (mask == c).sum() < 30:
                continue  # (nearly) cropped away
            m, p = (mask == c) & inner[j], (nearest[j] == c) & inner[j]
            iou = (m & p).sum() / (m | p).sum()
            assert iou > 0.9, f"record {i} (flipped: {bool(batch['__flip__'][j])}): " \
                              f"{CLASSES[c]}: mask and photo IoU {iou:.3f}"
            checked += 1
    return written_regions, checked


def main():
    args = arguments(__doc__, records=256, steps=30,
                     check="assert each mask lines up with its photo").parse_args()

    torch.manual_seed(0)
    path = write_dataset(os.path.join(args.out, "segmentation"), args.records)
    # The first of image_fields sets the crop; the mask follows it. ":nearest"
    # is the default for a 1-channel raw follower, spelled out here. A nearest
    # field stays uint8 (class ids are not normalized); all take the layout.
    reader = shardpack.Reader(path, batch_size=args.batch_size, seed=0, threads=args.threads,
                              image_fields=["photo", "mask:nearest"], transform=f"rrc:{S}",
                              dtype="float32", layout="NCHW", mean=MEAN, std=STD,
                              output="torch", indices=True)  # record numbers, for --check
    print(f"{path}: {reader.records} records, fields {reader.fields}", flush=True)

    net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
                        nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
                        nn.Conv2d(16, len(CLASSES), 1))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    regions = checked = flipped = 0
    for step, epoch, batch in batches(reader, args.steps):
        photo, mask = batch["photo"], batch["mask"]   # float32 [B, 3, S, S], uint8 [B, 1, S, S]
        if args.check:
            r, c = check(batch)
            regions, checked = regions + r, checked + c
            flipped += int(batch["__flip__"].sum())
        logits = net(photo)
        loss = F.cross_entropy(logits, mask[:, 0].long())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == args.steps:
            accuracy = (logits.argmax(1) == mask[:, 0]).float().mean()
            print(f"step {step:3d}  epoch {epoch}  loss {loss.item():.3f}  "
                  f"pixel accuracy {accuracy:.3f}", flush=True)

    if args.check:
        assert checked >= regions // 2 and flipped > 0, \
            f"checked {checked} of {regions} regions, {flipped} flipped samples"
        print(f"check passed: {checked} of {regions} class regions where the photo shows them "
              f"({flipped} flipped samples); masks hold only their class ids", flush=True)


if __name__ == "__main__":
    main()
