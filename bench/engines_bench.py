"""Writing a JPEG folder through Spark against `shardpack images` (issue 47).

    build/venv-spark/bin/python bench/engines_bench.py SRC --work DIR [--rounds N]

SRC: an ImageFolder (class folders of .jpg; bench/peers/peer_bench.py
gen-imagefolder makes one). Every case on cores 0,1 (taskset), the page cache
warm (every file read first), rounds alternating the order, medians:
- `shardpack images SRC -o OUT` (the reference; pack-time shuffle, the default);
- Spark local[2]: the folder read with Spark's binaryFile source into 2
  partitions, written with shardpack.spark.write (schema image: jpeg, label),
  and the same DataFrame written with Spark's own df.write.parquet.
Prints images/s of each and the ratios. Needs the built tree
(SHARDPACK_TOOL, PYTHONPATH at build/python) and Java 17.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time


def warm(src):
    for root, _, files in os.walk(src):
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                while f.read(1 << 22):
                    pass


def spark_case(src, out, kind):
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
t = time.monotonic()
df = (spark.read.format("binaryFile").option("pathGlobFilter", "*.jpg")
      .option("recursiveFileLookup", "true").load(src).repartition(2)
      .select(F.col("path").alias("__key__"), F.col("content").alias("image"),
              index[F.element_at(F.split("path", "/"), -2)].alias("label")))
if {kind!r} == "shardpack":
    n = shardpack.spark.write(df, {out!r}, {{"image": "jpeg", "label": "label"}},
                              classes={{"label": classes}})
else:
    df.write.mode("overwrite").parquet({out!r})
    n = spark.read.parquet({out!r}).count()
print(n, time.monotonic() - t)
spark.stop()
"""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    p = subprocess.run(["taskset", "-c", "0,1", sys.executable, "-c", code],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"engines_bench: spark {kind}: exit {p.returncode}: {p.stderr[-2000:]}")
    n, seconds = p.stdout.split()[-2:]
    return int(n), float(seconds)


def pack_case(src, out):
    tool = os.environ["SHARDPACK_TOOL"]
    t = time.monotonic()
    subprocess.run(["taskset", "-c", "0,1", tool, "images", src, "-o", out, "-q",
                    "--overwrite"], check=True)
    seconds = time.monotonic() - t
    n = sum(len(files) for _, _, files in os.walk(src))
    return n, seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("--work", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    cases = {"shardpack images": lambda out: pack_case(args.src, out),
             "spark -> shardpack.spark.write": lambda out: spark_case(args.src, out, "shardpack"),
             "spark -> df.write.parquet": lambda out: spark_case(args.src, out, "parquet")}
    rates = {name: [] for name in cases}
    for r in range(args.rounds):
        order = list(cases) if r % 2 == 0 else list(cases)[::-1]
        for name in order:
            out = os.path.join(args.work, "out")
            shutil.rmtree(out, ignore_errors=True)
            warm(args.src)
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
