"""shardpack.spark.write on Spark in local[2] mode (Java 17, loopback).

Runs where PySpark imports and Java runs (scripts/test-engines makes
build/venv-spark, pinned by tests/engines/requirements-spark.txt); elsewhere it
is skipped (exit 77). The rows are those of a dataset of every field type made
by the project's tools (fixtures.py), read back through shardpack.Dataset.
"""
import os
import shutil
import sys
import unittest

import fixtures

fixtures.require("pyspark", "numpy",
                 how="./scripts/test-engines runs this test in build/venv-spark, which has them")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    print("SKIP: no java on PATH (Spark needs Java 17: apt-get install openjdk-17-jre-headless)",
          flush=True)
    sys.exit(fixtures.SKIP)

import numpy as np  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import types as T  # noqa: E402

import shardpack  # noqa: E402
import shardpack.spark  # noqa: E402

SCHEMA = {"photo": "jpeg", "caption": "string", "boxes": "f32[n,4]", "category": "label",
          "embedding": "f16[4]", "blob": "bytes", "tokens": "i32[n]?"}
SPARK_SCHEMA = T.StructType([
    T.StructField("__key__", T.StringType(), False),
    T.StructField("photo", T.BinaryType(), False),
    T.StructField("caption", T.StringType(), False),
    T.StructField("boxes", T.ArrayType(T.ArrayType(T.FloatType())), False),
    T.StructField("category", T.LongType(), False),
    T.StructField("embedding", T.ArrayType(T.FloatType()), False),
    T.StructField("blob", T.BinaryType(), False),
    T.StructField("tokens", T.ArrayType(T.IntegerType()), True),
])
RECORDS = 120


def _row(r):
    return (r["__key__"], r["photo"], r["caption"], r["boxes"].tolist(), r["category"],
            [float(x) for x in r["embedding"]], r["blob"],
            None if r["tokens"] is None else [int(x) for x in r["tokens"]])


def _crash_first_attempt(marker):
    """Partition 1's first attempt dies (its Python worker exits) mid-write,
    after touching `marker`."""
    def crash(index, rows):
        from pyspark import TaskContext
        for j, row in enumerate(rows):
            if index == 1 and j == 10 and TaskContext.get().attemptNumber() == 0:
                open(marker, "w").close()
                os._exit(1)
            yield row
    return crash


class SparkWriteTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = fixtures.TempDir()
        cls.source = shardpack.Dataset(fixtures.make_fields_dataset(cls.tmp.path, RECORDS))
        cls.rows = [_row(cls.source[i]) for i in range(RECORDS)]
        # Spark's Python workers run this python (its pyarrow, its shardpack).
        os.environ.update(PYSPARK_PYTHON=sys.executable)
        # local[2, 4]: 2 cores, a task tried up to 4 times.
        cls.spark = (SparkSession.builder.master("local[2, 4]").appName("shardpack-test")
                     .config("spark.ui.enabled", "false")
                     .config("spark.driver.bindAddress", "127.0.0.1")
                     .config("spark.pyspark.python", sys.executable)
                     .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", ""))
                     .getOrCreate())
        cls.spark.sparkContext.setLogLevel("ERROR")

    @classmethod
    def tearDownClass(cls):
        cls.spark.stop()
        cls.tmp.cleanup()

    def frame(self, partitions):
        rdd = self.spark.sparkContext.parallelize(self.rows, partitions)
        return self.spark.createDataFrame(rdd, SPARK_SCHEMA)

    def check_equal_to_source(self, path, order):
        out = shardpack.Dataset(path)
        self.assertEqual(len(out), RECORDS)
        self.assertEqual(out.fields, SCHEMA)
        for i, key in enumerate(order):
            got, want = out[i], self.source[self.source.find(key)]
            self.assertEqual(got["__key__"], key)
            for name in SCHEMA:
                if isinstance(want[name], np.ndarray):
                    self.assertTrue(np.array_equal(got[name], want[name]), f"{key}: {name}")
                else:
                    self.assertEqual(got[name], want[name], f"{key}: {name}")

    def test_every_row_once_in_the_frames_order(self):
        out = os.path.join(self.tmp.path, "out")
        self.assertEqual(shardpack.spark.write(self.frame(3), out, SCHEMA), RECORDS)
        self.check_equal_to_source(out, [r[0] for r in self.rows])
        info = shardpack.Dataset(out)
        self.assertEqual(len(info), RECORDS)
        self.assertFalse([n for n in os.listdir(self.tmp.path) if ".spark-parts" in n])

    def test_a_task_killed_mid_write_is_retried_and_the_output_is_the_same(self):
        clean = os.path.join(self.tmp.path, "clean")
        shardpack.spark.write(self.frame(3), clean, SCHEMA, job="retry")
        crashed = os.path.join(self.tmp.path, "crashed")
        marker = os.path.join(self.tmp.path, "crashed-once")
        rdd = self.spark.sparkContext.parallelize(self.rows, 3).mapPartitionsWithIndex(
            _crash_first_attempt(marker))
        frame = self.spark.createDataFrame(rdd, SPARK_SCHEMA)
        shardpack.spark.write(frame, crashed, SCHEMA, job="retry")
        self.assertTrue(os.path.exists(marker), "the first attempt did not crash")
        self.check_equal_to_source(crashed, [r[0] for r in self.rows])
        self.assertEqual(fixtures.shard_bytes(crashed), fixtures.shard_bytes(clean))

    def test_a_failed_job_leaves_no_dataset_and_no_parts(self):
        out = os.path.join(self.tmp.path, "failed")
        bad = list(self.rows)
        bad[70] = bad[70][:5] + ([1.0, 2.0],) + bad[70][6:]  # an embedding of 2, not 4
        frame = self.spark.createDataFrame(self.spark.sparkContext.parallelize(bad, 3),
                                           SPARK_SCHEMA)
        with self.assertRaises(Exception) as caught:
            shardpack.spark.write(frame, out, SCHEMA)
        self.assertIn("embedding", str(caught.exception))
        self.assertFalse(os.path.exists(out))
        self.assertFalse([n for n in os.listdir(self.tmp.path)
                          if n.startswith("failed.") or ".spark-parts" in n])

    def test_a_frame_of_paths_writes_the_files_bytes(self):
        # files=["photo"]: the photo column holds paths; each write task reads
        # the files, so the bytes never cross the JVM.
        folder = os.path.join(self.tmp.path, "photos")
        os.makedirs(folder)
        rows = []
        for r in self.rows:
            path = os.path.join(folder, r[0].replace("/", "_") + ".jpg")
            with open(path, "wb") as f:
                f.write(r[1])
            rows.append((r[0], path) + r[2:])
        schema = T.StructType([T.StructField("photo", T.StringType(), False)
                               if f.name == "photo" else f for f in SPARK_SCHEMA.fields])
        frame = self.spark.createDataFrame(self.spark.sparkContext.parallelize(rows, 3), schema)
        out = os.path.join(self.tmp.path, "from-paths")
        self.assertEqual(shardpack.spark.write(frame, out, SCHEMA, files=["photo"]), RECORDS)
        self.check_equal_to_source(out, [r[0] for r in self.rows])
        # A file gone before its task reads it fails the job, naming it; no dataset is left.
        os.remove(rows[77][1])
        gone = os.path.join(self.tmp.path, "gone")
        with self.assertRaises(Exception) as caught:
            shardpack.spark.write(frame, gone, SCHEMA, files=["photo"])
        self.assertIn(f"field 'photo': open {rows[77][1]}: No such file or directory",
                      str(caught.exception))
        self.assertFalse(os.path.exists(gone))
        self.assertFalse([n for n in os.listdir(self.tmp.path) if n.startswith("gone.")])

    def test_a_frame_of_no_partitions_makes_an_empty_dataset(self):
        out = os.path.join(self.tmp.path, "empty")
        frame = self.spark.createDataFrame(self.spark.sparkContext.emptyRDD(), SPARK_SCHEMA)
        self.assertEqual(frame.rdd.getNumPartitions(), 0)
        self.assertEqual(shardpack.spark.write(frame, out, SCHEMA), 0)
        empty = shardpack.Dataset(out)
        self.assertEqual((len(empty), empty.fields), (0, SCHEMA))
        self.assertFalse([n for n in os.listdir(self.tmp.path) if n.startswith("empty.")])

    def test_a_missing_column_is_an_error_before_any_task(self):
        with self.assertRaises(ValueError) as caught:
            shardpack.spark.write(self.frame(2).drop("caption"),
                                  os.path.join(self.tmp.path, "nocaption"), SCHEMA)
        self.assertIn("caption", str(caught.exception))
        # An existing OUT, and options the Writer refuses, too (checked on the
        # driver, by a part opened and discarded).
        taken = os.path.join(self.tmp.path, "taken")
        os.makedirs(taken)
        with self.assertRaises(FileExistsError):
            shardpack.spark.write(self.frame(2), taken, SCHEMA)
        with self.assertRaises(ValueError) as caught:
            shardpack.spark.write(self.frame(2), os.path.join(self.tmp.path, "badblock"), SCHEMA,
                                  block_size=0)
        self.assertIn("block_size 0 is out of range", str(caught.exception))
        self.assertFalse([n for n in os.listdir(self.tmp.path)
                          if n.startswith(("taken.", "badblock"))])


if __name__ == "__main__":
    unittest.main()
