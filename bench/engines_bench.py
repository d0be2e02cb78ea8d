"""Writing a JPEG folder through Spark and Ray Data against `shardpack images` (issue 47).

    python3 bench/engines_bench.py SRC --work DIR [--rounds N] [--engines spark,ray]
                                   [--cases TEXT,...]

SRC: an ImageFolder (class folders of .jpg; bench/peers/peer_bench.py
gen-imagefolder makes one). Every case on cores 0,1 (taskset), the page cache
warm (every file read first), the memory settled (settle()), rounds
alternating the order, medians:
- `shardpack images SRC -o OUT` (the reference; pack-time shuffle, the default);
- Spark local[2] (build/venv-spark's python): a frame of the files' paths
  listed on the driver, written with shardpack.spark.write(files=["image"])
  (the write tasks read the files; schema image: jpeg, label); and the folder
  read with Spark's binaryFile source into 2 partitions, written with
  shardpack.spark.write, and the same DataFrame written with Spark's own
  df.write.parquet, and handed to Python tasks that only count its rows
  (mapInArrow: what the rows' crossing into Python costs alone);
- Ray Data on a local cluster of 2 CPUs (build/venv-ray's python): the folder
  read with read_binary_files, or by the map itself from blocks of 4,096
  paths listed on the driver, each block's files into one buffer (as a Ray
  user who cares for speed reads files), mapped in batches
  (map_batches, Arrow) to key, jpg and cls columns, written
  with shardpack.ray.ShardSink (schema jpg: jpeg, cls: label), and the same
  rows written with Ray's own write_parquet and write_webdataset, and given to
  a sink that only counts them (what Ray's reading and mapping cost alone);
  and blocks of paths whose jpg column is the paths, written with
  ShardSink(files=["jpg"]) (the write tasks read the files).
The engines' start-up (a SparkSession and its Python workers, ray.init) is
not timed. Prints
images/s of each and the ratios. Needs the built tree (SHARDPACK_TOOL,
PYTHONPATH at build/python), Java 17 for Spark, and the engines' venvs
(./scripts/test-engines makes them).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time


def settle():
    """Waits until the memory just freed is back with the host: this VM
    reports free pages to its host (virtio-balloon free page reporting,
    after 2 s), and a page touched again after that costs a fault there, so
    a case run right after another freed its output writes into cheap pages
    (`shardpack images` 5 to 6 s) and one run later into costly ones (8 to
    11 s). Every case starts settled."""
    time.sleep(10)


def warm(src):
    for root, _, files in os.walk(src):
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                while f.read(1 << 22):
                    pass


def engine_run(python, code, what):
    """`code` in a pinned process of `python`; its last line: records, seconds."""
    env = dict(os.environ, PYSPARK_PYTHON=python)
    p = subprocess.run(["taskset", "-c", "0,1", python, "-c", code],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"engines_bench: {what}: exit {p.returncode}: {p.stderr[-2000:]}")
    n, seconds = p.stdout.split()[-2:]
    return int(n), float(seconds)


def ray_case(python, src, out, kind, read):
    """One Ray Data run: the folder's rows written by `kind`, the files read
    by Ray's read_binary_files (`read` "binary") or by the map itself from a
    list of their paths ("files")."""
    code = f"""
import os, time
import ray
import shardpack.ray
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
src = {src!r}
classes = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
index = {{c: i for i, c in enumerate(classes)}}

def rows(batch):  # a batch of files as key, jpg and cls columns (the bytes not copied)
    import pyarrow as pa
    keys, cls = [], []
    for path in batch.column("path").to_pylist():
        folder, name = path.split("/")[-2:]
        keys.append(folder + "/" + name.split(".")[0])
        # WebDataset's tar members are bytes or text: the class as its text there.
        cls.append(str(index[folder]) if {kind!r} == "webdataset" else index[folder])
    return pa.table({{"__key__": keys, "jpg": batch.column("bytes"), "cls": cls}})


def read_rows(batch):  # a block of paths read into one buffer, the jpg column made on it
    import numpy as np
    import pyarrow as pa
    paths = batch.column("path").to_pylist()
    offsets = np.zeros(len(paths) + 1, np.int64)
    np.cumsum([os.stat(path).st_size for path in paths], out=offsets[1:])
    data = np.empty(int(offsets[-1]), np.uint8)
    for path, lo, hi in zip(paths, offsets[:-1].tolist(), offsets[1:].tolist()):
        with open(path, "rb", buffering=0) as f:
            if f.readinto(memoryview(data)[lo:hi]) != hi - lo:
                raise OSError(f"{{path}} changed size while read")
    files = pa.Array.from_buffers(pa.large_binary(), len(paths),
                                  [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    return rows(pa.table({{"path": paths, "bytes": files}}))


class Count(ray.data.Datasink):  # the floor: a sink that only counts the rows it is given
    def write(self, blocks, ctx):
        return sum(ray.data.block.BlockAccessor.for_block(b).num_rows() for b in blocks)

    def on_write_complete(self, result):
        self.records = sum(result.write_returns)


t = time.monotonic()
if {read!r} == "binary":
    ds = ray.data.read_binary_files(src, include_paths=True, file_extensions=["jpg"])
    ds = ds.map_batches(rows, batch_format="pyarrow")
else:  # blocks of 4,096 paths (about 240 MB), listed here
    import pyarrow as pa
    paths = sorted(os.path.join(d, n) for d, _, names in os.walk(src) for n in names
                   if n.endswith(".jpg"))
    ds = ray.data.from_arrow([pa.table({{"path": paths[i:i + 4096]}})
                              for i in range(0, len(paths), 4096)])
    if {read!r} == "paths":  # the jpg column the paths, read by the sink (files=)
        ds = ds.map_batches(lambda b: rows(pa.table({{"path": b.column("path"),
                                                      "bytes": b.column("path")}})),
                            batch_format="pyarrow", batch_size=None)
    else:
        ds = ds.map_batches(read_rows, batch_format="pyarrow", batch_size=None)
if {kind!r} == "count":
    sink = Count()
    ds.write_datasink(sink)
    n = sink.records
elif {kind!r} == "shardpack":
    sink = shardpack.ray.ShardSink({out!r}, {{"jpg": "jpeg", "cls": "label"}},
                                   classes={{"cls": classes}},
                                   files=["jpg"] if {read!r} == "paths" else None)
    ds.write_datasink(sink)
    n = sink.records
elif {kind!r} == "parquet":
    ds.write_parquet({out!r})
    n = -1
else:
    ds.write_webdataset({out!r}, encoder=None)  # the JPEGs as they are
    n = -1
print(n, time.monotonic() - t)
"""
    n, seconds = engine_run(python, code, f"ray {kind} ({read})")
    return (n if n >= 0 else count_files(src)), seconds


def count_files(src):
    return sum(len(files) for _, _, files in os.walk(src))


def spark_case(python, src, out, kind):
    """One Spark run in a process of its own, pinned; prints seconds."""
    code = f"""
import os, sys, time
from pyspark.sql import SparkSession, functions as F
import shardpack.spark
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.pyspark.python", sys.executable)
         .config("spark.driver.memory", "4g").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
src = {src!r}
classes = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
index = F.create_map(*[x for i, c in enumerate(classes) for x in (F.lit(c), F.lit(i))])
# Spark starts its Python workers on the first job that runs Python (2.5 to
# 3 s here): a cost of the session, not of the rows, so paid before the clock.
spark.range(2, numPartitions=2).mapInArrow(lambda batches: batches, "id long").collect()
t = time.monotonic()
if {kind!r} == "files":  # a frame of paths, listed here; the write task reads the files
    label = {{c: i for i, c in enumerate(classes)}}
    rows = sorted((os.path.basename(d) + "/" + n[:-4], os.path.join(d, n),
                   label[os.path.basename(d)])
                  for d, _, names in os.walk(src) for n in names if n.endswith(".jpg"))
    df = spark.createDataFrame(rows, "__key__ string, image string, label long")
else:
    df = (spark.read.format("binaryFile").option("pathGlobFilter", "*.jpg")
          .option("recursiveFileLookup", "true").load(src).repartition(2)
          .select(F.col("path").alias("__key__"), F.col("content").alias("image"),
                  index[F.element_at(F.split("path", "/"), -2)].alias("label")))
if {kind!r} in ("files", "shardpack"):
    n = shardpack.spark.write(df, {out!r}, {{"image": "jpeg", "label": "label"}},
                              classes={{"label": classes}},
                              files=["image"] if {kind!r} == "files" else None)
elif {kind!r} == "count":  # the floor: the rows handed to Python tasks that count them
    def count(batches):
        import pyarrow as pa
        yield pa.RecordBatch.from_pydict({{"n": [sum(b.num_rows for b in batches)]}})
    n = df.mapInArrow(count, "n long").agg(F.sum("n")).collect()[0][0]
else:
    df.write.mode("overwrite").parquet({out!r})
    n = spark.read.parquet({out!r}).count()
print(n, time.monotonic() - t)
spark.stop()
"""
    return engine_run(python, code, f"spark {kind}")


def pack_case(src, out):
    tool = os.environ["SHARDPACK_TOOL"]
    t = time.monotonic()
    subprocess.run(["taskset", "-c", "0,1", tool, "images", src, "-o", out, "-q",
                    "--overwrite"], check=True)
    return count_files(src), time.monotonic() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("--work", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--engines", default="spark,ray")
    ap.add_argument("--cases", default="", help="only the cases whose names contain one of "
                    "these comma-separated texts (besides shardpack images)")
    ap.add_argument("--spark-python", default="build/venv-spark/bin/python")
    ap.add_argument("--ray-python", default="build/venv-ray/bin/python")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    spark, ray = os.path.abspath(args.spark_python), os.path.abspath(args.ray_python)
    cases = {"shardpack images": lambda out: pack_case(args.src, out)}
    engines = args.engines.split(",")
    if "spark" in engines:
        cases["spark -> shardpack.spark.write"] = lambda out: spark_case(spark, args.src, out,
                                                                         "shardpack")
        cases["spark (a frame of paths) -> shardpack.spark.write(files=)"] = (
            lambda out: spark_case(spark, args.src, out, "files"))
        cases["spark -> df.write.parquet"] = lambda out: spark_case(spark, args.src, out,
                                                                    "parquet")
        cases["spark -> Python tasks that count rows (the floor)"] = (
            lambda out: spark_case(spark, args.src, out, "count"))
    if "ray" in engines:
        for read, how in (("binary", "read_binary_files"), ("files", "files read in the map")):
            for kind, name in (("shardpack", "ShardSink"), ("parquet", "write_parquet"),
                               ("webdataset", "write_webdataset"),
                               ("count", "a sink that counts rows (the floor)")):
                cases[f"ray ({how}) -> {name}"] = (
                    lambda k, r: lambda out: ray_case(ray, args.src, out, k, r))(kind, read)
        cases["ray (paths, files=) -> ShardSink reading the files"] = (
            lambda out: ray_case(ray, args.src, out, "shardpack", "paths"))
    if args.cases:
        cases = {name: run for name, run in cases.items()
                 if name == "shardpack images" or any(c in name for c in args.cases.split(","))}
    rates = {name: [] for name in cases}
    for r in range(args.rounds):
        order = list(cases) if r % 2 == 0 else list(cases)[::-1]
        for name in order:
            out = os.path.join(args.work, "out")
            shutil.rmtree(out, ignore_errors=True)
            warm(args.src)
            settle()
            n, seconds = cases[name](out)
            rates[name].append(n / seconds)
            print(f"round {r + 1}: {name}: {n} images in {seconds:.1f} s, {n / seconds:,.0f}/s",
                  flush=True)
            shutil.rmtree(out, ignore_errors=True)
    ref = statistics.median(rates["shardpack images"])
    for name, values in rates.items():
        med = statistics.median(values)
        print(f"| {name} | {med:,.0f} ({min(values):,.0f}-{max(values):,.0f}) | {med / ref:.2f} |")


if __name__ == "__main__":
    main()
