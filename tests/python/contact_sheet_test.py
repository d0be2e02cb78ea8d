"""shardpack.contact_sheet: a batch as one image, the same as shardbench --save-batch."""
import importlib.util
import os
import subprocess
import sys
import unittest

from fixtures import DatasetTest, require

require("numpy")
import numpy as np  # noqa: E402
import shardpack  # noqa: E402

GAP, CAPTION = 4, 26  # codec/contact_sheet.h: kSheetGap, kCaptionHeight


def tile(sheet, i, side, columns):
    """The pixels of tile i of a sheet whose tiles are `side` pixels."""
    x = GAP + (i % columns) * (side + GAP)
    y = GAP + (i // columns) * (side + CAPTION + GAP)
    return sheet[y:y + side, x:x + side]


def strip(sheet, i, side, columns):
    x = GAP + (i % columns) * (side + GAP)
    y = GAP + (i // columns) * (side + CAPTION + GAP) + side
    return sheet[y:y + CAPTION, x:x + side]


class ContactSheetTest(DatasetTest):
    RECORDS = 64

    def first_batch(self, **kw):
        r = shardpack.Reader(self.ds, batch_size=8, seed=3, transform="cifar-train", threads=1,
                             indices=True, copy=True, **kw)
        images, labels, indices = next(iter(r))
        return r, images, labels, indices

    def test_tiles_are_the_batch_pixels(self):
        r, images, labels, indices = self.first_batch()
        sheet = shardpack.contact_sheet(images, labels, r.classes, indices=indices)
        self.assertEqual(sheet.dtype, np.uint8)
        self.assertEqual(sheet.ndim, 3)
        self.assertEqual(sheet.shape[2], 3)
        self.assertEqual(sheet.strides, (sheet.shape[1] * 3, 3, 1))  # python/arrays.h
        columns = 3  # ceil(sqrt(8))
        for i in range(8):
            np.testing.assert_array_equal(tile(sheet, i, 32, columns), images[i])
            self.assertGreater(int((strip(sheet, i, 32, columns) == 240).sum()), 20)
        # Different labels, different caption strips.
        a, b = [i for i in range(8) if labels[i] != labels[0]][0], 0
        self.assertFalse(np.array_equal(strip(sheet, a, 32, columns), strip(sheet, b, 32, columns)))

    def test_nchw_float_shows_the_same_sheet(self):
        mean, std = (0.49, 0.48, 0.45), (0.25, 0.24, 0.26)
        r, images, labels, indices = self.first_batch()
        _, floats, _, _ = self.first_batch(layout="NCHW", dtype="float32", mean=mean, std=std)
        want = shardpack.contact_sheet(images, labels, r.classes, indices=indices, tile=48)
        got = shardpack.contact_sheet(floats, labels, r.classes, indices=indices, tile=48,
                                      mean=mean, std=std)
        np.testing.assert_array_equal(got, want)

    @unittest.skipUnless(importlib.util.find_spec("PIL"), "needs PIL (Debian: python3-pil)")
    def test_same_as_shardbench_save_batch(self):
        from PIL import Image
        out = os.path.join(self.tmp.path, "batch.png")
        subprocess.run([os.environ["SHARDBENCH_TOOL"], self.ds, "--batch-size", "8", "--seed", "3",
                        "--transform", "cifar-train", "--threads", "1", "--save-batch", out, "-q"],
                       check=True, stdout=subprocess.DEVNULL)
        r, images, labels, indices = self.first_batch()
        want = shardpack.contact_sheet(images, labels, r.classes, indices=indices)
        np.testing.assert_array_equal(np.asarray(Image.open(out).convert("RGB")), want)

    def test_bad_input_is_a_value_error(self):
        images = np.zeros((2, 8, 8, 3), np.uint8)
        with self.assertRaisesRegex(ValueError, "2 labels"):
            shardpack.contact_sheet(images, [1])
        with self.assertRaisesRegex(ValueError, "4 channels"):
            shardpack.contact_sheet(np.zeros((2, 8, 8, 4), np.uint8), [1, 2])
        with self.assertRaisesRegex(ValueError, "dimensions"):
            shardpack.contact_sheet(np.zeros((8, 8), np.uint8), [1])
        with self.assertRaisesRegex(ValueError, "layout"):
            shardpack.contact_sheet(images, [1, 2], layout="HWCN")
        with self.assertRaisesRegex(ValueError, "tile size"):
            shardpack.contact_sheet(images, [1, 2], tile=4)
        with self.assertRaisesRegex(ValueError, "dtype"):
            shardpack.contact_sheet(images.astype(np.int32), [1, 2])


if __name__ == "__main__":
    unittest.main(verbosity=2)
