"""shardpack.Writer: a dataset of any fields written from Python, read back.

Run by ctest with /usr/bin/python3 and PYTHONPATH at the build tree's module.
Skipped (exit 77) without numpy; the PIL cases without PIL.
"""
import io
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

try:
    from PIL import Image
except ImportError:  # the cases that need it are skipped
    Image = None

SCHEMA = {"image": "jpeg", "caption": "string", "boxes": "f32[n,4]", "label": "label",
          "mask": "raw:gray?", "meta": "json?"}
CLASSES = {"label": ["cat", "dog"]}


def pixels(h, w, c=3, seed=0):
    rng = np.random.default_rng(seed)
    shape = (h, w) if c == 1 else (h, w, c)
    return rng.integers(0, 256, shape, dtype=np.uint8)


def png(array):
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format="PNG")
    return buf.getvalue()


class WriterTest(unittest.TestCase):
    def setUp(self):
        self.tmp = fixtures.TempDir()

    def tearDown(self):
        self.tmp.cleanup()

    def out(self, name="ds"):
        return os.path.join(self.tmp.path, name)

    def sample(self, i):
        return {"image": pixels(8, 12, seed=i), "caption": f"a caption {i} \u00fc",
                "boxes": np.arange(4 * (i % 3), dtype=np.float32).reshape(-1, 4),
                "label": i % 2, "meta": {"i": i, "tags": ["x"]} if i % 2 else None,
                "mask": pixels(5, 7, c=1, seed=i) if i % 3 else None}

    def test_written_samples_read_back(self):
        with shardpack.Writer(self.out(), SCHEMA, classes=CLASSES, shard_max_records=3,
                              metadata={"license": "cc-by"}) as w:
            self.assertEqual(w.schema, SCHEMA)
            for i in range(7):
                self.assertTrue(w.write(self.sample(i)))
            self.assertEqual(w.records, 7)
        self.assertTrue(w.closed)
        self.assertFalse(os.path.exists(self.out() + ".partial"))
        with open(os.path.join(self.out(), "manifest.json")) as f:
            manifest = json.load(f)
        self.assertEqual(manifest["version"], "1.2")
        self.assertEqual(manifest["pack"]["metadata"], {"license": "cc-by"})
        self.assertEqual([f["name"] for f in manifest["schema"]["fields"]], list(SCHEMA))
        self.assertEqual(len(manifest["shards"]), 3)
        ds = shardpack.Dataset(self.out())
        self.assertEqual(len(ds), 7)
        for i in range(7):
            want = self.sample(i)
            r = ds.record(i, decode=True)
            self.assertEqual(r["__key__"], f"{i:08d}")
            self.assertEqual(r["label"], i % 2)
            self.assertEqual(r["image"].shape, (8, 12, 3))
            # A JPEG of the pixels at quality 100, 4:4:4: close to them.
            diff = np.abs(r["image"].astype(int) - want["image"].astype(int))
            self.assertLess(diff.mean(), 6)
            self.assertEqual(r["caption"], want["caption"])
            np.testing.assert_array_equal(r["boxes"], want["boxes"])
            if want["mask"] is None:
                self.assertIsNone(r["mask"])
            else:  # exact
                np.testing.assert_array_equal(r["mask"].reshape(5, 7), want["mask"])
            self.assertEqual(r["meta"], want["meta"])
        self.assertEqual(ds.find("00000005"), 5)
        sharddump = os.path.join(os.path.dirname(os.environ["SHARDPACK_TOOL"]), "sharddump")
        verify = subprocess.run([sharddump, "verify", self.out()], capture_output=True, text=True)
        self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)

    def test_values_in_other_forms(self):
        schema = {"photo": "raw:rgb", "label": "label", "ids": "i64[n]", "emb": "f16[3]",
                  "blob": "bytes", "note": "json"}
        with shardpack.Writer(self.out(), schema, classes={"label": ["a", "b", "c"]},
                              format="lmdb") as w:
            w.write({"__key__": "first", "photo": pixels(2, 3), "label": "c",
                     "ids": [1, 2, 2**40], "emb": [0.5, 1, -2], "blob": bytearray(b"\x00\xff"),
                     "note": '{"ready": true}'})
            w.write({"photo": pixels(4, 4), "label": np.int64(1), "ids": np.array([], np.int32),
                     "emb": np.array([1, 2, 3], np.uint8), "blob": memoryview(b"xyz"),
                     "note": [1, "two"]})
        ds = shardpack.Dataset(self.out())
        first, second = ds.record(0, decode=True), ds.record(1, decode=True)
        self.assertEqual(first["__key__"], "first")
        self.assertEqual(second["__key__"], "00000001")
        self.assertEqual(first["label"], 2)
        np.testing.assert_array_equal(first["photo"], pixels(2, 3))
        self.assertEqual(list(first["ids"]), [1, 2, 2**40])
        self.assertEqual(list(first["emb"]), [0.5, 1, -2])
        self.assertEqual(first["blob"], b"\x00\xff")
        self.assertEqual(first["note"], {"ready": True})
        self.assertEqual(second["ids"].size, 0)
        self.assertEqual(list(second["emb"]), [1, 2, 3])
        self.assertEqual(second["note"], [1, "two"])

    @unittest.skipIf(Image is None, "PIL is not importable")
    def test_image_files_and_pil_images(self):
        schema = {"photo": "jpeg", "mask": "raw:5x7x1", "thumb": "raw"}
        mask = pixels(5, 7, c=1)
        rgb = pixels(6, 9)
        jpeg = io.BytesIO()
        Image.fromarray(rgb).save(jpeg, format="JPEG", quality=90)
        with shardpack.Writer(self.out(), schema) as w:
            w.write({"photo": jpeg.getvalue(), "mask": png(mask), "thumb": Image.fromarray(rgb)})
            w.write({"photo": png(rgb), "mask": Image.fromarray(mask), "thumb": png(mask)})
        ds = shardpack.Dataset(self.out())
        self.assertEqual(ds[0]["photo"], jpeg.getvalue())  # a JPEG is stored as it is
        decoded = [ds.record(i, decode=True) for i in range(2)]
        self.assertEqual(decoded[1]["photo"].shape, (6, 9, 3))  # a PNG becomes a JPEG of its size
        for d in decoded:
            np.testing.assert_array_equal(d["mask"].reshape(5, 7), mask)
        np.testing.assert_array_equal(decoded[0]["thumb"], rgb)
        self.assertEqual(decoded[1]["thumb"].shape, (5, 7, 1))

    @unittest.skipIf(Image is None, "PIL is not importable")
    def test_files_given_by_path_are_read_as_their_bytes(self):
        # files=: an image or bytes field's value may be a path (str or
        # os.PathLike); the file's bytes are the value, as if given as bytes.
        import pathlib
        rgb = pixels(6, 9)
        jpeg = io.BytesIO()
        Image.fromarray(rgb).save(jpeg, format="JPEG", quality=90)
        paths = {}
        for name, data in [("a.jpg", jpeg.getvalue()), ("b.png", png(rgb)),
                           ("blob.bin", bytes(range(256)) * 3)]:
            paths[name] = os.path.join(self.tmp.path, name)
            with open(paths[name], "wb") as f:
                f.write(data)
        schema = {"photo": "jpeg", "blob": "bytes?", "caption": "string"}
        with shardpack.Writer(self.out(), schema, files=["photo", "blob"]) as w:
            w.write({"photo": paths["a.jpg"], "blob": pathlib.Path(paths["blob.bin"]),
                     "caption": "a.jpg"})
            w.write({"photo": pathlib.Path(paths["b.png"]), "caption": "b.png"})
            w.write({"photo": jpeg.getvalue(), "blob": b"given", "caption": "bytes"})
        ds = shardpack.Dataset(self.out())
        self.assertEqual(ds[0]["photo"], jpeg.getvalue())
        self.assertEqual(ds[0]["blob"], bytes(range(256)) * 3)
        self.assertEqual(ds.record(1, decode=True)["photo"].shape, (6, 9, 3))  # converted
        self.assertIsNone(ds[1]["blob"])
        self.assertEqual((ds[2]["photo"], ds[2]["blob"]), (jpeg.getvalue(), b"given"))
        # A path in a field not named in files= is a str where bytes belong.
        with shardpack.Writer(self.out("plain"), schema) as w:
            with self.assertRaisesRegex(TypeError, "field 'photo': must be bytes"):
                w.write({"photo": paths["a.jpg"], "caption": "x"})

    def test_a_file_that_cannot_be_read_names_the_sample_field_and_path(self):
        os.mkdir(os.path.join(self.tmp.path, "dir.jpg"))
        empty = os.path.join(self.tmp.path, "empty.jpg")
        open(empty, "wb").close()
        os.mkfifo(os.path.join(self.tmp.path, "fifo.jpg"))  # refused, not waited on
        text = os.path.join(self.tmp.path, "text.jpg")
        with open(text, "w") as f:
            f.write("not an image")
        missing = os.path.join(self.tmp.path, "missing.jpg")
        cases = [(missing, FileNotFoundError, f"{missing}"),
                 (os.path.join(self.tmp.path, "dir.jpg"), shardpack.Error, "not a regular file"),
                 (os.path.join(self.tmp.path, "fifo.jpg"), shardpack.Error, "a FIFO"),
                 (empty, shardpack.DataLossError, f"{empty} @0: empty file"),
                 (text, ValueError, f"field 'photo': unknown content: not a format shardpack "
                                    f"decodes (JPEG, PNG, WebP, BMP, TIFF, PNM) (read from {text})"),
                 ("", ValueError, "field 'photo': an empty path"),
                 ("a\0b", ValueError, "field 'photo': a path with a NUL character"),
                 ("\udcff", ValueError, "field 'photo': a path that is not UTF-8")]
        with shardpack.Writer(self.out(), {"photo": "jpeg"}, files=["photo"]) as w:
            for i, (path, error, message) in enumerate(cases):
                with self.subTest(path=path):
                    with self.assertRaises(error) as e:
                        w.write({"photo": path, "__key__": f"k{i}"})
                    self.assertIn(f"sample {i} ('k{i}')", str(e.exception))
                    self.assertIn(message, str(e.exception))
        self.assertEqual(w.records, 0)
        # on_error="skip": listed with the reason, the writer goes on.
        with shardpack.Writer(self.out("skip"), {"photo": "jpeg"}, files=["photo"],
                              on_error="skip") as w:
            self.assertFalse(w.write({"photo": missing, "__key__": "gone"}))
        self.assertEqual(len(w.skipped), 1)
        self.assertEqual(w.skipped[0][0], "gone")
        self.assertEqual(w.skipped[0][1],
                         f"field 'photo': open {missing}: No such file or directory")
        for files, message in [(["caption"], "files: 'caption' is not an image or bytes field"),
                               (["nope"], "files: 'nope' is not an image or bytes field")]:
            with self.assertRaisesRegex(ValueError, message):
                shardpack.Writer(self.out("bad"), {"photo": "jpeg", "caption": "string"},
                                 files=files)
        with self.assertRaisesRegex(TypeError, "files must be a list of field names"):
            shardpack.Writer(self.out("bad"), {"photo": "jpeg"}, files="photo")

    def test_an_exception_in_the_with_block_publishes_nothing(self):
        with self.assertRaises(RuntimeError):
            with shardpack.Writer(self.out(), SCHEMA, classes=CLASSES) as w:
                w.write(self.sample(0))
                raise RuntimeError("stop")
        self.assertTrue(w.closed)
        self.assertFalse(os.path.exists(self.out()))
        self.assertFalse(os.path.exists(self.out() + ".partial"))
        w = shardpack.Writer(self.out(), SCHEMA, classes=CLASSES)
        w.write(self.sample(0))
        del w  # never closed: discarded
        self.assertFalse(os.path.exists(self.out()))
        self.assertFalse(os.path.exists(self.out() + ".partial"))
        w = shardpack.Writer(self.out(), SCHEMA, classes=CLASSES)
        w.discard()
        self.assertFalse(os.path.exists(self.out() + ".partial"))
        with self.assertRaisesRegex(ValueError, r"^write\(\) on a closed Writer"):
            w.write(self.sample(0))
        with shardpack.Writer(self.out(), SCHEMA, classes=CLASSES) as w:
            w.write(self.sample(0))
            w.close()  # closed in the block: the exit leaves it so
        self.assertEqual(len(shardpack.Dataset(self.out())), 1)

    def test_bad_values_name_the_sample_and_the_field(self):
        w = shardpack.Writer(self.out(), SCHEMA, classes=CLASSES)
        cases = [
            (TypeError, {"caption": 5}, "field 'caption': must be a str, not int"),
            (ValueError, {"caption": "\udcff"}, "field 'caption': not UTF-8"),
            (ValueError, {"caption": None}, "field 'caption': missing, and not optional"),
            (TypeError, {"boxes": np.zeros((1, 4), np.float64)},
             "field 'boxes': a float64 array does not cast safely to f32"),
            (ValueError, {"boxes": np.zeros((2, 5), np.float32)},
             "field 'boxes': an array of shape (2, 5), the field holds (n, 4)"),
            (TypeError, {"boxes": "1,2,3,4"}, "field 'boxes': must be a numpy array"),
            (ValueError, {"meta": "{not json"}, "field 'meta': not valid JSON"),
            (TypeError, {"meta": {1, 2}},
             "field 'meta': Object of type set is not JSON serializable"),
            (ValueError, {"label": 2}, "field 'label': label 2 is outside its 2 classes"),
            (ValueError, {"label": "fish"}, "field 'label': 'fish' is not one of its 2 classes"),
            (TypeError, {"label": True}, "field 'label': a label must be an int or a class name"),
            (TypeError, {"image": 3.5}, "field 'image': must be bytes (an image file)"),
            (TypeError, {"image": np.zeros((4, 4, 3), np.float32)},
             "field 'image': pixels must be uint8, not float32"),
            (ValueError, {"image": b"not an image"}, "field 'image': unknown content"),
            (ValueError, {"mask": pixels(5, 7)},
             "field 'mask': a 3-channel (RGB) image, the field holds 1-channel (gray) images"),
        ]
        for i, (error, change, message) in enumerate(cases):
            sample = dict(self.sample(1), **change)
            with self.subTest(message=message):
                with self.assertRaises(error) as e:
                    w.write(sample)
                self.assertIn(f"sample {i} ('{i:08d}'): {message}", str(e.exception))
                self.assertEqual(str(e.exception).count("\n"), 0)
        with self.assertRaises(ValueError) as e:
            w.write(dict(self.sample(1), captoin="x", extra=1))
        self.assertIn(f"sample {len(cases)} ('{len(cases):08d}'): unknown fields 'captoin', "
                      "'extra' (the schema has image, caption, boxes, label, mask, meta)",
                      str(e.exception))
        with self.assertRaisesRegex(TypeError, "sample must be a dict"):
            w.write([1, 2])
        self.assertTrue(w.write(self.sample(2)))  # the writer goes on
        w.close()
        self.assertEqual(len(shardpack.Dataset(self.out())), 1)

    @unittest.skipIf(Image is None, "PIL is not importable")
    def test_a_color_png_for_a_gray_mask_is_refused(self):
        w = shardpack.Writer(self.out(), SCHEMA, classes=CLASSES)
        with self.assertRaises(ValueError) as e:
            w.write(dict(self.sample(1), mask=png(pixels(5, 7))))
        self.assertIn("sample 0 ('00000000'): field 'mask': a 3-channel (RGB) PNG image, the "
                      "field holds 1-channel (gray) images", str(e.exception))
        w.discard()

    def test_arrays_cast_only_safely(self):
        schema = {"x": "f32[n]", "n": "u8[2]"}
        with shardpack.Writer(self.out(), schema) as w:
            w.write({"x": np.array([1, 2], np.int16), "n": [0, 255]})  # safe casts
            w.write({"x": [0.1, 2], "n": np.array([3, 4], np.uint8)})
            for bad, error, message in [
                    ({"x": np.array([1], np.int64)}, TypeError, "int64 array does not cast"),
                    ({"n": [1.5, 2]}, TypeError, "floats in a field of u8"),
                    ({"n": [1, 256]}, ValueError, "a value out of the range of u8"),
                    ({"n": [1, 2, 3]}, ValueError, "shape (3,), the field holds (2,)"),
                    ({"x": [[1], [2]]}, ValueError, "shape (2, 1), the field holds (n,)")]:
                sample = dict({"x": [1.0], "n": [1, 2]}, **bad)
                with self.assertRaisesRegex(error, message.replace("(", r"\(").replace(")", r"\)")):
                    w.write(sample)
        ds = shardpack.Dataset(self.out())
        self.assertEqual(len(ds), 2)
        self.assertEqual(list(ds[1]["x"]), [np.float32(0.1), 2])

    def test_skip_lists_bad_samples(self):
        with shardpack.Writer(self.out(), SCHEMA, classes=CLASSES, on_error="skip") as w:
            self.assertTrue(w.write(self.sample(0)))
            self.assertFalse(w.write(dict(self.sample(1), caption=7)))
            self.assertFalse(w.write(dict(self.sample(2), meta="{")))
            self.assertTrue(w.write(self.sample(3)))
            with self.assertRaises(ValueError):  # a program's mistake, not the data's
                w.write(dict(self.sample(4), nope=1))
        self.assertEqual(w.records, 2)
        self.assertEqual(w.skipped, [("00000001", "field 'caption': must be a str, not int"),
                                     ("00000002", "field 'meta': not valid JSON")])
        ds = shardpack.Dataset(self.out())
        self.assertEqual([ds[i]["__key__"] for i in range(len(ds))], ["00000000", "00000003"])
        with open(os.path.join(self.out(), "skipped.tsv")) as f:
            self.assertEqual(f.read().splitlines()[1:],
                             ["00000001\tfield 'caption': must be a str, not int",
                              "00000002\tfield 'meta': not valid JSON"])

    def test_class_names_of_an_int_array(self):
        # An i32 / i64 array may name its elements' classes (docs/format.md,
        # 17.4), as `shardpack coco`'s category_ids do: the Writer takes them
        # and Dataset.classes gives them back.
        schema = {"image": "raw:gray", "boxes": "f32[n,4]", "category_ids": "i32[n]"}
        with shardpack.Writer(self.out(), schema,
                              classes={"category_ids": ["cat", "dog", "bird"]}) as w:
            w.write({"image": pixels(4, 4, c=1), "boxes": np.zeros((2, 4), np.float32),
                     "category_ids": np.array([2, 0], np.int32)})
            with self.assertRaisesRegex(ValueError, r"field 'category_ids': element 0 is 3, "
                                                    r"outside its 3 classes \(0\.\.2\)"):
                w.write({"image": pixels(4, 4, c=1), "boxes": np.zeros((1, 4), np.float32),
                         "category_ids": np.array([3], np.int32)})
        ds = shardpack.Dataset(self.out())
        self.assertEqual(ds.classes, {"category_ids": ["cat", "dog", "bird"]})
        self.assertEqual(ds[0]["category_ids"].tolist(), [2, 0])
        self.assertEqual(len(ds), 1)

    def test_bad_arguments_are_one_line_errors(self):
        for kwargs, error, message in [
                ({"schema": {"x": "f32[n"}}, ValueError, "field 'x': type 'f32[n' is not one of"),
                ({"schema": ["x"]}, TypeError, "schema must be a dict of field name -> type"),
                ({"schema": {"x": 5}}, TypeError, "schema['x'] must be a str, not int"),
                ({"format": "tar"}, ValueError, "format 'tar' is out of range: shard, lmdb, hdf5"),
                ({"part": (1, 2)}, ValueError, "job is required with part"),
                ({"part": (3, 2), "job": "j"}, ValueError, "part (3, 2) is out of range"),
                ({"part": (0, None), "job": "j"}, ValueError, "part (0, None) is out of range"),
                ({"part": (1, None)}, ValueError, "job is required with part"),
                ({"on_error": "ignore"}, ValueError, "on_error 'ignore' is out of range"),
                ({"compression": "lz4"}, ValueError, "compression 'lz4' is not a compression"),
                ({"format": "hdf5", "compression": "zstd"}, ValueError,
                 "compression applies to the shard format only"),
                ({"block_size": 0}, ValueError, "block_size 0 is out of range"),
                ({"shard_max_bytes": "lots"}, ValueError, "shard_max_bytes 'lots' is out of range"),
                ({"classes": {"caption": ["a"]}}, ValueError,
                 "classes['caption']: the schema has no field of that name that takes class "
                 "names (a label, or an i32 or i64 array)"),
                ({"classes": {"boxes": ["a"]}}, ValueError,
                 "classes['boxes']: the schema has no field of that name that takes class "
                 "names (a label, or an i32 or i64 array)"),
                ({"metadata": [1]}, TypeError, "metadata must be a dict"),
                ({"metdata": {}}, TypeError, "unexpected keyword argument 'metdata'")]:
            args = dict({"schema": SCHEMA}, **kwargs)
            with self.subTest(kwargs=kwargs):
                with self.assertRaises(error) as e:
                    shardpack.Writer(self.out(), **args)
                self.assertIn(message, str(e.exception))
                self.assertFalse(os.path.exists(self.out() + ".partial"))
        shardpack.Writer(self.out(), SCHEMA, shard_max_bytes="1MiB", block_size=65536).close()
        with self.assertRaisesRegex(shardpack.Error, "already exists"):
            shardpack.Writer(self.out(), SCHEMA)

    def test_threads_take_turns(self):
        schema = {"photo": "raw", "n": "i64[1]"}
        with shardpack.Writer(self.out(), schema) as w:
            def work(t):
                for i in range(25):
                    w.write({"__key__": f"t{t}-{i}", "photo": pixels(16, 16, seed=i), "n": [i]})
            threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(w.records, 100)
        ds = shardpack.Dataset(self.out())
        keys = sorted(ds[i]["__key__"] for i in range(len(ds)))
        self.assertEqual(keys, sorted(f"t{t}-{i}" for t in range(4) for i in range(25)))

    def test_an_engines_rows_become_a_part_as_the_writer_takes_them(self):
        # shardpack.ray and shardpack.spark turn their rows into parts with
        # _parts.write_part: numbers into arrays of one, lists into arrays of
        # the field's dtype (an empty one in its shape), numpy scalars into
        # Python values; a row without __key__ keyed by its part and place.
        from shardpack import _parts
        schema = {"s": "f32[1]", "boxes": "f32[n,4]", "label": "label", "tags": "i32[n]?",
                  "blob": "bytes"}
        # A binary column comes as views of the engine's buffer (_parts.arrow_values).
        buffer = b"..one..two"
        rows = [{"s": 0.5, "boxes": [], "label": np.int64(1), "tags": None, "extra": "x",
                 "blob": memoryview(buffer)[2:5]},
                {"s": np.float64(2), "boxes": [[1, 2, 3, 4]], "label": 0, "tags": [7, 8],
                 "__key__": "k", "blob": bytearray(b"two")}]
        os.makedirs(self.out("parts"))
        part = _parts.write_part(self.out("parts"), schema, 3, None, "job",
                                 {"classes": {"label": ["a", "b"]}}, iter(rows))
        path = os.path.join(self.out("parts"), "part-000003")
        self.assertEqual(part, (3, path, 2))
        ds = shardpack.Dataset(path)
        r0, r1 = ds[0], ds[1]
        self.assertEqual((r0["__key__"], r1["__key__"]), ("00003/00000000", "k"))
        self.assertEqual(r0["s"].tolist(), [0.5])
        self.assertEqual(r1["s"].tolist(), [2.0])
        self.assertEqual(r0["boxes"].shape, (0, 4))
        self.assertEqual(r1["boxes"].tolist(), [[1, 2, 3, 4]])
        self.assertEqual((r0["label"], r1["label"]), (1, 0))
        self.assertIsNone(r0["tags"])
        self.assertEqual(r1["tags"].tolist(), [7, 8])
        self.assertEqual((r0["blob"], r1["blob"]), (b"one", b"two"))
        self.assertIsInstance(_parts.value("jpeg?", memoryview(buffer)), memoryview)
        self.assertEqual(_parts.value("string", memoryview(buffer)[2:5]), b"one")
        with open(os.path.join(path, "manifest.json")) as f:
            self.assertIn('"part": {\n      "index": 3\n    }', f.read())

    def test_parts_merge_into_one_dataset(self):
        with shardpack.Writer(self.out("whole"), SCHEMA, classes=CLASSES) as w:
            for i in range(6):
                w.write(dict(self.sample(i), __key__=f"k{i}"))
        for part, samples in ((1, range(0, 4)), (2, range(4, 6))):
            with shardpack.Writer(self.out(f"p{part}"), SCHEMA, classes=CLASSES,
                                  part=(part, 2), job="demo") as w:
                for i in samples:
                    w.write(dict(self.sample(i), __key__=f"k{i}"))
        merge = subprocess.run([os.environ["SHARDPACK_TOOL"], "merge", self.out("p2"),
                                self.out("p1"), "-o", self.out("merged")],
                               capture_output=True, text=True)
        self.assertEqual(merge.returncode, 0, merge.stderr)
        self.assertIn("merged 2 parts of one write (job demo): 6 records", merge.stderr)
        whole, merged = shardpack.Dataset(self.out("whole")), shardpack.Dataset(self.out("merged"))
        self.assertEqual(len(merged), 6)
        for i in range(6):
            a, b = whole[i], merged[i]
            self.assertEqual(list(a), list(b))
            for k in a:
                if k == "__index__":
                    continue
                if isinstance(a[k], np.ndarray):
                    np.testing.assert_array_equal(a[k], b[k])
                else:
                    self.assertEqual(a[k], b[k], k)


if __name__ == "__main__":
    unittest.main()
