#!/usr/bin/python3
"""Python's lmdb and h5py reading a shardpack LMDB or HDF5 dataset: the peer of
bench/backend_bench (shardpack's own readers on the same files).

  /usr/bin/python3 bench/peers/backend_read.py DATASET [--repeats 5] [--shuffled]

DATASET is a directory with manifest.json of backend lmdb or hdf5. Every shard
is read in order and every byte of every record is touched, as the C++ side
does (an XOR over 8-byte words):

  lmdb: lmdb.open(subdir=False, readonly=True, lock=False), one read
        transaction, a cursor walk in key order (buffers=True: no copies);
        each value is XOR-reduced with numpy.
  hdf5: h5py, whole chunks at a time: images[a:b] (or offsets/data for the
        flat layout) and labels[a:b] per chunk of rows.

--shuffled reads each shard's records in a random order instead, as a
shuffling Dataset over these libraries does (the peer of shardbench's default
shuffle in bench/run_backend_reader_bench.sh): lmdb, txn.get() of the keys in
a random permutation; hdf5, batches of 512 random rows by fancy indexing
(images[sorted indices], as h5py needs ascending indices; fixed layout only).

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


def read_lmdb(path, shuffled=False):
    import lmdb

    env = lmdb.open(path, subdir=False, readonly=True, lock=False)
    records = nbytes = 0
    acc = np.uint64(0)
    with env.begin(buffers=True) as txn:
        if shuffled:
            n = txn.stat()["entries"] - 1  # less the metadata key
            order = np.random.default_rng(0).permutation(n)
            items = ((None, txn.get(int(i).to_bytes(8, "big"))) for i in order)
        else:
            items = ((k, v) for k, v in txn.cursor() if len(k) == 8)  # not the metadata key
        for key, value in items:
            acc ^= np.bitwise_xor.reduce(np.frombuffer(value, np.uint64))
            records += 1
            nbytes += len(value)
    env.close()
    return records, nbytes, acc


def read_hdf5(path, shuffled=False):
    import h5py

    records = nbytes = 0
    acc = np.uint64(0)
    with h5py.File(path, "r") as f:
        labels = f["labels"]
        if shuffled:
            images = f["images"]
            n = images.shape[0]
            order = np.random.default_rng(0).permutation(n)
            for a in range(0, n, 512):
                idx = np.sort(order[a:a + 512])
                block = images[idx]
                lab = labels[idx]
                flat = block.reshape(-1)
                acc ^= np.bitwise_xor.reduce(flat[: flat.size // 8 * 8].view(np.uint64))
                acc ^= np.bitwise_xor.reduce(lab.view(np.uint64))
                nbytes += block.nbytes
        elif "images" in f:
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
    parser.add_argument("--shuffled", action="store_true")
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
            r, b, _ = read(p, args.shuffled)
            records += r
            nbytes += b
        return time.perf_counter() - start, records, nbytes

    one_pass()  # warm the page cache
    runs = [one_pass() for _ in range(args.repeats)]
    seconds = statistics.median(r[0] for r in runs)
    records, nbytes = runs[0][1], runs[0][2]
    print(json.dumps({"reader": f"python {backend}", "backend": backend,
                      "shuffled": args.shuffled, "records": records,
                      "bytes": nbytes, "seconds": seconds, "records_per_s": records / seconds,
                      "mb_per_s": nbytes / seconds / 1e6}))


if __name__ == "__main__":
    main()
