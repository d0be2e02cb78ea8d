"""shardpack.ray.ShardSource on a local Ray cluster (2 CPUs, loopback).

Runs where Ray Data imports (scripts/test-engines makes build/venv-ray, pinned
by tests/engines/requirements-ray.txt); elsewhere it is skipped (exit 77).
Datasets are made by the project's tools (fixtures.py): records of every field
type, and CIFAR-10 demo records of images and labels.
"""
import os
import unittest

import fixtures

fixtures.require("ray", "numpy", "pyarrow")

import numpy as np  # noqa: E402
import ray  # noqa: E402

import shardpack  # noqa: E402
import shardpack.ray  # noqa: E402


def _same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    return a == b


class ShardSourceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = fixtures.TempDir()
        cls.fields = fixtures.make_fields_dataset(cls.tmp.path, 300, shard_records=70)
        cls.cifar = fixtures.make_cifar_dataset(cls.tmp.path, 500, shard_records=128)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}})

    @classmethod
    def tearDownClass(cls):
        ray.shutdown()
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
                want = expected[row["__index__"]]
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
            want = expected[row["__index__"]]
            self.assertEqual(row["__key__"], want["key"])
            self.assertEqual(row["image"], want["data"])
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


if __name__ == "__main__":
    unittest.main()
