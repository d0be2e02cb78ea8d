"""shardpack.spark: a Spark DataFrame written as a shardpack dataset (docs/python.md, "Spark").

    import shardpack.spark
    shardpack.spark.write(df, "/data/coco-train",
                          {"image": "jpeg", "caption": "string", "label": "label"})

Each partition of the DataFrame is one part: the task that holds partition i
writes it with `shardpack.Writer(..., part=(i + 1, N), job=JOB)` into
a folder of its own beside OUT (OUT.spark-parts-XXXX/part-NNNNNN), and the driver, once every task has returned,
merges the N parts into OUT with `shardpack merge` (checked: one N, one job,
schema and options, each part once) and removes them. So:
- the output is the DataFrame's rows in its order, partition by partition:
  the same bytes for the same partitioning and rows;
- a task Spark retries rewrites its own part (a Writer part retried with the
  same job, part and options replaces its earlier output, and clears what a
  killed attempt left);
- OUT is published whole by the merge, or not at all: a failed job leaves
  no OUT (nor changes one that was there) and its parts are removed.
Columns are the schema's fields by name, plus `__key__` when the DataFrame
has it (else each record's key is its part and index, `00003/00000042`).
They reach the tasks as Arrow batches (`mapInArrow`, no pickled Rows):
binary columns as bytes, array columns as lists (made numpy arrays for
array fields), struct columns for a `json` field as dicts.
"""
import os
import shutil
import subprocess
import tempfile

import shardpack

__all__ = ["write"]


def _tool():
    """The shardpack CLI: $SHARDPACK_TOOL, else the wheel's, else PATH's."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "shardpack")
    return os.environ.get("SHARDPACK_TOOL") or (here if os.path.exists(here) else "shardpack")


_DTYPES = {"u8": "uint8", "i32": "int32", "i64": "int64", "f16": "float16", "f32": "float32",
           "f64": "float64"}


def _value(kind, value):
    """A Spark value as shardpack.Writer takes it for a field of `kind`."""
    if value is None:
        return None
    if isinstance(value, bytearray):
        return bytes(value)
    if "[" in kind and isinstance(value, (list, tuple)):
        # An array field: its dtype, and an empty value in its shape (n, ...).
        import numpy as np
        dtype, dims = kind.rstrip("?").rstrip("]").split("[")
        a = np.asarray(value, dtype=_DTYPES[dtype])
        if a.size == 0:
            a = a.reshape((0, *[int(d) for d in dims.split(",")[1:]]))
        return a
    return value


def _write_partition(out_parts, schema, n, job, options, batches):
    """One partition's task: its Arrow batches (mapInArrow: no pickled Rows)
    written as part partitionId + 1 of n."""
    import pyarrow as pa
    from pyspark import TaskContext
    part = TaskContext.get().partitionId() + 1
    path = os.path.join(out_parts, f"part-{part:06d}")
    with shardpack.Writer(path, schema, part=(part, n), job=job, overwrite=True,
                          **options) as w:
        j = 0
        for batch in batches:
            columns = {name: batch.column(name).to_pylist() for name in batch.schema.names}
            keys = columns.get("__key__")
            for r in range(batch.num_rows):
                sample = {name: _value(kind, columns[name][r]) if name in columns else None
                          for name, kind in schema.items()}
                sample["__key__"] = (keys[r] if keys else None) or f"{part:05d}/{j:08d}"
                w.write(sample)
                j += 1
        records = w.records
    yield pa.RecordBatch.from_pydict({"part": [part], "path": [path], "records": [records]})


def write(df, out, schema, *, job=None, overwrite=False, **writer_options):
    """Writes `df` as the dataset `out` (a local or shared folder every
    executor and the driver see). `schema`: shardpack.Writer's. `job`: the
    name the parts give (default: `spark:` and OUT's name, so that a rerun
    writes the same bytes). `overwrite`: replace an existing OUT that is a
    dataset shardpack wrote. Other keywords go to every part's Writer
    (`shard_max_bytes`, `compression`, `classes`, ...). Returns the number of
    records written."""
    out = os.path.abspath(os.fspath(out))
    schema = dict(schema)
    job = job or f"spark:{os.path.basename(out)}"
    missing = [c for c in schema if c not in df.columns and not schema[c].endswith("?")]
    if missing:
        raise ValueError(f"shardpack.spark.write: the DataFrame has no column {missing[0]!r} "
                         f"(schema fields: {list(schema)}; columns: {df.columns})")
    rows = df.select(*[c for c in list(schema) + ["__key__"] if c in df.columns])
    n = rows.rdd.getNumPartitions()
    # The parts' folder is this write's own, beside OUT (so that merge links
    # their shards into OUT on the same file system), removed at the end.
    parts_dir = tempfile.mkdtemp(prefix=os.path.basename(out) + ".spark-parts-",
                                 dir=os.path.dirname(out))
    try:
        def task(batches, _args=(parts_dir, schema, n, job, dict(writer_options))):
            return _write_partition(*_args, batches)

        results = rows.mapInArrow(task, "part long, path string, records long")
        written = sorted((r.part, r.path, r.records) for r in results.collect())
        if [p for p, _, _ in written] != list(range(1, n + 1)):
            raise RuntimeError(f"shardpack.spark.write: {len(written)} of {n} parts came back")
        cmd = [_tool(), "merge", *[path for _, path, _ in written], "-o", out]
        if overwrite:
            cmd.append("--overwrite")
        merged = subprocess.run(cmd, capture_output=True, text=True)
        if merged.returncode != 0:
            raise shardpack.Error(merged.stderr.strip() or f"{cmd[0]} merge: exit {merged.returncode}")
        return sum(r for _, _, r in written)
    finally:
        shutil.rmtree(parts_dir, ignore_errors=True)
