"""shardpack.spark: a Spark DataFrame written as a shardpack dataset (docs/python.md, "Spark").

    import shardpack.spark
    shardpack.spark.write(df, "/data/coco-train",
                          {"image": "jpeg", "caption": "string", "label": "label"})

Each partition of the DataFrame is one part: the task that holds partition i
writes it with `shardpack.Writer(..., part=(i + 1, N), job=JOB)` into a
folder of its own beside OUT (OUT.spark-parts-XXXX/part-NNNNNN), and the
driver, once every task has returned, merges the N parts into OUT with
`shardpack merge` (checked: one N, one job, schema and options, each part
once) and removes them (a frame of no partitions: an empty dataset). So:
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
binary columns as views of the batches' bytes, array columns as lists (made numpy arrays for
array fields), struct columns for a `json` field as dicts. Where the images are
files the executors see, a frame of their paths with files=["image"] (the
Writer's option) has each task read its files: the bytes never cross from
the JVM to Python, the fast way (docs/python.md, "Spark", Speed).
"""
import os

from shardpack import _parts

__all__ = ["write"]


def _write_partition(out_parts, schema, n, job, options, batches):
    """One partition's task: its Arrow batches (mapInArrow: no pickled Rows)
    written as part partitionId + 1 of n."""
    import pyarrow as pa
    from pyspark import TaskContext
    part, path, records = _parts.write_part(out_parts, schema,
                                            TaskContext.get().partitionId() + 1, n, job,
                                            options, _parts.arrow_rows(batches))
    yield pa.RecordBatch.from_pydict({"part": [part], "path": [path], "records": [records]})


def write(df, out, schema, *, job=None, overwrite=False, **writer_options):
    """Writes `df` as the dataset `out` (a local or shared folder every
    executor and the driver see). `schema`: shardpack.Writer's. `job`: the
    name the parts give (default: `spark:` and OUT's name, so that a rerun
    writes the same bytes). `overwrite`: replace an existing OUT that is a
    dataset shardpack wrote. Other keywords go to every part's Writer
    (`shard_max_bytes`, `compression`, `classes`, `files`, ...). Returns the
    number of records written."""
    out = os.path.abspath(os.fspath(out))
    schema = dict(schema)
    job = job or f"spark:{os.path.basename(out)}"
    missing = [c for c in schema if c not in df.columns and not schema[c].endswith("?")]
    if missing:
        raise ValueError(f"shardpack.spark.write: the DataFrame has no column {missing[0]!r} "
                         f"(schema fields: {list(schema)}; columns: {df.columns})")
    rows = df.select(*[c for c in list(schema) + ["__key__"] if c in df.columns])
    n = rows.rdd.getNumPartitions()
    parts_dir = _parts.start(out, "spark", schema, job, writer_options, overwrite)
    try:
        def task(batches, _args=(parts_dir, schema, n, job, dict(writer_options))):
            return _write_partition(*_args, batches)

        results = rows.mapInArrow(task, "part long, path string, records long")
        written = [(r.part, r.path, r.records) for r in results.collect()]
        if sorted(p for p, _, _ in written) != list(range(1, n + 1)):
            raise RuntimeError(f"shardpack.spark.write: {len(written)} of {n} parts came back")
        return _parts.merge(written, out, schema, overwrite=overwrite, options=writer_options)
    finally:
        _parts.remove(parts_dir)
