"""shardpack parquet: Parquet files written here with pyarrow, the Hugging Face
features in their metadata, converted and read back field by field.

Skipped (exit 77) without pyarrow or numpy: the wheel test runs it in the venv of
tests/python/requirements-torch.txt, which pins pyarrow.
"""
import glob
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixtures  # noqa: E402

fixtures.require("numpy", "pyarrow")
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import shardpack  # noqa: E402
from shardpack import parquet  # noqa: E402


class ParquetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = fixtures.TempDir()
        src = os.path.join(cls.tmp.path, "src")
        subprocess.run([os.environ["MAKE_DEMO_DATA"], src, "--images-per-class", "3",
                        "--classes", "2"], check=True, capture_output=True)
        cls.jpegs = []
        for p in sorted(glob.glob(os.path.join(src, "**", "*.JPEG"), recursive=True)):
            with open(p, "rb") as f:
                cls.jpegs.append(f.read())
        n = len(cls.jpegs)
        cls.rows = {
            "image": [{"bytes": b, "path": f"{i}.jpg"} for i, b in enumerate(cls.jpegs)],
            "label": [i % 2 for i in range(n)],
            "text": [f"a caption {i}" for i in range(n)],
            "score": [float(i) / 2 for i in range(n)],
            "emb": [[float(i), 1.0, 2.0] for i in range(n)],
            "note": [None if i % 3 else f"n{i}" for i in range(n)],
        }
        table = pa.table({
            "image": pa.array(cls.rows["image"], pa.struct([("bytes", pa.binary()),
                                                           ("path", pa.string())])),
            "label": pa.array(cls.rows["label"], pa.int64()),
            "text": pa.array(cls.rows["text"], pa.string()),
            "score": pa.array(cls.rows["score"], pa.float32()),
            "emb": pa.array(cls.rows["emb"], pa.list_(pa.float32(), 3)),
            "note": pa.array(cls.rows["note"], pa.string()),
        })
        features = {"image": {"_type": "Image"},
                    "label": {"_type": "ClassLabel", "names": ["cat", "dog"]},
                    "text": {"_type": "Value", "dtype": "string"}}
        table = table.replace_schema_metadata(
            {b"huggingface": json.dumps({"info": {"features": features}}).encode()})
        cls.files = [os.path.join(cls.tmp.path, f"train-{k}.parquet") for k in range(2)]
        half = n // 2
        pq.write_table(table.slice(0, half), cls.files[0])
        pq.write_table(table.slice(half), cls.files[1])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_columns_become_fields(self):
        schema, classes = parquet.infer_schema(self.files[0])
        self.assertEqual(schema, {"image": "jpeg", "label": "label", "text": "string",
                                  "score": "f32[1]", "emb": "f32[3]", "note": "string?"})
        self.assertEqual(classes, {"label": ["cat", "dog"]})

    def test_every_row_reads_back(self):
        out = os.path.join(self.tmp.path, "out")
        self.assertEqual(parquet.main([*self.files, "-o", out, "-q"]), 0)
        ds = shardpack.Dataset(out)
        self.assertEqual(len(ds), len(self.jpegs))
        for i in range(len(ds)):
            r = ds[i]
            self.assertEqual(r["image"], self.jpegs[i])
            self.assertEqual(r["label"], self.rows["label"][i])
            self.assertEqual(r["text"], self.rows["text"][i])
            np.testing.assert_array_equal(r["emb"], np.array(self.rows["emb"][i], np.float32))
            self.assertEqual(r["note"], self.rows["note"][i])

    def test_an_unsupported_column_is_named(self):
        bad = os.path.join(self.tmp.path, "bad.parquet")
        pq.write_table(pa.table({"m": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64()))}),
                       bad)
        with self.assertRaises(parquet.ParquetError) as e:
            parquet.infer_schema(bad)
        self.assertIn("column 'm'", str(e.exception))
        self.assertIn("--drop m", str(e.exception))


if __name__ == "__main__":
    unittest.main()
