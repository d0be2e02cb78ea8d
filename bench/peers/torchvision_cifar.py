#!/usr/bin/python3
"""torchvision's DataLoader over CIFAR-10 binaries: the peer of `shardbench`.

  /usr/bin/python3 bench/peers/torchvision_cifar.py FILE.bin [FILE.bin ...]
      [--num-workers N] [--batch-size 512] [--warmup 5] [--batches 40]
      [--dataset pil|tensor] [--to-tensor uint8|float]

Reads the CIFAR-10 binary file(s) a shardpack dataset was packed from (records
of 1 label byte + 3072 planar RGB bytes) and serves them in one of two ways:

--dataset pil (the default): the way torchvision.datasets.CIFAR10 does. The
  images are a uint8 array [N, 32, 32, 3]; __getitem__ makes a PIL image and
  applies RandomCrop(32, padding=4) + RandomHorizontalFlip + PILToTensor
  (PILToTensor keeps uint8, as shardbench's default output is; --to-tensor
  float uses ToTensor, the usual float32 / 255 recipe, which costs more).
--dataset tensor: the strongest plain loop, with no PIL. The images are ONE
  uint8 torch tensor [N, 3, 32, 32] (CHW, CIFAR's own planar order);
  __getitem__ applies RandomCrop(32, padding=4) + RandomHorizontalFlip to the
  uint8 CHW tensor (torchvision transforms take tensors since 0.8) and
  returns it: no PIL, no ToTensor. Only uint8 (--to-tensor float is refused).

In both, the DataLoader shuffles, uses `--num-workers` worker processes, and the
consumer reads every byte of each batch (an XOR over its 8-byte words, like
shardbench's consumer). Images/s are measured over `--batches` batches after
`--warmup` batches (worker start-up and the first batches are left out).

Pin the cores from outside (taskset -c 0 ...); workers inherit the affinity.
Prints one JSON object on stdout. Needs Debian's python3-torchvision
(bench/run_reader_bench.sh installs it when missing).
"""

import argparse
import json
import os
import sys
import time

import numpy as np

CIFAR_RECORD = 1 + 3 * 32 * 32


def load_cifar10(paths):
    """uint8 images [N, 3, 32, 32] (CHW, as stored) and int64 labels [N]."""
    chunks = []
    for path in paths:
        raw = np.fromfile(path, dtype=np.uint8)
        if raw.size % CIFAR_RECORD != 0:
            sys.exit(f"torchvision_cifar.py: {path}: {raw.size} bytes is not a whole number "
                     f"of {CIFAR_RECORD}-byte CIFAR-10 records")
        chunks.append(raw.reshape(-1, CIFAR_RECORD))
    records = np.concatenate(chunks)
    labels = records[:, 0].astype(np.int64)
    images = np.ascontiguousarray(records[:, 1:]).reshape(-1, 3, 32, 32)
    return images, labels


def make_dataset(mode, images, labels, to_tensor, normalize=None):
    """The torch Dataset of `mode` over images [N, 3, 32, 32] (CHW) and its
    transform's description. `normalize` (pil with to_tensor "float" only):
    (mean, std) for a Normalize after ToTensor, as training recipes have it."""
    import torch
    from PIL import Image
    from torch.utils.data import Dataset
    from torchvision import transforms

    crop_flip = [transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip()]
    if mode == "tensor":
        data = torch.from_numpy(images)  # one uint8 tensor [N, 3, 32, 32]
        transform = transforms.Compose(crop_flip)
        described = "RandomCrop(32, padding=4) + RandomHorizontalFlip on a uint8 CHW tensor"
    else:
        data = images.transpose(0, 2, 3, 1).copy()  # HWC, as CIFAR10 keeps it for PIL
        last = [transforms.PILToTensor() if to_tensor == "uint8" else transforms.ToTensor()]
        if normalize:
            last.append(transforms.Normalize(*normalize))
        transform = transforms.Compose(crop_flip + last)
        described = ("RandomCrop(32, padding=4) + RandomHorizontalFlip + "
                     + ("PILToTensor" if to_tensor == "uint8" else "ToTensor")
                     + (" + Normalize" if normalize else ""))

    class Cifar(Dataset):
        """What torchvision.datasets.CIFAR10 does per item (PIL), or the same
        crop and flip on the tensor (tensor), over our records."""

        def __len__(self):
            return len(data)

        def __getitem__(self, i):
            image = data[i] if mode == "tensor" else Image.fromarray(data[i])
            return transform(image), int(labels[i])

    return Cifar(), described


def cpu_seconds(pids):
    """User + system CPU seconds of the processes `pids` (from /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="CIFAR-10 binary files (data_batch_*.bin)")
    parser.add_argument("--num-workers", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--warmup", type=int, default=5, help="batches left out of the timing")
    parser.add_argument("--batches", type=int, default=40, help="batches timed")
    parser.add_argument("--dataset", choices=["pil", "tensor"], default="pil",
                        help="pil: PIL image per sample (CIFAR10's way); tensor: crop and flip "
                             "a uint8 CHW tensor")
    parser.add_argument("--to-tensor", choices=["uint8", "float"], default="uint8",
                        help="pil only: PILToTensor (uint8) or ToTensor (float32)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.dataset == "tensor" and args.to_tensor != "uint8":
        parser.error("--to-tensor float applies to --dataset pil (the tensor loop keeps uint8)")

    import torch
    import torchvision
    from torch.utils.data import DataLoader

    torch.set_num_threads(1)  # the workers do the work; the main thread only consumes
    torch.manual_seed(args.seed)
    images, labels = load_cifar10(args.files)
    dataset, described = make_dataset(args.dataset, images, labels, args.to_tensor)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True,
                        num_workers=args.num_workers, drop_last=True,
                        persistent_workers=args.num_workers > 0)
    needed = args.warmup + args.batches
    per_epoch = len(images) // args.batch_size
    sink = 0
    done = 0
    start = None
    cpu_start = 0.0
    pids = [os.getpid()]
    while done < needed:
        iterator = iter(loader)
        # The worker processes, to count their CPU time (a DataLoader internal).
        pids = [os.getpid()] + [w.pid for w in getattr(iterator, "_workers", [])]
        for x, y in iterator:
            # Read every byte, as shardbench's consumer does.
            sink ^= int(np.bitwise_xor.reduce(x.numpy().reshape(-1).view(np.uint8)
                                              .view(np.uint64)))
            sink ^= int(np.bitwise_xor.reduce(y.numpy()))
            done += 1
            if done == args.warmup:
                start = time.perf_counter()
                cpu_start = cpu_seconds(pids)
            if done == needed:
                break
    seconds = time.perf_counter() - start
    cpu = cpu_seconds(pids) - cpu_start
    out = {
        "peer": "torchvision DataLoader",
        "dataset": args.dataset,
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "transform": described,
        "dtype": args.to_tensor if args.to_tensor == "uint8" else "float32",
        "num_workers": args.num_workers,
        "batch_size": args.batch_size,
        "records": int(len(images)),
        "batches_per_epoch": per_epoch,
        "warmup_batches": args.warmup,
        "batches": args.batches,
        "seconds": seconds,
        "images_per_s": args.batches * args.batch_size / seconds,
        # CPU of the main process and the workers over the timed batches.
        "cpu_s": cpu,
        "cpu_us_per_image": cpu / (args.batches * args.batch_size) * 1e6,
        "cores_used": cpu / seconds,
        "cpus": len(os.sched_getaffinity(0)),
        "xor_fold": f"{sink & (2**64 - 1):016x}",
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
