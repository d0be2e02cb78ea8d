#!/usr/bin/python3
"""Python's lmdb and h5py reading a shardpack LMDB or HDF5 dataset: the peer of
bench/backend_bench (shardpack's own readers on the same files).

  /usr/bin/python3 bench/peers/backend_read.py DATASET [--repeats 5]

DATASET is a directory with manifest.json of backend lmdb or hdf5. Every shard
is read in order and every byte of every record is touched, as the C++ side
does (an XOR over 8-byte words):

  lmdb: lmdb.open(subdir=False, readonly=True, lock=False), one read
        transaction, a cursor walk in key order (buffers=True: no copies);
        each value is XOR-reduced with numpy.
  hdf5: h5py, whole chunks at a time: images[a:b] (or offsets/data for the
        flat layout) and labels[a:b] per chunk of rows.

The page cache is warm (one untimed pass first). Prints one JSON object:
the median over --repeats passes of seconds, records/s and MB/s of record
bytes. Needs Debian's python3-lmdb and python3-h5py.
"""

import argparse
import json
import os
import statistics
import time

import numpy as np


def read_lmdb(path):
    import lmdb

    env = lmdb.open(path, subdir=False, readonly=True, lock=False)
    records = nbytes = 0
    acc = np.uint64(0)
    with env.begin(buffers=True) as txn:
        for key, value in txn.cursor():
            if len(key) != 8:
                continue  # the metadata key
            acc ^= np.bitwise_xor.reduce(np.frombuffer(value, np.uint64))
            records += 1
            nbytes += len(value)
    env.close()
    return records, nbytes, acc


def read_hdf5(path):
    import h5py

    records = nbytes = 0
    acc = np.uint64(0)
    with h5py.File(path, "r") as f:
        labels = f["labels"]
        if "images" in f:
            images = f["images"]
            n, rows = images.shape[0], images.chunks[0] if images.chunks else 1024
            for a in range(0, n, rows):
                block = images[a:a + rows]
                lab = labels[a:a + rows]
                flat = block.reshape(-1)
                acc ^= np.bitwise_xor.reduce(flat[: flat.size // 8 * 8].view(np.uint64))
                acc ^= np.bitwise_xor.reduce(lab.view(np.uint64))
                nbytes += block.nbytes
        else:
            offsets, data = f["offsets"], f["data"]
            n, rows = offsets.shape[0] - 1, offsets.chunks[0]
            for a in range(0, n, rows):
                o = offsets[a:min(n, a + rows) + 1]
                block = data[o[0]:o[-1]]
                acc ^= np.bitwise_xor.reduce(block[: block.size // 8 * 8].view(np.uint64))
                nbytes += block.nbytes
        records += n
    return records, nbytes, acc


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with open(os.path.join(args.dataset, "manifest.json")) as f:
        manifest = json.load(f)
    backend = manifest["backend"]
    read = {"lmdb": read_lmdb, "hdf5": read_hdf5}[backend]
    paths = [os.path.join(args.dataset, s["path"]) for s in manifest["shards"]]

    def one_pass():
        start = time.perf_counter()
        records = nbytes = 0
        for p in paths:
            r, b, _ = read(p)
            records += r
            nbytes += b
        return time.perf_counter() - start, records, nbytes

    one_pass()  # warm the page cache
    runs = [one_pass() for _ in range(args.repeats)]
    seconds = statistics.median(r[0] for r in runs)
    records, nbytes = runs[0][1], runs[0][2]
    print(json.dumps({"reader": f"python {backend}", "backend": backend, "records": records,
                      "bytes": nbytes, "seconds": seconds, "records_per_s": records / seconds,
                      "mb_per_s": nbytes / seconds / 1e6}))


if __name__ == "__main__":
    main()
