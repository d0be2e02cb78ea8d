#!/usr/bin/env python3
"""A dataset behind HTTPS against the same shards on the local disk (issue 35).

  bench/remote_bench.py [--work DIR] [--gb 1] [--rounds 5] [--build-dir build-bench]
                        [--threads 2] [--batch-size 512] [--read-ahead 128MiB] [--http]
                        [--cases a,b,c] [--pin] [--keep] [--json-out FILE]

Makes a CIFAR-shaped dataset of about --gb GB (build-bench/bench/make_bench_dataset
--kind cifar) under --work, serves its folder with Debian's nginx over TLS on a
loopback port (tests/remote/servers.py), and runs shardbench (--transform none,
so that reading, not the transform, is measured), in --rounds rounds, each
case of a round side by side with its reference (which goes first alternates):

  (a) first epoch: shardbench https://.../ds/ with an empty cache directory
      against shardbench on the local folder; the page cache of the shard
      files (which nginx reads too) dropped before each (os.posix_fadvise
      POSIX_FADV_DONTNEED). Aim: remote images/s >= 0.9 x local.
  (b) two epochs with cache_bytes = 10% of the dataset against an unlimited
      cache (the served files in the page cache). Aim >= 0.9x; the stall is
      shardbench's io wait (the time the consumer waited on reads).
  (c) time to the first batch (Open + first batch) from a cold remote
      dataset: empty cache directory, page cache dropped.
  (d) requests per GB: nginx's access log over each (a) remote round.
  (n) with (a): the remote first epoch with no cache (--cache-bytes 0), in
      the same rounds: the reader's cost without the cache's writes.

--pin: nginx (its master and workers) on core 1 and every shardbench, local
and remote, on core 0 with one thread (taskset), so that the ratio shows the
reader's own cost rather than two programs sharing two cores.

Prints a table of medians (fastest-slowest), and writes every run to
--json-out when given. Removes --work's dataset at the end unless --keep.
Needs Debian's nginx (scripts/setup) and a Release build with shardbench's
--cache-dir (configured and built into --build-dir when missing).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "remote"))
import servers  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work", default=None,
                   help="folder for the dataset and the caches (default: $TMPDIR, else "
                        "/work/tmp, else /tmp; a real disk, not /dev/shm)")
    p.add_argument("--gb", type=float, default=1.0, help="dataset size in GB (default 1, up to 10)")
    p.add_argument("--rounds", type=int, default=5, help="rounds of each case (default 5)")
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build-bench"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--read-ahead", default="128MiB",
                   help="shardbench --read-ahead, both sides (default 128MiB: 32 blocks in flight)")
    p.add_argument("--http", action="store_true",
                   help="serve plain HTTP instead of HTTPS (no TLS on either end)")
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--pin", action="store_true",
                   help="nginx on core 1, shardbench on core 0 with one thread (taskset)")
    p.add_argument("--cases", default="a,b,c",
                   help="which of the cases to run, comma-separated (default a,b,c; (d) comes "
                        "with a; n, beside a, is asked for)")
    p.add_argument("--keep", action="store_true", help="keep the dataset")
    p.add_argument("--json-out", help="write every run as JSON here")
    args = p.parse_args()
    if not 0 < args.gb <= 10:
        p.error("--gb must be above 0 and at most 10")
    if args.rounds < 1:
        p.error("--rounds must be at least 1")
    args.cases = set(args.cases.split(","))
    if not args.cases or not args.cases <= {"a", "b", "c", "n"}:
        p.error("--cases takes a comma-separated subset of a, b, c, n")
    if "n" in args.cases and "a" not in args.cases:
        p.error("--cases: n runs beside a")
    if args.work is None:
        args.work = os.environ.get("TMPDIR") or ("/work/tmp" if os.path.isdir("/work") else "/tmp")
    return args


def release_build(build_dir, targets):
    """Configures build_dir as a Release build when it has none, builds targets."""
    cache = os.path.join(build_dir, "CMakeCache.txt")
    if not os.path.exists(cache):
        subprocess.run(["cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja",
                        "-DCMAKE_BUILD_TYPE=Release"], check=True, stdout=sys.stderr)
    elif "CMAKE_BUILD_TYPE:STRING=Release\n" not in open(cache).read():
        sys.exit(f"remote_bench: {build_dir} is not a Release build; pass --build-dir")
    subprocess.run(["ninja", "-C", build_dir, *targets], check=True, stdout=sys.stderr)


def drop_page_cache(files):
    """Drops the page cache of these files (clean pages only: call after a sync)."""
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def pin_process_tree(pid, cpus):
    """taskset every thread of `pid` and of its children (nginx's workers)."""
    pids = [pid]
    children = f"/proc/{pid}/task/{pid}/children"
    if os.path.exists(children):
        with open(children) as f:
            pids += [int(c) for c in f.read().split()]
    for p in pids:
        subprocess.run(["taskset", "-a", "-p", "-c", cpus, str(p)], check=True,
                       stdout=subprocess.DEVNULL)


class Bench:
    def __init__(self, args, tools, ds, url):
        self.args, self.tools, self.ds, self.url = args, tools, ds, url
        self.files = [os.path.join(ds, f) for f in sorted(os.listdir(ds))]
        self.dataset_bytes = sum(os.path.getsize(f) for f in self.files)
        self.runs = []

    def shardbench(self, case, path, *flags):
        pin = ["taskset", "-c", "0"] if self.args.pin else []
        cmd = [*pin, self.tools["shardbench"], path, "--transform", "none", "--threads",
               "1" if self.args.pin else str(self.args.threads),
               "--batch-size", str(self.args.batch_size),
               "--read-ahead", self.args.read_ahead, "--json", "-q", *flags]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"remote_bench: {' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
        report = json.loads(p.stdout)
        report["case"] = case
        report["command"] = cmd
        self.runs.append(report)
        return report

    def fresh_cache(self):
        return tempfile.mkdtemp(prefix="cache-", dir=self.args.work)

    def remote(self, case, cache_bytes, *flags):
        cache = self.fresh_cache()
        try:
            return self.shardbench(case, self.url, "--cache-dir", cache,
                                   "--cache-bytes", str(cache_bytes), *flags)
        finally:
            shutil.rmtree(cache)

    def first_epoch(self, rnd, nginx):
        """(a), (d) and (n): one cold epoch local, one remote, and one uncached (n)."""
        def local():
            drop_page_cache(self.files)
            return self.shardbench("a-local", self.ds, "--epochs", "1")

        def remote():
            drop_page_cache(self.files)
            nginx.clear_requests()
            r = self.remote("a-remote", 1 << 50, "--epochs", "1")
            log = nginx.requests()
            r["nginx_requests"] = len(log)
            r["nginx_bytes"] = sum(e["bytes"] for e in log)
            return r
        def uncached():
            drop_page_cache(self.files)
            return self.remote("n-remote", 0, "--epochs", "1")
        order = [local, remote] + ([uncached] if "n" in self.args.cases else [])
        if rnd % 2:
            order.reverse()
        for f in order:
            f()

    def cache_budget(self, rnd):
        """(b): two epochs, a cache of 10% of the dataset against an unlimited one."""
        cases = [("b-unlimited", 1 << 50), ("b-10pct", self.dataset_bytes // 10)]
        if rnd % 2:
            cases.reverse()
        for case, budget in cases:
            self.remote(case, budget, "--epochs", "2")

    def first_batch(self):
        """(c): Open and the first batch from a cold remote dataset."""
        drop_page_cache(self.files)
        self.remote("c-first-batch", 1 << 50, "--seconds", "1")


def of(runs, case, key):
    return [key(r) for r in runs if r["case"] == case]


def spread(values, fmt="{:.3f}"):
    if not values:
        return "-"
    return (fmt.format(statistics.median(values)) +
            f" ({fmt.format(min(values))}-{fmt.format(max(values))})")


def ratio(runs, case, reference, key):
    a, b = of(runs, case, key), of(runs, reference, key)
    return [x / y for x, y in zip(a, b) if y] if a and b else []


def report(bench):
    runs, gb = bench.runs, bench.dataset_bytes / 1e9
    ips = lambda r: r["images_per_s"]  # noqa: E731
    io_wait = lambda r: r["wait_s"]["io"]  # noqa: E731
    first = lambda r: r["open_s"] + r["first_batch_s"]  # noqa: E731
    rows = [
        ("(a) first epoch, cold: local images/s", spread(of(runs, "a-local", ips), "{:,.0f}")),
        ("(a) first epoch, cold: remote images/s", spread(of(runs, "a-remote", ips), "{:,.0f}")),
        ("(a) remote / local (aim >= 0.9)", spread(ratio(runs, "a-remote", "a-local", ips))),
        ("(n) first epoch, cold, no cache: remote images/s",
         spread(of(runs, "n-remote", ips), "{:,.0f}")),
        ("(n) no cache / local", spread(ratio(runs, "n-remote", "a-local", ips))),
        ("(a) first batch, local / remote (s)",
         spread(of(runs, "a-local", first)) + " / " + spread(of(runs, "a-remote", first))),
        ("(b) 2 epochs, unlimited cache: images/s",
         spread(of(runs, "b-unlimited", ips), "{:,.0f}")),
        ("(b) 2 epochs, cache 10%: images/s", spread(of(runs, "b-10pct", ips), "{:,.0f}")),
        ("(b) 10% / unlimited (aim >= 0.9)", spread(ratio(runs, "b-10pct", "b-unlimited", ips))),
        ("(b) io wait (stall) s, unlimited / 10%",
         spread(of(runs, "b-unlimited", io_wait)) + " / " + spread(of(runs, "b-10pct", io_wait))),
        (f"(c) time to first batch, cold remote {gb:.2f} GB (s)",
         spread(of(runs, "c-first-batch", first))),
        ("(d) requests per GB (nginx log, (a) rounds)",
         spread([r["nginx_requests"] / gb for r in runs if r["case"] == "a-remote"], "{:,.0f}")),
        ("(d) requests per GB (shardbench's remote.requests)",
         spread([r.get("remote", {}).get("requests", 0) / gb for r in runs
                 if r["case"] == "a-remote"], "{:,.0f}")),
        ("(d) bytes served / dataset bytes",
         spread([r["nginx_bytes"] / bench.dataset_bytes for r in runs
                 if r["case"] == "a-remote"])),
    ]
    print(f"dataset: {bench.dataset_bytes:,} bytes, {len(bench.files)} files; "
          f"{bench.args.rounds} rounds; threads {bench.args.threads}; "
          f"load average {os.getloadavg()[0]:.2f}")
    print("| figure | median (fastest-slowest) |\n| --- | ---: |")
    for name, value in rows:
        print(f"| {name} | {value} |")


def main():
    args = parse_args()
    reason = servers.missing_nginx()
    if reason:
        sys.exit(f"remote_bench: {reason}")
    release_build(args.build_dir, ["shardbench", "make_bench_dataset"])
    tools = {"shardbench": os.path.join(args.build_dir, "tools", "shardbench"),
             "make": os.path.join(args.build_dir, "bench", "make_bench_dataset")}
    os.makedirs(args.work, exist_ok=True)
    # The dataset, and for (a) and (b) a cache as large as it.
    need = int(args.gb * 1e9 * (2.2 if args.cases & {"a", "b"} else 1.1))
    if shutil.disk_usage(args.work).free < need:
        sys.exit(f"remote_bench: {args.work} has {shutil.disk_usage(args.work).free:,} bytes "
                 f"free; --gb {args.gb} needs {need:,}")
    work = tempfile.mkdtemp(prefix="remote-bench-", dir=args.work)
    args.work = work
    try:
        root = os.path.join(work, "root")
        ds = os.path.join(root, "ds")
        t = time.monotonic()
        subprocess.run([tools["make"], ds, "--mb", str(int(args.gb * 1e9 / 2**20)),
                        "--kind", "cifar"], check=True, stdout=sys.stderr)
        os.sync()  # written pages are clean, so that dropping them works
        print(f"remote_bench: dataset made in {time.monotonic() - t:.1f} s", file=sys.stderr)
        with servers.Nginx(root, tls=not args.http, workers=1 if args.pin else "auto") as nginx:
            if args.pin:
                pin_process_tree(nginx.proc.pid, "1")
            if nginx.ca_file:
                os.environ["SHARDPACK_CA_BUNDLE"] = nginx.ca_file
            bench = Bench(args, tools, ds, nginx.url + "ds/")
            for rnd in range(args.rounds):
                print(f"remote_bench: round {rnd + 1} of {args.rounds}", file=sys.stderr)
                if "a" in args.cases:
                    bench.first_epoch(rnd, nginx)
                if "b" in args.cases:
                    bench.cache_budget(rnd)
                if "c" in args.cases:
                    bench.first_batch()
        report(bench)
        if args.json_out:
            with open(args.json_out, "w") as f:
                json.dump({"dataset_bytes": bench.dataset_bytes, "runs": bench.runs}, f, indent=1)
    finally:
        if args.keep:
            print(f"remote_bench: kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
