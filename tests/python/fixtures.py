"""Datasets for the Python tests, made at test time with the project's tools.

ctest passes the tools' paths: SHARDPACK_TOOL (the shardpack CLI),
MAKE_DEMO_DATA (datasets/make_demo_data, CIFAR-shaped demo scenes whose label
shows in the picture, so a small CNN can learn them) and MAKE_FIELDS_DATASET
(tests/testing/make_fields_dataset: records of every field type). Nothing is
checked in.
"""
import importlib
import os
import subprocess
import sys
import tempfile
import unittest

SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests


def require(*modules, how=None):
    """Exits with SKIP (ctest reports the test as skipped) when a module is
    missing, saying how to get it: `how`, else Debian's package."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as e:
            print(f"SKIP: {name} is not importable by {sys.executable} ({e}); "
                  f"{how or f'Debian: apt-get install python3-{name.lower()}'}", flush=True)
            sys.exit(SKIP)


def make_cifar_dataset(parent, records, name="ds", block_size="64KiB", shard_records=None,
                       shuffle=True):
    """Packs `records` demo CIFAR-10 records (label i % 10) into parent/name."""
    src = os.path.join(parent, name + "-src")
    subprocess.run([os.environ["MAKE_DEMO_DATA"], src, "--cifar-records", str(records),
                    "--images-per-class", "0"], check=True, capture_output=True)
    out = os.path.join(parent, name)
    cmd = [os.environ["SHARDPACK_TOOL"], "cifar", os.path.join(src, "cifar", "data_batch_1.bin"),
           "-o", out, "--block-size", block_size, "-q"]
    if shard_records:
        cmd += ["--shard-records", str(shard_records)]
    if not shuffle:
        cmd += ["--no-shuffle"]
    subprocess.run(cmd, check=True)
    return out


def make_fields_dataset(parent, records, name="fields", backend="shard", shard_records=None):
    """Writes `records` records of every field type (tests/testing/field_fixtures.h:
    photo, caption, boxes, category, mask, meta, embedding, blob, tokens) into
    parent/name."""
    out = os.path.join(parent, name)
    cmd = [os.environ["MAKE_FIELDS_DATASET"], out, "--records", str(records),
           "--backend", backend]
    if shard_records:
        cmd += ["--shard-records", str(shard_records)]
    subprocess.run(cmd, check=True)
    return out


class TempDir:
    """A temporary directory for a test class's datasets."""

    def __init__(self):
        self._dir = tempfile.TemporaryDirectory(prefix="shardpack-py-")
        self.path = self._dir.name

    def cleanup(self):
        self._dir.cleanup()


class DatasetTest(unittest.TestCase):
    """A test class with one packed dataset, cls.ds, of RECORDS records (SHARD_RECORDS
    a shard when set), in a temporary directory cls.tmp removed after the class."""
    RECORDS = 1000
    SHARD_RECORDS = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = TempDir()
        cls.ds = make_cifar_dataset(cls.tmp.path, cls.RECORDS, shard_records=cls.SHARD_RECORDS)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()


def shard_bytes(path):
    """{name: bytes} of the .shard files of the dataset at `path`."""
    out = {}
    for name in sorted(os.listdir(path)):
        if name.endswith(".shard"):
            with open(os.path.join(path, name), "rb") as f:
                out[name] = f.read()
    return out


def _check_installed():
    """Under tests/wheel/wheel_test.sh these scripts test an installed wheel:
    SHARDPACK_EXPECT_INSTALLED names the site-packages shardpack must come from."""
    expected = os.environ.get("SHARDPACK_EXPECT_INSTALLED")
    if not expected:
        return
    import shardpack
    where = os.path.realpath(shardpack.__file__)
    if not where.startswith(os.path.realpath(expected) + os.sep):
        print(f"FAIL: shardpack was imported from {where}, not from {expected}", flush=True)
        sys.exit(1)


_check_installed()
