#!/usr/bin/env python3
"""End-to-end training: real models fed by shardpack and by torchvision's DataLoader.

  bench/run_train_bench.sh [OPTIONS]        (finds the tools, then runs this)
  python3 bench/train_bench.py --shardpack TOOL [--make-demo-data TOOL] [OPTIONS]

Each model trains for a fixed number of steps fed by each loader:

  shardpack  shardpack.Reader, output="torch": on a GPU device="cuda" (the
             reader's GPU staging; float32 made and normalized on the GPU,
             NHWC seen as channels_last NCHW), on the CPU float32 NCHW;
  pil        torchvision's DataLoader, the PIL loop: a CIFAR10-style dataset
             or ImageFolder, torchvision transforms + ToTensor + Normalize in
             the workers, pin_memory on a GPU;
  tensor     torchvision's DataLoader, the uint8-tensor loop: CIFAR as one
             uint8 tensor, or decode_jpeg of the file's bytes; the same
             crop and flip on uint8 tensors; normalized on the device;
  resident   one fixed batch already on the device: the compute bound.

Models, on a GPU (bf16 autocast, channels_last): resnet9 (the ResNet-9 of
the DAWNBench / Page CIFAR-10 speed runs) on CIFAR-shaped records, batch 512,
cifar-train augmentation; resnet18 and resnet50 (torchvision.models) on a
JPEG ImageFolder, batch 256, RandomResizedCrop(224) + flip. Without a GPU,
small models on the CPU (float32): resnet9 at batch 64 and cnn64 (three conv
blocks) at 64 px, batch 64.

Each run is one process pinned with `taskset -c` to the first k cores of
this process's affinity: the trainer, the reader's threads or the
DataLoader's k workers all inside. A run warms the model up on a resident
batch (cuDNN's autotuning, the allocator), then starts the loader and
discards its first k + 1 batches (each worker's first batch arrives at about
the same time), then times up to --steps steps or --max-seconds. On a GPU the
loop keeps at most one step queued ahead (it waits on a blocking event of
the step before), so the time blocked in next() is time the loader was
behind, not time the GPU was. Figures: images/s = timed images / wall time;
data wait = time blocked in next() / wall time; of bound = images/s / the
resident batch's images/s (measured with the largest k, before the other
loaders; it runs again after them, and a NOTE says when the two differ by
more than 5%; not with --quick); cores busy = CPU seconds of the process and its workers / wall
time.

The fewest cores: each loader runs first with the most cores; if it reaches
0.95 of the bound there, a binary search over the smaller core counts finds
the fewest that do (--search all runs every count).

Data (made under --work, removed afterwards unless --keep): CIFAR-shaped
records from make_demo_data (else numpy) packed with `shardpack cifar`; a JPEG
ImageFolder (--photos DIR, else make_demo_data's scenes, else crops of the
photographs scikit-learn and scikit-image ship) packed with `shardpack images`.
"""
import argparse
import contextlib
import datetime
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "peers"))
sys.path.insert(0, HERE)

CIFAR_MEAN, CIFAR_STD = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
BOUND_SHARE = 0.95
LOADERS = ("resident", "shardpack", "pil", "tensor")
LOADER_NAMES = {"resident": "resident batch (bound)", "shardpack": "shardpack.Reader",
                "pil": "DataLoader, PIL", "tensor": "DataLoader, uint8 tensors"}
# name: data, image side, batch, steps, warm-up steps (on the resident batch).
GPU_MODELS = {
    "resnet9": dict(data="cifar", size=32, batch=512, steps=80, warmup=8, title="ResNet-9"),
    "resnet18": dict(data="images", size=224, batch=256, steps=40, warmup=5, title="ResNet-18"),
    "resnet50": dict(data="images", size=224, batch=256, steps=30, warmup=5, title="ResNet-50"),
}
CPU_MODELS = {
    "resnet9": dict(data="cifar", size=32, batch=64, steps=4, warmup=1, title="ResNet-9"),
    "cnn64": dict(data="images", size=64, batch=64, steps=12, warmup=2, title="small CNN"),
    "resnet18": dict(data="images", size=64, batch=64, steps=4, warmup=1, title="ResNet-18"),
}
QUICK = {"cuda": {"resnet9": 20, "resnet50": 10}, "cpu": {"resnet9": 2, "cnn64": 4}}
DEFAULT_MODELS = {"cuda": ("resnet9", "resnet18", "resnet50"), "cpu": ("resnet9", "cnn64")}


def fail(message):
    sys.exit(f"train_bench.py: {message}")


def log(message):
    print(f"train_bench.py: {message}", file=sys.stderr, flush=True)


# ---- models ------------------------------------------------------------------

def build_model(name, classes):
    import torch
    import torchvision
    from torch import nn

    def conv_bn(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    class Residual(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.body = nn.Sequential(conv_bn(c, c), conv_bn(c, c))

        def forward(self, x):
            return x + self.body(x)

    class Scale(nn.Module):
        def __init__(self, s):
            super().__init__()
            self.s = s

        def forward(self, x):
            return x * self.s

    if name == "resnet9":  # Page's (myrtle.ai) ResNet-9 for CIFAR-10
        return nn.Sequential(conv_bn(3, 64), conv_bn(64, 128), nn.MaxPool2d(2), Residual(128),
                             conv_bn(128, 256), nn.MaxPool2d(2), conv_bn(256, 512),
                             nn.MaxPool2d(2), Residual(512), nn.AdaptiveMaxPool2d(1),
                             nn.Flatten(), nn.Linear(512, classes, bias=False), Scale(0.125))
    if name == "cnn64":
        def block(cin, cout):
            return nn.Sequential(conv_bn(cin, cout), nn.MaxPool2d(2))
        return nn.Sequential(block(3, 16), block(16, 32), block(32, 64),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, classes))
    return getattr(torchvision.models, name)(weights=None, num_classes=classes)


# ---- one run (a child process, pinned by its parent) ---------------------------

def cpu_seconds(pids):
    from torchvision_cifar import cpu_seconds as peer_cpu_seconds
    return peer_cpu_seconds(pids)


def shardpack_batches(spec, cuda):
    """Endless (images, labels) from shardpack.Reader across epochs, and notes."""
    import shardpack
    mean, std = (CIFAR_MEAN, CIFAR_STD) if spec["data"] == "cifar" else (IMAGENET_MEAN,
                                                                          IMAGENET_STD)
    transform = "cifar-train" if spec["data"] == "cifar" else f"rrc:{spec['size']}"
    notes = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reader = shardpack.Reader(spec["dataset"], batch_size=spec["batch"], seed=0,
                                  transform=transform, threads=spec["cores"], dtype="float32",
                                  layout="NHWC" if cuda else "NCHW", mean=mean, std=std,
                                  output="torch", device="cuda" if cuda else "cpu")
    notes += [f"shardpack: {w.message}" for w in caught]

    def batches():
        while True:
            got = 0
            for images, labels in reader:
                got += 1
                yield images, labels
            if not got:
                fail(f"{spec['dataset']}: an epoch of no batches of {spec['batch']}")

    return batches(), [os.getpid()], notes


def dataloader_batches(spec, kind, cuda):
    """Endless batches from torchvision's DataLoader: one iterator over a
    sampler of as many shuffled epochs as the run needs (so no epoch ends in
    it, as with a large dataset), and the pids whose CPU time counts."""
    import torch
    import torchvision
    from torchvision import transforms

    if spec["data"] == "cifar":
        from torchvision_cifar import load_cifar10, make_dataset
        images, labels = load_cifar10([spec["cifar_bin"]])
        dataset, _ = make_dataset(kind, images, labels, "float" if kind == "pil" else "uint8",
                                  normalize=(CIFAR_MEAN, CIFAR_STD) if kind == "pil" else None)
    elif kind == "pil":
        dataset = torchvision.datasets.ImageFolder(spec["image_root"], transform=transforms.Compose([
            transforms.RandomResizedCrop(spec["size"]), transforms.RandomHorizontalFlip(),
            transforms.ToTensor(), transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD)]))
    else:
        dataset = JpegTensorFolder(spec["image_root"], spec["size"])
    needed = spec["steps"] + spec["cores"] + 4
    epochs = max(1, math.ceil(needed * spec["batch"] / len(dataset)))
    sampler = torch.utils.data.RandomSampler(dataset, num_samples=epochs * len(dataset))
    loader = torch.utils.data.DataLoader(dataset, batch_size=spec["batch"], sampler=sampler,
                                         num_workers=spec["cores"], pin_memory=cuda,
                                         drop_last=True, multiprocessing_context="fork")
    if len(loader) < needed:
        fail(f"{len(dataset)} samples make {len(loader)} batches of {spec['batch']}, "
             f"fewer than the {needed} the run needs")
    iterator = iter(loader)
    pids = [os.getpid()] + [w.pid for w in getattr(iterator, "_workers", [])]
    return iterator, pids, []


class JpegTensorFolder:
    """The uint8-tensor loop over an ImageFolder: the file's bytes, decode_jpeg
    to a uint8 CHW tensor, RandomResizedCrop (antialiased) + flip on it."""

    def __init__(self, root, size):
        import torchvision
        from torchvision import transforms
        self.samples = torchvision.datasets.ImageFolder(root).samples
        self.transform = transforms.Compose([transforms.RandomResizedCrop(size, antialias=True),
                                             transforms.RandomHorizontalFlip()])

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        import torch
        from torchvision.io import ImageReadMode, decode_jpeg
        path, label = self.samples[i]
        with open(path, "rb") as f:
            data = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8)
        try:
            image = decode_jpeg(data, mode=ImageReadMode.RGB)
        except RuntimeError as e:
            raise RuntimeError(f"{path}: {e}") from None
        return self.transform(image), label


def run_one(spec):
    """Trains spec["model"] fed by spec["loader"]; returns the run's figures."""
    import torch
    import torchvision
    from torch import nn

    cuda = spec["device"] == "cuda"
    dev = torch.device(spec["device"])
    torch.manual_seed(0)
    torch.set_num_threads(spec["cores"])
    if cuda:
        torch.backends.cudnn.benchmark = True
    fmt = torch.channels_last if cuda else torch.contiguous_format
    mean, std = (CIFAR_MEAN, CIFAR_STD) if spec["data"] == "cifar" else (IMAGENET_MEAN,
                                                                          IMAGENET_STD)
    mean_t = torch.tensor(mean, device=dev).view(1, 3, 1, 1)
    inv_std = 1 / torch.tensor(std, device=dev).view(1, 3, 1, 1)

    model = build_model(spec["model"], spec["classes"]).to(dev, memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, nesterov=True,
                          weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()

    def prepare(images, labels):
        """A loader's batch as the model takes it: float32 NCHW (channels_last
        on a GPU), normalized, on the device."""
        if spec["loader"] == "shardpack" and cuda:
            images = images.to(dev, non_blocking=True)  # already there unless it fell back
            images = images.permute(0, 3, 1, 2)  # NHWC seen as channels_last NCHW: no copy
        elif spec["loader"] in ("pil", "tensor"):
            images = images.to(dev, non_blocking=True).contiguous(memory_format=fmt)
        if images.dtype == torch.uint8:
            images = (images.float() / 255 - mean_t) * inv_std
        return images.contiguous(memory_format=fmt), labels.to(dev, non_blocking=True)

    def step(images, labels):
        with (torch.autocast(device_type="cuda", dtype=torch.bfloat16) if cuda
              else contextlib.nullcontext()):
            loss = loss_fn(model(images), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    def sync():
        if cuda:
            torch.cuda.synchronize()

    # The compute warm-up, on a resident batch (also the bound's batch).
    size, batch = spec["size"], spec["batch"]
    fixed = (torch.randn(batch, 3, size, size, device=dev).contiguous(memory_format=fmt),
             torch.randint(0, spec["classes"], (batch,), device=dev))
    for _ in range(spec["warmup"]):
        step(*fixed)
    sync()

    notes, pids = [], [os.getpid()]
    if spec["loader"] == "resident":
        batches, skip = iter(lambda: fixed, None), 0
    elif spec["loader"] == "shardpack":
        (batches, pids, notes), skip = shardpack_batches(spec, cuda), spec["cores"] + 1
    else:
        (batches, pids, notes), skip = (dataloader_batches(spec, spec["loader"], cuda),
                                        spec["cores"] + 1)
    t_open = time.perf_counter()
    for _ in range(skip):
        loss = step(*prepare(*next(batches)))
    sync()
    first_batches_s = time.perf_counter() - t_open

    # The timed steps. On a GPU, wait (sleeping: a blocking event) for the step
    # before the one just queued, so the loop runs at most one step ahead and
    # a wait in next() is the loader's.
    waited, done, previous = 0.0, 0, None
    cpu0 = cpu_seconds(pids)
    start = time.perf_counter()
    while done < spec["steps"]:
        t0 = time.perf_counter()
        images, labels = next(batches)
        waited += time.perf_counter() - t0
        loss = step(*prepare(images, labels))
        del images, labels
        if cuda:
            event = torch.cuda.Event(blocking=True)
            event.record()
            if previous is not None:
                previous.synchronize()
            previous = event
        done += 1
        if done >= 3 and time.perf_counter() - start > spec["max_seconds"]:
            break
    sync()
    seconds = time.perf_counter() - start
    cpu = cpu_seconds(pids) - cpu0
    loss = float(loss)
    if not math.isfinite(loss):
        notes.append(f"loss {loss} (the speed is still measured)")
    return {
        "model": spec["model"], "loader": spec["loader"], "cores": spec["cores"],
        "cpus_allowed": len(os.sched_getaffinity(0)), "device": device_name(spec["device"]),
        "batch": batch, "size": size, "steps": done, "steps_asked": spec["steps"],
        "seconds": seconds, "images_per_s": done * batch / seconds,
        "data_wait": waited / seconds, "cores_busy": cpu / seconds,
        "warmup_steps": spec["warmup"], "skipped_batches": skip,
        "first_batches_s": first_batches_s, "loss": loss, "notes": notes,
        "torch": torch.__version__, "torchvision": torchvision.__version__,
        "load": os.getloadavg()[0],
    }


def device_name(device):
    import torch
    if device == "cuda":
        return torch.cuda.get_device_name()
    return next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                 if l.startswith("model name")), "CPU")


# ---- data ----------------------------------------------------------------------

def run_tool(*cmd):
    log("+ " + " ".join(cmd))
    result = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        fail(f"{os.path.basename(cmd[0])} exited with {result.returncode}: "
             f"{result.stderr.strip()[-2000:]}")


def package_photos():
    """Photographs that pip's scikit-learn and scikit-image ship (found
    without importing them)."""
    wanted = {"sklearn": ["datasets/images/china.jpg", "datasets/images/flower.jpg"],
              "skimage": ["data/rocket.jpg", "data/astronaut.png", "data/chelsea.png",
                          "data/coffee.png", "data/motorcycle_left.png"]}
    found = []
    for package, files in wanted.items():
        spec = importlib.util.find_spec(package)
        for where in (spec.submodule_search_locations or []) if spec else []:
            found += [os.path.join(where, f) for f in files
                      if os.path.isfile(os.path.join(where, f))]
    return found


def make_cifar(args, work):
    """The CIFAR binary (for the DataLoader) and its packed dataset."""
    path = os.path.join(work, "src", "cifar", "data_batch_1.bin")
    if args.make_demo_data:
        run_tool(args.make_demo_data, os.path.join(work, "src"), "--cifar-records",
                 str(args.records), "--images-per-class", "0")
        what = "make_demo_data's scenes"
    else:  # smooth random pictures: raw pixels cost the same whatever they show
        import numpy as np
        rng = np.random.default_rng(1)
        n = args.records
        low = rng.integers(0, 240, (n, 3, 8, 8), dtype=np.uint8)  # + 15 at most: no wrap
        pixels = np.repeat(np.repeat(low, 4, axis=2), 4, axis=3)
        pixels = pixels + rng.integers(0, 16, pixels.shape, dtype=np.uint8)
        records = np.empty((n, 1 + 3072), np.uint8)
        records[:, 0] = np.arange(n) % 10
        records[:, 1:] = pixels.reshape(n, 3072)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        records.tofile(path)
        what = "numpy's smooth random pictures"
    dataset = os.path.join(work, "cifar-ds")
    run_tool(args.shardpack, "cifar", path, "-o", dataset, "--overwrite", "-q")
    return {"cifar_bin": path, "dataset": dataset, "classes": 10,
            "what": f"{args.records:,} CIFAR-10-shaped records ({what})"}


def make_images(args, work):
    """The JPEG ImageFolder (for the DataLoader) and its packed dataset."""
    if args.photos:
        root, what = os.path.abspath(args.photos), f"the JPEGs of {args.photos}"
    elif args.make_demo_data:
        root = os.path.join(work, "src", "images")
        classes = 10
        run_tool(args.make_demo_data, os.path.join(work, "src"), "--cifar-records", "0",
                 "--classes", str(classes), "--images-per-class",
                 str(max(1, args.images // classes)))
        what = "make_demo_data's scenes, 500x375, quality 90"
    else:
        photos = package_photos()
        if not photos:
            fail("no JPEG folder to use: pass --photos DIR (bench/make_photo_set.sh makes one), "
                 "or give make_demo_data, or install scikit-learn / scikit-image (their "
                 "sample photographs are cropped)")
        from photo_crops import write_crops
        root = os.path.join(work, "src", "images")
        log(f"cropping {args.images} JPEGs from {len(photos)} photographs: {', '.join(photos)}")
        write_crops(root, photos, args.images, seed=1)
        what = (f"crops of {len(photos)} photographs that scikit-learn / scikit-image ship, "
                "500x375 and the like, quality 70-95")
    classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
    files = sum(len(os.listdir(os.path.join(root, c))) for c in classes)
    if not classes or files == 0:
        fail(f"{root}: no class folders of images")
    dataset = os.path.join(work, "images-ds")
    run_tool(args.shardpack, "images", root, "-o", dataset, "--overwrite", "-q")
    return {"image_root": root, "dataset": dataset, "classes": len(classes),
            "what": f"{files:,} JPEGs in {len(classes)} classes ({what})"}


# ---- the runs ------------------------------------------------------------------

def launch(args, spec):
    """Runs one spec in a child process pinned to the first spec["cores"]
    cores; returns its figures. Any failure ends the benchmark."""
    cpus = sorted(os.sched_getaffinity(0))[:spec["cores"]]
    cpu_list = ",".join(map(str, cpus))
    cmd = [sys.executable, os.path.abspath(__file__), "--run", json.dumps(spec)]
    preexec = None
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", cpu_list] + cmd
    else:
        def preexec():
            os.sched_setaffinity(0, cpus)
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=preexec,
                                timeout=args.run_timeout)
    except subprocess.TimeoutExpired:
        fail(f"{spec['model']} with {spec['loader']} on {spec['cores']} cores ran past "
             f"--run-timeout {args.run_timeout} s")
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        sys.stderr.write(result.stderr[-6000:])
        fail(f"{spec['model']} with {spec['loader']} on {spec['cores']} cores (taskset -c "
             f"{cpu_list}) exited with {result.returncode}")
    figures = json.loads(lines[-1])
    figures["cpu_list"] = cpu_list
    return figures


def run_line(r, bound):
    share = f" ({r['images_per_s'] / bound:.2f} of bound)" if bound else ""
    if r.get("again"):
        share = f" (the bound again, after the other loaders: {r['images_per_s'] / bound:.2f})"
    notes = "".join(f"; NOTE {n}" for n in r["notes"])
    capped = f" (stopped at --max-seconds; {r['steps_asked']} asked)" if (
        r["steps"] < r["steps_asked"]) else ""
    return (f"run: {r['model']} {r['loader']} cores={r['cores']}: "
            f"{r['images_per_s']:,.0f} images/s{share}, data wait {100 * r['data_wait']:.1f}%, "
            f"cores busy {r['cores_busy']:.1f}, {r['steps']} steps of {r['batch']} in "
            f"{r['seconds']:.2f} s{capped}, first {r['skipped_batches']} batches "
            f"{r['first_batches_s']:.2f} s, loss {r['loss']:.3f}{notes}")


def search(args, base, loader, bound, runs):
    """Runs `loader` at the largest core count, then (binary search, or all)
    the smaller ones; returns the fewest cores reaching BOUND_SHARE of the
    bound, or None."""
    def run(k):
        r = launch(args, dict(base, loader=loader, cores=k))
        runs.append(r)
        print(run_line(r, bound), flush=True)
        return r["images_per_s"] >= BOUND_SHARE * bound

    cores = args.cores
    if args.search == "all":
        reached = [k for k in cores if run(k)]
        return reached[0] if reached else None
    if not run(cores[-1]):
        return None
    if args.search == "max":
        return cores[-1]
    lo, hi = 0, len(cores) - 1  # cores[hi] reaches; assumes more cores never do worse
    while lo < hi:
        mid = (lo + hi) // 2
        if run(cores[mid]):
            hi = mid
        else:
            lo = mid + 1
    return cores[hi]


def table(args, runs, fewest, bounds, data, device, started):
    r0 = runs[0]
    models = CPU_MODELS if device == "cpu" else GPU_MODELS
    kmax = args.cores[-1]
    out = []
    if device == "cpu":
        out.append("**NO GPU: CPU mode.** Small models trained on the CPU in float32 (ResNet-9 at "
                   "batch 64, a small CNN at 64 px instead of ResNet-50 at 224); these figures say "
                   "how the loaders share a few cores with CPU training, not how they feed a GPU.")
        out.append("")
    out.append(f"{datetime.date.today()}, {r0['device']}, {len(os.sched_getaffinity(0))} CPUs "
               f"({device_name('cpu')}); torch {r0['torch']}, torchvision {r0['torchvision']}, "
               f"shardpack {args.shardpack_version}; " + ("bf16 autocast, channels_last" if
                                                          device == "cuda" else "float32") +
               f"; cores {' '.join(map(str, args.cores))} (taskset -c), search {args.search}; "
               f"whole run {time.perf_counter() - started:.0f} s; load average (1 min) after "
               f"the runs {min(r['load'] for r in runs):.2f} to {max(r['load'] for r in runs):.2f}.")
    for key in ("cifar", "images"):
        if key in data:
            out.append(f"{'CIFAR' if key == 'cifar' else 'JPEG'} data: {data[key]['what']}.")
    out.append("")
    out.append(f"| model | loader | images/s at {kmax} cores | of bound | data wait | cores busy "
               f"| fewest cores for {BOUND_SHARE} of bound | images/s by cores |")
    out.append("|---|---|---:|---:|---:|---:|---:|---|")
    drifted = []
    for model in args.models:
        spec = models[model]
        label = f"{spec['title']} ({spec['size']} px, batch {spec['batch']})"
        for loader in args.loaders:
            mine = sorted((r for r in runs if r["model"] == model and r["loader"] == loader
                           and not r.get("again")), key=lambda r: r["cores"])
            if not mine:
                continue
            top = mine[-1]
            bound = bounds.get(model)
            share = f"{top['images_per_s'] / bound:.2f}" if bound else "-"
            few = fewest.get((model, loader), "-")
            few = "-" if loader == "resident" else (f"none of {kmax}" if few is None else few)
            by = ", ".join(f"{r['cores']}: {r['images_per_s']:,.0f}" for r in mine)
            again = [r for r in runs if r["model"] == model and r.get("again")]
            if loader == "resident" and again:
                drift = again[0]["images_per_s"] / bound
                by += f"; again after the others: {again[0]['images_per_s']:,.0f} ({drift:.2f})"
                if abs(drift - 1) > 1 - BOUND_SHARE:
                    drifted.append(f"{model}: the bound moved by {100 * (drift - 1):+.0f}% "
                                   "between its two runs: the machine's speed changed, and "
                                   "the shares of the bound are no better than that")
            out.append(f"| {label} | {LOADER_NAMES[loader]} | {top['images_per_s']:,.0f} | "
                       f"{share} | {100 * top['data_wait']:.1f}% | {top['cores_busy']:.1f} | "
                       f"{few} | {by} |")
            label = ""
    notes = drifted + sorted({f"{r['model']} {r['loader']}: {n}" for r in runs
                              for n in r["notes"]})
    if notes:
        out.append("")
        out += [f"NOTE {n}" for n in notes]
    return "\n".join(out)


def parse_cores(text, nproc):
    """The core counts of --cores `text`, capped at `nproc`; ValueError if bad."""
    try:
        wanted = sorted({int(c) for c in text.replace(",", " ").split()})
    except ValueError:
        raise ValueError(f"--cores '{text}' is not a list of core counts") from None
    if not wanted or wanted[0] < 1:
        raise ValueError(f"--cores '{text}': core counts start at 1")
    cores = [k for k in wanted if k <= nproc]
    if wanted[-1] > nproc and nproc not in cores:
        cores.append(nproc)  # capped at the cores there are
    return cores


def parse_steps(text, models):
    """{model: timed steps} of --steps `text`; ValueError if bad."""
    steps = {}
    for item in (text or "").replace(",", " ").split():
        name, _, n = item.rpartition("=")
        if not n.isdigit() or int(n) < 1 or (name and name not in models):
            raise ValueError(f"--steps '{item}': want N or MODEL=N, N >= 1, MODEL one of "
                             f"{', '.join(models)}")
        for m in ([name] if name else models):
            steps[m] = int(n)
    return steps


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--run":  # a child: one run
        print(json.dumps(run_one(json.loads(sys.argv[2]))), flush=True)
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shardpack", required=True, help="the shardpack tool (packs the data)")
    p.add_argument("--make-demo-data", default="", help="make_demo_data, if there is one")
    p.add_argument("--work", required=True, help="folder for the data (made, then removed)")
    p.add_argument("--keep", action="store_true", help="keep the data under --work")
    p.add_argument("--photos", default="", help="an ImageFolder of JPEGs to use")
    p.add_argument("--records", type=int, default=0, help="CIFAR records (default 50000; "
                   "CPU or --quick: 10000)")
    p.add_argument("--images", type=int, default=0, help="JPEGs to make without --photos "
                   "(default 4000; CPU or --quick: 1000)")
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    p.add_argument("--models", default="", help="comma list; GPU: resnet9,resnet18,resnet50; "
                   "CPU: resnet9,cnn64 (resnet18 at 64 px too)")
    p.add_argument("--loaders", default=",".join(LOADERS), help="comma list of "
                   f"{', '.join(LOADERS)} (resident, the bound, always runs)")
    p.add_argument("--cores", default="1 2 4 8 16", help="core counts, capped at the CPUs "
                   "this process may use")
    p.add_argument("--search", choices=["binary", "all", "max"], default="binary")
    p.add_argument("--steps", default="", help="timed steps: N, or MODEL=N,...")
    p.add_argument("--max-seconds", type=float, default=0,
                   help="stop a run's timed steps after this long (default GPU 8, CPU 30)")
    p.add_argument("--run-timeout", type=int, default=600)
    p.add_argument("--quick", action="store_true", help="a smoke run of about a minute: two "
                   "models, few steps, the largest core count only, the bound once, less data")
    p.add_argument("--out", default="", help="also write the table and run lines here")
    args = p.parse_args()
    started = time.perf_counter()

    try:
        import torch
    except ImportError as e:
        fail(f"{sys.executable} cannot import torch ({e}); pass --python")
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    elif device == "cuda" and not torch.cuda.is_available():
        fail("--device cuda, but torch sees no CUDA device")
    models = CPU_MODELS if device == "cpu" else GPU_MODELS
    if args.quick:
        args.models = args.models or ",".join(QUICK[device])
        args.search = "max"
    args.models = [m for m in (args.models or ",".join(DEFAULT_MODELS[device])).split(",") if m]
    for m in args.models:
        if m not in models:
            p.error(f"--models: no model '{m}' {'on the CPU' if device == 'cpu' else 'on a GPU'}; "
                    f"these: {', '.join(models)}")
    asked = [x for x in args.loaders.split(",") if x]
    bad = [x for x in asked if x not in LOADERS]
    if bad or not asked:
        p.error(f"--loaders: {', '.join(bad) or 'none'}; choose from {', '.join(LOADERS)}")
    # The bound is always measured: every other loader is compared with it.
    args.loaders = [x for x in LOADERS if x in asked or x == "resident"]
    if args.photos and not os.path.isdir(args.photos):
        p.error(f"--photos {args.photos}: no such folder")
    try:
        args.cores = parse_cores(args.cores, len(os.sched_getaffinity(0)))
        steps = parse_steps(args.steps, args.models)
    except ValueError as e:
        p.error(str(e))
    small = device == "cpu" or args.quick
    args.records = args.records or (10000 if small else 50000)
    args.images = args.images or (1000 if small else 4000)
    args.max_seconds = args.max_seconds or (30 if device == "cpu" else 8)
    if "shardpack" in args.loaders:
        try:
            import shardpack
            args.shardpack_version = shardpack.__version__
        except ImportError as e:
            fail(f"cannot import shardpack ({e}): install the wheel, or set PYTHONPATH to a "
                 f"build's python/ folder (bench/run_train_bench.sh does)")
    else:
        args.shardpack_version = "(not run)"
    if {"pil", "tensor"} & set(args.loaders) and importlib.util.find_spec("torchvision") is None:
        fail("the DataLoader loops need torchvision (Debian: python3-torchvision)")

    work = os.path.abspath(args.work)
    made = [os.path.join(work, name) for name in ("src", "cifar-ds", "images-ds")]
    for path in made:  # what an earlier --keep left: made afresh
        shutil.rmtree(path, ignore_errors=True)
    os.makedirs(work, exist_ok=True)
    data = {}
    kinds = {models[m]["data"] for m in args.models}
    try:
        if "cifar" in kinds:
            data["cifar"] = make_cifar(args, work)
        if "images" in kinds:
            data["images"] = make_images(args, work)
        log(f"data made in {time.perf_counter() - started:.1f} s")
        if device == "cpu":
            print("NO GPU: CPU mode. Small models on the CPU in float32; the figures say how the "
                  "loaders share the cores with CPU training, not how they feed a GPU.",
                  flush=True)
        runs, fewest, bounds = [], {}, {}
        for model in args.models:
            spec = models[model]
            d = data[spec["data"]]
            base = dict(model=model, device=device, data=spec["data"], size=spec["size"],
                        batch=spec["batch"], warmup=spec["warmup"],
                        steps=steps.get(model) or (QUICK[device].get(model, spec["steps"])
                                                   if args.quick else spec["steps"]),
                        max_seconds=args.max_seconds, classes=d["classes"],
                        dataset=d["dataset"], cifar_bin=d.get("cifar_bin"),
                        image_root=d.get("image_root"))
            # The bound first, with the most cores.
            r = launch(args, dict(base, loader="resident", cores=args.cores[-1]))
            runs.append(r)
            bounds[model] = r["images_per_s"]
            print(run_line(r, 0), flush=True)
            for loader in args.loaders:
                if loader != "resident":
                    fewest[(model, loader)] = search(args, base, loader, bounds[model], runs)
            if args.quick:
                continue
            # Again after the loaders: did the machine's speed stay put?
            again = launch(args, dict(base, loader="resident", cores=args.cores[-1]))
            again["again"] = True
            runs.append(again)
            print(run_line(again, bounds[model]), flush=True)
        text = table(args, runs, fewest, bounds, data, device, started)
    finally:
        if not args.keep:
            for path in made:
                shutil.rmtree(path, ignore_errors=True)
    print()
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n\nOne line per run:\n\n")
            f.writelines(run_line(r, 0 if r["loader"] == "resident" and not r.get("again")
                                  else bounds[r["model"]]) + "\n" for r in runs)
        log(f"table written to {args.out}")


if __name__ == "__main__":
    main()
