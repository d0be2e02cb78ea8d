"""The peer benchmark of issue 32: shardpack beside every peer module of
bench/peers/ (peer_NAME.py, interface in peer_api.py), on the same bytes and
the same cores. Run by bench/peers/run_peer_bench.sh with build/venv-peers's
Python; the subcommands:

  peer_bench.py gen-cifar FILE --records N [--fragment FILE]
      A class-sorted CIFAR-10 binary: N records, the real fragment's records
      (shared/data/cifar10-fragment) first, synthetic pixels for the rest,
      then every record sorted by label (stable): the shuffle-quality input.
  peer_bench.py child-resume PEER KIND OUT_DIR BATCH_SIZE WORKERS SEED
      The exact-resume check (bench/peers/peer_resume.py), once per peer.
  peer_bench.py gen-imagefolder ROOT [--images N] [--classes C] [--noise S]
      [--captions]
      An ImageNet-like ImageFolder: N JPEGs (default 20,000) over C classes
      (default 100), 500x375, quality 90, 4:2:0 (Pillow): smooth random
      content (a 16x12 random image upscaled, bicubic) plus Gaussian noise
      of sigma S (default 8: ~60 KB a file; ~20: ~110 KB, ImageNet's mean).
      --captions: a caption of 60 bytes beside each (CLASS/NAME.txt), words
      drawn from a small vocabulary: the input of --kind caption.
  peer_bench.py run --kind cifar|imagefolder|caption --src FILE --work DIR [--peers a,b,...]
      [--workers 1,2] [--repeats N] [--batch-size B] [--seed S] [--out FILE]
      Converts SRC with every peer (timed, peak RSS of the process tree,
      bytes on disk), then --repeats rounds of loader runs (each peer, each
      worker count, warm cache and cold), the peers' order rotated each
      round, and one resume check per peer (1 worker); writes the JSON of
      every run under WORK/results and the
      markdown table to --out (and stdout). Two columns leave out the open
      and any compile (FFCV's numba pipeline compiles in its first batch):
      the cold epoch's images/s after its first batch, and the first batch
      of the second (warm) epoch.

With --device cuda (a machine with a GPU and a CUDA torch) every loader
run delivers its batches to the GPU: a peer module that can put them there
itself (loader(..., device=...), DEVICE_LOADER = True: shardpack's GPU
staging, DALI's mixed decoder) does; for the others the harness copies each
host batch with torch's .to(device), as a user of that peer would. The
consumer then sums every byte on the GPU and waits for it, batch by batch.

Every convert and loader run is a subprocess of its own (`child-convert`,
`child-load`), pinned with taskset (-c 0 for 1 worker, -c 0,1 for 2); this
process polls the RSS of the child's whole process tree (psutil, every
20 ms) and keeps the peak.
"""

import argparse
import glob
import importlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import peers_shared  # noqa: E402
from peer_api import CIFAR_RECORD, Unsupported, files_under  # noqa: E402

EXIT_UNSUPPORTED = 3
FIRST_BATCHES_FOR_SHUFFLE = 10
ALL_PEERS = "shardpack,webdataset,mosaicml,litdata,ffcv,ffcv-proportion,dali,spdl,torchdata,grain"


def load_peer(name):
    return importlib.import_module(f"peer_{name.replace('-', '_')}")


# ---- Data ------------------------------------------------------------------------------------

def gen_cifar(args):
    import numpy as np
    rng = np.random.default_rng(1)
    parts = []
    if args.fragment:
        raw = np.fromfile(args.fragment, dtype=np.uint8)
        if raw.size % CIFAR_RECORD:
            sys.exit(f"peer_bench.py: --fragment {args.fragment}: {raw.size} bytes is not a "
                     f"whole number of {CIFAR_RECORD}-byte records")
        parts.append(raw.reshape(-1, CIFAR_RECORD)[:args.records])
    have = sum(len(p) for p in parts)
    if args.records > have:
        synth = rng.integers(0, 256, size=(args.records - have, CIFAR_RECORD), dtype=np.uint8)
        synth[:, 0] = np.arange(len(synth)) % 10
        parts.append(synth)
    records = np.concatenate(parts)
    records = records[np.argsort(records[:, 0], kind="stable")]
    records.tofile(args.file)
    print(f"peer_bench.py: {args.file}: {len(records)} records ({have} real), class-sorted",
          file=sys.stderr)


def _jpeg_files(job):
    root, classes, noise, captions, start, stop = job
    import io
    import numpy as np
    from PIL import Image
    for i in range(start, stop):
        rng = np.random.default_rng([7, i])
        small = Image.fromarray(rng.integers(0, 256, (12, 16, 3), dtype=np.uint8))
        pixels = np.asarray(small.resize((500, 375), Image.BICUBIC)).astype(np.int16)
        if noise:
            pixels = pixels + rng.normal(0, noise, pixels.shape).astype(np.int16)
        image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
        folder = os.path.join(root, f"class{i % classes:03d}")
        out = io.BytesIO()
        image.save(out, "JPEG", quality=90)
        with open(os.path.join(folder, f"img{i:07d}.jpg"), "wb") as f:
            f.write(out.getvalue())
        if captions:
            with open(os.path.join(folder, f"img{i:07d}.txt"), "w", encoding="utf-8") as f:
                f.write(_caption(rng, i % classes))


CAPTION_BYTES = 60
_WORDS = ("a photo of the small large red green blue old new bright dark cat dog car tree "
          "house boat bird on in near under beside with a park street field river at dusk "
          "morning").split()


def _caption(rng, label):
    """A caption of CAPTION_BYTES ASCII bytes: words drawn by `rng`, then the class."""
    tail = f" class {label:03d}"
    words = []
    while len(" ".join(words)) < CAPTION_BYTES - len(tail):
        words.append(_WORDS[int(rng.integers(len(_WORDS)))])
    return (" ".join(words)[:CAPTION_BYTES - len(tail)].rstrip().ljust(
        CAPTION_BYTES - len(tail), ".") + tail)


def gen_imagefolder(args):
    import multiprocessing
    for c in range(args.classes):
        os.makedirs(os.path.join(args.root, f"class{c:03d}"), exist_ok=True)
    step = 500
    jobs = [(args.root, args.classes, args.noise, args.captions, a, min(a + step, args.images))
            for a in range(0, args.images, step)]
    with multiprocessing.Pool(os.cpu_count()) as pool:
        pool.map(_jpeg_files, jobs)
    total = sum(os.path.getsize(f) for f in files_under(args.root) if f.endswith(".jpg"))
    print(f"peer_bench.py: {args.root}: {args.images} JPEGs in {args.classes} classes, "
          f"{total / args.images / 1e3:.0f} KB each on average", file=sys.stderr)


# ---- Children ------------------------------------------------------------------------------

def check_kind(peer, kind):
    """Unsupported when the module does not run `kind` (peer_api: KINDS)."""
    from peer_api import DEFAULT_KINDS
    if kind not in getattr(peer, "KINDS", DEFAULT_KINDS):
        raise Unsupported(f"no {kind} kind in bench/peers/peer_{peer.NAME}.py "
                          f"(it runs {', '.join(getattr(peer, 'KINDS', DEFAULT_KINDS))})")


def child_convert(args):
    try:
        peer = load_peer(args.peer)
        check_kind(peer, args.kind)
        start = time.perf_counter()
        peer.convert(args.kind, args.src, args.out_dir, args.workers)
        seconds = time.perf_counter() - start
    except Unsupported as e:
        print(json.dumps({"unsupported": str(e)}))
        sys.exit(EXIT_UNSUPPORTED)
    print(json.dumps({"convert_s": seconds}))


def _as_numpy(x):
    import numpy as np
    if hasattr(x, "numpy"):
        x = x.numpy()
    return np.asarray(x)


def _entropy(labels, classes):
    """Normalized entropy of a batch's label histogram: 1 = uniform over the
    classes (a good shuffle), 0 = one class (class-sorted input unshuffled)."""
    import numpy as np
    counts = np.bincount(labels, minlength=classes)
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum() / math.log(min(classes, len(labels))))


def _consumer(device):
    """What the training loop does with a batch: reads every byte of it and
    returns (images' shape, labels as numpy, a fold of the bytes)."""
    import numpy as np
    if device == "cpu":
        def consume(images, labels):
            x = _as_numpy(images)
            if x.dtype != np.uint8:
                raise TypeError(f"images are {x.dtype}, not uint8")
            flat = np.ascontiguousarray(x).reshape(-1)
            fold = int(np.bitwise_xor.reduce(flat.view(np.uint64))) if flat.size % 8 == 0 else 0
            return list(x.shape), _as_numpy(labels), fold
        return consume
    import torch

    def consume(images, labels):
        if not (isinstance(images, torch.Tensor) and images.device.type == "cuda"):
            images = torch.from_numpy(np.ascontiguousarray(_as_numpy(images))).to(device)
        if images.dtype != torch.uint8:
            raise TypeError(f"images are {images.dtype}, not uint8")
        fold = int(images.sum(dtype=torch.int64).item())  # waits for the copy and the sum
        if isinstance(labels, torch.Tensor):
            labels = labels.cpu()
        return list(images.shape), _as_numpy(labels), fold
    return consume


def _read_captions(peer, captions, n):
    """What a training loop does with a batch's captions (tokenizes them):
    reads every one; their characters. TypeError unless one str a sample."""
    captions = list(captions)
    if len(captions) != n or not all(isinstance(c, str) for c in captions):
        raise TypeError(f"peer {peer}: the captions of a batch of {n} are "
                        f"{type(captions[0]).__name__ if captions else 'none'} x {len(captions)}, "
                        "not one str a sample")
    return sum(len(c) for c in captions)


def _after_first(epoch):
    images = epoch["images"] - epoch["first_batch_images"]
    seconds = epoch["seconds"] - (epoch["first_batch_s"] or 0)
    return images / seconds if images > 0 and seconds > 0 else None


def child_load(args):
    import numpy as np
    try:
        peer = load_peer(args.peer)
        check_kind(peer, args.kind)
        consume = _consumer(args.device)
        opened = time.perf_counter()
        if args.device != "cpu" and getattr(peer, "DEVICE_LOADER", False):
            loader = peer.loader(args.kind, args.out_dir, args.batch_size, args.workers,
                                 args.seed, device=args.device)
        else:
            loader = peer.loader(args.kind, args.out_dir, args.batch_size, args.workers,
                                 args.seed)
        epochs = []
        first_batch_s = None
        entropies = []
        shape = None
        sink = 0
        caption_chars = 0
        for epoch in range(args.epochs):
            if epoch > 0 and hasattr(loader, "set_epoch"):
                loader.set_epoch(epoch)
            start = time.perf_counter()
            images_seen = 0
            batches = 0
            epoch_first, first_images = None, 0
            for batch in loader:
                images, labels = batch[0], batch[1]
                try:
                    batch_shape, y, fold = consume(images, labels)
                except TypeError as e:
                    raise TypeError(f"peer {args.peer}: {e}") from None
                y = y.astype(np.int64).reshape(-1)
                if args.kind == "caption":
                    caption_chars += _read_captions(args.peer, batch[2], len(y))
                if epoch_first is None:
                    epoch_first = time.perf_counter() - start
                    first_images = len(y)
                if first_batch_s is None:
                    first_batch_s = time.perf_counter() - opened
                    shape = batch_shape
                sink ^= fold
                if epoch == 0 and batches < FIRST_BATCHES_FOR_SHUFFLE:
                    entropies.append(_entropy(y, args.classes))
                images_seen += len(y)
                batches += 1
            # An epoch's own first batch: past epoch 0 it holds no open and no
            # compile (FFCV's numba pipeline compiles in epoch 0's first batch).
            epochs.append({"seconds": time.perf_counter() - start, "images": images_seen,
                           "batches": batches, "first_batch_s": epoch_first,
                           "first_batch_images": first_images})
    except Unsupported as e:
        print(json.dumps({"unsupported": str(e)}))
        sys.exit(EXIT_UNSUPPORTED)
    out = {
        "first_batch_s": first_batch_s,
        "epochs": epochs,
        # Epoch 0 includes the open and the first batch; the last epoch is the steady one.
        "epoch0_images_per_s": epochs[0]["images"] / epochs[0]["seconds"],
        "steady_images_per_s": epochs[-1]["images"] / epochs[-1]["seconds"],
        # Apart from the open and a compile (FFCV's numba pipeline compiles
        # in epoch 0's first batch): the first epoch after its first batch,
        # and the last epoch's first batch.
        "epoch0_after_first_images_per_s": _after_first(epochs[0]),
        "later_first_batch_s": epochs[-1]["first_batch_s"] if len(epochs) > 1 else None,
        "shuffle_entropy": statistics.mean(entropies) if entropies else None,
        "batch_shape": shape,
        "xor_fold": f"{sink & (2**64 - 1):016x}",
        "caption_chars": caption_chars,
    }
    print(json.dumps(out))


def child_resume(args):
    from peer_resume import resume_check
    try:
        peer = load_peer(args.peer)
        out = resume_check(peer, args.kind, args.out_dir, args.batch_size, args.workers,
                           args.seed)
    except Unsupported as e:
        print(json.dumps({"unsupported": str(e)}))
        sys.exit(EXIT_UNSUPPORTED)
    print(json.dumps(out))


# ---- Measuring a child ----------------------------------------------------------------------

def tree_rss(proc):
    """RSS bytes of a psutil.Process and all its descendants."""
    import psutil
    total = 0
    try:
        procs = [proc] + proc.children(recursive=True)
    except psutil.Error:
        return 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def measure(cmd, cores, timeout):
    """Runs `cmd` pinned to `cores`: (rc, parsed JSON or None, stderr tail,
    wall seconds, peak tree RSS bytes)."""
    import psutil
    full = ["taskset", "-c", cores] + cmd
    print("+ " + " ".join(full), file=sys.stderr, flush=True)
    start = time.perf_counter()
    child = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc = psutil.Process(child.pid)
    peak = 0
    timed_out = False
    # Poll the RSS while a thread drains the child's pipes.
    out_err = {}

    def drain():
        out_err["out"], out_err["err"] = child.communicate()
    reader = threading.Thread(target=drain)
    reader.start()
    while reader.is_alive():
        peak = max(peak, tree_rss(proc))
        if time.perf_counter() - start > timeout and not timed_out:
            timed_out = True
            for p in [proc] + proc.children(recursive=True):
                try:
                    p.kill()
                except psutil.Error:
                    pass
        reader.join(0.02)
    wall = time.perf_counter() - start
    result = None
    lines = [line for line in out_err["out"].splitlines() if line.startswith("{")]
    if lines:
        try:
            result = json.loads(lines[-1])
        except json.JSONDecodeError:
            pass
    # The last lines of stderr, on one line that a table cell can hold.
    err_tail = " / ".join(line.strip() for line in out_err["err"].strip().splitlines()[-2:])
    err_tail = err_tail.replace("|", "\\|")
    if timed_out:
        err_tail = (f"killed after {timeout:.0f} s (--timeout) without finishing"
                    + (f"; its stderr: {err_tail}" if err_tail else ""))
    if child.returncode not in (0, EXIT_UNSUPPORTED):
        sys.stderr.write(out_err["err"][-3000:])
    return child.returncode, result, err_tail, wall, peak


def drop_caches(path, whole):
    """Drops the page cache of every file under `path` (fadvise DONTNEED:
    no root needed, and the other users of a shared machine keep theirs);
    with `whole`, the whole cache (/proc/sys/vm/drop_caches) when it can be
    written, the Python libraries included."""
    if whole:
        try:
            os.sync()
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
            return "echo 3 > /proc/sys/vm/drop_caches before each cold run"
        except OSError:
            pass
    for name in files_under(path):
        fd = os.open(name, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return "fadvise(DONTNEED) of every file of the dataset before each cold run"


def dataset_root(out_dir):
    """What a peer's loader reads: out_dir, or, for a peer that reads the input as it is
    (its convert wrote only peers_shared.SOURCE_FILE), the input that file names."""
    source = os.path.join(out_dir, peers_shared.SOURCE_FILE)
    if os.listdir(out_dir) == [peers_shared.SOURCE_FILE]:
        with open(source) as f:
            return f.read().strip()
    return out_dir


def disk_bytes(path):
    apparent = blocks = 0
    for name in files_under(path):
        st = os.stat(name)
        apparent += st.st_size
        blocks += st.st_blocks * 512
    return apparent, blocks


# ---- The run --------------------------------------------------------------------------------

def check_device(device):
    """--device cuda needs a CUDA torch that sees a GPU: say what is missing."""
    if device == "cpu":
        return
    try:
        import torch
    except ImportError as e:
        sys.exit(f"peer_bench.py: --device {device}: torch does not import ({e})")
    if not torch.cuda.is_available():
        sys.exit(f"peer_bench.py: --device {device}: torch {torch.__version__} sees no CUDA "
                 f"device (torch.version.cuda = {torch.version.cuda}); run it on a machine "
                 "with a GPU and a CUDA build of torch")


def run(args):
    check_device(args.device)
    peers = args.peers.split(",")
    workers = [int(w) for w in args.workers.split(",")]
    results = os.path.join(args.work, "results")
    os.makedirs(results, exist_ok=True)
    me = [sys.executable, os.path.abspath(__file__)]
    info = {"peers": {}, "kind": args.kind, "src": args.src, "repeats": args.repeats,
            "batch_size": args.batch_size, "workers": workers, "cold": None,
            "device": args.device}

    def cores_for(w):
        return ",".join(str(c) for c in range(min(w, os.cpu_count())))

    # Conversion, once per peer (its own workers at the largest worker count).
    for name in peers:
        row = {"name": name}
        info["peers"][name] = row
        try:
            peer = load_peer(name)
            row.update(version=peer.VERSION, settings=peer.SETTINGS)
        except Unsupported as e:
            row["unsupported"] = str(e)
            continue
        except Exception as e:  # an import error is a row too, not a crash
            row["unsupported"] = f"import failed: {type(e).__name__}: {e}"
            continue
        out_dir = os.path.join(args.work, "ds", name)
        shutil.rmtree(out_dir, ignore_errors=True)
        os.makedirs(out_dir)
        w = max(workers)
        rc, res, err, wall, peak = measure(
            me + ["child-convert", name, args.kind, args.src, out_dir, str(w)], cores_for(w),
            args.timeout)
        if rc == EXIT_UNSUPPORTED:
            row["unsupported"] = res["unsupported"] if res else err
            continue
        if rc != 0 or res is None:
            row["convert_error"] = f"rc {rc}: {err}"
            continue
        row.update(convert_s=res["convert_s"], convert_wall_s=wall, convert_peak_rss=peak,
                   convert_workers=w, out_dir=out_dir)
        row["bytes_apparent"], row["bytes_on_disk"] = disk_bytes(dataset_root(out_dir))
        rc, res, err, _, _ = measure(
            me + ["child-resume", name, args.kind, out_dir, str(args.batch_size), "1",
                  str(args.seed)], cores_for(1), args.timeout)
        if rc == 0 and res:
            row["resume"] = res["resume"]
        elif rc == EXIT_UNSUPPORTED and res:
            row["resume"] = "cannot run: " + res["unsupported"]
        else:
            row["resume"] = f"failed: rc {rc}: {err}"

    # Loader runs, rounds with the order rotated.
    if args.kind == "cifar":
        classes = 10
    else:
        classes = sum(os.path.isdir(os.path.join(args.src, d)) for d in os.listdir(args.src))
    info["classes"] = classes
    info["load_start"] = os.getloadavg()[0]
    runnable = [n for n in peers if "out_dir" in info["peers"][n]]
    for r in range(args.repeats):
        k = r % len(runnable) if runnable else 0
        order = runnable[k:] + runnable[:k]
        for w in workers:
            for cache in ("warm", "cold"):
                for name in order:
                    row = info["peers"][name]
                    if "load_error" in row:
                        continue
                    if cache == "cold":
                        info["cold"] = drop_caches(dataset_root(row["out_dir"]),
                                                   args.drop_all_caches)
                    else:
                        # Warm: one read of every file first.
                        for f in files_under(dataset_root(row["out_dir"])):
                            with open(f, "rb") as fh:
                                while fh.read(1 << 22):
                                    pass
                    rc, res, err, wall, peak = measure(
                        me + ["child-load", name, args.kind, row["out_dir"],
                              str(args.batch_size), str(w), str(args.seed), str(args.epochs),
                              str(classes), "--device", args.device],
                        cores_for(w), args.timeout)
                    if rc == EXIT_UNSUPPORTED:
                        row["load_error"] = "unsupported: " + (res["unsupported"] if res else err)
                        continue
                    if rc != 0 or res is None:
                        row["load_error"] = f"rc {rc}: {err}"
                        continue
                    res.update(peer=name, workers=w, cache=cache, round=r, wall_s=wall,
                               peak_rss=peak)
                    with open(os.path.join(results, f"{name}.w{w}.{cache}.{r}.json"), "w") as f:
                        json.dump(res, f)
    info["load_end"] = os.getloadavg()[0]
    with open(os.path.join(results, "info.json"), "w") as f:
        json.dump(info, f, indent=1)
    table = make_table(info, results)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table)
    print(table)


def _delivery(device, kind):
    if kind == "caption":
        return _delivery(device, "") + ", every caption read (one str a sample)"
    if device == "cpu":
        return "batches consumed on the CPU (every byte read)"
    return (f"batches delivered to {device} (by the peer where it can, else a host "
            "copy with .to(device)) and summed there")


def make_table(info, results):
    def runs(name, w, cache):
        out = []
        for f in sorted(glob.glob(os.path.join(results, f"{name}.w{w}.{cache}.*.json"))):
            with open(f) as fh:
                out.append(json.load(fh))
        return out

    def med(rs, key):
        vals = [r[key] for r in rs if r.get(key) is not None]
        return statistics.median(vals) if vals else None

    peers = info["peers"]
    base = peers.get("shardpack", {})
    lines = []
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    lines.append(f"{info['kind']}: {os.path.basename(info['src'])}; CPU {cpu}, "
                 f"{os.cpu_count()} cores (shared with other users; load average "
                 f"{info.get('load_start', 0):.1f} at the start of the loader runs, "
                 f"{info.get('load_end', 0):.1f} at the end); batch "
                 f"{info['batch_size']}; medians of {info['repeats']} rounds, peer order "
                 f"rotated each round; cold cache by {info['cold']}; "
                 f"{_delivery(info.get('device', 'cpu'), info['kind'])}. Ratios are "
                 "shardpack / peer (throughput: > 1 is shardpack faster; time, bytes, "
                 "memory: < 1 is shardpack smaller).")
    lines.append("")
    lines.append("| peer | version | convert s | convert peak RSS MB | MB on disk | "
                 "exact resume (after 5 batches, 1 worker) |")
    lines.append("|---|---|---:|---:|---:|---|")

    def ratio(a, b):
        return f" ({a / b:.2f}x)" if a is not None and b and b > 0 else ""

    for name, row in peers.items():
        if "convert_s" not in row:
            why = row.get("unsupported") or row.get("convert_error") or "?"
            lines.append(f"| {name} | {row.get('version', '-')} | cannot run: {why} | | | |")
            continue
        lines.append(
            f"| {name} | {row['version']} | {row['convert_s']:.2f}"
            f"{ratio(base.get('convert_s'), row['convert_s'])} | "
            f"{row['convert_peak_rss'] / 1e6:.0f}"
            f"{ratio(base.get('convert_peak_rss'), row['convert_peak_rss'])} | "
            f"{row['bytes_on_disk'] / 1e6:.1f}"
            f"{ratio(base.get('bytes_on_disk'), row['bytes_on_disk'])} | "
            f"{row.get('resume', '-')} |")
    lines.append("")
    lines.append(f"Loaders: {info['classes']} classes, batch {info['batch_size']}, 2 epochs a run.")
    lines.append("")
    lines.append("| peer | workers | warm img/s (steady epoch) | cold img/s (first epoch) | "
                 "open to first batch s (warm) | peak RSS of tree MB (warm) | "
                 "shuffle entropy (first 10 batches) | cold img/s after the first batch | "
                 "first batch of epoch 2 s (warm) |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w in info["workers"]:
        b_warm, b_cold = runs("shardpack", w, "warm"), runs("shardpack", w, "cold")
        bw = med(b_warm, "steady_images_per_s")
        bc = med(b_cold, "epoch0_images_per_s")
        bf = med(b_warm, "first_batch_s")
        bm = med(b_warm, "peak_rss")
        ba, bl = med(b_cold, "epoch0_after_first_images_per_s"), med(b_warm, "later_first_batch_s")
        for name, row in peers.items():
            if "load_error" in row and not runs(name, w, "warm"):
                lines.append(f"| {name} | {w} | cannot run: {row['load_error']} | | | | | | |")
                continue
            if "out_dir" not in row:
                continue
            warm, cold = runs(name, w, "warm"), runs(name, w, "cold")
            if not warm:
                continue
            vw, vc = med(warm, "steady_images_per_s"), med(cold, "epoch0_images_per_s")
            vf, vm = med(warm, "first_batch_s"), med(warm, "peak_rss")
            ent = med(warm, "shuffle_entropy")
            va, vl = med(cold, "epoch0_after_first_images_per_s"), med(warm, "later_first_batch_s")

            def fmt(v, spec):
                return format(v, spec) if v is not None else "-"
            lines.append(
                f"| {name} | {w} | {fmt(vw, ',.0f')}{ratio(bw, vw)} | "
                f"{fmt(vc, ',.0f')}{ratio(bc, vc)} | {fmt(vf, '.3f')}{ratio(bf, vf)} | "
                f"{fmt(vm and vm / 1e6, '.0f')}{ratio(bm, vm)} | {fmt(ent, '.3f')} | "
                f"{fmt(va, ',.0f')}{ratio(ba, va)} | {fmt(vl, '.3f')}{ratio(bl, vl)} |")
    lines.append("")
    lines.append("Settings (each peer's documented fastest, as used):")
    lines.append("")
    for name, row in peers.items():
        lines.append(f"- {name} {row.get('version', '')}: {row.get('settings', '-')}")
    errors = [(n, r["load_error"]) for n, r in peers.items() if "load_error" in r]
    if errors:
        lines.append("")
        for n, e in errors:
            lines.append(f"- {n}: a loader run failed: {e}")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("gen-cifar")
    p.add_argument("file")
    p.add_argument("--records", type=int, default=50000)
    p.add_argument("--fragment")
    p = sub.add_parser("gen-imagefolder")
    p.add_argument("root")
    p.add_argument("--images", type=int, default=20000)
    p.add_argument("--classes", type=int, default=100)
    p.add_argument("--noise", type=float, default=8)
    p.add_argument("--captions", action="store_true")
    p = sub.add_parser("run")
    p.add_argument("--kind", choices=["cifar", "imagefolder", "caption"], default="cifar")
    p.add_argument("--src", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--peers", default=ALL_PEERS)
    p.add_argument("--workers", default="1,2")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--device", default="cpu",
                   help="cpu, or cuda / cuda:N: every batch delivered to that GPU")
    p.add_argument("--drop-all-caches", action="store_true",
                   help="cold runs after echo 3 > /proc/sys/vm/drop_caches (root), not only "
                        "the dataset's files dropped")
    p.add_argument("--out")
    p = sub.add_parser("child-convert")
    for a in ("peer", "kind", "src", "out_dir"):
        p.add_argument(a)
    p.add_argument("workers", type=int)
    p = sub.add_parser("child-resume")
    for a in ("peer", "kind", "out_dir"):
        p.add_argument(a)
    for a in ("batch_size", "workers", "seed"):
        p.add_argument(a, type=int)
    p = sub.add_parser("child-load")
    for a in ("peer", "kind", "out_dir"):
        p.add_argument(a)
    for a in ("batch_size", "workers", "seed", "epochs", "classes"):
        p.add_argument(a, type=int)
    p.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if getattr(args, "device", "cpu") != "cpu" and not args.device.startswith("cuda"):
        parser.error(f"--device {args.device}: cpu, cuda or cuda:N")
    {"gen-cifar": gen_cifar, "gen-imagefolder": gen_imagefolder, "run": run,
     "child-convert": child_convert,
     "child-load": child_load, "child-resume": child_resume}[args.cmd](args)


if __name__ == "__main__":
    main()
