#!/usr/bin/env python3
"""A small CNN trained on a packed CIFAR dataset, fed by shardpack.Reader.

    python examples/train_cifar.py DATASET \
        [--steps 300] [--batch-size 128] [--threads 2] [--log-every 20]

(in the venv of `pip install .`; from a source build,
PYTHONPATH=build/python /usr/bin/python3 examples/train_cifar.py DATASET ...)

Every --log-every steps it prints the mean loss and the data wait per step:
the time next() blocked (the reader was behind) against the whole step. The
reader hands out float32 NCHW tensors, normalized, straight from its ring
slots (DLPack, no copy): the loop has no DataLoader, no worker processes and
no per-sample Python.

Pack a dataset first, e.g. the CIFAR-10 binaries: datasets/scripts/cifar10.sh
-o data/cifar10 (then DATASET is data/cifar10/train); or, from a source build,
the demo scenes: build/datasets/make_demo_data demo --cifar-records 10000
--images-per-class 0 && build/tools/shardpack cifar demo/cifar/data_batch_1.bin -o demo-ds
"""
import argparse
import time

import shardpack
import torch
from torch import nn

CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2470, 0.2435, 0.2616)


def small_cnn(classes, channels=3):
    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout),
                             nn.ReLU(inplace=True), nn.MaxPool2d(2))
    return nn.Sequential(block(channels, 16), block(16, 32), block(32, 64),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, classes))


def arguments(doc, steps):
    """The options of the CIFAR examples (this one, lightning_cifar.py, accelerate_cifar.py)."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("dataset")
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--threads", type=int, default=2, help="reader transform threads")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-every", type=int, default=20)
    return p


def main():
    args = arguments(__doc__, steps=300).parse_args()

    torch.manual_seed(args.seed)
    reader = shardpack.Reader(args.dataset, batch_size=args.batch_size, seed=args.seed,
                              transform="cifar-train", threads=args.threads, dtype="float32",
                              layout="NCHW", mean=CIFAR_MEAN, std=CIFAR_STD, output="torch")
    # The classifier's size comes from the dataset: its class names (CIFAR's
    # own when packed without a meta file) and the batch shape (N, C, H, W).
    if not reader.classes:
        raise SystemExit(f"{args.dataset}: no class names in its schema, so no class count")
    model = small_cnn(len(reader.classes), channels=reader.output_shape[1])
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    print(f"{reader.records} records of {len(reader.classes)} classes, {len(reader)} batches of {args.batch_size} per epoch, "
          f"{args.steps} steps, torch {torch.__version__} on CPU ({torch.get_num_threads()} "
          f"threads)", flush=True)

    step, epoch = 0, 0
    window_loss, window_wait, window_time, window_n = 0.0, 0.0, 0.0, 0
    total_wait, total_time = 0.0, 0.0
    start = time.perf_counter()
    while step < args.steps:
        reader.set_epoch(epoch)
        batches = iter(reader)
        while step < args.steps:
            t0 = time.perf_counter()
            try:
                images, labels = next(batches)  # views of the ring slot
            except StopIteration:
                break
            t1 = time.perf_counter()
            loss = loss_fn(model(images), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            del images, labels  # the slot can go back to the ring
            t2 = time.perf_counter()
            step += 1
            window_loss += loss.item()
            window_wait += t1 - t0
            window_time += t2 - t0
            window_n += 1
            if step % args.log_every == 0 or step == args.steps:
                print(f"step {step:4d}  epoch {epoch}  loss {window_loss / window_n:.4f}  "
                      f"data wait {1e3 * window_wait / window_n:.2f} ms/step "
                      f"({100 * window_wait / window_time:.1f}% of the step)", flush=True)
                total_wait += window_wait
                total_time += window_time
                window_loss, window_wait, window_time, window_n = 0.0, 0.0, 0.0, 0
        epoch += 1
    elapsed = time.perf_counter() - start
    s = reader.stats()
    print(f"done: {step} steps in {elapsed:.1f} s; data wait {100 * total_wait / total_time:.2f}% "
          f"of step time; reader waits: io {s['io_wait_s']:.3f} s, "
          f"consumer {s['consumer_wait_s']:.3f} s", flush=True)


if __name__ == "__main__":
    main()
