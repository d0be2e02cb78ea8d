#!/usr/bin/env python3
"""Streams a dataset through shardpack.Reader from Python, as shardbench does
from C++, and prints one JSON object: images/s over the timed part (after the
reader is open, as shardbench times it), CPU seconds, stage waits.

    python_iter.py DATASET [--batch-size 512] [--transform cifar-train]
                   [--threads 2] [--epochs 10] [--output numpy|torch] [--copy]
                   [--no-touch]

By default each batch's bytes are XOR-folded (numpy over a uint64 view), the
counterpart of shardbench's fold of every byte, so both consumers touch the
data once. Needs numpy (and torch for --output torch).
"""
import argparse
import json
import resource
import time

import numpy as np
import shardpack


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def fold(a, np_view):
    # uint8 [n, 32, 32, 3] is a whole number of 8-byte words when n*3072 is.
    return np.bitwise_xor.reduce(np_view(a).reshape(-1).view(np.uint64))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dataset")
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--transform", default="cifar-train")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--output", default="numpy", choices=["numpy", "torch"])
    p.add_argument("--copy", action="store_true")
    p.add_argument("--no-touch", dest="touch", action="store_false")
    args = p.parse_args()

    reader = shardpack.Reader(args.dataset, batch_size=args.batch_size, seed=0,
                              transform=args.transform, threads=args.threads, rank=0,
                              world_size=1, output=args.output, copy=args.copy)
    np_view = (lambda t: t.numpy()) if args.output == "torch" else (lambda a: a)
    acc = np.uint64(0)
    samples = 0
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    for _ in range(args.epochs):
        for images, labels in reader:
            if args.touch:
                acc ^= fold(images, np_view) ^ fold(labels, np_view)
            samples += images.shape[0]
    seconds = time.perf_counter() - t0
    cpu = cpu_seconds() - cpu0
    s = reader.stats()
    print(json.dumps({
        "images_per_s": samples / seconds, "seconds": seconds, "samples": samples,
        "cpu_us_per_image": 1e6 * cpu / samples, "cores_used": cpu / seconds,
        "fold": int(acc),
        "wait_s": {"io": s["io_wait_s"], "transform": s["transform_wait_s"],
                   "consumer": s["consumer_wait_s"]},
    }))


if __name__ == "__main__":
    main()
