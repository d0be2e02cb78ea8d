#!/usr/bin/env python3
"""Distributed data parallel training with shardpack: one process per rank.

    python examples/ddp.py DATASET \
        [--world-size 2] [--epochs 1] [--batch-size 64] [--check]
    python examples/ddp.py DATASET --elastic \
        [--batch-size 50] [--steps 4] [--world-size 4] [--resume-world-size 3]

(in the venv of `pip install .`; from a source build,
PYTHONPATH=build/python /usr/bin/python3 examples/ddp.py DATASET ...)

Starts --world-size processes that join a torch.distributed group (gloo, on
loopback) and wrap a small model in DistributedDataParallel. Each process
opens shardpack.Reader with its rank and the world size: the reader gives each
rank an equal, disjoint share of every epoch (what DistributedSampler does,
without a sampler or worker processes) and the same number of batches, so the
ranks' all-reduces stay in step. With --check, every rank also reports which
records it saw; rank 0 verifies that the shares are disjoint and together
cover the dataset, and the program exits 1 if not. remainder="partial" keeps
every record (a last batch may be short); the dataset's size must divide by
the world size for the shares to cover it. Every rank all-gathers the
dataset's fingerprint first and stops if any rank reads another dataset.

--elastic: an elastic resume. `torchrun` (torch.multiprocessing where there
is none) starts --world-size ranks that train --steps steps of epoch 0 and
save a checkpoint: the model and rank 0's reader.state_dict() (every rank's
is the same; the example checks). Then --resume-world-size ranks load it and
finish the epoch: together they deliver every record the first job did not,
once each, with equal step counts. Rank 0 of the second job checks that over
both jobs every record came exactly once (but the fewer than
--resume-world-size that remainder="partial" leaves out) and exits 1 if not.
"""
import argparse
import gc
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

import shardpack
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def open_reader(args, rank, world_size):
    return shardpack.Reader(args.dataset, batch_size=args.batch_size, rank=rank,
                            world_size=world_size, seed=args.seed, threads=1,
                            transform="cifar-train", dtype="float32", layout="NCHW",
                            mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25),
                            remainder="partial", output="torch", indices=True)


def make_model():
    return nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                      nn.Flatten(), nn.Linear(8, 10)))


def check_fingerprints(reader, rank, world_size):
    """Every rank must read the same dataset: a copy that differs fails here,
    before any step, rather than as a silently wrong epoch."""
    prints = [None] * world_size
    dist.all_gather_object(prints, reader.fingerprint)
    if len(set(prints)) != 1:
        if rank == 0:
            print(f"ranks read different datasets: fingerprints {prints}", flush=True)
        return False
    if rank == 0:
        print(f"dataset fingerprint {prints[0]} on all {world_size} ranks", flush=True)
    return True


def step(model, opt, images, labels):
    loss = nn.functional.cross_entropy(model(images), labels)
    opt.zero_grad()
    loss.backward()  # gradients all-reduced across the ranks
    opt.step()
    return loss.item()


def teardown(holder):
    """Tears down in this order: torch 1.13 can deadlock when DDP's reducer is
    freed while the gloo threads still release tensors of earlier work, so
    the model and optimizer (held only by `holder`) go between the barrier and
    the destruction of the group."""
    dist.barrier()
    holder.clear()
    gc.collect()
    dist.destroy_process_group()


def run(rank, args, port):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=args.world_size)
    reader = open_reader(args, rank, args.world_size)
    if not check_fingerprints(reader, rank, args.world_size):
        sys.exit(1)
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    seen = []
    for epoch in range(args.epochs):
        reader.set_epoch(epoch)
        steps, total = 0, 0.0
        for images, labels, indices in reader:
            total += step(model, opt, images, labels)
            steps += 1
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
    holder = [model, opt]
    del model, opt
    teardown(holder)
    if not ok:
        sys.exit(1)


def elastic_first(rank, world_size, args):
    """The first job: --steps steps of epoch 0, then a checkpoint."""
    reader = open_reader(args, rank, world_size)
    if not check_fingerprints(reader, rank, world_size):
        return False
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    seen = []
    for _ in range(args.steps):
        images, labels, indices = next(reader)
        step(model, opt, images, labels)
        seen.extend(indices.tolist())
    del images, labels, indices
    state = reader.state_dict()
    states, shares = [None] * world_size, [None] * world_size
    dist.all_gather_object(states, state)
    dist.all_gather_object(shares, seen)
    ok = all(s == state for s in states)
    if rank == 0:
        print(f"job 1: {world_size} ranks, {args.steps} steps of {len(reader)}, state of every "
              f"rank equal: {ok}", flush=True)
        torch.save({"model": model.module.state_dict(), "reader": state},
                   os.path.join(args.workdir, "checkpoint.pt"))
        with open(os.path.join(args.workdir, "seen.json"), "w") as f:
            json.dump([r for share in shares for r in share], f)
    holder = [model, opt]
    del model, opt
    teardown(holder)
    return ok


def elastic_second(rank, world_size, args):
    """The second job: loads the checkpoint and finishes the epoch."""
    checkpoint = torch.load(os.path.join(args.workdir, "checkpoint.pt"))
    reader = open_reader(args, rank, world_size)
    if not check_fingerprints(reader, rank, world_size):
        return False
    reader.load_state_dict(checkpoint["reader"])  # refuses another dataset or seed
    model = make_model()
    model.module.load_state_dict(checkpoint["model"])
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    seen, steps = [], 0
    for images, labels, indices in reader:
        step(model, opt, images, labels)
        seen.extend(indices.tolist())
        steps += 1
    del images, labels, indices
    shares, counts = [None] * world_size, [None] * world_size
    dist.all_gather_object(shares, seen)
    dist.all_gather_object(counts, steps)
    ok = True
    if rank == 0:
        with open(os.path.join(args.workdir, "seen.json")) as f:
            before = json.load(f)
        after = [r for share in shares for r in share]
        both = before + after
        owed = reader.records - len(before)
        once = len(both) == len(set(both))
        complete = len(both) == reader.records - owed % world_size
        ok = once and complete and len(set(counts)) == 1
        print(f"job 2: {world_size} ranks, {counts} steps; records: {len(before)} before, "
              f"{len(after)} after; exactly once: {once}; all but {owed % world_size} of "
              f"{reader.records}: {complete}", flush=True)
    holder = [model, opt]
    del model, opt
    teardown(holder)
    return ok


def elastic_rank(args):
    """A rank of one elastic job, started by torchrun (or spawn_ranks): the
    rank and world size come from the environment."""
    torch.set_num_threads(1)
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world_size)
    phase = elastic_first if args.elastic_phase == "first" else elastic_second
    if not phase(rank, world_size, args):
        sys.exit(1)


def spawned_rank(rank, world_size, port, argv):
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world_size), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    elastic_rank(parse_args(argv))


def launch(world_size, argv, workdir):
    """Runs `world_size` ranks of this script with `argv`: torchrun on
    loopback, or torch.multiprocessing where torchrun is missing. torchrun is
    the one of this Python (python -m torch.distributed.run), never a
    `torchrun` on PATH that belongs to another Python or venv."""
    if importlib.util.find_spec("torch.distributed.run") is None:
        try:
            mp.spawn(spawned_rank, args=(world_size, free_port(), argv), nprocs=world_size,
                     join=True)
            return 0
        except mp.ProcessExitedException:
            return 1
    # --redirects 1 --tee 1: the ranks' stdout on the console (and in log
    # files). torchrun 1.13 on Python 3.11 cannot parse its default "0"
    # (its Std enum lookup skips the zero flag) and fails before starting.
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", str(world_size),
           "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
           "--redirects", "1", "--tee", "1",
           "--log_dir", os.path.join(workdir, f"logs-{argv[-1]}"),
           os.path.abspath(__file__)] + argv
    return subprocess.run(cmd).returncode


def elastic(args):
    workdir = tempfile.mkdtemp(prefix="shardpack-elastic-")
    try:
        common = [args.dataset, "--batch-size", str(args.batch_size), "--seed", str(args.seed),
                  "--steps", str(args.steps), "--workdir", workdir]
        if launch(args.world_size, common + ["--elastic-phase", "first"], workdir) != 0:
            return 1
        return launch(args.resume_world_size, common + ["--elastic-phase", "second"], workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dataset")
    p.add_argument("--world-size", type=int, default=None,
                   help="ranks (default 2; with --elastic, of the first job: 4)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--check", action="store_true",
                   help="verify that the ranks' records are disjoint and complete")
    p.add_argument("--elastic", action="store_true",
                   help="save after --steps steps on --world-size ranks, finish the epoch on "
                        "--resume-world-size ranks, check exactly-once")
    p.add_argument("--steps", type=int, default=4, help="--elastic: steps of the first job")
    p.add_argument("--resume-world-size", type=int, default=3)
    p.add_argument("--elastic-phase", choices=["first", "second"], help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.world_size is None:
        args.world_size = 4 if args.elastic else 2
    return args


def main():
    args = parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # loopback only
    if args.elastic_phase:
        elastic_rank(args)
        return
    if args.elastic:
        sys.exit(elastic(args))
    # mp.spawn raises ProcessExitedException when a rank exits non-zero.
    mp.spawn(run, args=(args, free_port()), nprocs=args.world_size, join=True)


if __name__ == "__main__":
    main()
