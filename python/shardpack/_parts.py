"""Parts of one write made by an engine's tasks, and their merge: what
shardpack.spark and shardpack.ray share.

A write task turns its rows into one part with `write_part` (shardpack.Writer
with part=(i, n) or (i, None), the write's job, overwrite=True so that a
retried task replaces what its earlier attempt left). The driver checks OUT
and the schema and makes the parts' folder beside OUT with `start` (so that
merge hard-links their shards into OUT on the same file system), and once
every task has returned, joins the parts with `merge` and removes the folder
with `remove`.
"""
import os
import shutil
import subprocess
import tempfile

import shardpack
from shardpack import _tools

_DTYPES = {"u8": "uint8", "i32": "int32", "i64": "int64", "f16": "float16", "f32": "float32",
           "f64": "float64"}


def tool():
    """The shardpack CLI: $SHARDPACK_TOOL, else the wheel's, else PATH's."""
    here = os.path.join(_tools.BIN, "shardpack")
    return os.environ.get("SHARDPACK_TOOL") or (here if os.path.exists(here) else "shardpack")


def value(kind, v):
    """An engine's value as shardpack.Writer takes it for a field of `kind`:
    bytearray as bytes; for an array field, lists and single numbers (a
    float column for "f32[1]") as a numpy array of its dtype (an empty one in
    its shape); elsewhere a numpy scalar as its Python value."""
    if v is None:
        return None
    if isinstance(v, (bytearray, memoryview)):
        return v if kind.startswith(("jpeg", "raw", "bytes")) else bytes(v)
    scalar = isinstance(v, (int, float)) or getattr(v, "ndim", None) == 0
    if "[" in kind and (scalar or isinstance(v, (list, tuple))):
        import numpy as np
        dtype, dims = kind.rstrip("?").rstrip("]").split("[")
        a = np.asarray([v] if scalar else v, dtype=_DTYPES[dtype])
        if a.size == 0:
            a = a.reshape((0, *[int(d) for d in dims.split(",")[1:]]))
        return a
    if scalar and hasattr(v, "item"):
        return v.item()
    return v


def arrow_values(column):
    """An Arrow column (an Array or ChunkedArray) as a list of Python values,
    None for a null: binary ones as memoryviews of the column's own bytes
    (no copy: a JPEG reaches the Writer as the engine holds it), the others
    as to_pylist() gives them."""
    import pyarrow as pa
    if not (pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)):
        return column.to_pylist()
    offset_format = "q" if pa.types.is_large_binary(column.type) else "i"
    values = []
    for chunk in getattr(column, "chunks", [column]):
        if len(chunk) == 0:
            continue
        _, offsets, data = chunk.buffers()
        bounds = memoryview(offsets).cast("B").cast(offset_format)
        bounds = bounds[chunk.offset:chunk.offset + len(chunk) + 1]
        data = memoryview(data if data is not None else b"").cast("B")
        nulls = chunk.is_null().to_pylist() if chunk.null_count else None
        values.extend(None if nulls and nulls[i] else data[bounds[i]:bounds[i + 1]]
                      for i in range(len(chunk)))
    return values


def arrow_rows(tables, values=arrow_values):
    """The rows of Arrow tables or record batches, as dicts of column ->
    value, converted a column at a time by `values` (half the cost of an
    engine's row iterator)."""
    for table in tables:
        columns = {name: values(table.column(name)) for name in table.schema.names}
        for i in range(table.num_rows):
            yield {name: column[i] for name, column in columns.items()}


def write_part(folder, schema, part, count, job, options, rows):
    """Writes `rows` (dicts of column -> value) as part `part` of `count`
    (None: not known) into FOLDER/part-NNNNNN; a row without `__key__` is
    keyed by its part and place, "00003/00000042". Returns (part, path,
    records written), as `merge` takes them."""
    path = os.path.join(folder, f"part-{part:06d}")
    with shardpack.Writer(path, schema, part=(part, count), job=job, overwrite=True,
                          **options) as w:
        for j, row in enumerate(rows):
            sample = {name: value(kind, row.get(name)) for name, kind in schema.items()}
            sample["__key__"] = row.get("__key__") or f"{part:05d}/{j:08d}"
            w.write(sample)
        return part, path, w.records


def start(out, engine, schema, job, options, overwrite):
    """Before any task runs, on the driver: refuses an OUT that exists
    (without `overwrite`), and a schema or option the Writer refuses (it
    opens one part and discards it); then makes a fresh folder for the write's
    parts beside OUT and returns it."""
    if os.path.lexists(out) and not overwrite:
        raise FileExistsError(f"{out} already exists; use overwrite=True to replace it")
    folder = tempfile.mkdtemp(prefix=f"{os.path.basename(out)}.{engine}-parts-",
                              dir=os.path.dirname(out))
    try:
        shardpack.Writer(os.path.join(folder, "check"), schema, part=(1, None), job=job,
                         overwrite=True, **options).discard()
    except BaseException:
        remove(folder)
        raise
    return folder


def merge(written, out, schema, *, overwrite, count=None, options=None):
    """Merges the parts `written` ([(index, path, records)], any order) into
    OUT with `shardpack merge` (its checks: one job, schema and options, each
    index 1..N once; `count`: N, for parts of an open count). No parts: an
    empty dataset of `schema`. Returns the records merged."""
    written = sorted(written)
    if not written:
        with shardpack.Writer(out, schema, overwrite=overwrite, **(options or {})):
            return 0
    cmd = [tool(), "merge", *[path for _, path, _ in written], "-o", out]
    if count is not None:
        cmd += ["--count", str(count)]
    if overwrite:
        cmd.append("--overwrite")
    merged = subprocess.run(cmd, capture_output=True, text=True)
    if merged.returncode != 0:
        raise shardpack.Error(merged.stderr.strip() or f"{cmd[0]} merge: exit {merged.returncode}")
    return sum(records for _, _, records in written)


def remove(folder):
    """Removes a write's parts folder, whatever it holds."""
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
