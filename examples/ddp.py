#!/usr/bin/env python3
"""Distributed data parallel training with shardpack: one process per rank.

    PYTHONPATH=build/python /usr/bin/python3 examples/ddp.py DATASET \
        [--world-size 2] [--epochs 1] [--batch-size 64] [--check]

Starts --world-size processes that join a torch.distributed group (gloo, on
loopback) and wrap a small model in DistributedDataParallel. Each process
opens shardpack.Reader with its rank and the world size: the reader gives each
rank an equal, disjoint share of every epoch (what DistributedSampler does,
without a sampler or worker processes) and the same number of batches, so the
ranks' all-reduces stay in step. With --check, every rank also reports which
records it saw; rank 0 verifies that the shares are disjoint and together
cover the dataset, and the program exits 1 if not. remainder="partial" keeps
every record (a last batch may be short); the dataset's size must divide by
the world size for the shares to cover it.
"""
import argparse
import os
import socket
import sys

import shardpack
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(rank, args, port):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=args.world_size)
    reader = shardpack.Reader(args.dataset, batch_size=args.batch_size, rank=rank,
                              world_size=args.world_size, seed=args.seed, threads=1,
                              transform="cifar-train", dtype="float32", layout="NCHW",
                              mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25),
                              remainder="partial", output="torch", indices=True)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                      nn.Flatten(), nn.Linear(8, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    seen = []
    for epoch in range(args.epochs):
        reader.set_epoch(epoch)
        steps, total = 0, 0.0
        for images, labels, indices in reader:
            loss = nn.functional.cross_entropy(model(images), labels)
            opt.zero_grad()
            loss.backward()  # gradients all-reduced across the ranks
            opt.step()
            steps += 1
            total += loss.item()
            if epoch == 0:
                seen.extend(indices.tolist())
        print(f"rank {rank}: epoch {epoch}, {steps} steps, mean loss {total / steps:.4f}",
              flush=True)
    ok = True
    if args.check:
        shares = [None] * args.world_size
        dist.all_gather_object(shares, seen)
        if rank == 0:
            sets = [set(s) for s in shares]
            union = set().union(*sets)
            disjoint = sum(len(s) for s in sets) == len(union) and \
                all(len(s) == len(share) for s, share in zip(sets, shares))
            complete = union == set(range(reader.records))
            print(f"epoch 0 shares: {[len(s) for s in shares]} records; disjoint: {disjoint}; "
                  f"together complete ({reader.records} records): {complete}", flush=True)
            ok = disjoint and complete
    # Tear down in this order: torch 1.13 can deadlock when DDP's reducer is
    # freed while the gloo threads still release tensors of earlier work.
    dist.barrier()
    del model, opt
    dist.destroy_process_group()
    if not ok:
        sys.exit(1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dataset")
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--check", action="store_true",
                   help="verify that the ranks' records are disjoint and complete")
    args = p.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # loopback only
    # mp.spawn raises ProcessExitedException when a rank exits non-zero.
    mp.spawn(run, args=(args, free_port()), nprocs=args.world_size, join=True)


if __name__ == "__main__":
    main()
