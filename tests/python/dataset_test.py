"""shardpack.Dataset: records by index and by key from Python.

Run by ctest with /usr/bin/python3 and PYTHONPATH at the build tree's module.
Skipped (exit 77) without numpy.
"""
import json
import os
import subprocess
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

    def test_indices_that_are_not_ints_are_one_line_errors(self):
        # Each was pybind11's signature dump ("incompatible function arguments ...").
        def refused(error, says, call):
            with self.assertRaises(error) as cm:
                call()
            message = str(cm.exception)
            self.assertRegex(message, says)
            for word in ("incompatible", "Invoked with", "(self:", "\n"):
                self.assertNotIn(word, message)
        refused(TypeError, r"^Dataset indices must be an int, not float$", lambda: self.ds[1.0])
        refused(TypeError, r"^Dataset indices must be an int, not bool$", lambda: self.ds[True])
        refused(TypeError, r"^Dataset indices must be an int, not slice \(one record at a time: "
                r"no slices\)$", lambda: self.ds[1:3])
        refused(TypeError, r"^Dataset indices must be an int, not NoneType$", lambda: self.ds[None])
        for bad in (2**63, 2**70, -2**70):
            refused(IndexError, rf"record {bad} is out of range \({N} records\)$",
                    lambda: self.ds[bad])
        refused(IndexError, r"record an int of 1001 bits is out of range",
                lambda: self.ds[2**1000])
        refused(TypeError, r"^mmap must be a bool, not str$",
                lambda: shardpack.Dataset(self.path, mmap="yes"))
        refused(TypeError, r"^Dataset\(\) got an unexpected keyword argument 'mmpa'",
                lambda: shardpack.Dataset(self.path, mmpa=True))
        refused(TypeError, r"^Dataset\(\) missing required argument 'path'$",
                lambda: shardpack.Dataset())
        refused(TypeError, r"^Dataset\(\) takes 1 positional argument \(path\) but 2 were given",
                lambda: shardpack.Dataset(self.path, True))
        refused(TypeError, r"^decode must be a bool, not int$",
                lambda: self.ds.record(0, decode=1))
        refused(TypeError, r"^Dataset indices must be an int, not str$",
                lambda: self.ds.record("0"))
        refused(TypeError, r"^key must be a str or bytes, not int$", lambda: self.ds.find(3))
        self.assertEqual(self.ds[np.int64(3)], self.ds[3])
        self.assertEqual(self.ds.record(index=3, decode=False), self.ds[3])

    def test_a_nul_in_a_path_is_refused_not_cut(self):
        # The path up to the NUL is this very dataset: cut, it opened.
        for kw in ({}, {"cache_dir": "/tmp/x\0y"}):
            path = self.path + ("\0-not-this" if not kw else "")
            with self.assertRaises(ValueError) as cm:
                shardpack.Dataset(path, **kw)
            self.assertRegex(str(cm.exception), r"holds a NUL byte \(at byte \d+\): a path is "
                             r"text without NULs$")
        with self.assertRaises(ValueError):
            shardpack.Dataset(os.fsencode(self.path) + b"\0")

    def test_the_docs_example_holds_on_a_shuffled_pack(self):
        # docs/python.md, "Records by index": packing shuffles, so the last
        # record is whichever the seed put there; a key finds its own record.
        shuffled = shardpack.Dataset(
            fixtures.make_cifar_dataset(self.tmp.path, N, name="shuffled"))
        r = shuffled[-1]
        self.assertEqual(r["index"], N - 1)
        self.assertRegex(r["key"], r"^data_batch_1\.bin/\d{5}$")
        self.assertEqual(r["shape"], (32, 32, 3))
        self.assertEqual(shuffled.record(7, decode=True)["image"].shape, (32, 32, 3))
        i = shuffled.find("data_batch_1.bin/00042")
        self.assertEqual(shuffled[i]["key"], "data_batch_1.bin/00042")
        self.assertNotEqual([shuffled[j]["key"] for j in range(N)],
                            [self.ds[j]["key"] for j in range(N)])

    def test_decoded_image_is_hwc_pixels(self):
        r = self.ds.record(17, decode=True)
        self.assertEqual(r["image"].shape, (32, 32, 3))
        self.assertEqual(r["image"].dtype, np.uint8)
        np.testing.assert_array_equal(r["image"], self.pixels[17])
        self.assertNotIn("image", self.ds.record(17))
        # decode="raw": raw pixels as the array, a JPEG left as its bytes.
        np.testing.assert_array_equal(self.ds.record(17, decode="raw")["image"], self.pixels[17])
        src = os.path.join(self.tmp.path, "jpegs-src")
        subprocess.run([os.environ["MAKE_DEMO_DATA"], src, "--cifar-records", "0", "--classes",
                        "2", "--images-per-class", "1"], check=True, capture_output=True)
        jpegs = os.path.join(self.tmp.path, "jpegs")
        subprocess.run([os.environ["SHARDPACK_TOOL"], "images", os.path.join(src, "images"),
                        "-o", jpegs, "-q"], check=True)
        r = shardpack.Dataset(jpegs).record(0, decode="raw")
        self.assertEqual(r["encoding"], "jpeg")
        self.assertNotIn("image", r)
        self.assertTrue(r["data"].startswith(b"\xff\xd8"))

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
