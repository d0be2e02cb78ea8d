#!/usr/bin/env bash
# The formats beside JPEG, on the same machine in the same run:
#   - decode speed: `shardpack images --mode raw --size 224x224 --threads 1`
#     on a folder of PNGs (and of lossless WebPs) beside the torchvision recipe
#     it replaces, a single-process PIL loop of
#     Image.open(f).convert("RGB").resize((224, 224), BILINEAR) over the same
#     files; images/s, medians of --repeats runs, interleaved;
#   - passthrough's conversion (--non-jpeg convert: JPEG 4:4:4 at quality
#     100): bytes against the PNGs, and how far its pixels are from the
#     source (PSNR and the largest error over every image, decoded by PIL).
# The images are the demo generator's ImageNet-like photos (500x375), saved as
# PNG and WebP by PIL. Page cache warm for both sides.
#
#   bench/run_formats_bench.sh [--images N] [--repeats R] [--dir DIR] [--build-dir DIR] [--keep]
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
repeats=5
images=1000
keep=0
parse_bench_args "$@"
set -- "${extra_args[@]+"${extra_args[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --images) images="$2"; shift 2 ;;
    *) unknown_arg "$1" ;;
  esac
done
py=/usr/bin/python3
release_build shardpack make_demo_data
pack="$build_dir/tools/shardpack"
work="$dir/shardpack-formats-bench"
rm -rf "$work"
mkdir -p "$work"
[[ $keep == 1 ]] || trap 'rm -rf "$work"' EXIT

per_class=$(((images + 9) / 10))
"$build_dir/datasets/make_demo_data" "$work/demo" --classes 10 --images-per-class "$per_class" \
  --cifar-records 0 >/dev/null
"$py" - "$work/demo/images" "$work" "$images" <<'EOF'
import os, sys
from PIL import Image
src, work, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
n = 0
for cls in sorted(os.listdir(src)):
    for name in sorted(os.listdir(os.path.join(src, cls))):
        if n == limit:
            break
        im = Image.open(os.path.join(src, cls, name)).convert("RGB")
        stem = os.path.splitext(name)[0]
        for fmt, ext, kw in (("png", "PNG", {}), ("webp", "WEBP", {"lossless": True})):
            os.makedirs(os.path.join(work, fmt, cls), exist_ok=True)
            im.save(os.path.join(work, fmt, cls, f"{stem}.{fmt}"), ext, **kw)
        n += 1
EOF
cat > "$work/pil_loop.py" <<'EOF'
import os, sys, time
from PIL import Image
files = [os.path.join(d, f) for d, _, fs in sorted(os.walk(sys.argv[1])) for f in sorted(fs)]
t0 = time.perf_counter()
for f in files:
    Image.open(f).convert("RGB").resize((224, 224), Image.BILINEAR)
print(time.perf_counter() - t0)
EOF
cat "$work"/png/*/* "$work"/webp/*/* >/dev/null

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A times
for ((i = 0; i < repeats; i++)); do
  for fmt in png webp; do
    rm -rf "$work/out"
    t0=$(now)
    "$pack" images "$work/$fmt" -o "$work/out" --mode raw --size 224x224 --threads 1 -q
    t1=$(now)
    times[shardpack_$fmt]+="$(echo "$t1 - $t0" | bc) "
    times[pil_$fmt]+="$("$py" "$work/pil_loop.py" "$work/$fmt") "
  done
done

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $repeats runs; $images images 500x375; $(nproc) cores"
echo "| job | run times (s) | median (s) | images/s | ratio |"
echo "| --- | --- | --- | --- | --- |"
for fmt in png webp; do
  for job in "pil_$fmt" "shardpack_$fmt"; do
    m=$(echo ${times[$job]} | tr ' ' '\n' | median)
    ref=$(echo ${times[pil_$fmt]} | tr ' ' '\n' | median)
    printf '| %s | %s| %.3f | %.0f | %.2fx PIL |\n' "$job" "${times[$job]}" "$m" \
      "$(echo "$images / $m" | bc -l)" "$(echo "$ref / $m" | bc -l)"
  done
done

# Passthrough's conversion: what it costs in bytes and in pixels.
rm -rf "$work/out"
"$pack" images "$work/png" -o "$work/out" --no-shuffle -q --format hdf5 --mode passthrough
"$py" - "$work/png" "$work/out" <<'EOF'
import io, json, os, sys
import h5py, numpy as np
from PIL import Image
root, out = sys.argv[1], sys.argv[2]
shards = json.load(open(os.path.join(out, "manifest.json")))["shards"]
png_bytes = jpeg_bytes = records = 0
worst, sq, count = 0, 0.0, 0
for shard in shards:
    with h5py.File(os.path.join(out, shard["path"]), "r") as f:
        data, offsets = f["data"][:], f["offsets"][:]
        blob, key_offsets = f["keys"][:].tobytes(), f["key_offsets"][:]
    for i in range(len(offsets) - 1):
        key = blob[key_offsets[i]:key_offsets[i + 1]].decode()
        jpeg = data[offsets[i]:offsets[i + 1]].tobytes()
        src = os.path.join(root, key)
        png_bytes += os.path.getsize(src)
        jpeg_bytes += len(jpeg)
        a = np.asarray(Image.open(src).convert("RGB")).astype(int)
        b = np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB")).astype(int)
        worst = max(worst, int(np.abs(a - b).max()))
        sq += float(((a - b) ** 2).sum())
        count += a.size
        records += 1
psnr = 10 * np.log10(255 ** 2 / (sq / count))
print(f"passthrough conversion of {records} PNGs: JPEG 4:4:4 q100 is "
      f"{jpeg_bytes / png_bytes:.2f}x the PNG bytes; PSNR {psnr:.1f} dB, largest error {worst}")
EOF
