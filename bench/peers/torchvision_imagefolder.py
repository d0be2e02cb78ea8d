#!/usr/bin/python3
"""torchvision's DataLoader over an ImageFolder of JPEGs: the peer of the
reader's RandomResizedCrop (bench/jpeg_bench.cc, bench/run_jpeg_bench.sh).

  /usr/bin/python3 bench/peers/torchvision_imagefolder.py ROOT
      [--num-workers N] [--batch-size 256] [--warmup 2] [--batches 20]

ImageFolder(ROOT) with

    RandomResizedCrop(224) + RandomHorizontalFlip + PILToTensor

(PILToTensor keeps uint8, as the reader's default output is). The
DataLoader shuffles and uses `--num-workers` worker processes. Images/s are
measured over `--batches` batches after `--warmup` batches (worker start-up
is left out). Pin the cores from outside (taskset -c 0 ...); workers inherit
the affinity. Prints one JSON object on stdout.
"""

import argparse
import json
import sys
import time

import torch
import torchvision
from torchvision import transforms


def main():
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("--num-workers", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--size", type=int, default=224)
    a = p.parse_args()
    torch.set_num_threads(1)
    tf = transforms.Compose([
        transforms.RandomResizedCrop(a.size),
        transforms.RandomHorizontalFlip(),
        transforms.PILToTensor(),
    ])
    ds = torchvision.datasets.ImageFolder(a.root, transform=tf)
    if len(ds) < a.batch_size:  # drop_last would give no batch: never done
        sys.exit(f"torchvision_imagefolder.py: {len(ds)} images, fewer than one batch "
                 f"of {a.batch_size}")
    loader = torch.utils.data.DataLoader(ds, batch_size=a.batch_size, shuffle=True,
                                         num_workers=a.num_workers, drop_last=True,
                                         persistent_workers=a.num_workers > 0)
    need = a.warmup + a.batches
    seen = 0
    start = None
    images = 0
    while seen < need:
        for batch, _ in loader:
            seen += 1
            if seen == a.warmup + 1:
                start = time.perf_counter()
            if seen > a.warmup:
                images += batch.shape[0]
            if seen >= need:
                break
    seconds = time.perf_counter() - start
    print(json.dumps({"peer": "torchvision", "num_workers": a.num_workers,
                      "images": images, "seconds": round(seconds, 3),
                      "images_per_s": round(images / seconds, 1)}))


if __name__ == "__main__":
    sys.exit(main())
