"""shardpack.Dataset on records with fields: every field by name, as Python values.

The datasets come from tests/testing/make_fields_dataset (MAKE_FIELDS_DATASET),
whose record i is tests/testing/field_fixtures.cc's SampleOf(i). Run by ctest
with /usr/bin/python3 and PYTHONPATH at the build tree's module. Skipped (exit
77) without numpy.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixtures  # noqa: E402

fixtures.require("numpy")
import numpy as np  # noqa: E402

import shardpack  # noqa: E402

N = 12
TYPES = {"photo": "jpeg", "caption": "string", "boxes": "f32[n,4]", "category": "label",
         "mask": "raw:gray?", "meta": "json?", "embedding": "f16[4]", "blob": "bytes",
         "tokens": "i32[n]?"}


def caption(i):
    return f"record {i}: a caf\u00e9 scene"


class DatasetFieldsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = fixtures.TempDir()
        cls.paths = {b: fixtures.make_fields_dataset(cls.tmp.path, N, name=b, backend=b,
                                                     shard_records=5)
                     for b in ("shard", "lmdb", "hdf5")}
        cls.ds = shardpack.Dataset(cls.paths["shard"])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def check_record(self, r, i, decoded):
        self.assertEqual(set(r), set(TYPES) | {"__key__", "__index__"})
        self.assertEqual(list(r)[2:], list(TYPES), "fields in record order")
        self.assertEqual(r["__key__"], f"s/{i}")
        self.assertEqual(r["__index__"], i)
        self.assertEqual(r["caption"], caption(i))
        self.assertEqual(r["category"], i % 3)
        self.assertIs(type(r["category"]), int)
        boxes = r["boxes"]
        self.assertEqual((boxes.dtype, boxes.shape), (np.dtype("float32"), (i % 3, 4)))
        want = np.float32(i) + 0.25 * np.arange(4 * (i % 3), dtype=np.float32).reshape(-1, 4)
        np.testing.assert_array_equal(boxes, want)
        self.assertEqual(r["meta"], {"id": i, "tags": ["a", "b"]} if i % 2 == 0 else None)
        emb = r["embedding"]
        self.assertEqual((emb.dtype, emb.shape), (np.dtype("float16"), (4,)))
        np.testing.assert_array_equal(emb, np.array([1, 2, 3, 4], np.float16))
        self.assertIsInstance(r["blob"], bytes)
        self.assertEqual(len(r["blob"]), i % 5)
        if i % 4 == 3:
            self.assertIsNone(r["tokens"])
        else:
            self.assertEqual(r["tokens"].dtype, np.dtype("int32"))
            self.assertEqual(r["tokens"].tolist(), [100 * i + t for t in range(i % 4)])
        if decoded:
            self.assertEqual((r["photo"].dtype, r["photo"].shape), (np.dtype("uint8"), (24, 40, 3)))
        else:
            self.assertIsInstance(r["photo"], bytes)
            self.assertTrue(r["photo"].startswith(b"\xff\xd8"))
        if i % 3 == 2:
            self.assertIsNone(r["mask"])
        elif decoded:
            self.assertEqual(r["mask"].shape, (2, 3, 1))
            self.assertEqual(r["mask"].reshape(-1).tolist(), [0, 1, 2, 3, 4, i])
        else:
            self.assertEqual(r["mask"], bytes([0, 1, 2, 3, 4, i]))

    def test_every_field_of_every_record_on_every_backend(self):
        for backend, path in self.paths.items():
            ds = shardpack.Dataset(path)
            self.assertEqual(len(ds), N)
            for i in range(N):
                with self.subTest(backend=backend, i=i):
                    self.check_record(ds[i], i, decoded=False)
                    self.assertEqual(ds.find(f"s/{i}"), i)

    def test_decode_gives_every_image_field_as_an_array(self):
        for i in range(4):
            self.check_record(self.ds.record(i, decode=True), i, decoded=True)
        # Arrays are the dataset's copies, not views of a reused buffer.
        a = self.ds.record(0, decode=True)["photo"]
        b = self.ds.record(1, decode=True)["photo"]
        np.testing.assert_array_equal(a, b)
        self.assertFalse(np.shares_memory(a, b))

    def test_decode_raw_gives_raw_images_as_arrays_and_jpegs_as_bytes(self):
        for i in range(4):
            r, decoded = self.ds.record(i, decode="raw"), self.ds.record(i, decode=True)
            self.assertIsInstance(r["photo"], bytes)
            self.assertEqual(r["photo"], self.ds[i]["photo"])
            if i % 3 == 2:
                self.assertIsNone(r["mask"])
                continue
            self.assertEqual(r["mask"].dtype, np.uint8)
            np.testing.assert_array_equal(r["mask"], decoded["mask"])
        # CHW planes come interleaved, as decode=True gives them.
        path = os.path.join(self.tmp.path, "chw")
        planes = np.arange(18, dtype=np.uint8).reshape(2, 3, 3)
        with shardpack.Writer(path, {"m": "raw/chw:2x3x3"}) as w:
            w.write({"m": planes})
        chw = shardpack.Dataset(path)
        np.testing.assert_array_equal(chw.record(0, decode="raw")["m"],
                                      chw.record(0, decode=True)["m"])
        self.assertEqual(chw[0]["m"], planes.transpose(2, 0, 1).tobytes())
        with self.assertRaisesRegex(ValueError, 'decode \'all\' is out of range: True, False or "raw"'):
            self.ds.record(0, decode="all")
        with self.assertRaisesRegex(TypeError, "decode must be a bool"):
            self.ds.record(0, decode=1)

    def test_fields_and_classes_describe_the_schema(self):
        self.assertEqual(self.ds.fields, TYPES)
        self.assertEqual(list(self.ds.fields), list(TYPES))
        self.assertEqual(self.ds.classes, {"category": ["cat", "dog", "bird"]})

    def test_a_flipped_caption_byte_is_a_data_loss_error_naming_the_record(self):
        path = fixtures.make_fields_dataset(self.tmp.path, N, name="flipped", shard_records=5)
        shard = os.path.join(path, "shard-00000.shard")
        with open(shard, "rb") as f:
            data = bytearray(f.read())
        at = data.find(caption(3).encode())
        self.assertGreater(at, 0)
        data[at + 2] ^= 0x20
        with open(shard, "wb") as f:
            f.write(data)
        ds = shardpack.Dataset(path)
        with self.assertRaises(shardpack.DataLossError) as e:
            ds[3]
        self.assertIn("shard-00000.shard @", str(e.exception))
        self.assertIn("record 3 (index 3): record CRC-32C mismatch", str(e.exception))
        self.check_record(ds[4], 4, decoded=False)

    def test_a_classic_dataset_keeps_its_dict_and_names_its_implicit_fields(self):
        path = fixtures.make_cifar_dataset(self.tmp.path, 20, name="cifar")
        ds = shardpack.Dataset(path)
        self.assertEqual(set(ds[0]), {"index", "key", "labels", "encoding", "shape", "data", "extra"})
        self.assertEqual(ds.fields, {"image": "raw:32x32x3", "label": "label"})
        self.assertEqual(len(ds.classes["label"]), 10)


if __name__ == "__main__":
    unittest.main()
