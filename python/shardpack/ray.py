"""shardpack.ray: Ray Data reads shardpack datasets (docs/python.md, "Ray Data").

    import ray
    import shardpack.ray

    ds = ray.data.read_datasource(shardpack.ray.ShardSource("data/coco-train"))
    ds.take(1)   # [{'__key__': ..., '__index__': 0, 'image': b'\\xff\\xd8...', 'caption': ...}]

Each read task reads one contiguous range of the records (consecutive records
are consecutive bytes of the shards) through `shardpack.Dataset`, so every
record is checked as `Dataset` checks it and comes once. The rows carry the
dataset's fields as columns, plus `__key__` and `__index__`: images as their
stored bytes, or decoded to uint8 HWC arrays with `decode=True`; labels as
ints, strings as str, JSON as its parsed value, arrays as numpy arrays. A
dataset of images and labels (no fields in its manifest) gives its implicit
fields, `image` and its label fields. Needs Ray Data (`pip install
'shardpack[ray]'`; the tests pin their version, tests/engines/requirements-ray.txt).
"""
import functools
import os

import shardpack

try:
    from ray.data import Datasource, ReadTask
    from ray.data._internal.delegating_block_builder import DelegatingBlockBuilder
    from ray.data.block import BlockMetadata
except ImportError as e:  # pragma: no cover: said to the user
    raise ImportError(f"shardpack.ray needs Ray Data: pip install 'shardpack[ray]' ({e})") from e

__all__ = ["ShardSource"]

_ROWS_PER_BLOCK = 1024


def _open(path, cache_dir, cache_bytes):
    return shardpack.Dataset(path, cache_dir=cache_dir, cache_bytes=cache_bytes)


def _row(ds, fields, i, decode):
    """Record i as a row: the fields by name, plus __key__ and __index__."""
    r = ds.record(i, decode=decode)
    if "__index__" in r:  # a dataset with fields: the dict is the row
        return r
    # Images and labels: the implicit fields, in the order `fields` names them.
    row = {"__key__": r["key"], "__index__": r["index"]}
    labels = iter(r["labels"])
    for name, kind in fields.items():
        if kind.startswith("label"):
            row[name] = next(labels, None)
        else:
            row[name] = r["image"] if decode else r["data"]
    return row


def _read_range(path, cache_dir, cache_bytes, lo, hi, decode, rows_per_block):
    ds = _open(path, cache_dir, cache_bytes)
    fields = ds.fields
    for start in range(lo, hi, rows_per_block):
        builder = DelegatingBlockBuilder()
        for i in range(start, min(hi, start + rows_per_block)):
            builder.add(_row(ds, fields, i, decode))
        yield builder.build()


class ShardSource(Datasource):
    """A shardpack dataset as a Ray Data source.

    `path`: anything `shardpack.Dataset` opens (a dataset folder, a lone
    shard, a view file, a URL with `cache_dir` / `cache_bytes` as the Reader
    takes them). `decode=True`: image fields as uint8 HWC arrays instead of
    their stored bytes. `rows_per_block`: rows in each block a task yields.
    The dataset is opened here once, so that a path that is not a dataset
    is an error before any task runs."""

    def __init__(self, path, *, decode=False, rows_per_block=_ROWS_PER_BLOCK, cache_dir=None,
                 cache_bytes=None):
        if not isinstance(rows_per_block, int) or rows_per_block < 1:
            raise ValueError(f"rows_per_block={rows_per_block!r}: expected an int >= 1")
        self._path = os.fspath(path)
        self._decode = bool(decode)
        self._rows_per_block = rows_per_block
        self._cache = (None if cache_dir is None else os.fspath(cache_dir), cache_bytes)
        ds = _open(self._path, *self._cache)
        self._records = len(ds)
        self._fields = dict(ds.fields)
        self._bytes = _stored_bytes(self._path)

    @property
    def fields(self):
        """{name: type} of the dataset's fields, as `shardpack.Dataset.fields`."""
        return dict(self._fields)

    def get_name(self):
        return "shardpack"

    def estimate_inmemory_data_size(self):
        return self._bytes

    def get_read_tasks(self, parallelism, per_task_row_limit=None):
        n = self._records
        k = max(1, min(int(parallelism), n))
        bounds = [n * t // k for t in range(k + 1)]
        tasks = []
        for lo, hi in zip(bounds, bounds[1:]):
            if hi == lo:
                continue
            meta = BlockMetadata(num_rows=hi - lo,
                                 size_bytes=self._bytes * (hi - lo) // n if self._bytes else None,
                                 exec_stats=None, input_files=[self._path])
            read = functools.partial(_read_range, self._path, *self._cache, lo, hi,
                                     self._decode, self._rows_per_block)
            tasks.append(ReadTask(read, meta, per_task_row_limit=per_task_row_limit))
        return tasks


def _stored_bytes(path):
    """The bytes of a local dataset's files (Ray's memory estimate); None
    for a URL or what cannot be listed."""
    if "://" in path:
        return None
    try:
        if os.path.isdir(path):
            return sum(e.stat().st_size for e in os.scandir(path) if e.is_file()) or None
        return os.path.getsize(path) or None
    except OSError:
        return None
