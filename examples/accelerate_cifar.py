#!/usr/bin/env python3
"""A small CNN trained in a Hugging Face Accelerate loop, fed by shardpack.DataLoader.

    ./scripts/python-env --test     # build/venv-torch (torch CPU, Accelerate) and the module
                                    # for its Python in build-py311/
    PYTHONPATH=build-py311/python build/venv-torch/bin/python examples/accelerate_cifar.py \
        DATASET [--steps 100] [--batch-size 128] [--threads 2] [--save-every 50] \
        [--out accelerate-state] [--resume accelerate-state/step-50]
    accelerate launch --num_processes 2 examples/accelerate_cifar.py DATASET   # one share each

accelerator.prepare(model, optimizer, loader) hands the shardpack.DataLoader
back as it is (Accelerate wraps only torch DataLoaders): the reader already
gives each process its own share (rank and world size from the accelerator)
and puts images on the accelerator's device (labels follow). The loader is
registered for checkpointing, so accelerator.save_state() keeps the reader's
position (in --out/step-N) and --resume goes on from it mid-epoch, batch for
batch.
"""
import os

import shardpack
import torch
import torch.nn.functional as F
from accelerate import Accelerator

from train_cifar import CIFAR_MEAN, CIFAR_STD, arguments, small_cnn


def main():
    p = arguments(__doc__, steps=100)
    p.add_argument("--save-every", type=int, default=50, help="steps between save_state()")
    p.add_argument("--out", default="accelerate-state", help="save_state() goes to OUT/step-N")
    p.add_argument("--resume", help="a save_state() directory to go on from")
    p.add_argument("--cpu", action="store_true", help="train on the CPU even with a GPU")
    args = p.parse_args()

    accelerator = Accelerator(cpu=args.cpu)
    torch.manual_seed(args.seed)
    device = accelerator.device
    loader = shardpack.DataLoader(
        args.dataset, batch_size=args.batch_size, seed=args.seed, transform="cifar-train",
        dtype="float32", layout="NCHW", mean=CIFAR_MEAN, std=CIFAR_STD, threads=args.threads,
        rank=accelerator.process_index, world_size=accelerator.num_processes,
        device=str(device) if device.type == "cuda" else "cpu")
    model = small_cnn(len(loader.reader.classes) or 10)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    accelerator.register_for_checkpointing(loader)

    step = 0
    if args.resume:
        accelerator.load_state(args.resume)
        reader = loader.state_dict()["reader"]
        step = reader["epoch"] * len(loader) + reader["batch"]  # same world and batch size
        accelerator.print(f"resuming from {args.resume}: epoch {reader['epoch']} batch "
                          f"{reader['batch']}, step {step}")
    accelerator.print(f"{accelerator.num_processes} process(es) on {device}, {len(loader)} "
                      f"batches of {loader.batch_size} per epoch and process")
    while step < args.steps:
        for images, labels in loader:  # the next epoch (or a resumed epoch's rest)
            loss = F.cross_entropy(model(images), labels)
            accelerator.backward(loss)
            opt.step()
            opt.zero_grad()
            step += 1
            if step % args.log_every == 0:
                accelerator.print(f"step {step} epoch {loader.epoch}: loss {loss.item():.3f}")
            if step % args.save_every == 0:
                accelerator.save_state(os.path.join(args.out, f"step-{step}"))
            if step == args.steps:
                break
    reader = loader.state_dict()["reader"]
    accelerator.print(f"done: {step} steps; reader at epoch {reader['epoch']} batch "
                      f"{reader['batch']}")


if __name__ == "__main__":
    main()
