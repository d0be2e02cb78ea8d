"""What scripts/test-systems runs with the installed wheel inside a clean
Debian root file system: Python streams the two datasets the tools packed
there and reads records back by index, a JPEG record's bytes equal to its
source file's, and writes a dataset of fields.

    system_check.py CIFAR_DATASET IMAGES_DATASET IMAGES_FOLDER
"""
import os
import sys

import numpy
import shardpack

cifar, images, folder = sys.argv[1:4]
sources = sorted(os.path.join(d, n) for d, _, names in os.walk(folder) for n in names)

seen = 0
for batch, labels in shardpack.Reader(cifar, batch_size=64, seed=1, output="numpy",
                                      remainder="partial"):
    assert batch.dtype == numpy.uint8 and batch.shape[1:] == (32, 32, 3), batch.shape
    seen += len(labels)
assert seen == 300, seen

seen = 0
for batch, labels in shardpack.Reader(images, batch_size=4, seed=1, transform="rrc:64",
                                      output="numpy", remainder="partial", threads=2):
    assert batch.shape[1:] == (64, 64, 3), batch.shape
    assert int(batch.max()) > int(batch.min()), "a decoded batch is flat"
    seen += len(labels)
assert seen == len(sources) == 18, (seen, len(sources))

ds = shardpack.Dataset(images)
assert len(ds) == len(sources)
for i in range(len(ds)):
    r = ds.record(i, decode=True)
    assert r["encoding"] == "jpeg" and r["image"].shape == r["shape"], r["shape"]
    match = [s for s in sources if s.endswith(r["key"])]
    assert len(match) == 1, r["key"]
    with open(match[0], "rb") as f:
        assert f.read() == r["data"], r["key"]

with shardpack.Writer("written", {"image": "jpeg", "caption": "string"}) as w:
    for i, path in enumerate(sources[:5]):
        with open(path, "rb") as f:
            w.write({"__key__": str(i), "image": f.read(), "caption": f"picture {i}"})
assert len(shardpack.Dataset("written")) == 5

print(f"shardpack {shardpack.__version__} on Python {sys.version.split()[0]}: streamed 300 CIFAR "
      f"and {len(sources)} JPEG records, read {len(ds)} back byte for byte, wrote 5")
