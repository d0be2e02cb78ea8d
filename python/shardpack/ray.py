"""shardpack.ray: Ray Data reads and writes shardpack datasets (docs/python.md, "Ray Data").

    import ray
    import shardpack.ray

    ds = ray.data.read_datasource(shardpack.ray.ShardSource("data/coco-train"))
    ds.take(1)   # [{'__key__': ..., '__index__': 0, 'image': b'\\xff\\xd8...', 'caption': ...}]
    ds.write_datasink(shardpack.ray.ShardSink("data/copy", {"image": "jpeg", "caption": "string"}))

Each read task reads one contiguous range of the records (consecutive records
are consecutive bytes of the shards) through `shardpack.Dataset`, so every
record is checked as `Dataset` checks it and comes once. The rows carry the
dataset's fields as columns, plus `__key__` and `__index__`: images as their
stored bytes, or decoded to uint8 HWC arrays with `decode=True`; labels as
ints, strings as str, JSON as its parsed value, arrays as numpy arrays. A
dataset of images and labels (no fields in its manifest) gives its implicit
fields, `image` and its label fields.

ShardSink writes a Ray dataset as parts and merges them: each write task
writes its blocks as part task_idx + 1 of a count it cannot know (a Writer
part of an open count, `part=(i, None)`) into a folder beside OUT, and the
commit step, which has every task's result, merges the N parts with
`shardpack merge --count N` and removes them. A task Ray retries gets the
same task_idx and blocks and rewrites its own part; a failed write removes
the parts and leaves no OUT. Needs Ray Data (`pip install 'shardpack[ray]'`;
the tests pin their version, tests/engines/requirements-ray.txt).
"""
import functools
import os

import shardpack
from shardpack import _parts

try:
    from ray.data import Datasource, ReadTask
    from ray.data._internal.delegating_block_builder import DelegatingBlockBuilder
    from ray.data.block import BlockAccessor, BlockMetadata
    from ray.data.datasource import Datasink
except ImportError as e:  # pragma: no cover: said to the user
    raise ImportError(f"shardpack.ray needs Ray Data: pip install 'shardpack[ray]' ({e})") from e

__all__ = ["ShardSink", "ShardSource"]

_ROWS_PER_BLOCK = 1024


def _open(path, cache_dir, cache_bytes):
    return shardpack.Dataset(path, cache_dir=cache_dir, cache_bytes=cache_bytes)


def _row(ds, fields, i, mode):
    """Record i as a row: the fields by name, plus __key__ and __index__."""
    r = ds.record(i, decode=mode)
    if "__index__" in r:  # a dataset with fields: the dict is the row
        return r
    # Images and labels: the implicit fields, in the order `fields` names them.
    row = {"__key__": r["key"], "__index__": r["index"]}
    labels = iter(r["labels"])
    for name, kind in fields.items():
        if kind.startswith("label"):
            row[name] = next(labels, None)
        else:
            row[name] = r["image"] if "image" in r else r["data"]
    return row


def _read_range(path, cache_dir, cache_bytes, lo, hi, decode, rows_per_block):
    ds = _open(path, cache_dir, cache_bytes)
    fields = ds.fields
    # Every image decoded, or raw images as arrays of their pixels (their
    # bytes alone lose the shape) and JPEGs as their bytes.
    mode = True if decode else "raw"
    for start in range(lo, hi, rows_per_block):
        builder = DelegatingBlockBuilder()
        for i in range(start, min(hi, start + rows_per_block)):
            builder.add(_row(ds, fields, i, mode))
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


def _column_values(column):
    """A block's column as a sequence of values: Ray's tensor columns as
    numpy arrays (one a row), others as _parts.arrow_values gives them."""
    import pyarrow as pa
    if isinstance(column.type, pa.ExtensionType):  # a tensor column
        return BlockAccessor.for_block(pa.table({"c": column})).to_numpy("c")
    return _parts.arrow_values(column)


def _block_rows(blocks):
    """The rows of Ray blocks, as dicts of column -> value."""
    return _parts.arrow_rows((BlockAccessor.for_block(b).to_arrow() for b in blocks),
                             _column_values)


class ShardSink(Datasink):
    """A shardpack dataset as a Ray Data sink: `ds.write_datasink(ShardSink(out, schema))`.

    `out`: the dataset to make, a folder the workers and the driver all see.
    `schema`: shardpack.Writer's ({field: type}); the rows' columns of those
    names are the fields, and a `__key__` column, when there is one, the keys
    (else a record's key is its part and place, "00003/00000042"). `job`: the
    name the parts give (default `ray:` and OUT's name). `overwrite`: replace
    an OUT that is a dataset shardpack wrote. `min_rows_per_part`: Ray's
    `min_rows_per_write`, the fewest rows a write task is given. Other
    keywords go to every part's Writer (`shard_max_bytes`, `compression`,
    `classes`, `files`: columns of paths whose files the write tasks read,
    ...). After the write, `records` holds the records written.
    The records are in the order of the write tasks; for the same bytes on a
    rerun, keep Ray's order: `DataContext.get_current().execution_options.
    preserve_order = True`."""

    def __init__(self, out, schema, *, job=None, overwrite=False, min_rows_per_part=None,
                 **writer_options):
        if min_rows_per_part is not None and (not isinstance(min_rows_per_part, int)
                                              or min_rows_per_part < 1):
            raise ValueError(f"min_rows_per_part={min_rows_per_part!r}: expected an int >= 1")
        self._out = os.path.abspath(os.fspath(out))
        self._schema = dict(schema)
        self._job = job or f"ray:{os.path.basename(self._out)}"
        self._overwrite = bool(overwrite)
        self._min_rows = min_rows_per_part
        self._options = dict(writer_options)
        self._parts_dir = None
        self.records = None

    def get_name(self):
        return "shardpack"

    @property
    def min_rows_per_write(self):
        return self._min_rows

    def on_write_start(self):
        self._parts_dir = _parts.start(self._out, "ray", self._schema, self._job, self._options,
                                       self._overwrite)

    def write(self, blocks, ctx):
        return _parts.write_part(self._parts_dir, self._schema, ctx.task_idx + 1, None,
                                 self._job, self._options, _block_rows(blocks))

    def on_write_complete(self, write_result):
        written = list(write_result.write_returns)
        try:
            self.records = _parts.merge(written, self._out, self._schema,
                                        overwrite=self._overwrite, count=len(written),
                                        options=self._options)
        finally:
            _parts.remove(self._parts_dir)

    def on_write_failed(self, error):
        _parts.remove(self._parts_dir)
