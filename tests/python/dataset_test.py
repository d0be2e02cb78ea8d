"""shardpack.Dataset: records by index and by key from Python.

Run by ctest with /usr/bin/python3 and PYTHONPATH at the build tree's module.
Skipped (exit 77) without numpy.
"""
import json
import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixtures  # noqa: E402

fixtures.require("numpy")
import numpy as np  # noqa: E402

import shardpack  # noqa: E402

N = 300


class DatasetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = fixtures.TempDir()
        # Unshuffled: record i is the source's record i (label i % 10).
        cls.path = fixtures.make_cifar_dataset(cls.tmp.path, N, shard_records=70, shuffle=False)
        with open(os.path.join(cls.path + "-src", "cifar", "data_batch_1.bin"), "rb") as f:
            raw = np.frombuffer(f.read(), np.uint8).reshape(N, 3073)
        cls.labels = raw[:, 0].astype(np.int64)
        cls.pixels = raw[:, 1:].reshape(N, 3, 32, 32).transpose(0, 2, 3, 1)  # CHW -> HWC
        cls.ds = shardpack.Dataset(cls.path)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_len_and_every_record(self):
        self.assertEqual(len(self.ds), N)
        self.assertTrue(self.ds.has_record_table)
        for i in range(N):
            r = self.ds[i]
            self.assertEqual(r["index"], i)
            self.assertEqual(r["labels"], (int(self.labels[i]),))
            self.assertEqual(r["encoding"], "raw")
            self.assertEqual(r["shape"], (32, 32, 3))
            self.assertEqual(r["data"], self.pixels[i].tobytes())

    def test_negative_indices_and_index_error(self):
        self.assertEqual(self.ds[-1], self.ds[N - 1])
        self.assertEqual(self.ds[-N], self.ds[0])
        for bad in (N, N + 5, -N - 1, 2**62):
            with self.assertRaises(IndexError) as e:
                self.ds[bad]
            self.assertIn(f"record {bad} is out of range ({N} records)", str(e.exception))
        with self.assertRaises(TypeError):
            self.ds["0"]

    def test_decoded_image_is_hwc_pixels(self):
        r = self.ds.record(17, decode=True)
        self.assertEqual(r["image"].shape, (32, 32, 3))
        self.assertEqual(r["image"].dtype, np.uint8)
        np.testing.assert_array_equal(r["image"], self.pixels[17])
        self.assertNotIn("image", self.ds.record(17))

    def test_a_view_reads_its_selection_relabelled(self):
        with open(os.path.join(self.path, "manifest.json")) as f:
            names = json.load(f)["schema"]["labels"][0]["classes"]
        view = os.path.join(self.tmp.path, "two.view.json")
        with open(view, "w") as f:
            json.dump({"shardpack_view": 1, "datasets": [os.path.basename(self.path)],
                       "classes": {"names": [names[3], names[1]]}}, f)
        ds = shardpack.Dataset(view)
        base = [i for i in range(N) if self.labels[i] in (3, 1)]
        self.assertEqual(len(ds), len(base))
        for i, b in enumerate(base):
            r = ds[i]
            self.assertEqual(r["index"], i)
            self.assertEqual(r["labels"], (0 if self.labels[b] == 3 else 1,))
            self.assertEqual(r["data"], self.pixels[b].tobytes())
            self.assertEqual(ds.find(r["key"]), i)
        with self.assertRaises(IndexError):
            ds[len(base)]

    def test_find_every_key(self):
        for i in range(0, N, 7):
            key = self.ds[i]["key"]
            self.assertEqual(self.ds.find(key), i)
            self.assertEqual(self.ds.find(key.encode()), i)
        with self.assertRaises(KeyError):
            self.ds.find("no such key")
        with self.assertRaises(TypeError):
            self.ds.find(3)

    def test_threads_read_at_once(self):
        wrong = []

        def read(seed):
            rng = np.random.default_rng(seed)
            for i in rng.integers(0, N, 500):
                if self.ds[int(i)]["data"] != self.pixels[i].tobytes():
                    wrong.append(int(i))

        threads = [threading.Thread(target=read, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(wrong, [])

    def test_mmap_reads_the_same(self):
        mapped = shardpack.Dataset(self.path, mmap=True)
        for i in (0, 69, 70, N - 1):
            self.assertEqual(mapped[i], self.ds[i])

    def test_errors_from_a_manifest_are_one_line(self):
        # A raw newline in a manifest's text once reached the exception.
        other = fixtures.make_cifar_dataset(self.tmp.path, 20, name="newline")
        manifest = os.path.join(other, "manifest.json")
        with open(manifest) as f:
            m = json.load(f)
        m["shards"][0]["path"] = "../a\nb\x1b[2J"
        with open(manifest, "w") as f:
            json.dump(m, f)
        with self.assertRaises(shardpack.Error) as e:
            shardpack.Dataset(other)
        message = str(e.exception)
        self.assertNotIn("\n", message)
        self.assertNotIn("\x1b", message)
        self.assertIn("shards[0].path: '../a\\nb\\x1b[2J' is not a path inside", message)
        # A key twice is refused naming it, not the last one taken.
        with open(manifest, "w") as f:
            f.write('{"format": "shardpack", "format": "shardpack"}')
        with self.assertRaisesRegex(shardpack.Error, "key 'format' appears twice"):
            shardpack.Dataset(other)

    def test_missing_path_and_no_table(self):
        with self.assertRaises(FileNotFoundError):
            shardpack.Dataset(os.path.join(self.tmp.path, "missing"))
        other = fixtures.make_cifar_dataset(self.tmp.path, 20, name="notable")
        manifest = os.path.join(other, "manifest.json")
        with open(manifest) as f:
            m = json.load(f)
        del m["record_table"]
        with open(manifest, "w") as f:
            json.dump(m, f)
        ds = shardpack.Dataset(other)
        self.assertFalse(ds.has_record_table)
        self.assertEqual(len(ds), 20)
        with self.assertRaises(shardpack.Error) as e:
            ds.find(ds[0]["key"])
        self.assertIn("shardpack index", str(e.exception))

    def test_damaged_record_is_data_loss_naming_shard(self):
        other = fixtures.make_cifar_dataset(self.tmp.path, 10, name="damaged")
        shard = os.path.join(other, "shard-00000.shard")
        with open(shard, "r+b") as f:
            f.seek(4096 + 32 + 22)  # record 0's reserved header bytes
            f.write(b"\x01")
        ds = shardpack.Dataset(other)
        with self.assertRaises(shardpack.DataLossError) as e:
            ds[0]
        self.assertIn("shard-00000.shard @4128: record 0", str(e.exception))
        ds[1]


if __name__ == "__main__":
    unittest.main()
