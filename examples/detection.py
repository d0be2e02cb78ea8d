#!/usr/bin/env python3
"""Detection data, COCO-style: images with boxes and category ids, cropped and flipped.

    python examples/detection.py --out DIR [--records 256] [--steps 8] [--check]
    python examples/detection.py --dataset COCO_DATASET   # one `shardpack coco` made

(in the venv of `pip install .`; from a source build,
PYTHONPATH=build/python /usr/bin/python3 examples/detection.py --out DIR ...)

1. Writes DIR/detection with shardpack.Writer, in the fields `shardpack coco`
   makes of a COCO instances file (docs/cli.md, "Datasets of fields"):
   `image` (a JPEG of varying size), `boxes` (float32 [n, 4]: x0, y0, x1, y1
   in pixels) and `category_ids` (int32 [n], whose class names the field
   carries). Each picture is a gray background with up to three filled
   rectangles, one a class, each drawn in its class's color.
2. Reads it with transform="rrc:S" (RandomResizedCrop to S x S, then a flip
   half of the time) and moves every box of a batch into the output image
   with the batch's `__crop__` and `__flip__`: a few lines of torch
   (docs/python.md, "Boxes follow the crop").

--check asserts, for every box of every sample the crop left visible, that
the moved box is where its rectangle is in the output image (within 2 px),
flipped samples included (tests/python/examples_test.py runs it).
"""
import os

import numpy as np
import shardpack
import torch

from fields_example import arguments, batches

CLASSES = ("red", "green", "blue")
COLORS = np.array([(220, 40, 40), (40, 200, 60), (40, 70, 230)], np.float32)
GRAY = 128
S = 64  # the crop's output side


def sample(i):
    """Record i: an HxWx3 uint8 picture, its boxes [n, 4] and their category ids [n]."""
    rng = np.random.default_rng(i)
    h, w = rng.integers(72, 120), rng.integers(80, 140)
    img = np.full((h, w, 3), GRAY, np.float32) + rng.normal(0, 4, (h, w, 1))
    boxes, ids = [], []
    for c in rng.permutation(len(CLASSES))[:rng.integers(1, len(CLASSES) + 1)]:
        for _ in range(20):  # a place that keeps 4 px from the other rectangles
            bw, bh = rng.integers(16, w // 2), rng.integers(14, h // 2)
            x0, y0 = rng.integers(0, w - bw), rng.integers(0, h - bh)
            box = [x0, y0, x0 + bw, y0 + bh]  # x1, y1 past the last pixel
            if all(box[0] > b[2] + 4 or b[0] > box[2] + 4 or box[1] > b[3] + 4 or
                   b[1] > box[3] + 4 for b in boxes):
                img[y0:y0 + bh, x0:x0 + bw] = COLORS[c]
                boxes.append(box)
                ids.append(c)
                break
    return (img.clip(0, 255).astype(np.uint8), np.array(boxes, np.float32).reshape(-1, 4),
            np.array(ids, np.int32))


def write_dataset(path, records):
    schema = {"image": "jpeg", "boxes": "f32[n,4]", "category_ids": "i32[n]"}
    with shardpack.Writer(path, schema, classes={"category_ids": list(CLASSES)},
                          overwrite=True) as w:
        for i in range(records):
            image, boxes, ids = sample(i)
            w.write({"__key__": f"det/{i:06d}", "image": image, "boxes": boxes,
                     "category_ids": ids})
    return path


def boxes_in_output(batch, values, offsets):
    """Every box of the batch, from source pixels into the S x S output: shifted
    and scaled by its sample's crop window, mirrored where the sample was flipped."""
    crop, flip = batch["__crop__"], batch["__flip__"].bool()              # [B, 4] y, x, h, w; [B]
    s = torch.repeat_interleave(torch.arange(len(crop)), offsets.diff())  # each box's sample
    y, x, h, w = crop[s].unbind(1)
    boxes = (values - torch.stack([x, y, x, y], 1)) * (S / torch.stack([w, h, w, h], 1))
    boxes = torch.where(flip[s, None], boxes[:, [2, 1, 0, 3]] * torch.tensor([-1, 1, -1, 1])
                        + torch.tensor([S, 0, S, 0]), boxes)              # flipped: x -> S - x
    return boxes.clamp(0, S), s  # a box the crop cut ends at the edge


def drawn_box(image, c):
    """x0, y0, x1, y1 (past the last) of the pixels nearer class c's color than
    any other class's or the background's, or None."""
    palette = torch.tensor(np.vstack([COLORS, [GRAY] * 3]), dtype=torch.float32)
    nearest = torch.cdist(image.reshape(-1, 3).float(), palette).argmin(1).reshape(image.shape[:2])
    ys, xs = torch.nonzero(nearest == c, as_tuple=True)
    if len(xs) == 0:
        return None
    return torch.tensor([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], dtype=torch.float32)


def check(batch, boxes, ids, s):
    """Each box the crop left visible (3 px or more each way) lies where the image shows
    its class's rectangle. Returns the boxes checked and those of flipped samples."""
    checked = flipped = 0
    for k in range(len(boxes)):
        j, box = int(s[k]), boxes[k]
        if box[2] - box[0] < 3 or box[3] - box[1] < 3:
            continue  # (nearly) cropped away
        found = drawn_box(batch["image"][j], int(ids[k]))
        assert found is not None, f"sample {j}: box {box.tolist()} of {CLASSES[ids[k]]}: no pixel"
        assert (found - box).abs().max() <= 2, \
            f"sample {j} (flipped: {bool(batch['__flip__'][j])}): {CLASSES[ids[k]]} box " \
            f"{box.tolist()} but the rectangle is at {found.tolist()}"
        checked += 1
        flipped += int(batch["__flip__"][j])
    return checked, flipped


def main():
    p = arguments(__doc__, records=256, steps=8, check="assert the boxes follow the crop",
                  out_required=False)
    p.add_argument("--dataset", help="read this dataset (e.g. `shardpack coco`'s) instead")
    args = p.parse_args()
    if (args.out is None) == (args.dataset is None):
        p.error("give --out DIR (to write a dataset) or --dataset PATH")
    if args.check and args.dataset:
        p.error("--check knows the colors of the dataset it writes: give --out")

    path = args.dataset or write_dataset(os.path.join(args.out, "detection"), args.records)
    classes = shardpack.Dataset(path).classes["category_ids"]
    reader = shardpack.Reader(path, batch_size=args.batch_size, seed=0, threads=args.threads,
                              fields=["image", "boxes", "category_ids"], transform=f"rrc:{S}",
                              output="torch")
    print(f"{path}: {reader.records} records, fields {reader.fields}, "
          f"{len(classes)} classes", flush=True)

    seen = checked = flipped = 0
    for step, epoch, batch in batches(reader, args.steps):
        values, offsets = batch["boxes"]          # float32 [n, 4], int64 [B + 1]
        ids = batch["category_ids"][0]            # int32 [n], the same offsets
        boxes, s = boxes_in_output(batch, values, offsets)
        kept = ((boxes[:, 2] - boxes[:, 0] >= 1) & (boxes[:, 3] - boxes[:, 1] >= 1))
        if args.check:
            c, f = check(batch, boxes, ids, s)
            seen, checked, flipped = seen + len(boxes), checked + c, flipped + f
        print(f"batch {step} (epoch {epoch}): {len(values)} boxes, {int(kept.sum())} left by "
              f"the crops; images {tuple(batch['image'].shape)}", flush=True)
        if step == 1:
            for k in torch.nonzero(kept).flatten()[:4].tolist():
                print(f"  sample {int(s[k])}: {classes[ids[k]]} at "
                      f"{[round(v, 1) for v in boxes[k].tolist()]}"
                      f"{' (flipped)' if batch['__flip__'][s[k]] else ''}")

    if args.check:
        # Most boxes stay visible (the crop keeps 8% to 100% of the image).
        assert checked >= seen // 2 and flipped > 0, \
            f"checked {checked} of {seen} boxes, {flipped} in flipped samples"
        print(f"check passed: {checked} of {seen} boxes where their rectangles are, "
              f"{flipped} of them in flipped samples", flush=True)


if __name__ == "__main__":
    main()
