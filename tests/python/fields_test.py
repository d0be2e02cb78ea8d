"""shardpack.Reader on a dataset of fields: the batch dict, ragged fields as
(values, offsets) or lists, torch tensors, the field selection, and boxes that
follow the crop (docs/python.md, "Fields").

The dataset is tests/testing/make_box_dataset.cc's (its comment says what
each record holds): raw photos with a red rectangle, whose box is the first
row of `boxes`. Skipped (exit 77) without numpy; the torch cases without torch.
"""
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixtures  # noqa: E402

fixtures.require("numpy")
import numpy as np  # noqa: E402

import shardpack  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

N = 48
S = 32  # the crop's output side


def expected(i):
    """What make_box_dataset wrote for record i."""
    w, h = 64 + (7 * i) % 32, 48 + (5 * i) % 24
    x0, y0 = 8 + i % 9, 6 + i % 7
    red = [x0, y0, x0 + 16 + i % 11, y0 + 12 + i % 5]
    boxes = [red] + ([[w - 20, h - 14, w - 6, h - 4]] if i % 3 == 0 else [])
    area = (red[2] - red[0]) * (red[3] - red[1])
    return {"w": w, "h": h, "boxes": np.array(boxes, np.float32),
            "caption": f"photo {i}: a red box at {x0},{y0}",
            "tag": 1 if area > 300 else 0,
            "mask": i % 4 != 3,
            "meta": ({"i": i, "colors": ["red"] + (["green"] if i % 3 == 0 else [])}
                     if i % 3 != 2 else None),
            "tokens": list(range(i, i + i % 5))}


def red_bbox(image):
    """x0, y0, x1, y1 (past the last) of an HWC image's strongly red pixels, or None."""
    red = (image[..., 0] > 180) & (image[..., 1] < 80) & (image[..., 2] < 80)
    ys, xs = np.nonzero(red)
    if len(xs) == 0:
        return None
    return np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], np.float32)


class FieldsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = fixtures.TempDir()
        cls.ds = os.path.join(cls.tmp.path, "fields")
        subprocess.run([os.environ["MAKE_BOX_DATASET"], cls.ds, "--records", str(N)],
                       check=True)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def reader(self, **kw):
        args = dict(batch_size=16, seed=3, threads=2, rank=0, world_size=1, shuffle=False)
        args.update(kw)
        return shardpack.Reader(self.ds, **args)

    def test_a_batch_is_a_dict_of_every_field(self):
        reader = self.reader(indices=True)
        seen = 0
        for batch in reader:
            self.assertEqual(list(batch)[:7],
                             ["photo", "caption", "boxes", "tag", "mask", "meta", "tokens"])
            # No image is transformed (transform none, photos of no fixed
            # shape): no __crop__, __size__, __flip__.
            self.assertEqual(set(batch) - set(list(batch)[:7]),
                             {"__labels__", "__present__", "__shapes__", "__index__"})
            self.assertEqual(set(batch["__shapes__"]), {"photo", "mask"})
            # transform none: a photo of no fixed shape comes as stored.
            self.assertEqual(reader.output_shape, (16, 0, 0, 0))
            values, offsets = batch["photo"]
            self.assertEqual(values.dtype, np.uint8)
            self.assertEqual(offsets.shape, (17,))
            boxes, box_offsets = batch["boxes"]
            self.assertEqual(boxes.dtype, np.float32)
            self.assertEqual(boxes.shape[1:], (4,))
            self.assertEqual(set(batch["__present__"]), {"mask", "meta"})
            for j, i in enumerate(batch["__index__"]):
                want = expected(int(i))
                self.assertEqual(batch["caption"][j], want["caption"])
                self.assertEqual(batch["meta"][j], want["meta"])
                self.assertEqual(batch["tag"][j], want["tag"])
                self.assertEqual(batch["__labels__"][j], want["tag"])
                np.testing.assert_array_equal(boxes[box_offsets[j]:box_offsets[j + 1]],
                                              want["boxes"])
                self.assertEqual(tuple(batch["__shapes__"]["photo"][j]), (want["h"], want["w"], 3))
                self.assertEqual(offsets[j + 1] - offsets[j], want["h"] * want["w"] * 3)
                self.assertEqual(batch["__present__"]["mask"][j], want["mask"])
                self.assertEqual(batch["__present__"]["meta"][j], want["meta"] is not None)
                tokens, token_offsets = batch["tokens"]
                self.assertEqual(list(tokens[token_offsets[j]:token_offsets[j + 1]]),
                                 want["tokens"])
                self.assertEqual(tokens.dtype, np.int32)
                seen += 1
        self.assertEqual(seen, N)

    def test_ragged_list_gives_an_array_a_sample(self):
        batch = next(iter(self.reader(ragged="list", indices=True)))
        for j, i in enumerate(batch["__index__"]):
            want = expected(int(i))
            np.testing.assert_array_equal(batch["boxes"][j], want["boxes"])
            self.assertEqual(batch["boxes"][j].shape, (len(want["boxes"]), 4))
            self.assertEqual(list(batch["tokens"][j]), want["tokens"])
            # a raw image as stored, shaped as stored; None where absent
            self.assertEqual(batch["photo"][j].shape, (want["h"], want["w"], 3))
            if want["mask"]:
                self.assertEqual(batch["mask"][j].shape, (want["h"], want["w"], 1))
                self.assertEqual(int(batch["mask"][j].sum()), int(
                    (want["boxes"][0][2] - want["boxes"][0][0]) *
                    (want["boxes"][0][3] - want["boxes"][0][1])))
            else:
                self.assertIsNone(batch["mask"][j])

    def test_fields_selects_what_is_decoded_and_delivered(self):
        self.assertEqual(self.reader().fields,
                         {"photo": "raw:rgb", "caption": "string", "boxes": "f32[n,4]",
                          "tag": "label", "mask": "raw:gray?", "meta": "json?",
                          "tokens": "i32[n]"})
        reader = self.reader(fields=["tag", "caption"], transform="rrc:32")
        batch = next(iter(reader))
        self.assertEqual(set(batch), {"caption", "tag", "__labels__"})
        self.assertEqual(reader.output_shape, (16, 0, 0, 0))
        self.assertEqual(batch["caption"][0], expected(0)["caption"])

    def test_bad_field_arguments_are_named(self):
        with self.assertRaisesRegex(ValueError, r"^fields: the dataset has no field 'nope' "
                                                r"\(its fields: photo, caption, boxes"):
            self.reader(fields=["nope"])
        with self.assertRaisesRegex(TypeError, r"^fields must be a list of str, not str$"):
            self.reader(fields="caption")
        with self.assertRaisesRegex(TypeError, r"^image_fields\[1\] must be a str, not int$"):
            self.reader(image_fields=["photo", 3])
        with self.assertRaisesRegex(ValueError, r"^ragged='lists' is not one of offsets, list$"):
            self.reader(ragged="lists")
        with self.assertRaisesRegex(ValueError, r"'caption' is a string field, not an image"):
            self.reader(image_fields=["caption"], transform="rrc:32")

    def predicted(self, batch, j, boxes):
        """The box line of docs/python.md, numpy, for sample j."""
        y, x, h, w = batch["__crop__"][j]
        b = (boxes - np.array([x, y, x, y], np.float32)) * np.array([S / w, S / h, S / w, S / h],
                                                                      np.float32)
        if batch["__flip__"][j]:
            b[:, [0, 2]] = S - b[:, [2, 0]]
        return b

    def test_boxes_follow_the_crop_and_flip(self):
        reader = self.reader(transform=f"rrc:{S}", indices=True, shuffle=True)
        checked = flipped = 0
        for epoch in range(3):
            reader.set_epoch(epoch)
            for batch in reader:
                values, offsets = batch["boxes"]
                for j, i in enumerate(batch["__index__"]):
                    want = expected(int(i))
                    self.assertEqual(tuple(batch["__size__"][j]), (want["h"], want["w"]))
                    box = self.predicted(batch, j, values[offsets[j]:offsets[j] + 1])[0]
                    clipped = np.clip(box, 0, S)
                    found = red_bbox(batch["photo"][j])
                    if clipped[2] - clipped[0] < 3 or clipped[3] - clipped[1] < 3:
                        continue  # the crop (nearly) missed the red box
                    self.assertIsNotNone(found, (i, box))
                    np.testing.assert_allclose(found, clipped, atol=1.0, err_msg=f"record {i}")
                    checked += 1
                    flipped += int(batch["__flip__"][j])
        self.assertGreater(checked, N // 2)
        self.assertGreater(flipped, 5)

    @unittest.skipIf(torch is None, "needs torch")
    def test_torch_tensors_and_the_box_line_in_torch(self):
        reader = self.reader(transform=f"rrc:{S}", output="torch", image_fields=["photo", "mask"])
        batch = next(iter(reader))
        photo, mask = batch["photo"], batch["mask"]
        self.assertIsInstance(photo, torch.Tensor)
        self.assertEqual(tuple(photo.shape), (16, S, S, 3))
        self.assertEqual(tuple(mask.shape), (16, S, S, 1))  # a raw 1-channel follower: nearest
        self.assertEqual(mask.dtype, torch.uint8)
        self.assertTrue(set(mask.unique().tolist()) <= {0, 1})
        values, offsets = batch["boxes"]
        self.assertEqual(values.dtype, torch.float32)
        self.assertEqual(offsets.dtype, torch.int64)
        crop, flip = batch["__crop__"], batch["__flip__"].bool()
        # docs/python.md's lines, for every box of the batch at once.
        s = torch.repeat_interleave(torch.arange(len(crop)), offsets.diff())
        y, x, h, w = crop[s].unbind(1)
        boxes = (values - torch.stack([x, y, x, y], 1)) * (S / torch.stack([w, h, w, h], 1))
        boxes = torch.where(flip[s, None], boxes[:, [2, 1, 0, 3]] * torch.tensor([-1, 1, -1, 1])
                            + torch.tensor([S, 0, S, 0]), boxes)
        for j in range(16):
            want = self.predicted({k: v.numpy() for k, v in batch.items()
                                   if k in ("__crop__", "__flip__")}, j,
                                  values[offsets[j]:offsets[j + 1]].numpy())
            np.testing.assert_allclose(boxes[offsets[j]:offsets[j + 1]].numpy(), want, atol=1e-4)
            # The mask is 1 where the photo is red, whatever the crop.
            if batch["__present__"]["mask"][j]:
                # Pure red and pure gray: where the photo's filter saw one
                # color only, the mask's nearest pixel is of that color too.
                red = ((photo[j, ..., 0] > 230) & (photo[j, ..., 1] < 30)).numpy()
                gray = ((photo[j].int() - 128).abs().max(-1).values < 10).numpy()
                self.assertTrue((mask[j, ..., 0].numpy()[red] == 1).all())
                self.assertTrue((mask[j, ..., 0].numpy()[gray] == 0).all())
            else:
                self.assertEqual(int(mask[j].sum()), 0)

    @unittest.skipIf(torch is None, "needs torch")
    def test_the_data_loader_passes_the_dict_on(self):
        loader = shardpack.DataLoader(self.ds, batch_size=16, threads=2, rank=0, world_size=1,
                                      transform=f"rrc:{S}", ragged="list")
        batch = next(iter(loader))
        self.assertEqual(tuple(batch["photo"].shape), (16, S, S, 3))
        self.assertEqual(len(batch["boxes"]), 16)
        self.assertIsInstance(batch["caption"][0], str)
        self.assertEqual(loader.state_dict()["reader"]["batch"], 1)

    def test_copies_equal_views(self):
        views = next(iter(self.reader(transform=f"rrc:{S}")))
        copies = next(iter(self.reader(transform=f"rrc:{S}", copy=True)))
        np.testing.assert_array_equal(views["photo"], copies["photo"])
        np.testing.assert_array_equal(views["boxes"][0], copies["boxes"][0])
        np.testing.assert_array_equal(views["__crop__"], copies["__crop__"])
        self.assertTrue(copies["photo"].flags.owndata)
        self.assertEqual(json.dumps(views["meta"]), json.dumps(copies["meta"]))


if __name__ == "__main__":
    unittest.main()
