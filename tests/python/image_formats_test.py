"""An image folder of every format torchvision's ImageFolder takes packs to
the same samples: the same count, the same order and class indices, and (raw
mode, no resize) the pixels PIL's loader gives, where the path is lossless.

Every file is written at test time by PIL or by hand. Needs Debian's PIL,
numpy, h5py and torchvision (/usr/bin/python3); exits 77 (skipped) without.
"""
import io
import json
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

import fixtures

fixtures.require("numpy", "PIL", "h5py", "torchvision")

import h5py  # noqa: E402
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402
from torchvision.datasets import ImageFolder  # noqa: E402

W, H = 12, 10  # every image; raw mode at this size stores the decoded pixels unresized


def pixels(seed, channels=3):
    rng = np.random.default_rng(seed)
    shape = (H, W, channels) if channels > 1 else (H, W)
    return rng.integers(0, 256, size=shape, dtype=np.uint8)


def pnm(kind, maxval, data):
    return b"%s\n# written by the test\n%d %d\n%d\n" % (kind, W, H, maxval) + data


def bmp_16bit_555(seed):
    """A 16-bit BI_RGB BMP (5-5-5), which PIL reads but does not write."""
    rng = np.random.default_rng(seed)
    px = rng.integers(0, 1 << 15, size=(H, W), dtype=np.uint16)
    stride = (W * 2 + 3) & ~3
    rows = b"".join(px[H - 1 - y].astype("<u2").tobytes().ljust(stride, b"\0") for y in range(H))
    info = struct.pack("<IiiHHIIiiII", 40, W, H, 1, 16, 0, len(rows), 2835, 2835, 0, 0)
    return b"BM" + struct.pack("<IHHI", 14 + 40 + len(rows), 0, 0, 54) + info + rows


def build_folder(root):
    """Writes the folder; returns the files whose pixels we compare exactly
    with PIL, and those we expect to differ from PIL's convert("RGB") by
    design (16-bit gray: scaled, not clipped) with the expected pixels."""
    exact, expected = [], {}

    def save(rel, img, **kw):
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        img.save(path, **kw)
        return rel

    def write(rel, data):
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        return rel

    rgb = lambda s: Image.fromarray(pixels(s))  # noqa: E731
    # Class "cat": JPEGs and PNG variants.
    save("cat/a.jpg", rgb(1), quality=95)
    save("cat/B.JPEG", rgb(2), quality=95)
    # A CMYK JPEG without the Adobe APP14 marker PIL writes (the segment
    # right after SOI): PIL reads it with Adobe's polarity all the same.
    cmyk = io.BytesIO()
    Image.fromarray(pixels(19, 4), "CMYK").save(cmyk, "JPEG", quality=95)
    data = cmyk.getvalue()
    assert data[2:4] == b"\xff\xee", "PIL's CMYK JPEG starts with its Adobe marker"
    write("cat/r_cmyk_no_adobe.jpg", data[:2] + data[4 + struct.unpack(">H", data[4:6])[0]:])
    exact.append(save("cat/c.png", rgb(3)))
    exact.append(save("cat/d_rgba.png", Image.fromarray(pixels(4, 4), "RGBA")))
    exact.append(save("cat/e_gray.png", Image.fromarray(pixels(5, 1), "L")))
    exact.append(save("cat/f_palette.png", rgb(6).convert("P", palette=Image.ADAPTIVE, colors=50)))
    exact.append(save("cat/g_la.png", Image.fromarray(pixels(7, 2), "LA")))
    sixteen = (np.arange(W * H, dtype=np.uint16).reshape(H, W) * 521).astype(np.uint16)
    rel = save("cat/h_gray16.png", Image.fromarray(sixteen, "I;16"))
    expected[rel] = np.repeat((sixteen >> 8).astype(np.uint8)[:, :, None], 3, axis=2)
    # Class "dog": the other formats.
    exact.append(save("dog/i.bmp", rgb(8)))
    exact.append(write("dog/j_555.bmp", bmp_16bit_555(9)))
    exact.append(save("dog/k.ppm", rgb(10)))
    exact.append(save("dog/l.pgm", Image.fromarray(pixels(11, 1), "L")))
    exact.append(write("dog/m_plain.ppm", pnm(b"P3", 15, " ".join(
        str(v) for v in (pixels(12).ravel() % 16)).encode())))
    exact.append(save("dog/n.tif", rgb(13), compression="tiff_lzw"))
    exact.append(save("dog/o.TIFF", Image.fromarray(pixels(14, 4), "RGBA"),
                      compression="tiff_deflate"))
    exact.append(save("dog/p.webp", rgb(15), lossless=True))
    turned = Image.fromarray(pixels(20))
    exact.append(save("dog/s_turned.tif", turned, compression="tiff_deflate",
                      tiffinfo={274: 3}))  # Orientation: turned 180 degrees on load
    save("dog/q_lossy.webp", rgb(16), quality=90)
    # Class "fox": names that lie about the content.
    shutil.copy(os.path.join(root, "cat/a.jpg"), os.path.join(root, "cat/z_jpeg_named.png"))
    os.makedirs(os.path.join(root, "fox"))
    exact.append(save("fox/png_named.JPEG", rgb(17), format="PNG"))
    # Not items, as torchvision ignores them.
    save("fox/anim.gif", rgb(18))
    write("fox/notes.txt", b"not an image\n")
    write("fox/bits.pbm", b"P4\n8 1\n\xaa")
    return exact, expected


class ImageFormatsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="shardpack-formats-")
        cls.root = os.path.join(cls.tmp.name, "folder")
        cls.exact, cls.expected = build_folder(cls.root)
        cls.tv = ImageFolder(cls.root)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def pack(self, name, *args, check=True):
        out = os.path.join(self.tmp.name, name)
        done = subprocess.run([os.environ["SHARDPACK_TOOL"], "images", self.root, "-o", out,
                               "--no-shuffle", "--json", *args],
                              capture_output=True, text=True, timeout=120)
        if check:
            self.assertEqual(done.returncode, 0, done.stderr)
        return out, done

    def torchvision_samples(self):
        return [(os.path.relpath(p, self.root), label) for p, label in self.tv.samples]

    def test_raw_mode_gives_torchvisions_samples_and_pils_pixels(self):
        out, done = self.pack("raw", "--mode", "raw", "--size", f"{W}x{H}", "--format", "hdf5")
        with open(os.path.join(out, "manifest.json")) as f:
            manifest = json.load(f)
        self.assertEqual(len(manifest["shards"]), 1)
        # Read with h5py alone: no shardpack code between the file and the test.
        with h5py.File(os.path.join(out, manifest["shards"][0]["path"]), "r") as f:
            images, labels = f["images"][:], f["labels"][:]
            blob, offsets = f["keys"][:].tobytes(), f["key_offsets"][:]
            keys = [blob[offsets[i]:offsets[i + 1]].decode() for i in range(len(labels))]
            classes = [c.decode() if isinstance(c, bytes) else c
                       for c in f["labels"].attrs["classes"]]
        self.assertEqual(list(zip(keys, labels.tolist())), self.torchvision_samples())
        self.assertEqual(classes, self.tv.classes)
        by_key = dict(zip(keys, images))
        for rel in self.exact:
            want = np.asarray(self.tv.loader(os.path.join(self.root, rel)))
            np.testing.assert_array_equal(by_key[rel], want, err_msg=rel)
        for rel, want in self.expected.items():
            np.testing.assert_array_equal(by_key[rel], want, err_msg=rel)
        # Lossy files too: the same libjpeg-turbo and libwebp decode beneath
        # PIL and us, so the pixels are the same to the bit.
        for rel in ("cat/a.jpg", "cat/B.JPEG", "cat/r_cmyk_no_adobe.jpg", "cat/z_jpeg_named.png",
                    "dog/q_lossy.webp"):
            want = np.asarray(self.tv.loader(os.path.join(self.root, rel)))
            np.testing.assert_array_equal(by_key[rel], want, err_msg=rel)
        summary = json.loads(done.stdout)
        self.assertEqual(summary["records"], len(self.tv))
        self.assertEqual(summary["skipped"], 0)

    def test_passthrough_converts_every_non_jpeg_and_says_so(self):
        out, done = self.pack("pass")
        summary = json.loads(done.stdout)
        self.assertEqual(summary["records"], len(self.tv))
        jpegs = 4  # a.jpg, B.JPEG, the CMYK one and the JPEG named .png
        self.assertEqual(summary["converted"], len(self.tv) - jpegs)
        self.assertEqual(summary["converted_from"],
                         {"BMP": 2, "PNG": 7, "PNM": 3, "TIFF": 3, "WebP": 2})
        self.assertIn(f"{len(self.tv) - jpegs} converted (2 BMP, 7 PNG, 3 PNM, 3 TIFF, 2 WebP)",
                      done.stderr)
        with open(os.path.join(out, "skipped.tsv")) as f:
            self.assertEqual(f.read(), "path\treason\n")

    def test_non_jpeg_skip_lists_each_with_its_format_and_the_flag(self):
        out, done = self.pack("skip", "--non-jpeg", "skip", "--on-error", "fail")
        summary = json.loads(done.stdout)
        self.assertEqual(summary["records"], 4)
        self.assertEqual(summary["skipped"], len(self.tv) - 4)
        self.assertIn(f", {len(self.tv) - 4} skipped", done.stderr)
        with open(os.path.join(out, "skipped.tsv")) as f:
            lines = f.read().splitlines()[1:]
        self.assertEqual(len(lines), len(self.tv) - 4)
        reasons = dict(line.split("\t") for line in lines)
        self.assertEqual(
            reasons[os.path.join(self.root, "dog/p.webp")],
            "WebP image, not a JPEG: left out by --non-jpeg skip "
            "(--non-jpeg convert stores it as JPEG)")
        self.assertTrue(reasons[os.path.join(self.root, "fox/png_named.JPEG")].startswith(
            "PNG image, not a JPEG"))

    def test_damaged_png_is_skipped_with_a_reason_or_fails_the_pack(self):
        root = os.path.join(self.tmp.name, "damaged")
        shutil.copytree(self.root, root)
        with open(os.path.join(root, "cat/c.png"), "r+b") as f:
            f.truncate(os.path.getsize(f.name) // 2)
        out = os.path.join(self.tmp.name, "damaged-out")
        tool = os.environ["SHARDPACK_TOOL"]
        done = subprocess.run([tool, "images", root, "-o", out, "--json"],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(json.loads(done.stdout)["records"], len(self.tv) - 1)
        with open(os.path.join(out, "skipped.tsv")) as f:
            self.assertIn(os.path.join(root, "cat/c.png") + "\t", f.read())
        done = subprocess.run([tool, "images", root, "-o", out + "2", "--on-error", "fail"],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 1)
        self.assertIn(os.path.join(root, "cat/c.png") + " @", done.stderr)
        self.assertIn("truncated PNG data", done.stderr)
        self.assertFalse(os.path.exists(out + "2"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
