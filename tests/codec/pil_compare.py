"""Shared by the *_pil_test.py scripts: our decoder (through decode_to_raw)
beside PIL's Image.open(f).convert("RGB"), the pixels torchvision's loader
sees. Import it first: it exits 77 (ctest: skipped) without PIL or numpy."""

import os
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy as np
    from PIL import Image
except ImportError as e:  # pragma: no cover - a machine without them
    print(f"skipped: {e} (scripts/setup installs python3-pil and python3-numpy)")
    sys.exit(77)

TOOL = os.environ.get("DECODE_TO_RAW", "")


def decode(path, keep_gray=False, max_pixels=None, jpeg=None, restart_markers=False,
           region=None):
    """Our pixels as an HxWxC uint8 array; raises DecodeError with the
    tool's message when it refuses the file. A JPEG goes through the path
    `jpeg` names: "packer" (the default) or "reader"; `restart_markers`
    re-codes it first, as the packer's --restart-markers does; `region`
    (x, y, w, h; reader only) decodes just that rectangle, as the reader's
    crops do."""
    args = [TOOL]
    if keep_gray:
        args.append("--keep-gray")
    if max_pixels is not None:
        args += ["--max-pixels", str(max_pixels)]
    if jpeg is not None:
        args += ["--jpeg", jpeg]
    if restart_markers:
        args.append("--restart-markers")
    if region is not None:
        args += ["--region", ",".join(str(v) for v in region)]
    done = subprocess.run(args + [path], capture_output=True, timeout=60)
    if done.returncode != 0:
        raise DecodeError(done.returncode, done.stderr.decode(errors="replace").strip())
    header, _, pixels = done.stdout.partition(b"\n")
    w, h, c = (int(v) for v in header.split())
    return np.frombuffer(pixels, np.uint8).reshape(h, w, c)


class DecodeError(Exception):
    def __init__(self, returncode, message):
        super().__init__(message)
        self.returncode = returncode
        self.message = message


def pil_rgb(path):
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


class PilTestCase(unittest.TestCase):
    """A temp dir per test, and the comparison with PIL."""

    def setUp(self):
        if not TOOL:
            self.fail("DECODE_TO_RAW is not set (run through ctest)")
        self._tmp = tempfile.TemporaryDirectory()
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, data):
        p = self.path(name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def assertSameAsPil(self, path, expected=None, **how):
        """Our RGB decode equals PIL's convert("RGB"), pixel for pixel (or
        `expected`, where we document a difference from PIL). `how` is
        decode()'s: which JPEG path, a region (compared with PIL's pixels
        of that rectangle)."""
        ours = decode(path, **how)
        want = pil_rgb(path) if expected is None else expected
        if how.get("region") is not None:
            x, y, w, h = how["region"]
            want = want[y:y + h, x:x + w]
        self.assertEqual(ours.shape, want.shape, path)
        diff = np.argwhere(ours != want)
        if len(diff):
            y, x, c = diff[0]
            self.fail(f"{path} {how or ''}: {len(diff)} samples differ from PIL, first at "
                      f"y={y} x={x} c={c}: ours {ours[y, x, c]}, PIL {want[y, x, c]}")

    def assertRefused(self, path, *fragments, returncode=1):
        """Our decoder refuses `path` with a message naming it and holding
        every fragment; never a signal."""
        with self.assertRaises(DecodeError) as cm:
            decode(path)
        self.assertEqual(cm.exception.returncode, returncode, cm.exception.message)
        self.assertIn(path, cm.exception.message)
        for f in fragments:
            self.assertIn(f, cm.exception.message)


def gradient(h, w, c, seed=0):
    """A deterministic test image with every channel varying."""
    rng = np.random.default_rng(seed)
    base = (np.arange(h * w * c, dtype=np.uint32) * 37 % 256).astype(np.uint8).reshape(h, w, c)
    return base ^ rng.integers(0, 256, size=(h, w, c), dtype=np.uint8)


def main():
    unittest.main(verbosity=2)
