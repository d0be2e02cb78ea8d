#!/usr/bin/python3
"""An ImageFolder of JPEG crops of photographs, as ImageNet's web photos were.

  python3 bench/photo_crops.py OUT_DIR PHOTO... [--count N] [--seed S] [--workers N]

Each output image is a random crop of one photograph, downscaled (Lanczos) to
500x375 (landscape 4:3, 60%), 375x500 (portrait, 20%) or 500x333 (3:2, 20%),
and written once by libjpeg-turbo (Pillow) at a quality drawn from 70 to 95,
4:2:0, standard Huffman tables: JPEGs as a camera or a web site leaves them,
not re-coded afterwards. One class folder per photograph (photo_KK), image i
taken from photograph i % len(PHOTOS).

Every random draw is made up front, in image order, from one generator seeded
with --seed, so the files are the same whatever --workers (default: all
cores) does the cropping. bench/make_photo_set.sh (photographs Debian ships)
and bench/train_bench.py (photographs that scikit-learn and scikit-image
ship, on a machine with pip's packages) call it. Needs Pillow.
"""
import argparse
import multiprocessing
import os
import random
import sys

from PIL import Image

SHAPES = [(500, 375)] * 3 + [(375, 500), (500, 333)]


def plan(count, seed, sizes):
    """One (photo index, crop box, output size, quality) per image, drawn in
    image order from one generator; `sizes` are the photographs' (w, h)."""
    rng = random.Random(seed)
    jobs = []
    for i in range(count):
        k = i % len(sizes)
        sw, sh = sizes[k]
        w, h = rng.choice(SHAPES)
        # The largest crop of the photograph with the output's aspect, then a
        # random fraction of it (35% to 100% of the side), at a random place.
        fit = min(sw / w, sh / h)
        f = fit * rng.uniform(0.35, 1.0)
        cw, ch = max(w, round(w * f)), max(h, round(h * f))
        cw, ch = min(cw, sw), min(ch, sh)
        x, y = rng.randint(0, sw - cw), rng.randint(0, sh - ch)
        quality = rng.randint(70, 95)
        jobs.append((i, k, (x, y, x + cw, y + ch), (w, h), quality))
    return jobs


_photos = {}  # per process: photograph index -> decoded RGB image


def _write(args):
    out, paths, (i, k, box, size, quality) = args
    if k not in _photos:
        _photos[k] = Image.open(paths[k]).convert("RGB")
    im = _photos[k].crop(box).resize(size, Image.LANCZOS)
    d = os.path.join(out, "photo_%02d" % k)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "img_%05d.jpg" % i)
    im.save(path, "JPEG", quality=quality, subsampling="4:2:0")
    return os.path.getsize(path)


def write_crops(out, photos, count, seed=1, workers=0):
    """Writes `count` crops of `photos` under `out`; returns their total bytes."""
    sizes = []
    for p in photos:
        with Image.open(p) as im:
            sizes.append(im.size)
    jobs = [(out, photos, job) for job in plan(count, seed, sizes)]
    os.makedirs(out, exist_ok=True)
    workers = workers or len(os.sched_getaffinity(0))
    if workers == 1:
        return sum(map(_write, jobs))
    # Grouped by photograph, so each process decodes few of them.
    jobs.sort(key=lambda a: a[2][1])
    with multiprocessing.Pool(workers) as pool:
        return sum(pool.imap_unordered(_write, jobs, chunksize=16))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("photos", nargs="+")
    p.add_argument("--count", type=int, default=2000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workers", type=int, default=0, help="processes; 0: all cores")
    a = p.parse_args()
    if a.count < 1:
        p.error("--count must be a positive integer")
    total = write_crops(a.out, a.photos, a.count, a.seed, a.workers)
    print("photo_crops.py: %d photographs' crops in %s, %d bytes (%.1f KB each)"
          % (a.count, a.out, total, total / a.count / 1000), file=sys.stderr)


if __name__ == "__main__":
    main()
