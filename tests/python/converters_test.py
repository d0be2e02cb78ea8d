"""shardpack webdataset and shardpack coco: datasets in those layouts, made here
with Python's tarfile and json, packed by the CLI and read back field by field.

Run by ctest with /usr/bin/python3 and PYTHONPATH at the build tree's module.
Skipped (exit 77) without numpy.
"""
import glob
import io
import json
import os
import subprocess
import sys
import tarfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixtures  # noqa: E402

fixtures.require("numpy")
import numpy as np  # noqa: E402

import shardpack  # noqa: E402

TOOL = os.environ["SHARDPACK_TOOL"]


def run(*args, ok=True):
    p = subprocess.run([TOOL, *args], capture_output=True, text=True)
    if ok and p.returncode != 0:
        raise AssertionError(f"{args}: exit {p.returncode}: {p.stderr}")
    return p


def npy(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


class WebDatasetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = fixtures.TempDir()
        src = os.path.join(cls.tmp.path, "src")
        subprocess.run([os.environ["MAKE_DEMO_DATA"], src, "--images-per-class", "3",
                        "--classes", "4"], check=True, capture_output=True)
        cls.jpegs = sorted(glob.glob(os.path.join(src, "**", "*.JPEG"), recursive=True))
        assert len(cls.jpegs) == 12, cls.jpegs
        cls.samples = []
        for i, path in enumerate(cls.jpegs):
            with open(path, "rb") as f:
                jpeg = f.read()
            boxes = np.arange(4 * (i % 3 + 1), dtype=np.float32).reshape(-1, 4) + i
            cls.samples.append({"key": f"s/{i:06d}", "jpg": jpeg, "txt": f"caption {i} é",
                                "cls": i % 4, "boxes": boxes,
                                "json": {"i": i} if i % 2 == 0 else None})
        cls.tars = []
        for t in range(2):  # two shards, each in another tar format
            path = os.path.join(cls.tmp.path, f"{t:06d}.tar")
            fmt = tarfile.PAX_FORMAT if t == 0 else tarfile.GNU_FORMAT
            with tarfile.open(path, "w", format=fmt) as tar:
                for s in cls.samples[6 * t: 6 * t + 6]:
                    add(tar, s["key"] + ".jpg", s["jpg"])
                    add(tar, s["key"] + ".txt", s["txt"].encode())
                    add(tar, s["key"] + ".cls", str(s["cls"]).encode())
                    add(tar, s["key"] + ".boxes.npy", npy(s["boxes"]))
                    if s["json"] is not None:
                        add(tar, s["key"] + ".json", json.dumps(s["json"]).encode())
            cls.tars.append(path)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_every_sample_reads_back_field_by_field(self):
        out = os.path.join(self.tmp.path, "wds")
        # A brace range, as WebDataset's shard URLs are written.
        run("webdataset", os.path.join(self.tmp.path, "{000000..000001}.tar"), "-o", out,
            "--field", "txt=caption", "--overwrite", "-q")
        ds = shardpack.Dataset(out)
        self.assertEqual(len(ds), 12)
        self.assertEqual(ds.fields, {"jpg": "jpeg", "caption": "string", "cls": "label",
                                     "boxes.npy": "f32[n,4]", "json": "json?"})
        for i, s in enumerate(self.samples):
            r = ds[i]
            self.assertEqual(r["__key__"], s["key"])
            self.assertEqual(r["jpg"], s["jpg"])
            self.assertEqual(r["caption"], s["txt"])
            self.assertEqual(r["cls"], s["cls"])
            np.testing.assert_array_equal(r["boxes.npy"], s["boxes"])
            self.assertEqual(r["json"], s["json"])

    def test_a_caption_that_is_not_utf8_names_the_sample_and_field(self):
        bad = os.path.join(self.tmp.path, "bad.tar")
        with tarfile.open(bad, "w") as tar:
            add(tar, "a.jpg", self.samples[0]["jpg"])
            add(tar, "a.txt", b"ok")
            add(tar, "b.jpg", self.samples[1]["jpg"])
            add(tar, "b.txt", b"caf\xe9")
        out = os.path.join(self.tmp.path, "bad-out")
        p = run("webdataset", bad, "-o", out, "--on-error", "fail", ok=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("'b'", p.stderr)
        self.assertIn("field 'txt': not UTF-8", p.stderr)
        self.assertFalse(os.path.exists(out))
        run("webdataset", bad, "-o", out, "--on-error", "skip", "-q")
        self.assertEqual(len(shardpack.Dataset(out)), 1)
        with open(os.path.join(out, "skipped.tsv")) as f:
            self.assertIn("not UTF-8", f.read())

    def test_a_damaged_tar_names_the_file_and_offset(self):
        with open(self.tars[0], "rb") as f:
            data = f.read()
        cut = os.path.join(self.tmp.path, "cut.tar")
        with open(cut, "wb") as f:
            f.write(data[:5000])
        p = run("webdataset", cut, "-o", os.path.join(self.tmp.path, "cut-out"), ok=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("cut.tar @", p.stderr)
        self.assertIn("cut short", p.stderr)
        climb = os.path.join(self.tmp.path, "climb.tar")
        with tarfile.open(climb, "w") as tar:
            add(tar, "../evil.jpg", b"x")
        p = run("webdataset", climb, "-o", os.path.join(self.tmp.path, "climb-out"), ok=False)
        self.assertIn("leaves the archive's tree", p.stderr)


class CocoTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = fixtures.TempDir()
        src = os.path.join(cls.tmp.path, "src")
        subprocess.run([os.environ["MAKE_DEMO_DATA"], src, "--images-per-class", "2",
                        "--classes", "2", "--width", "64", "--height", "48"],
                       check=True, capture_output=True)
        cls.images = os.path.join(src, "images")
        files = sorted(os.path.relpath(p, cls.images)
                       for p in glob.glob(os.path.join(cls.images, "**", "*.JPEG"), recursive=True))
        cls.coco = {
            "images": [{"id": 100 + i, "file_name": f, "width": 64, "height": 48}
                       for i, f in enumerate(files)],
            "annotations": [{"id": k, "image_id": 100 + k % len(files), "category_id": 7 if k % 2 else 3,
                             "bbox": [k, 2, 10, 20], "iscrowd": 0} for k in range(6)],
            "categories": [{"id": 7, "name": "dog"}, {"id": 3, "name": "cat"}],
        }
        cls.ann = os.path.join(cls.tmp.path, "instances.json")
        with open(cls.ann, "w") as f:
            json.dump(cls.coco, f)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_boxes_categories_and_ids(self):
        out = os.path.join(self.tmp.path, "coco")
        run("coco", self.ann, self.images, "-o", out, "-q")
        ds = shardpack.Dataset(out)
        self.assertEqual(len(ds), 4)
        r = ds[1]
        self.assertEqual(r["image_id"], 101)
        # Annotations 1 and 5 belong to image 101: corners; dog (id 7) is class 1.
        np.testing.assert_array_equal(r["boxes"], np.array([[1, 2, 11, 22], [5, 2, 15, 22]],
                                                            np.float32))
        np.testing.assert_array_equal(r["category_ids"], np.array([1, 1], np.int32))
        self.assertEqual(r["__key__"], self.coco["images"][1]["file_name"])

    def test_a_box_outside_its_image_is_named(self):
        coco = json.loads(json.dumps(self.coco))
        coco["annotations"][0]["bbox"] = [60, 2, 10, 20]
        ann = os.path.join(self.tmp.path, "outside.json")
        with open(ann, "w") as f:
            json.dump(coco, f)
        p = run("coco", ann, self.images, "-o", os.path.join(self.tmp.path, "o"),
                "--on-error", "fail", ok=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("annotation 0 of image 100", p.stderr)
        self.assertIn("leaves the 64x48 image", p.stderr)


if __name__ == "__main__":
    unittest.main()
