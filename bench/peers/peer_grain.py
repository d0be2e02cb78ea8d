"""Grain over ArrayRecord files, Grain's own random-access format.

convert: array_record's ArrayRecordWriter with options "group_size:1" (Grain's
ArrayRecordDataSource logs an error for any other group size: "Grain requires
group size 1 for good performance"), one shard per worker written in threads;
the writer's other options stay at their defaults (zstd:3 compression).
A CIFAR record is stored as it is (label byte + 3072 planar bytes); an
ImageFolder record is a 2-byte little-endian label + the JPEG file's bytes.

loader: grain.MapDataset.source(ArrayRecordDataSource).shuffle(seed) then the
augmentation as a random_map (Grain's seeded per-element RNG), batched, then
to_iter_dataset(ReadOptions()) (Grain's defaults: 16 threads, a 500-element
buffer) and mp_prefetch(MultiprocessingOptions(num_workers=workers)), Grain's
worker-process knob. CIFAR is batched first and augmented a batch at a time
(a per-record random_map of a few NumPy steps is all Python overhead).
Grain 0.2.18 reads a batch record by record (its batched-read pushdown is an
experiment switched off in the release): about 10,000 random reads/s of
3 KB records on one core here, where ArrayRecordDataSource.__getitems__ does
70,000-90,000/s; that bounds Grain's CIFAR rows.
"""

import concurrent.futures
import glob
import os

import numpy as np

import peers_shared as shared

NAME = "grain"
try:
    import grain
    from array_record.python import array_record_module
    VERSION = getattr(grain, "__version__", None)
    if VERSION is None:
        from importlib import metadata
        VERSION = metadata.version("grain")
except ImportError as e:
    grain = None
    VERSION = f"not installed ({e})"

WRITER_OPTIONS = "group_size:1"
SETTINGS = (f"ArrayRecord ({WRITER_OPTIONS}, default zstd:3), one shard per worker; "
            "MapDataset.source."
            "shuffle(seed).random_map(augment).batch -> to_iter_dataset(ReadOptions("
            "num_threads=16, prefetch_buffer_size=500)) -> mp_prefetch(num_workers="
            "workers); cifar augmented per batch, imagefolder per record (PIL decode)")


def _write_shard(path, records):
    writer = array_record_module.ArrayRecordWriter(path, WRITER_OPTIONS)
    try:
        for record in records:
            writer.write(record)
    finally:
        writer.close()


def _cifar_records(src, lo, hi):
    records = shared.cifar_records(src)
    for i in range(lo, hi):
        yield records[i].tobytes()


def _jpeg_records(paths, labels):
    for path, label in zip(paths, labels):
        with open(path, "rb") as f:
            yield int(label).to_bytes(2, "little") + f.read()


def convert(kind, src, out_dir, workers):
    shared.require(NAME, kind, grain, VERSION)
    os.makedirs(out_dir, exist_ok=True)
    shards = max(1, workers)
    if kind == "cifar":
        n = shared.cifar_records(src).shape[0]
    else:
        paths, labels = shared.imagefolder_files(src)
        n = len(paths)
    bounds = [n * i // shards for i in range(shards + 1)]
    jobs = []
    with concurrent.futures.ThreadPoolExecutor(shards) as pool:
        for i in range(shards):
            lo, hi = bounds[i], bounds[i + 1]
            records = (_cifar_records(src, lo, hi) if kind == "cifar"
                       else _jpeg_records(paths[lo:hi], labels[lo:hi]))
            path = os.path.join(out_dir, f"{kind}-{i:05d}-of-{shards:05d}.array_record")
            jobs.append(pool.submit(_write_shard, path, records))
        for job in jobs:
            job.result()


def _cifar_batch(records, rng):
    raw = np.frombuffer(b"".join(records), np.uint8).reshape(-1, shared.CIFAR_RECORD)
    images, labels = shared.cifar_split(raw)
    return shared.cifar_augment_batch(images, rng), labels


def _jpeg_record(record, rng):
    return shared.rrc_augment(record[2:], rng), np.int64(int.from_bytes(record[:2], "little"))


def _collate(samples):
    return (np.stack([s[0] for s in samples]), np.asarray([s[1] for s in samples], np.int64))


def loader(kind, out_dir, batch_size, workers, seed):
    shared.require(NAME, kind, grain, VERSION)
    files = sorted(glob.glob(os.path.join(out_dir, f"{kind}-*.array_record")))
    if not files:
        raise ValueError(f"{out_dir}: no {kind}-*.array_record files; run convert() first")
    ds = grain.MapDataset.source(grain.sources.ArrayRecordDataSource(files)).shuffle(seed=seed)
    if kind == "cifar":
        ds = ds.batch(batch_size, batch_fn=list).random_map(_cifar_batch, seed=seed)
    else:
        ds = ds.random_map(_jpeg_record, seed=seed).batch(batch_size, batch_fn=_collate)
    it = ds.to_iter_dataset(grain.ReadOptions(num_threads=16, prefetch_buffer_size=500))
    return it.mp_prefetch(grain.MultiprocessingOptions(num_workers=workers))
