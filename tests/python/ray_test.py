"""shardpack.ray.ShardSource and ShardSink on a local Ray cluster: `ray start --head`
on this machine with 2 CPUs (2 worker processes), in its own session and temp
folder, which the test connects to as a driver and stops at the end.

Runs where Ray Data imports (scripts/test-engines makes build/venv-ray, pinned
by tests/engines/requirements-ray.txt); elsewhere it is skipped (exit 77).
Datasets are made by the project's tools (fixtures.py): records of every field
type, and CIFAR-10 demo records of images and labels.
"""
import os
import signal
import socket
import subprocess
import sys
import time
import unittest

import fixtures

fixtures.require("ray", "numpy", "pyarrow",
                 how="./scripts/test-engines runs this test in build/venv-ray, which has them")

import numpy as np  # noqa: E402
import ray  # noqa: E402
from ray.data.block import BlockAccessor  # noqa: E402

import shardpack  # noqa: E402
import shardpack.ray  # noqa: E402


def _same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    return a == b


_cluster = {}


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setUpModule():
    """`ray start --head --block` in a session of its own (so that the whole
    cluster stops with it), then this process connects as a driver."""
    tmp = fixtures.TempDir()
    port = _free_port()
    ray_cli = os.path.join(os.path.dirname(sys.executable), "ray")
    head = subprocess.Popen(
        [ray_cli, "start", "--head", "--block", "--num-cpus=2", f"--port={port}",
         "--node-ip-address=127.0.0.1", "--include-dashboard=false", "--disable-usage-stats",
         f"--temp-dir={tmp.path}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    _cluster.update(tmp=tmp, head=head)
    deadline = time.monotonic() + 60
    while True:
        try:
            ray.init(address=f"127.0.0.1:{port}", log_to_driver=False,
                     runtime_env={"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}})
            break
        except Exception as e:  # not up yet, or cannot start here
            if head.poll() is not None or time.monotonic() > deadline:
                tearDownModule()
                print(f"SKIP: `ray start --head` did not come up ({e})", flush=True)
                sys.exit(fixtures.SKIP)
            time.sleep(0.3)
    # The write tests compare runs: keep the blocks in the order they were read.
    ray.data.DataContext.get_current().execution_options.preserve_order = True


def tearDownModule():
    ray.shutdown()
    head = _cluster.pop("head", None)
    if head is not None and head.poll() is None:
        os.killpg(head.pid, signal.SIGTERM)
        try:
            head.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()
    if "tmp" in _cluster:
        _cluster.pop("tmp").cleanup()


class ShardSourceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = fixtures.TempDir()
        cls.fields = fixtures.make_fields_dataset(cls.tmp.path, 300, shard_records=70)
        cls.cifar = fixtures.make_cifar_dataset(cls.tmp.path, 500, shard_records=128)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def read_all(self, path, blocks, **kwargs):
        ds = ray.data.read_datasource(shardpack.ray.ShardSource(path, **kwargs),
                                      override_num_blocks=blocks)
        return sorted(ds.take_all(), key=lambda r: r["__index__"])

    def test_every_record_once_with_its_fields(self):
        expected = shardpack.Dataset(self.fields)
        for blocks in (1, 4, 7):
            rows = self.read_all(self.fields, blocks, rows_per_block=16)
            self.assertEqual([r["__index__"] for r in rows], list(range(len(expected))))
            for row in rows:
                # Raw images (the mask) as arrays of their pixels, JPEGs as bytes.
                want = expected.record(row["__index__"], decode="raw")
                self.assertIsInstance(row["photo"], bytes)
                self.assertEqual(set(row), set(want), row["__index__"])
                for name, value in want.items():
                    self.assertTrue(_same(row[name], value),
                                    f"record {row['__index__']}, field {name}: "
                                    f"{row[name]!r} != {value!r}")

    def test_decode_gives_the_images_as_dataset_decodes_them(self):
        expected = shardpack.Dataset(self.fields)
        rows = self.read_all(self.fields, 3, decode=True)
        self.assertEqual(len(rows), len(expected))
        for row in rows[:40]:
            want = expected.record(row["__index__"], decode=True)
            self.assertEqual(row["photo"].dtype, np.uint8)
            self.assertTrue(np.array_equal(row["photo"], want["photo"]), row["__index__"])

    def test_images_and_labels_dataset_gives_its_implicit_fields(self):
        expected = shardpack.Dataset(self.cifar)
        source = shardpack.ray.ShardSource(self.cifar)
        self.assertEqual(source.fields, dict(expected.fields))
        rows = self.read_all(self.cifar, 5)
        self.assertEqual([r["__index__"] for r in rows], list(range(500)))
        label = [n for n, t in expected.fields.items() if t.startswith("label")][0]
        for row in rows:
            # Raw pixels as the array they are (the bytes alone lose the shape).
            want = expected.record(row["__index__"], decode=True)
            self.assertEqual(row["__key__"], want["key"])
            self.assertTrue(np.array_equal(row["image"], want["image"]))
            self.assertEqual(row["image"].tobytes(), want["data"])
            self.assertEqual(row[label], want["labels"][0])
        decoded = self.read_all(self.cifar, 2, decode=True)
        self.assertEqual(decoded[7]["image"].shape, (32, 32, 3))
        self.assertTrue(np.array_equal(decoded[7]["image"],
                                       expected.record(7, decode=True)["image"]))

    def test_a_damaged_record_fails_the_read_naming_it(self):
        # A record of fields carries its own CRC-32C, which Dataset checks on
        # every read: a flipped byte anywhere in it fails the task that reads
        # it, and the job, naming the shard.
        import shutil
        damaged = os.path.join(self.tmp.path, "damaged")
        shutil.copytree(self.fields, damaged)
        shard = sorted(f for f in os.listdir(damaged) if f.endswith(".shard"))[1]
        path = os.path.join(damaged, shard)
        at = os.path.getsize(path) // 3
        with open(path, "r+b") as f:
            f.seek(at)
            byte = f.read(1)
            f.seek(at)
            f.write(bytes([byte[0] ^ 0xFF]))
        with self.assertRaises(Exception) as caught:
            self.read_all(damaged, 4)
        self.assertIn(shard, str(caught.exception))

    def test_not_a_dataset_is_an_error_before_any_task(self):
        with self.assertRaises(OSError) as caught:
            shardpack.ray.ShardSource(os.path.join(self.tmp.path, "missing"))
        self.assertIn("missing", str(caught.exception))
        with self.assertRaises(ValueError):
            shardpack.ray.ShardSource(self.fields, rows_per_block=0)


class _CrashingSink(shardpack.ray.ShardSink):
    """Write task 1's first attempt dies (its worker process exits) after
    writing 10 rows, once `marker` is touched."""

    def __init__(self, marker, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._marker = marker

    def write(self, blocks, ctx):
        def crash_after_ten_rows(blocks):
            for block in blocks:
                if ctx.task_idx == 1 and not os.path.exists(self._marker):
                    yield BlockAccessor.for_block(block).slice(0, 10, True)
                    open(self._marker, "w").close()
                    os._exit(1)
                yield block
        return super().write(crash_after_ten_rows(blocks), ctx)


class ShardSinkTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = fixtures.TempDir()
        cls.path = fixtures.make_fields_dataset(cls.tmp.path, 300, shard_records=70)
        cls.source = shardpack.Dataset(cls.path)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def out(self, name):
        return os.path.join(self.tmp.path, name)

    def rows(self, blocks=4):
        return ray.data.read_datasource(shardpack.ray.ShardSource(self.path, rows_per_block=32),
                                        override_num_blocks=blocks)

    def leftovers(self, name):
        return [n for n in os.listdir(self.tmp.path) if n.startswith(name + ".")]

    def check_equal_to_source(self, path):
        out = shardpack.Dataset(path)
        self.assertEqual(out.fields, self.source.fields)
        self.assertEqual(len(out), len(self.source))
        for i in range(len(self.source)):
            got, want = out[i], self.source[i]
            self.assertEqual(set(got), set(want), i)
            for name, value in want.items():
                self.assertTrue(_same(got[name], value),
                                f"record {i}, field {name}: {got[name]!r} != {value!r}")

    def test_a_written_dataset_is_the_source_record_for_record(self):
        sink = shardpack.ray.ShardSink(self.out("copy"), self.source.fields, shard_max_records=50)
        self.rows().write_datasink(sink)
        self.assertEqual(sink.records, len(self.source))
        self.check_equal_to_source(self.out("copy"))
        self.assertEqual(self.leftovers("copy"), [])
        with open(os.path.join(self.out("copy"), "manifest.json")) as f:
            self.assertIn('"job": "ray:copy"', f.read())

    def test_rows_of_paths_write_the_files_bytes(self):
        # files=["photo"]: the photo column holds paths, read by the write task.
        folder = self.out("photos")
        os.makedirs(folder)
        paths = []
        for i in range(len(self.source)):
            paths.append(os.path.join(folder, f"{i}.jpg"))
            with open(paths[-1], "wb") as f:
                f.write(self.source[i]["photo"])
        sink = shardpack.ray.ShardSink(self.out("from-paths"), self.source.fields,
                                       files=["photo"])
        self.rows().map(lambda row: dict(row, photo=paths[row["__index__"]])).write_datasink(sink)
        self.check_equal_to_source(self.out("from-paths"))
        self.assertEqual(self.leftovers("from-paths"), [])

    def test_a_task_killed_mid_write_is_retried_and_the_output_is_the_same(self):
        fields = self.source.fields
        self.rows().write_datasink(shardpack.ray.ShardSink(self.out("clean"), fields, job="retry"))
        marker = self.out("crashed-once")
        self.rows().write_datasink(_CrashingSink(marker, self.out("crashed"), fields, job="retry"))
        self.assertTrue(os.path.exists(marker), "write task 1 did not crash")
        self.check_equal_to_source(self.out("crashed"))
        self.assertEqual(fixtures.shard_bytes(self.out("crashed")), fixtures.shard_bytes(self.out("clean")))
        self.assertEqual(self.leftovers("crashed"), [])

    def test_a_failed_write_leaves_no_dataset_and_no_parts(self):
        def break_one(row):
            if row["__index__"] == 170:
                row["embedding"] = np.zeros(2, np.float16)  # f16[4] takes 4
            return row
        with self.assertRaises(Exception) as caught:
            self.rows().map(break_one).write_datasink(
                shardpack.ray.ShardSink(self.out("failed"), self.source.fields))
        self.assertIn("embedding", str(caught.exception))
        self.assertFalse(os.path.exists(self.out("failed")))
        self.assertEqual(self.leftovers("failed"), [])

    def test_an_existing_out_or_a_bad_schema_fails_before_any_task(self):
        marker = self.out("a-task-ran")

        def touch(row):
            open(marker, "w").close()
            return row
        os.makedirs(self.out("taken"))
        with self.assertRaises(FileExistsError) as caught:
            self.rows().map(touch).write_datasink(
                shardpack.ray.ShardSink(self.out("taken"), self.source.fields))
        self.assertIn("taken already exists; use overwrite=True", str(caught.exception))
        with self.assertRaises(ValueError) as caught:
            self.rows().map(touch).write_datasink(
                shardpack.ray.ShardSink(self.out("badschema"), {"boxes": "f32[n"}))
        self.assertIn("'f32[n'", str(caught.exception))
        self.assertFalse(os.path.exists(marker))
        self.assertEqual(self.leftovers("taken") + self.leftovers("badschema"), [])

    def test_no_rows_make_an_empty_dataset(self):
        sink = shardpack.ray.ShardSink(self.out("empty"), {"caption": "string"})
        ray.data.from_items([{"caption": "x"}]).filter(lambda r: False).write_datasink(sink)
        self.assertEqual(sink.records, 0)
        self.assertEqual(len(shardpack.Dataset(self.out("empty"))), 0)
        self.assertEqual(self.leftovers("empty"), [])
        with self.assertRaises(ValueError):
            shardpack.ray.ShardSink(self.out("x"), {"caption": "string"}, min_rows_per_part=0)


class ArrowValuesTest(unittest.TestCase):
    """_parts.arrow_values, which gives both engines' binary columns to the
    Writer as views of the Arrow buffers (no copy)."""

    def test_binary_values_are_views_of_every_chunk_slice_and_null(self):
        import pyarrow as pa
        from shardpack import _parts
        values = [b"\xff\xd8one", None, b"", b"three", b"\x00" * 70000]
        for kind in (pa.binary(), pa.large_binary()):
            whole = pa.array(values, kind)
            for column, want in ((whole, values), (whole.slice(1, 3), values[1:4]),
                                 (whole.slice(4), values[4:]),
                                 (pa.chunked_array([whole.slice(0, 2), pa.array([], kind),
                                                    whole.slice(3)]), values[:2] + values[3:])):
                got = _parts.arrow_values(column)
                self.assertEqual([None if v is None else bytes(v) for v in got], want, kind)
                self.assertTrue(all(v is None or isinstance(v, memoryview) for v in got))
        self.assertEqual(_parts.arrow_values(pa.array([], pa.binary())), [])
        self.assertEqual(_parts.arrow_values(pa.array(["a", None])), ["a", None])


if __name__ == "__main__":
    unittest.main()
