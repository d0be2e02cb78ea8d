#!/usr/bin/env python3
"""CLIP in miniature: image + caption records, a contrastive loss, shardpack.Reader.

    python examples/clip_train.py --out DIR [--records 512] [--steps 200] [--check]

(in the venv of `pip install .`; from a source build,
PYTHONPATH=build/python /usr/bin/python3 examples/clip_train.py --out DIR ...)

1. Writes DIR/clip, a dataset of two fields, with shardpack.Writer: `image`
   (a JPEG: a colored shape on a background of the same hue) and `caption`
   (a string saying which color and shape: "a photo of a red circle").
2. Trains a tiny image encoder (a small CNN) and a tiny text encoder (a bag
   of words: the mean of one embedding a word) with CLIP's symmetric
   contrastive loss: in a batch of B pairs, image i must pick caption i out
   of the B captions, and caption i image i. Batches come from
   shardpack.Reader(..., fields=["image", "caption"], transform="rrc:32"):
   a dict of float32 images, randomly cropped and flipped by the reader's
   threads, and the list of their captions.

--check asserts that the loss fell and that every caption arrived with its
own image: the color the caption names is the color the cropped image holds,
for every sample of every batch (tests/python/examples_test.py runs it).
"""
import os
import time
import zlib

import numpy as np
import shardpack
import torch
from torch import nn
import torch.nn.functional as F

from fields_example import arguments, batches

COLORS = {"red": (220, 40, 40), "green": (40, 200, 60), "blue": (40, 70, 230),
          "yellow": (230, 210, 40)}
SHAPES = ("circle", "square", "triangle")
TEMPLATES = ("a photo of a {c} {s}", "a {c} {s}", "a {s} in {c}", "{c} {s} on a {c} background")
SIDE, S = 48, 32  # stored image side; the reader's crop output side
MEAN, STD = (0.5, 0.5, 0.5), (0.25, 0.25, 0.25)


def sample(i):
    """Record i: an HxWx3 uint8 picture and its caption. The background is a dim
    version of the shape's color, so any crop of the picture still shows the color."""
    rng = np.random.default_rng(i)
    color = list(COLORS)[i % len(COLORS)]
    shape = SHAPES[(i // len(COLORS)) % len(SHAPES)]
    rgb = np.array(COLORS[color], np.float32)
    img = 0.35 * rgb + rng.normal(0, 8, (SIDE, SIDE, 1))
    yy, xx = np.mgrid[:SIDE, :SIDE]
    cy, cx, r = rng.integers(18, 30), rng.integers(18, 30), rng.integers(10, 16)
    if shape == "circle":
        inside = (yy - cy) ** 2 + (xx - cx) ** 2 < r * r
    elif shape == "square":
        inside = (abs(yy - cy) < r) & (abs(xx - cx) < r)
    else:  # a triangle pointing up
        inside = (yy < cy + r) & (abs(xx - cx) < (yy - cy + r) / 2)
    img[inside] = rgb
    caption = TEMPLATES[rng.integers(len(TEMPLATES))].format(c=color, s=shape)
    return img.clip(0, 255).astype(np.uint8), caption


def write_dataset(path, records):
    # The schema is the record's fields in order: the first image field is the
    # one the reader's transform crops. Pixels given to a "jpeg" field are
    # encoded by the writer; a JPEG file's bytes would be stored as they are.
    with shardpack.Writer(path, {"image": "jpeg", "caption": "string"}, overwrite=True) as w:
        for i in range(records):
            image, caption = sample(i)
            w.write({"__key__": f"clip/{i:06d}", "image": image, "caption": caption})
    return path


class ImageEncoder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        def block(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.net = nn.Sequential(block(3, 16), block(16, 32), block(32, 32),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, dim))

    def forward(self, images):
        return self.net(images)


class TextEncoder(nn.Module):
    """A bag of words: each word hashed (crc32, stable across runs) into one of
    `buckets` embeddings, and a caption the mean of its words'."""

    def __init__(self, dim, buckets=1024):
        super().__init__()
        self.buckets = buckets
        self.embed = nn.EmbeddingBag(buckets, dim, mode="mean")
        self.proj = nn.Linear(dim, dim)

    def forward(self, captions):
        words = [[zlib.crc32(w.encode()) % self.buckets for w in c.split()] for c in captions]
        offsets = torch.tensor([0] + [len(w) for w in words[:-1]]).cumsum(0)
        return self.proj(self.embed(torch.tensor(sum(words, [])), offsets))


def clip_loss(image_emb, text_emb, logit_scale):
    """CLIP's symmetric InfoNCE: cross-entropy of the B x B similarities, both ways,
    against the diagonal (pair i is image i with caption i). Here 12 kinds of
    picture share a batch of 32, so even a perfect model cannot tell apart the
    ~3.6 pairs of one kind: the loss falls from ln 32 towards ln 3.6 = 1.3, not 0."""
    logits = logit_scale.exp() * F.normalize(image_emb, dim=1) @ F.normalize(text_emb, dim=1).T
    target = torch.arange(len(logits))
    return (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2


def check_pairs(images, captions):
    """Each caption names the color its own image holds: the mean color of the
    (cropped, normalized) image is nearest to the color the caption names."""
    pixels = images * torch.tensor(STD)[:, None, None] + torch.tensor(MEAN)[:, None, None]
    mean = pixels.mean((2, 3)) * 255                                   # [B, 3]
    names = list(COLORS)
    palette = torch.tensor([COLORS[c] for c in names], dtype=torch.float32)
    # Compare hues, not brightness: each mean color and palette color scaled to unit length.
    nearest = (F.normalize(mean, dim=1) @ F.normalize(palette, dim=1).T).argmax(1)
    for j, caption in enumerate(captions):
        named = next(c for c in names if c in caption.split())
        assert names[nearest[j]] == named, \
            f"sample {j}: caption {caption!r}, but its image's mean color {mean[j].tolist()} " \
            f"is {names[nearest[j]]}"


def main():
    args = arguments(__doc__, records=512, steps=200,
                     check="assert the loss fell and the pairs match").parse_args()

    torch.manual_seed(0)
    path = write_dataset(os.path.join(args.out, "clip"), args.records)
    # fields: what each batch holds (a dict); transform: crops and flips the
    # first image field, float32 NCHW normalized, as torch tensors (no copy).
    reader = shardpack.Reader(path, batch_size=args.batch_size, seed=0, threads=args.threads,
                              fields=["image", "caption"], transform=f"rrc:{S}",
                              dtype="float32", layout="NCHW", mean=MEAN, std=STD,
                              output="torch")
    print(f"{path}: {reader.records} records, fields {reader.fields}; "
          f"{len(reader)} batches of {args.batch_size} an epoch", flush=True)

    dim = 64
    image_encoder, text_encoder = ImageEncoder(dim), TextEncoder(dim)
    logit_scale = nn.Parameter(torch.tensor(np.log(1 / 0.07), dtype=torch.float32))
    params = [*image_encoder.parameters(), *text_encoder.parameters(), logit_scale]
    opt = torch.optim.Adam(params, lr=3e-3)

    losses, start = [], time.perf_counter()
    for step, epoch, batch in batches(reader, args.steps):
        images, captions = batch["image"], batch["caption"]  # [B, 3, S, S]; B str
        if args.check:
            check_pairs(images, captions)
        loss = clip_loss(image_encoder(images), text_encoder(captions), logit_scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step % 20 == 0 or step == args.steps:
            print(f"step {step:3d}  epoch {epoch}  loss {np.mean(losses[-20:]):.3f}  "
                  f"(chance: ln {len(captions)} = {np.log(len(captions)):.3f})", flush=True)
    print(f"done: {step} steps in {time.perf_counter() - start:.1f} s", flush=True)

    # Zero-shot, CLIP's way: which of these captions does the model pick for each
    # image of the last batch? (The batch's views stay valid until the next batch.)
    queries = [f"a {c} {s}" for c in COLORS for s in SHAPES]
    with torch.no_grad():
        text = F.normalize(text_encoder(queries), dim=1)
        picked = (F.normalize(image_encoder(images), dim=1) @ text.T).argmax(1)
    for j in range(4):
        print(f"  image with caption {captions[j]!r}: model picks {queries[picked[j]]!r}")

    if args.check:
        first, last = np.mean(losses[:5]), np.mean(losses[-5:])
        assert last < 0.8 * first, f"the loss did not fall: {first:.3f} -> {last:.3f}"
        print(f"check passed: loss {first:.3f} -> {last:.3f}; every caption named its "
              f"image's color ({step} batches)", flush=True)


if __name__ == "__main__":
    main()
