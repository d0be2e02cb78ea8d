"""shardpack with a 32 MiB shuffle window (shuffle_bytes=32 MiB) instead of
the default 256 MiB: the same dataset (peer_shardpack's convert), a reader
that holds less and starts sooner. With the default, a dataset that fits the
window (CIFAR's 157 MB here) is read whole before the first batch, as its
order is one permutation of every record; with 32 MiB the order is the
jittered sort (docs/reader.md, "Shuffle"), and the first batch waits for a
few blocks. The row shows what that costs in shuffle quality on the
pack-time-shuffled dataset."""

import peer_shardpack

NAME = "shardpack-32m"
VERSION = peer_shardpack.VERSION
SHUFFLE_BYTES = 32 << 20
SETTINGS = peer_shardpack.SETTINGS.replace("default ring and shuffle_bytes",
                                           "default ring, shuffle_bytes=32 MiB")
DEVICE_LOADER = peer_shardpack.DEVICE_LOADER
convert = peer_shardpack.convert


def loader(kind, out_dir, batch_size, workers, seed, device="cpu"):
    return peer_shardpack.loader(kind, out_dir, batch_size, workers, seed, device,
                                 shuffle_bytes=SHUFFLE_BYTES)
